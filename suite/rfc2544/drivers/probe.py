"""Which traffic tools a host has (one command, parsed by a pure function)."""
from dataclasses import dataclass, field
from typing import List, Optional

from rfc2544.drivers import pktgen

PROBE_SCRIPT = r"""p=/proc/net/pktgen
err=
if [ ! -e $p/pgctrl ] && [ "$LOAD" = 1 ]; then err=$(modprobe pktgen 2>&1) || true; fi
[ -e $p/pgctrl ] && echo "pgctrl $(head -n1 $p/pgctrl)"
[ -e $p/pgrx ] && echo pgrx
for f in $p/kpktgend_*; do [ -e "$f" ] && echo "thread ${f##*_}"; done
[ -r /sys/module/rfc2544_pktgen/version ] && echo "modver $(cat /sys/module/rfc2544_pktgen/version)"
[ -n "$err" ] && echo "modprobe_error $(echo "$err" | head -n1)"
true"""


@dataclass
class HostProbe:
    pgctrl: bool = False
    pgrx: bool = False
    banner: str = ""
    version: Optional[str] = None
    module_version: Optional[str] = None
    threads: List[int] = field(default_factory=list)
    modprobe_error: Optional[str] = None


def parse_probe(text) -> HostProbe:
    pr = HostProbe()
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "pgctrl":
            pr.pgctrl = True
            pr.banner, pr.version = pktgen.parse_banner(rest)
        elif word == "pgrx":
            pr.pgrx = True
        elif word == "thread" and rest.strip().isdigit():
            pr.threads.append(int(rest))
        elif word == "modver":
            pr.module_version = rest.strip() or None
        elif word == "modprobe_error":
            pr.modprobe_error = rest.strip() or None
    pr.threads.sort()
    return pr


def probe_host(session, load_pktgen=True) -> HostProbe:
    script = f"LOAD={'1' if load_pktgen else '0'}\n{PROBE_SCRIPT}"
    status, out, err = session.run(script, timeout=30)
    return parse_probe(out)
