#!/usr/bin/env python3
"""One direction against both at once on one tester host, side by side in
one run (issue 31: "bidirectional on one tester host: each direction at
least 95 % of what one direction alone reaches on the same host").

Bidirectional traffic puts two generators on one tester host (the tx port's
on kpktgend_0, the rx port's on kpktgend_1) and one pgrx watching both
ports. Each round runs every case with one direction and with both, the
order alternating (ABBA...); reported per case: the median pps of the first
direction alone, of each direction with both running, and the lower of the
two as a share of the one-direction figure (median and min..max over
rounds), and the ratio of the medians (both / one), which the rounds'
noise moves less than a share taken round by round. On a host whose cores
are all busy (two vCPUs and QEMU's own threads on 2 cores) the pps mostly
show how the host shared its cores out; the last column divides that out:
each direction's frames per second of host CPU its vCPU's thread got
(generator i runs on kpktgend_i, pinned to vCPU i; read from QEMU's
/proc/PID/task), with both running / one alone, the lower direction's.

Cases (64 B frames, no rate limit, one lab VM with 2 vCPUs):
  generator, dummy    each direction into a dummy device of its own: the
                      tester host's generators alone (what the 95 % goal
                      is about)
  in-tree, dummy      the same with the in-tree pktgen: what two threads
                      on this host reach without our module, the host's
                      own share (QEMU's threads compete for the 2 cores)
  CPU loop            no packets: a user-space loop pinned to CPU 0 (and
                      one to CPU 1 for both), in iterations/s: what two
                      busy vCPUs of this VM get on this host at all, the
                      ceiling of any share measured here
  through the DUT     tx0 -> DUT -> rx0 and rx0 -> DUT -> tx0 over veth,
                      pgrx watching rx0 and tx0 at level basic. In the
                      single lab the DUT is a namespace of the same VM, so
                      its forwarding shares the 2 vCPUs with the
                      generators: this row shows the whole lab, not the
                      tester host

Usage: bench/kmod_bidir_ab.py [--lab NAME] [--rounds 6] [--count 100000]
"""
import os
import re
import statistics
from pathlib import Path

from kmod_common import DUT, INTREE, OURS, PG, lab_session, median, parser, table

DUMMIES = ("bdir0", "bdir1")


def handed(b, dev, count):
    """Frames per second the generator on `dev` handed to its driver
    (ours counts the frames veth dropped in tx_dropped: handed, not sent)."""
    packets, usec, _ = b.result(dev)
    m = re.search(r"tx_dropped: (\d+)", b.sh(f"cat {PG}/{dev}"))
    total = packets + (int(m.group(1)) if m else 0)
    assert total == count, (dev, total, count)
    return total * 1e6 / usec


def run(b, devices, count):
    """Start the (dev, dst_mac, src, dst) generators at once, one per
    thread; pps of each."""
    for t in range(2):
        b.pg(f"kpktgend_{t}", "rem_device_all")
    for t, (dev, mac, src, dst) in enumerate(devices):
        b.pg(f"kpktgend_{t}", f"add_device {dev}")
        b.pg(dev, f"count {count}", "pkt_size 60", "delay 0", f"dst_mac {mac}", f"dst {dst}", f"src_min {src}")
    if b.which == OURS:
        b.pg("pgrx", "rx_reset")
    b.start()
    return [handed(b, d[0], count) for d in devices]


def vcpu_seconds(b):
    """[host CPU seconds of each vCPU thread] of the lab's tester QEMU
    (TCG and KVM name their vCPU threads "CPU N/TCG", "CPU N/KVM")."""
    pid = b.lab.running_vms()["tester"]
    seconds = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        m = re.fullmatch(r"CPU (\d+)/(TCG|KVM)", (task / "comm").read_text().strip())
        if m:
            # task/TID/stat is that thread's; /proc/TID/stat would be the whole process's
            fields = (task / "stat").read_text().rsplit(")", 1)[-1].split()
            seconds[int(m.group(1))] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return [seconds[c] for c in sorted(seconds)]


def per_cpu_second(b, measure, amount):
    """measure() -> [rate of direction i]; returns it with [amount / host
    CPU seconds vCPU i's thread used meanwhile] (direction i runs on vCPU
    i): the work done per CPU second the host gave, whatever its sharing."""
    before = vcpu_seconds(b)
    rates = measure()
    used = [a - c for a, c in zip(vcpu_seconds(b), before)]
    return rates, [amount / used[i] for i in range(len(rates))]


LOOP_ITERATIONS = 3_000_000


