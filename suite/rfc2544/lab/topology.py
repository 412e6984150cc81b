"""Lab topologies: which VMs, their NICs, and the test network inside them.

Addressing (RFC 2544 appendix C: 198.18.0.0/15; RFC 5180: 2001:2::/48):
  link A  tester:tx0 198.18.0.1/24 2001:2::1/64  <->  dut:dut0 198.18.0.2/24 2001:2::2/64
  link B  tester:rx0 198.19.0.1/24 2001:2:0:100::1/64  <->  dut:dut1 198.19.0.2/24 2001:2:0:100::2/64
Fixed, locally administered MACs 02:00:00:<18|19>:00:<01 tester|02 dut>.
The DUT routes between the links; every neighbour entry is static so no
ARP/ND runs and the test ports stay quiet (IPv6 autoconf, DAD and router
solicitations off).

The tester's own test addresses reach each other through the DUT: locally
generated traffic to the other test address is policy-routed out of the
tester port facing that way (table 100), and the tester ports accept packets
whose source is a local address. So `ping -I 198.18.0.1 198.19.0.1` on the
tester really crosses the DUT. Test frames delivered to the tester's closed
UDP port 9 would draw ICMP errors back through the DUT; the tester's ICMP
error rate limit is set to a burst of 6 per peer per day so they do not.
"""
import ipaddress
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from rfc2544.drivers.vlan import QUIET_IPV6
from rfc2544.errors import BadInput

TOPOLOGIES = ("single", "two-host")
MGMT_ADDR = "10.0.2.15/24"       # QEMU user-mode network; no default route
POLICY_TABLE = 100
# udev applies sysctl.d per new interface (e.g. rp_filter=2); let it finish
# before our own per-port settings so they are not overwritten.
SETTLE = "udevadm settle -t 10 || true"


@dataclass(frozen=True)
class TestPort:
    name: str
    role: str           # tx | rx | dut
    mac: str
    ipv4: str           # addr/prefix
    ipv6: str
    peer: str           # name of the port at the other end of the link


PORTS = {p.name: p for p in (
    TestPort("tx0", "tx", "02:00:00:18:00:01", "198.18.0.1/24", "2001:2::1/64", "dut0"),
    TestPort("dut0", "dut", "02:00:00:18:00:02", "198.18.0.2/24", "2001:2::2/64", "tx0"),
    TestPort("rx0", "rx", "02:00:00:19:00:01", "198.19.0.1/24", "2001:2:0:100::1/64", "dut1"),
    TestPort("dut1", "dut", "02:00:00:19:00:02", "198.19.0.2/24", "2001:2:0:100::2/64", "rx0"),
)}
TESTER_PORTS = ("tx0", "rx0")
DUT_PORTS = ("dut0", "dut1")
NOMINAL_SPEED_MBPS = 10000      # virtio/veth report no real speed; nominal only
DUT_EGRESS = "dut1"             # where cap_dut polices (toward the rx port)


# TX queues of the single lab's tester ports (veth takes numtxqueues): a
# stream's two generators each send on a queue of their own, as on a
# multi-queue NIC (issue 44). One vCPU each, so two are enough.
TESTER_TX_QUEUES = 2


def addr(ip_prefix):
    return ip_prefix.split("/")[0]


@dataclass
class VM:
    name: str
    index: int                          # 1-based, picks mgmt MAC
    nics: List[str] = field(default_factory=list)   # test ports as QEMU NICs (virtio or e1000e)

    @property
    def mgmt_mac(self):
        return f"52:54:00:25:44:{self.index:02x}"


