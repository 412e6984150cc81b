#!/usr/bin/env python3
"""Control overhead per trial: the batched driver vs one `ssh` per command.

Overhead = wall time of a trial minus its traffic time (the generator's own
elapsed sending time from the device's Result line). Both sides do the same
trial, in the same run, on the same lab: configure the pktgen device, check
counters zero, start (blocking), read the device file and rx counters.

  driver    rfc2544.tester.SSHTester.run_trial (one persistent SSH
            connection, one batch script per phase, start on a pre-opened
            channel), waits set to 0, no learning frames
  baseline  `ssh host 'echo CMD > /proc/net/pktgen/tx0'` per command with the
            OpenSSH client and the lab's known_hosts, `ssh host cat FILE`
            per read, `ssh host 'echo start > pgctrl'` for the run

Goals (issue 5): driver overhead <= 20 ms and >= 10x better than baseline.
Note: the in-tree pktgen's `pgctrl start` sleeps ~125 ms before its
threads run and polls for their end every 100 ms; both sides pay that.

Usage: bench/control_overhead.py [--lab NAME] [--trials N] [--module]
(`--lab` names a running lab; without it a lab `bench-overhead` is brought
up and down again.)
"""
import argparse
import statistics
import subprocess
import sys
import time

from rfc2544 import inventory
from rfc2544.drivers import pktgen
from rfc2544.drivers.plan import device_configs
from rfc2544.model import TrialSpec
from rfc2544.tester import SSHTester

RATE, DURATION = 1000, 0.5


def baseline_trial(host, tester, spec):
    """One trial with one OpenSSH invocation per /proc command."""
    counts, rates = tester._counts_and_rates(spec)
    cfg = device_configs(tester.plans, spec, counts, rates)[0]
    dev = pktgen.device_path(cfg.device)
    rx = tester.plans[0].rx_port
    t0 = time.monotonic()
    for cmd in cfg.commands():
        ssh(host, f"echo '{cmd}' > {dev}")
    ssh(host, f"cat {dev}")                                        # zero check: generator
    ssh(host, f"cat /sys/class/net/{rx}/statistics/rx_packets")   # zero check: receiver
    ssh(host, "echo start > /proc/net/pktgen/pgctrl")             # blocking run
    text = ssh(host, f"cat {dev}")
    ssh(host, f"cat /sys/class/net/{rx}/statistics/rx_packets")
    wall = time.monotonic() - t0
    state = pktgen.parse_device(text)
    if state.run is None:
        raise SystemExit("baseline: the device reported no run result")
    return wall, state.run.elapsed_s


def ssh(host, command):
    args = ["ssh", "-q", "-p", str(host.port), "-i", host.key_file, "-o", f"UserKnownHostsFile={host.known_hosts}",
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
            f"{host.user}@{host.address}", command]
    r = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"baseline ssh failed: {command}: {r.stderr.strip()}")
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lab", help="a running lab's name (default: bring up 'bench-overhead')")
    ap.add_argument("--trials", type=int, default=5)
    a = ap.parse_args()
    from rfc2544.lab import Lab
    lab = Lab(a.lab or "bench-overhead")
    own = not lab.is_up()
    if own:
        if a.lab:
            raise SystemExit(f"lab {a.lab} is not up")
        lab.up()
    try:
        inv = inventory.load(lab.inventory_path)
        tester = SSHTester(inv, waits={"learning_s": 0, "residual_s": 0, "learning_frames": 0})
        spec = TrialSpec(frame_size=64, load_fps=RATE, duration_s=DURATION, learning=False, test="bench")
        tester.run_trial(spec)          # setup (device added) outside the measurement
        host = inv.hosts[tester.plans[0].tx_host]
        rows = {"driver": [], "baseline": []}
        phases = []
        for _ in range(a.trials):       # interleaved: both see the same lab load
            t0 = time.monotonic()
            r = tester.run_trial(spec)
            rows["driver"].append((time.monotonic() - t0, r.traffic_s))
            phases.append(dict(tester.last_phases))
            rows["baseline"].append(baseline_trial(host, tester, spec))
        tester.close()
    finally:
        if own:
            lab.down()
    print(f"control overhead per trial: {a.trials} trials each, {RATE} frames/s x {DURATION} s, "
          f"generator {tester.generator_name}, receiver {tester.receiver_name}")
    print(f"{'method':<10} {'wall s':>8} {'traffic s':>10} {'overhead ms':>12} {'min ms':>8} {'max ms':>8}")
    med = {}
    for name, vals in rows.items():
        over = [(w - t) * 1000 for w, t in vals]
        med[name] = statistics.median(over)
        print(f"{name:<10} {statistics.median(w for w, _ in vals):>8.3f} {statistics.median(t for _, t in vals):>10.3f} "
              f"{med[name]:>12.1f} {min(over):>8.1f} {max(over):>8.1f}")
    ratio = med["baseline"] / med["driver"] if med["driver"] > 0 else float("inf")
    print(f"baseline / driver = {ratio:.1f}x (goal >= 10x); driver overhead {med['driver']:.1f} ms (goal <= 20 ms)")
    keys = sorted({k for p in phases for k in p})
    print("driver phases (median ms): " + ", ".join(
        f"{k} {statistics.median(p.get(k, 0) for p in phases) * 1000:.1f}" for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
