"""doctor's queue checks: each tester port's TX and RX queues, NUMA node
and IRQ CPUs (each TX queue's own IRQ), the CPUs and TX queues its
streams' generators would use, and how a receiving port spreads what it
counts over CPUs (RSS and the fields it hashes UDP on, RPS). Pure: the
facts come from doctor's host script (drivers.probe's queue part and its
`rxhash` lines)."""
from rfc2544.errors import Rfc2544Error

# ethtool's flow types of UDP, and the IP version each names
HASH_FAMILIES = {"udp4": "IPv4", "udp6": "IPv6"}
# ethtool's names of the UDP ports in a flow hash
PORT_FIELDS = ("L4 bytes 0 & 1", "L4 bytes 2 & 3")


def queue_checks(inventory, facts, generators=None, every_cpu=False):
    """Per tester port: its queues, NUMA node and IRQ CPUs (each TX queue's
    own IRQ where it has one); per sending port: its streams' generators,
    the queues and CPUs they would use (streams.assign_threads: a stream's
    generators on distinct kpktgend threads, each on queue g where the port
    has enough, on that queue's IRQ CPU where it is pinned), failing where
    a stream has more generators than TX queues (they would share one); per
    receiving port: the CPUs that count it (its RX IRQs' and RPS's). Per
    sending host: which CPUs send and which carry its receive path
    (placement.HostCpus), with a warning where the generators leave it none
    (`generators` per stream, `every_cpu`: as a run's --generators and
    --generator-cpus all)."""
    from rfc2544.drivers.placement import add_forwarding, assign_threads, host_cpus
    from rfc2544.drivers.streams import plan_streams, stream_groups
    from rfc2544.engine.detection import colocated_duts
    out = []
    try:
        plans = plan_streams(inventory, generators=generators) if inventory.streams else []
    except Rfc2544Error:        # a port without peer_mac: the peer checks say so
        plans = []
    devices = {}
    for p in plans:
        devices.setdefault(p.tx_host, []).append(p)
    for name, host in sorted(inventory.hosts.items()):
        f = facts.get(name)
        if f is None or host.group != "testers":
            continue
        probe = f["probe"]
        for dut in colocated_duts(inventory, name):
            add_forwarding(probe, dut, inventory.hosts[dut].ports, (facts.get(dut) or {}).get("probe"))
        cpu_of = (assign_threads(name, plans, [], probe.threads, probe, every_cpu)
                  if probe.threads and devices.get(name) else {})
        if cpu_of:
            cpus = host_cpus(name, plans, cpu_of, probe, every_cpu, probe.forwarding_ports)
            warning = cpus.warning()
            # a warning, not a failure: a run declares it and names the trials it starved
            out.append((f"cpus {name}", True, cpus.summary() + (f"; WARNING: {warning}" if warning else "")))
        for pname in sorted(host.ports):
            if pname not in probe.tx_queues:
                continue
            tx = probe.tx_queues[pname]
            numa = probe.numa.get(pname)
            irq_cpus = sorted(probe.irq_cpus.get(pname, ()))
            detail = (f"{tx} TX, {probe.rx_queues[pname]} RX queues; NUMA node {numa if numa is not None else 'none'}; "
                      f"IRQ CPUs {_cpus(irq_cpus) or 'none named'}; "
                      f"RPS CPUs {_cpus(sorted(probe.rps_cpus.get(pname, ()))) or 'off'}")
            own = probe.tx_irq_cpus.get(pname)
            if own:
                detail += "; TX queue IRQs " + ", ".join(f"{q} on CPU {_cpus(sorted(c))}" for q, c in sorted(own.items()))
            sending = [g for g in stream_groups(plans) if g[0].tx_host == name and g[0].tx_port == pname]
            ok = True
            for group in sending:
                p = group[0]
                use = ", ".join(f"{g.device} on CPU {cpu_of.get(g.device, '?')}"
                                + (f" queue {g.generator}" if p.generators > 1 and tx >= p.generators else "")
                                for g in group)
                detail += f"; stream {p.ends}: {p.generators} generator(s): {use}"
                if p.generators > tx:
                    ok = False
                    detail += f" (only {tx} TX queue(s): they would share one)"
            if any(p.rx_host == name and p.rx_port == pname for p in plans):
                detail += "; " + _spread(probe, pname, f["rx_hash"].get(pname, {}))
            out.append((f"queues {name}:{pname}", ok, detail))
    return out


def _spread(probe, port, hashes):
    """Which CPUs count what a receiving port receives, and how it spreads
    a stream's flows over them: its NIC's RSS over several RX queues
    (hashing the fields ethtool names for UDP over IPv4 and over IPv6:
    drivers set them apart), RPS (by the NIC's hash, else the kernel's over
    addresses and UDP ports), or neither (every frame on one CPU)."""
    counting = _cpus(sorted(probe.rx_cpus.get(port, ())))
    rps = sorted(probe.rps_cpus.get(port, ()))
    queues = probe.rx_queues.get(port, 1)
    parts = []
    named = {family: fields for family, fields in hashes.items() if fields}
    if queues > 1 and named:
        same = len(named) == 2 and named["udp4"] == named["udp6"]
        for family, fields in named.items():
            if same and family == "udp6":
                continue
            version = "IPv4 and IPv6" if same else HASH_FAMILIES[family]
            parts.append(f"RSS over {queues} RX queues hashing UDP/{version} on {', '.join(fields)}")
            if not all(any(f.startswith(p) for f in fields) for p in PORT_FIELDS):
                parts.append(f"{version} flows that differ only in UDP ports (flow_spread udp_ports) share one "
                             f"queue ('ethtool -N {port} rx-flow-hash {'udp4' if same else family} sdfn' hashes the "
                             "ports too" + (", and the same for udp6" if same else "") + ")")
    elif queues > 1:
        parts.append(f"{queues} RX queues, the driver names no RSS hash")
    if rps:
        # RPS takes the NIC's receive hash where it gives one (its fields above)
        parts.append(f"RPS over CPU(s) {_cpus(rps)} by the NIC's receive hash where it gives one, "
                     "else addresses and UDP ports")
    if not parts:
        where = f" of {counting}" if "," in counting else (f" ({counting})" if counting else "")
        return f"counted on one CPU{where}: one RX queue, no RPS"
    return (f"counted on CPU(s) {counting or '?'}: " + "; ".join(parts)
            + "; a stream of one flow is counted on one of them, its flows spread as hashed")


def _cpus(cpus):
    return ",".join(str(c) for c in cpus)

