"""Drive the kernel's own pktgen (modprobe pktgen) on a lab host over SSH.

Used by the lab's self-tests and `rfc2544 lab demo` before the project's own
module exists: send a fixed count of UDP frames out of one port.
/proc/net/pktgen semantics: shared/reference/pktgen-interface.md.
"""
import ipaddress
import re
from dataclasses import dataclass

from rfc2544.errors import BadInput, InfraError
from rfc2544.drivers.validate import ifname_problem
from rfc2544.config.inventory import MAC_RE
from rfc2544.drivers.ssh import quote

UDP_PORT = 9        # pktgen's default (discard)
RESULT_RE = re.compile(r"Result: OK: (\d+)\(.*?\) usec, (\d+) \(")
SOFAR_RE = re.compile(r"pkts-sofar: (\d+)\s+errors: (\d+)")


@dataclass
class PktgenResult:
    sent: int           # pkts-sofar: frames pktgen handed to the device
    errors: int
    usec: int           # pktgen's own elapsed time
    raw: str

    @property
    def pps(self):
        return self.sent * 1e6 / self.usec if self.usec else 0.0


def _validate(dev, count, pkt_size, src_ip, dst_ip, dst_mac):
    if ifname_problem(dev or ""):
        raise BadInput(f"pktgen: '{dev}' is not an interface name")
    if not MAC_RE.match(dst_mac or ""):
        raise BadInput(f"pktgen: '{dst_mac}' is not a MAC address")
    if not isinstance(count, int) or not 1 <= count <= 10**9:
        raise BadInput(f"pktgen: count must be 1..1000000000, not {count!r}")
    if not isinstance(pkt_size, int) or not 60 <= pkt_size <= 9000:
        raise BadInput(f"pktgen: pkt_size must be 60..9000, not {pkt_size!r}")
    src, dst = ipaddress.ip_address(src_ip), ipaddress.ip_address(dst_ip)
    if src.version != dst.version:
        raise BadInput("pktgen: source and destination must be the same IP version")
    return src, dst


def script(dev, count, src_ip, dst_ip, dst_mac, pkt_size=60, ratep=None, wait_s=300):
    """The shell script that configures pktgen, sends, and prints the device file.

    The in-tree `start` gives its threads 125 ms to pick the run up before it
    waits on them; a loaded TCG guest can miss that, and the write returns
    with the device still at "Result: Starting". So the script waits for the
    device's own "Result: OK: N(cN+dN) usec" (at most `wait_s` seconds) before printing it.
    """
    src, dst = _validate(dev, count, pkt_size, src_ip, dst_ip, dst_mac)
    if ratep is not None and (not isinstance(ratep, int) or ratep <= 0):
        raise BadInput(f"pktgen: ratep must be a positive whole number, not {ratep!r}")
    # 6.1 drops the last byte of each write: every command ends with a newline.
    settings = [f"count {count}", "clone_skb 0", f"pkt_size {pkt_size}", "delay 0",
                f"dst_mac {dst_mac}", f"udp_src_min {UDP_PORT}", f"udp_src_max {UDP_PORT}",
                f"udp_dst_min {UDP_PORT}", f"udp_dst_max {UDP_PORT}"]
    if dst.version == 6:
        settings += [f"dst6 {dst}", f"src6 {src}"]
    else:
        settings += [f"dst {dst}", f"src_min {src}", f"src_max {src}"]
    if ratep:
        settings.append(f"ratep {ratep}")
    pg = f"/proc/net/pktgen/{dev}"
    lines = [
        "set -e",
        # a fresh module has no devices; rem_device_all is asynchronous and
        # could remove our device after we add it, so reload instead
        "rmmod pktgen 2>/dev/null || true",
        "modprobe pktgen",
        f"echo {quote('add_device ' + dev)} > /proc/net/pktgen/kpktgend_0",
    ]
    lines += [f"echo {quote(s)} > {quote(pg)}" for s in settings]
    lines += ["echo start > /proc/net/pktgen/pgctrl", wait_for_result(pg, wait_s), f"cat {quote(pg)}"]
    return "\n".join(lines) + "\n"


def wait_for_result(device_file, wait_s):
    """A shell line that waits (at most `wait_s` s) until the in-tree device
    file holds a run's result, "Result: OK: N(c...", not a command's "OK:
    count=...": the in-tree `start` can return before its threads picked
    the run up (it gives them 125 ms)."""
    polls = max(1, int(wait_s * 10))
    return (f"i=0; while ! grep -q '^Result: OK: [0-9]*(c' {quote(device_file)} && [ $i -lt {polls} ]; do"
            " sleep 0.1; i=$((i + 1)); done")


def parse(text) -> PktgenResult:
    sofar, result = SOFAR_RE.search(text), RESULT_RE.search(text)
    if not sofar or not result:
        raise InfraError(f"pktgen: unexpected device file: {text.strip()[-200:]}")
    return PktgenResult(sent=int(sofar.group(1)), errors=int(sofar.group(2)),
                        usec=int(result.group(1)), raw=text)


def send(host, dev, count, src_ip, dst_ip, dst_mac, pkt_size=60, ratep=None, timeout=300):
    """Send `count` frames out of `dev` on `host` (an SSHHost); blocks until done."""
    text = host.run("sh -s", stdin=script(dev, count, src_ip, dst_ip, dst_mac, pkt_size, ratep,
                                          wait_s=max(1, timeout - 30)),
                    timeout=timeout)[1]
    return parse(text)


def unload(host):
    """rmmod pktgen so the next test sees a clean kernel (busy is fine to ignore)."""
    host.run("rmmod pktgen 2>/dev/null; true", check=False)
