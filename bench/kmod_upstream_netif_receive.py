#!/usr/bin/env python3
"""The kernel's own netif_receive benchmark, run as a new user would:
rfc2544_pktgen vs the in-tree pktgen in the same lab VM (issue 31).

samples/pktgen/pktgen_bench_xmit_mode_netif_receive.sh (with the
functions.sh and parameters.sh it sources) is unpacked from Debian's
linux-source-6.1 tarball (a `make deps` package) and copied to the tester
VM unchanged. Each run: `-i rx0 -b BURST -n COUNT`, i.e. 60-byte frames
(64 B with FCS) to a foreign MAC injected into rx0's receive path, the same
skb BURST times, NO_TIMESTAMP, 1 thread. The figure is the script's Result
pps. Each round runs every module once, the order rotating from round to
round; the table gives each round and the medians. Goal: ours / in-tree
>= 1.0. With --baseline-rev REV, rfc2544_pktgen as of REV runs beside them
(a change's effect, measured in the same rounds).

Usage: bench/kmod_upstream_netif_receive.py [--lab NAME] [--rounds 6]
                  [--burst 32] [--count 2000000] [--baseline-rev REV]
"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from kmod_common import INTREE, OURS, REMOTE_KO, lab_session, median, parser, table
from kmod_rx_scaling import BASE_KO, export
from rfc2544.drivers.ssh import put_file

TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
SCRIPT = "pktgen_bench_xmit_mode_netif_receive.sh"
FILES = ("functions.sh", "parameters.sh", SCRIPT)
REMOTE = "/root/upstream-pktgen-samples"


def unpack_samples(dest, files=FILES):
    if not TARBALL.exists():
        sys.exit(f"{TARBALL} is missing: run 'make deps' (package linux-source-6.1)")
    members = [f"linux-source-6.1/samples/pktgen/{f}" for f in files]
    subprocess.run(["tar", "-xJf", str(TARBALL), "-C", str(dest), "--strip-components=3",
                    *members], check=True)
    return dest


def main():
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--burst", type=int, default=32)
    p.add_argument("--count", type=int, default=2_000_000)
    p.add_argument("--baseline-rev", default=None,
                   help="also run rfc2544_pktgen as of this git revision")
    args = p.parse_args()
    # column -> (module, its .ko on the VM)
    modules = {"ours": (OURS, REMOTE_KO), "in-tree": (INTREE, None)}
    if args.baseline_rev:
        modules[f"ours@{args.baseline_rev}"] = (OURS, BASE_KO)
    names = list(modules)
    got = {n: [] for n in names}
    rows = []
    with tempfile.TemporaryDirectory() as tmp, lab_session(args.lab) as b:
        if args.baseline_rev:
            b.push_module(export(args.baseline_rev), BASE_KO)
        samples = unpack_samples(Path(tmp))
        b.sh(f"mkdir -p {REMOTE}")
        for f in FILES:
            put_file(b.host, samples / f, f"{REMOTE}/{f}")
        for r in range(args.rounds):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                module, ko = modules[name]
                b.use(module, ko) if ko else b.use(module)
                out = b.sh(f"cd {REMOTE} && bash ./{SCRIPT} -i rx0 -b {args.burst} "
                           f"-n {args.count} 2>&1")
                m = re.search(r"Result: OK: \d+\(c\d+\+d\d+\) usec, (\d+) .*?(\d+)pps", out, re.S)
                if not m:
                    raise RuntimeError(f"{name}: no Result in the script's output:\n{out[-600:]}")
                got[name].append(int(m.group(2)))
            rows.append([r + 1, *(got[n][-1] for n in names),
                         f"{got['ours'][-1] / got['in-tree'][-1]:.3f}"])
    ratio = median(got["ours"]) / median(got["in-tree"])
    rows.append(["median", *(int(median(got[n])) for n in names), f"{ratio:.3f}"])
    print(f"\n{SCRIPT} -i rx0 -b {args.burst} -n {args.count}, 1 thread, TCG lab VM")
    table(["round", *(f"{n} pps" for n in names), "ours/in-tree"], rows)
    print(f"\ngoal ours/in-tree >= 1.0: {'met' if ratio >= 1.0 else 'NOT met'} ({ratio:.3f})")
    return 0 if ratio >= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
