"""Which traffic tools the tester hosts have (probed once per tester).

Our module (rfc2544_pktgen: /proc/net/pktgen/pgrx exists) serves as
generator and receiver; else the in-tree pktgen (`modprobe pktgen`) with
interface counters as a lower-fidelity receiver.
"""
from rfc2544.errors import InfraError, Rfc2544Error
from rfc2544.model import GENERATOR_INTREE  # noqa: F401 (read here by the tester and its callers)

from rfc2544.drivers import pgrx as pgrx_mod, probe
from rfc2544.drivers.placement import add_forwarding

GENERATOR_MODULE = "rfc2544_pktgen"
RECEIVER_PGRX = "pgrx"
RECEIVER_COUNTERS = "interface counters"


PACED_BURSTS_MODULE = (1, 2)  # the first module version with burst_frames (bursty traffic)
STREAM_ID_MODULE = (1, 3)     # the first with stream ids (generator's stream_id, pgrx's sid:N)
VLAN_RX_MODULE = (1, 4)       # the first whose pgrx counts frames that came in through VLAN devices
IPV6_NETWORKS_MODULE = (1, 5)  # the first whose IPv6 destination range spans /64 networks
IPV6_SOURCES_MODULE = (1, 6)   # the first with an IPv6 source range (src6_min/src6_max)
START_OFFSET_MODULE = (1, 7)   # the first with start_offset (a stream's generators staggered)


def module_at_least(host_probe, version):
    """Whether the host's rfc2544_pktgen is `version` (a tuple) or later."""
    try:
        numbers = tuple(int(x) for x in (host_probe.module_version or "").split(".")[:2])
    except ValueError:
        numbers = ()
    return bool(host_probe.pgrx) and numbers >= version


def max_rx_devices(host_probe):
    """Devices the host's pgrx watches at once: several from module 1.1 on."""
    return pgrx_mod.MAX_DEVICES if module_at_least(host_probe, pgrx_mod.MULTI_DEVICE_MODULE) else 1


def detect_tools(transport, plans, tx_hosts, rx_hosts, clock):
    """Probe every tester host; returns the detection dict (hosts, generator,
    receiver, rx_ports, notes). Raises InfraError without a generator."""
    found = {name: probe.probe_host(transport.session(name), load_pktgen=name in tx_hosts)
             for name in sorted(set(tx_hosts) | set(rx_hosts))}
    for name in tx_hosts:
        if found[name].pgctrl and not found[name].threads:
            clock.sleep(0.5)  # thread files of a module still loading
            found[name] = probe.probe_host(transport.session(name), load_pktgen=False)
    for name in tx_hosts:
        if not found[name].pgctrl:
            raise InfraError(f"{name}: no packet generator: /proc/net/pktgen/pgctrl missing "
                             f"and 'modprobe pktgen' failed ({found[name].modprobe_error or 'no detail'})")
        if not found[name].threads:
            raise InfraError(f"{name}: /proc/net/pktgen has no kpktgend_N thread files")
    for name in tx_hosts:
        forwarding_path(transport, name, found[name])
    rx_ports = {}
    for p in plans:
        rx_ports.setdefault(p.rx_host, set()).add(p.rx_port)
    watches = {h: max_rx_devices(found[h]) for h in rx_hosts}
    use_pgrx = all(found[h].pgrx for h in rx_hosts) and all(len(rx_ports[h]) <= watches[h] for h in rx_hosts)
    notes = []
    tagged = sorted({p.rx_host for p in plans if p.tags.arriving_count} & set(rx_hosts))
    old = [h for h in tagged if found[h].pgrx and not module_at_least(found[h], VLAN_RX_MODULE)]
    if use_pgrx and old:
        use_pgrx = False
        notes.append(f"streams that arrive tagged are received on {', '.join(old)}, whose pgrx does not count frames "
                     "that come in through VLAN devices (module 1.4 or later does): interface counters "
                     "used instead (run 'rfc2544 setup')")
    if all(found[h].pgrx for h in rx_hosts) and not use_pgrx:
        many = ", ".join(f"{h} ({len(rx_ports[h])} ports, its pgrx watches {watches[h]})"
                         for h in rx_hosts if len(rx_ports[h]) > watches[h])
        notes.append(f"a tester host receives on more ports than its pgrx watches: {many}; "
                     "interface counters used instead (module 1.1 or later watches up to "
                     f"{pgrx_mod.MAX_DEVICES}: run 'rfc2544 setup')")
    module = all(found[h].pgrx for h in tx_hosts)
    return {
        "hosts": found,
        "generator": GENERATOR_MODULE if module else GENERATOR_INTREE,
        # every generator has burst_frames: bursty traffic can be sent
        "paced_bursts": all(module_at_least(found[h], PACED_BURSTS_MODULE) for h in tx_hosts),
        # every generator sends IPv6 destination networks
        "ipv6_networks": all(module_at_least(found[h], IPV6_NETWORKS_MODULE) for h in tx_hosts),
        "ipv6_sources": all(module_at_least(found[h], IPV6_SOURCES_MODULE) for h in tx_hosts),
        "start_offsets": all(module_at_least(found[h], START_OFFSET_MODULE) for h in tx_hosts),
        "receiver": RECEIVER_PGRX if use_pgrx else RECEIVER_COUNTERS,
        # every generator sends, and every pgrx counts, streams by their id
        "stream_ids": module and use_pgrx and all(module_at_least(found[h], STREAM_ID_MODULE)
                                                  for h in set(tx_hosts) | set(rx_hosts)),
        "rx_ports": {h: sorted(v) for h, v in rx_ports.items()},
        "notes": notes,
    }


def colocated_duts(inventory, tester):
    """The DUT hosts that live in a network namespace of `tester`'s machine
    (same address and SSH port): their forwarding runs on its CPUs."""
    t = inventory.hosts[tester]
    return sorted(name for name, h in inventory.hosts.items()
                  if h.group == "duts" and h.netns and (h.address, h.port) == (t.address, t.port))


def forwarding_path(transport, tester, host_probe):
    """Fill host_probe.forwarding_cpus/_ports from the queue facts of each
    DUT namespace on `tester`'s machine (placement.packet_path_cpus); a
    namespace that cannot be read is listed with no CPUs (placement then
    says no CPU is known to carry its path)."""
    for dut in colocated_duts(transport.inventory, tester):
        try:
            status, out, _ = transport.session(dut).run(probe.QUEUE_SCRIPT, timeout=30, check=False)
        except Rfc2544Error:
            status, out = 1, ""
        add_forwarding(host_probe, dut, transport.inventory.hosts[dut].ports,
                       probe.parse_probe(out) if status == 0 else None)