@dataclass
class Topology:
    name: str
    vms: List[VM]
    dut_vm: str                 # VM that hosts the DUT
    dut_netns: Optional[str]    # DUT in a namespace of that VM
    links: Dict[str, str]       # for two-host: tester NIC -> DUT NIC

    def script(self, vm_name) -> str:
        """The network setup script run by the guest's rfc2544-seed unit.

        Process spawns cost ~0.5 s each under TCG, so sysctls are shell
        `echo`s and ip commands go through `ip -batch`."""
        vm = self._vm(vm_name)
        nics = 2 + len(vm.nics)         # lo, mgmt0, test NICs
        out = [
            "set -eux",
            "rename() { for d in /sys/class/net/*; do read -r a < \"$d/address\"",
            "  if [ \"$a\" = \"$1\" ]; then ip link set dev \"${d##*/}\" name \"$2\"; return 0; fi",
            " done; echo \"no NIC with MAC $1\" >&2; return 1; }",
            # NIC drivers (virtio_net, e1000e) are loaded by udev; give them a moment under TCG
            "i=0; while set -- /sys/class/net/*; [ $# -lt %d ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done" % nics,
            f"rename {vm.mgmt_mac} mgmt0",
            HOLD_RX_TIMESTAMPS,
        ]
        # A TCG vCPU stall of ~0.2-1 s makes a generator catch up back to
        # back; the default 1000-frame input backlog then drops frames that
        # neither the DUT's rules nor the tester's pacing dropped (three of
        # four CI runs lost one rate test to it). A deeper queue absorbs the
        # catch-up; the DUT's caps (tc police, qdisc limits) still decide.
        out += _sysctl([f"net/ipv6/conf/mgmt0/{k}=0" for k in ("accept_ra", "autoconf")]
                       + [f"net/core/netdev_max_backlog={LAB_BACKLOG}"] + _quiet("all") + _quiet("default"))
        ip = ["link set lo up", f"addr add {MGMT_ADDR} dev mgmt0", "link set mgmt0 up"]
        if self.name == "single":
            ns = self.dut_netns
            out += _batch(ip + [f"netns add {ns}"])
            out += _in_netns(ns, _sysctl(_quiet("all") + _quiet("default")))
            links = []
            for tester_port in TESTER_PORTS:
                t, d = PORTS[tester_port], PORTS[PORTS[tester_port].peer]
                links.append(f"link add {t.name} address {t.mac} numtxqueues {TESTER_TX_QUEUES} type veth "
                             f"peer name {d.name} address {d.mac} netns {ns}")
            out += _batch(links) + [SETTLE]
            out += _side(TESTER_PORTS, None) + _tester_loop()
            out += _in_netns(ns, _side(DUT_PORTS, ns) + _rps_on_last_cpu(DUT_PORTS))
        else:
            out += _batch(ip)
            out += [f"rename {PORTS[nic].mac} {nic}" for nic in vm.nics] + [SETTLE]
            if vm.name == "tester":
                out += _side(TESTER_PORTS, None) + _tester_loop()
            else:
                out += _side(DUT_PORTS, None)
            out += _wait_carrier(vm.nics)
        if vm.name == "tester":
            out += _calibration_link()
        return "\n".join(out) + "\n"

    def _vm(self, name):
        for vm in self.vms:
            if vm.name == name:
                return vm
        raise KeyError(name)


LAB_BACKLOG = 50000     # frames per CPU input backlog in the lab guests

# tcpdump and pgrx switch the kernel's receive-timestamp static key
# (netstamp_needed_key) on and off, and each switch re-patches its jump-label
# sites. Under TCG a vCPU once hung at such a site in
# netif_receive_skb_list_internal (RCU stall, SSH dead, a clean-clone CI run).
# One socket with SO_TIMESTAMPNS (35) held for the VM's life keeps the key on,
# so later users only count references and nothing is patched again.
HOLD_RX_TIMESTAMPS = (
    "setsid python3 -c 'import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
    "s.setsockopt(socket.SOL_SOCKET, 35, 1); time.sleep(1 << 30)  # rfc2544-hold-rx-timestamps' "
    "</dev/null >/dev/null 2>&1 &")


CALIBRATION_LINK = ("cal0", "cal1")     # the tester's own link (rfc2544.engine.calibration_link); not in the inventory


def _calibration_link():
    """Two more tester ports joined to each other, no addresses: where a
    generator without departure records has its spacing measured."""
    tx, rx = CALIBRATION_LINK
    return (_batch([f"link add {tx} type veth peer name {rx}"])
            + _sysctl([f"net/ipv6/conf/{n}/disable_ipv6=1" for n in (tx, rx)])     # no RS, DAD or MLD
            + _batch([f"link set {tx} up", f"link set {rx} up"]))


def _rps_on_last_cpu(port_names):
    """The DUT namespace's forwarding on a CPU of its own, as a NIC's
    receive queue's IRQ would put it: veth's softirqs otherwise run on the
    sending CPU, which the tester's generators keep busy (issue 56). The
    generators leave this CPU free (drivers/placement.py)."""
    return (["rps=$(printf %x $((1 << ($(nproc) - 1))))"]
            + [f"echo $rps > /sys/class/net/{name}/queues/rx-0/rps_cpus" for name in port_names])


def _quiet(conf):
    return [f"net/ipv6/conf/{conf}/{k}=0" for k in QUIET_IPV6]


def _sysctl(settings):
    """Shell builtins writing /proc/sys (no process per setting)."""
    return [f"echo {v} > /proc/sys/{k}" for k, v in (s.split("=") for s in settings)]


def _batch(commands, family=""):
    """One `ip -batch` process for many ip commands."""
    if not commands:
        return []
    return [f"ip {family}-batch - <<'EOF'".replace("  ", " ")] + commands + ["EOF"]


def _in_netns(ns, lines):
    return [f"ip netns exec {ns} sh -eu <<'NSEOF'"] + lines + ["NSEOF"]


