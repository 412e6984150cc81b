"""Count test frames arriving on a port: a tc flower filter on the port's
ingress that matches only pktgen's UDP frames from one address to another.
Exact regardless of other traffic on the port."""
import ipaddress
import json

from rfc2544.errors import BadInput, InfraError
from rfc2544.drivers.validate import ifname_problem
from rfc2544.drivers.ssh import quote

PREF = 40000


class FlowCounter:
    def __init__(self, host, dev, src_ip, dst_ip, udp_dst=9, prefix="", action="pass"):
        if ifname_problem(dev or ""):
            raise BadInput(f"flow counter: '{dev}' is not an interface name")
        self.src, self.dst = ipaddress.ip_address(src_ip), ipaddress.ip_address(dst_ip)
        self.host, self.dev, self.udp_dst, self.prefix = host, dev, int(udp_dst), prefix
        if action not in ("pass", "drop"):
            raise BadInput(f"flow counter: action '{action}' is not pass or drop")
        self.action = action        # drop: counted frames go no further (the cheapest receiver)
        self._made_qdisc = False

    def _run(self, cmd, check=True):
        return self.host.run(self.prefix + cmd, check=check)

    def install(self):
        proto = "ipv6" if self.src.version == 6 else "ip"
        status, out, _ = self._run(f"tc qdisc show dev {quote(self.dev)}")
        if "clsact" not in out:
            self._run(f"tc qdisc add dev {quote(self.dev)} clsact")
            self._made_qdisc = True
        self._run(f"tc filter add dev {quote(self.dev)} ingress pref {PREF} protocol {proto} flower "
                  f"ip_proto udp src_ip {self.src} dst_ip {self.dst} dst_port {self.udp_dst} "
                  f"action gact {self.action}")
        return self

    def count(self) -> int:
        out = self._run(f"tc -s -j filter show dev {quote(self.dev)} ingress pref {PREF}")[1]
        try:
            for entry in json.loads(out):
                for action in (entry.get("options") or {}).get("actions", []):
                    return int(action["stats"]["packets"])
        except (ValueError, KeyError, TypeError):
            pass
        raise InfraError(f"flow counter on {self.dev}: cannot read tc stats: {out.strip()[:200]}")

    def remove(self):
        self._run(f"tc filter del dev {quote(self.dev)} ingress pref {PREF}", check=False)
        if self._made_qdisc:
            self._run(f"tc qdisc del dev {quote(self.dev)} clsact", check=False)

    def __enter__(self):
        return self.install()

    def __exit__(self, *exc):
        self.remove()


def rx_packets(host, dev, prefix=""):
    """The interface's own rx_packets counter."""
    return int(host.run(prefix + f"cat /sys/class/net/{quote(dev)}/statistics/rx_packets")[1])


def backlog_drops(host):
    """Frames the host's CPUs dropped because their input backlog was full
    (/proc/net/softnet_stat, second column, summed): under TCG, the burst a
    generator sends to catch up after a vCPU stall."""
    text = host.run("cat /proc/net/softnet_stat")[1]
    return sum(int(line.split()[1], 16) for line in text.splitlines() if line.strip())