LOOP_SCRIPT = f"""s=$(date +%s%N)
awk 'BEGIN {{ for (i = 0; i < {LOOP_ITERATIONS}; i++) x += i }}'
echo $(( $(date +%s%N) - s ))"""


def cpu_loops(b, cpus):
    """Iterations/s of an awk loop on each CPU, all started at once
    (/tmp/bench-loop.sh: LOOP_SCRIPT, written once by main)."""
    out = b.sh(" ".join(f"taskset -c {c} sh /tmp/bench-loop.sh > /tmp/bench-loop{c} &" for c in cpus) +
               " wait; cat " + " ".join(f"/tmp/bench-loop{c}" for c in cpus))
    return [LOOP_ITERATIONS * 1e9 / int(ns) for ns in out.split()]


def main():
    p = parser(__doc__)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--count", type=int, default=100_000)
    args = p.parse_args()
    got = {}        # (case, "one"|"both") -> [[pps per direction] per round]
    eff = {}        # the same, per host CPU second of the direction's vCPU
    with lab_session(args.lab) as b:
        b.use(OURS)
        dut1_mac = b.sh(DUT + "cat /sys/class/net/dut1/address").strip()
        fwd = ("tx0", b.dut_mac, "198.18.0.1", "198.19.0.1")
        back = ("rx0", dut1_mac, "198.19.0.1", "198.18.0.1")
        dummies = [(d, "02:00:00:00:00:99", "198.18.0.1", "198.19.0.1") for d in DUMMIES]
        # case -> (module, one direction, both directions)
        cases = {"generator, dummy": (OURS, dummies[:1], dummies),
                 "in-tree, dummy": (INTREE, dummies[:1], dummies),
                 "through the DUT": (OURS, [fwd], [fwd, back]),
                 "CPU loop": (None, [0], [0, 1])}
        b.sh("; ".join(f"ip link del {d} 2>/dev/null; ip link add {d} type dummy && ip link set {d} up"
                       for d in DUMMIES))
        b.sh(f"cat > /tmp/bench-loop.sh <<'EOF'\n{LOOP_SCRIPT}\nEOF")
        try:
            for r in range(args.rounds):
                order = ["one", "both"] if r % 4 in (0, 3) else ["both", "one"]
                modules = [OURS, INTREE] if r % 2 == 0 else [INTREE, OURS]
                for which in order:
                    cpus = cases["CPU loop"][1 if which == "one" else 2]
                    rates, per_s = per_cpu_second(b, lambda: cpu_loops(b, cpus), LOOP_ITERATIONS)
                    got.setdefault(("CPU loop", which), []).append(rates)
                    eff.setdefault(("CPU loop", which), []).append(per_s)
                for module in modules:
                    b.use(module)
                    if module == OURS:
                        b.pg("pgrx", "statistics basic", "display script", "rx rx0 tx0")
                    for name, (case_module, one, both) in cases.items():
                        if case_module != module:
                            continue
                        for which in order:
                            devices = one if which == "one" else both
                            rates, per_s = per_cpu_second(b, lambda: run(b, devices, args.count), args.count)
                            got.setdefault((name, which), []).append(rates)
                            eff.setdefault((name, which), []).append(per_s)
        finally:
            b.use(OURS)
            b.pg("pgrx", "rx_disable")
            b.sh("; ".join(f"ip link del {d} 2>/dev/null" for d in DUMMIES) + "; true")
    rows = []
    for name in cases:
        one = [r[0] for r in got[name, "one"]]
        both = got[name, "both"]
        shares = [min(pair) / alone for pair, alone in zip(both, one)]
        fwd_pps, back_pps = median([r[0] for r in both]), median([r[1] for r in both])
        eff_one = median([r[0] for r in eff[name, "one"]])
        eff_both = min(median([r[i] for r in eff[name, "both"]]) for i in range(2))
        rows.append([name, int(median(one)), int(fwd_pps), int(back_pps), f"{statistics.median(shares):.3f}",
                     f"{min(shares):.2f}..{max(shares):.2f}", f"{min(fwd_pps, back_pps) / median(one):.3f}",
                     f"{eff_both / eff_one:.3f}"])
    print(f"\n64 B frames, no rate limit, {args.rounds} rounds (order ABBA), {args.count} frames per direction, "
          "TCG lab VM with 2 vCPUs; share = the slower direction with both running / one direction alone "
          "(CPU loop: iterations/s, not pps); per CPU s = the same ratio of medians for frames (iterations) per host "
          "CPU second of the direction's vCPU thread")
    table(["case", "one direction pps", "both: forward pps", "both: reverse pps", "median share",
           "share min..max", "ratio of medians", "per CPU s"], rows)


if __name__ == "__main__":
    main()