def _side(port_names, ns):
    """Addresses, static neighbours and forwarding for one side of the links
    (run inside the side's namespace)."""
    settings, cmds = [], []
    for name in port_names:
        p, peer = PORTS[name], PORTS[PORTS[name].peer]
        settings += _quiet(name)
        cmds += [
            f"link set {name} address {p.mac}",
            f"addr add {p.ipv4} dev {name}",
            f"addr add {p.ipv6} dev {name} nodad",
            f"link set {name} up",
            f"neigh replace {addr(peer.ipv4)} lladdr {peer.mac} dev {name} nud permanent",
            f"neigh replace {addr(peer.ipv6)} lladdr {peer.mac} dev {name} nud permanent",
        ]
    if port_names == DUT_PORTS:
        settings += ["net/ipv4/ip_forward=1", "net/ipv6/conf/all/forwarding=1"]
        cmds += network_routes(port_names)
    return _sysctl(settings) + _batch(cmds)


LAB_NETWORKS = 256      # RFC 2544 section 12: the DUT routes 256 networks toward each tester port


def network_routes(dut_ports):
    """The DUT's routes for a stream's destination networks (flow_spread:
    dst_networks): behind each DUT port, the tester port's /24 and the
    LAB_NETWORKS - 1 /24s after it, via the tester port's address, and over
    IPv6 its /64 and the LAB_NETWORKS - 1 /64s after it (each tester port's
    /64 is 256 /64s after the other's: tx0 2001:2::, rx0 2001:2:0:100::)."""
    routes = []
    for name in dut_ports:
        peer = PORTS[PORTS[name].peer]
        first = ipaddress.IPv4Network(peer.ipv4, strict=False)
        for k in range(1, LAB_NETWORKS):
            net = ipaddress.IPv4Network((int(first.network_address) + k * 256, 24))
            routes.append(f"route add {net} via {addr(peer.ipv4)} dev {name}")
        first6 = ipaddress.IPv6Network(peer.ipv6, strict=False)
        for k in range(1, LAB_NETWORKS):
            net = ipaddress.IPv6Network((int(first6.network_address) + (k << 64), 64))
            routes.append(f"route add {net} via {addr(peer.ipv6)} dev {name}")
    return routes


CARRIER_WAIT_S = 20


def _wait_carrier(names):
    """Wait until the QEMU NICs report carrier: virtio does at once, e1000e
    some time after `link set up` (QEMU's autonegotiation timer, later under
    TCG). Until then the kernel drops what they send and pktgen refuses them."""
    tries = CARRIER_WAIT_S * 10
    return [f"for n in {' '.join(names)}; do i=0",
            "  until read -r c < \"/sys/class/net/$n/carrier\" && [ \"$c\" = 1 ]; do",
            f"    [ $i -lt {tries} ] || {{ echo \"no carrier on $n ({tries} waits of 0.1 s)\" >&2; exit 1; }}",
            "    sleep 0.1; i=$((i+1))",
            "  done", "done"]


def _tester_loop():
    """Route the tester's locally generated traffic between its two test
    addresses through the DUT (see the module docstring)."""
    tx, rx = PORTS["tx0"], PORTS["rx0"]
    dut0, dut1 = PORTS["dut0"], PORTS["dut1"]
    out = _sysctl(["net/ipv4/conf/all/rp_filter=0", "net/ipv4/conf/tx0/rp_filter=0",
                   "net/ipv4/conf/rx0/rp_filter=0", "net/ipv4/conf/tx0/accept_local=1",
                   "net/ipv4/conf/rx0/accept_local=1",
                   # test frames to closed UDP port 9 would each draw an ICMP
                   # error back through the DUT: allow a burst of 6 per peer a day
                   "net/ipv4/icmp_ratelimit=86400000", "net/ipv6/icmp/ratelimit=86400000"])
    for fam, key, in (("-4 ", "ipv4"), ("-6 ", "ipv6")):
        out += _batch([
            # move the local table behind our rules so a local destination can be routed out
            "rule add pref 1000 lookup local",
            "rule del pref 0 lookup local",
            f"rule add pref 100 iif lo to {addr(getattr(rx, key))} lookup {POLICY_TABLE}",
            f"rule add pref 101 iif lo to {addr(getattr(tx, key))} lookup {POLICY_TABLE}",
            f"route add {addr(getattr(rx, key))} via {addr(getattr(dut0, key))} dev tx0 "
            f"src {addr(getattr(tx, key))} table {POLICY_TABLE}",
            f"route add {addr(getattr(tx, key))} via {addr(getattr(dut1, key))} dev rx0 "
            f"src {addr(getattr(rx, key))} table {POLICY_TABLE}",
        ], family=fam)
    return out


def get(name) -> Topology:
    if name == "single":
        return Topology("single", [VM("tester", 1)], dut_vm="tester", dut_netns="dut", links={})
    if name == "two-host":
        return Topology("two-host", [VM("tester", 1, list(TESTER_PORTS)), VM("dut", 2, list(DUT_PORTS))],
                        dut_vm="dut", dut_netns=None, links={"tx0": "dut0", "rx0": "dut1"})
    raise BadInput(f"unknown lab topology '{name}' (known: {', '.join(TOPOLOGIES)})")


def from_hosts(hosts: int) -> str:
    if hosts == 1:
        return "single"
    if hosts == 2:
        return "two-host"
    raise BadInput(f"--hosts must be 1 or 2, not {hosts}")
