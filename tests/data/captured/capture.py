"""Capture real /proc output from a lab VM for the parser tests.

Usage (lab up, e.g. `rfc2544 lab up --name drv`):
    python tests/data/captured/capture.py --lab drv intree
    python tests/data/captured/capture.py --lab drv module   # rfc2544_pktgen loaded
Writes <kind>-*.txt next to this file: the exact text `cat` printed on the
tester VM (Debian 12, kernel 6.1.0-50-amd64, QEMU TCG), nothing edited.
Traffic goes only from tester:tx0 through the lab DUT namespace to rx0.
"""
import argparse
from pathlib import Path

from rfc2544.lab import Lab

HERE = Path(__file__).parent
P = "/proc/net/pktgen"

SETUP = f"""set -e
echo stop > {P}/pgctrl; echo reset > {P}/pgctrl
echo "add_device tx0" > {P}/kpktgend_0
for c in "pkt_size 60" "count 2000" "clone_skb 0" "ratep 1000" "dst_mac 02:00:00:18:00:02" \
         "flag !IPV6" "src_min 198.18.0.1" "src_max 198.18.0.1" "dst_min 198.19.0.1" "dst_max 198.19.0.1" \
         "clear_counters"; do echo "$c" > {P}/tx0; done
"""

IPV6 = f"""set -e
for c in "src6 2001:2::1" "dst6 2001:2:0:1::1" "flag IPV6" "count 50" "ratep 1000"; do echo "$c" > {P}/tx0; done
"""


def run(host, cmd):
    status, out, err = host.run(cmd, timeout=120, check=False)
    if status:
        raise SystemExit(f"'{cmd[:60]}...' failed: {err.strip()}")
    return out


def save(kind, name, text):
    path = HERE / f"{kind}-{name}.txt"
    path.write_text(text)
    print(f"wrote {path} ({len(text)} bytes)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lab", default="default")
    ap.add_argument("kind", choices=["intree", "module"])
    a = ap.parse_args()
    lab = Lab(a.lab)
    host = lab.connect("tester")
    try:
        if a.kind == "intree":
            run(host, "lsmod | grep -q rfc2544_pktgen && exit 1; modprobe pktgen")
        save(a.kind, "pgctrl", run(host, f"cat {P}/pgctrl"))
        run(host, SETUP)
        save(a.kind, "kpktgend_0", run(host, f"cat {P}/kpktgend_0"))
        save(a.kind, "device-configured", run(host, f"cat {P}/tx0"))
        if a.kind == "module":
            run(host, f"echo 'rx rx0' > {P}/pgrx; echo 'display script' > {P}/pgrx; echo 'statistics time' > {P}/pgrx")
        # a 2 s run at 1000 frames/s, then a read while running and after
        run(host, f"(echo start > {P}/pgctrl &) ; sleep 0.8; cat {P}/tx0 > /tmp/pg_running.txt; sleep 2")
        run(host, f"while grep -q Starting {P}/tx0; do sleep 0.1; done; true")
        save(a.kind, "device-running", run(host, "cat /tmp/pg_running.txt"))
        save(a.kind, "device-finished", run(host, f"cat {P}/tx0"))
        if a.kind == "module":
            save(a.kind, "pgrx-script", run(host, f"cat {P}/pgrx"))
        run(host, IPV6)
        save(a.kind, "device-ipv6", run(host, f"cat {P}/tx0"))
        run(host, f"echo stop > {P}/pgctrl; echo reset > {P}/pgctrl")
    finally:
        host.close()


if __name__ == "__main__":
    main()
