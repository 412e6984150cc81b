#!/usr/bin/env python3
"""Control overhead per trial: the batched driver vs one `ssh` per command.

Overhead = wall time of a trial minus its traffic time (the generator's own
elapsed sending time from the device's Result line). Both sides do the same
trial, in the same run, on the same lab: configure the pktgen device, check
counters zero, start (blocking), read the device file and rx counters.

  driver    rfc2544.engine.tester.SSHTester.run_trial (one persistent SSH
            connection, one batch script per phase, start on a pre-opened
            channel), waits set to 0, no learning frames
  baseline  `ssh host 'echo CMD > /proc/net/pktgen/tx0'` per command with the
            OpenSSH client and the lab's known_hosts, `ssh host cat FILE`
            per read, `ssh host 'echo start > pgctrl'` for the run

Goals (issue 5): driver overhead <= 20 ms and >= 10x better than baseline.
Note: the in-tree pktgen's `pgctrl start` sleeps ~125 ms before its
threads run and polls for their end every 100 ms; both sides pay that.

Before/after (issue 12), interleaved in the same run on the same lab:
  before    every device command written each trial, a start shell spawned
            per trial whose exit reports the end (TrialSettings.diff_writes
            and Transport.loop_starts off)
  read apart  only changed commands written, the whole device state
            verified on read-back in the same batch; one persistent start
            shell whose PGDONE line reports the end the moment pgctrl's
            wait returns; the final read in a round trip of its own
            (TrialSettings.fold_read off)
  after     as `read apart`, but the start shell's script also does the
            final read right after PGDONE (no round trip of its own)
Trials alternate between two rates, as a search does, so every trial
changes count and rate. Phases (median ms): configure; start/end = the
traffic phase minus the generator's own sending time; read; other
(setup, settle, residual, start channel exit). Floors measured between the
trials: an empty batch round trip on the persistent shell, one /proc write
(clear_counters) in a batch, and one read of the trial's counter files.

Usage: bench/control_overhead.py [--lab NAME] [--trials N] [--baseline]
(`--lab` names a running lab; without it a lab `bench-overhead` is brought
up and down again; `--baseline` adds the one-ssh-per-command rows, slow.)
"""
import argparse
import statistics
import subprocess
import sys
import time

from rfc2544.config import inventory
from rfc2544.drivers import pgrx, pktgen
from rfc2544.drivers.streams import device_configs
from rfc2544.drivers.script import Batch
from rfc2544.model import TrialSpec
from rfc2544.engine.tester import SSHTester

RATES, DURATION = (1000, 800), 0.5
PHASES = ("configure", "start/end", "read", "other", "total")
MODES = ("before", "read apart", "after")


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


_STASH = {}


def set_mode(tester, mode):
    """Switch the tester between the old and the new control; the
    persistent start shell is set aside during `before` trials (it would
    otherwise be closed and spawned again in every other one)."""
    after = mode != "before"
    tr = tester.transport
    tester.engine.settings.diff_writes = after
    tester.engine.settings.fold_read = mode == "after"
    if tr.loop_starts != after:
        tr.loop_starts = after
        if after:
            tr.drop_spares()
            tr._spare_starts.update(_STASH)
            _STASH.clear()
        else:
            _STASH.update(tr._spare_starts)
            tr._spare_starts.clear()


def phase_row(phases, wall, traffic_s):
    ph = dict(phases)
    row = {"configure": ph.pop("configure", 0.0), "start/end": ph.pop("traffic", 0.0) - traffic_s,
           "read": ph.pop("read", 0.0)}
    row["other"] = sum(ph.values())
    row["total"] = wall - traffic_s
    return {k: v * 1000 for k, v in row.items()}


def floors(tester, spec):
    """An empty round trip, one /proc write, one counter read, and the
    configure batch's own work without the engine around it (receiver
    reset, count, rate, clear_counters, read-back: what `after` sends),
    each in a batch on the persistent shell (ms)."""
    host = tester.plans[0].tx_host
    session = tester.transport.session(host)
    dev = pktgen.device_path(tester.plans[0].device)
    reads = tester.engine.reader.batches("floor")[host]
    counts, rates = tester._counts_and_rates(spec)
    cfg = device_configs(tester.plans, spec, counts, rates)[0]
    configure = Batch()
    if tester.receiver_name == "pgrx":
        pgrx.reset_batch(None, configure)
    for cmd in cfg.commands():
        if pktgen.command_key(cmd) in ("count", "delay", "clear_counters"):
            configure.write(dev, cmd)
    configure.extend(reads)
    out = {}
    for name, batch in (("empty round trip", Batch()), ("one /proc write", Batch().write(dev, "clear_counters")),
                        ("one counter read", reads), ("configure batch", configure)):
        t0 = time.monotonic()
        session.run_batch(batch)
        out[name] = (time.monotonic() - t0) * 1000
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lab", help="a running lab's name (default: bring up 'bench-overhead')")
    ap.add_argument("--trials", type=int, default=7, help="trials per mode")
    ap.add_argument("--baseline", action="store_true", help="also one ssh per command (slow)")
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
        specs = [TrialSpec(frame_size=64, load_fps=r, duration_s=DURATION, learning=False, test="bench")
                 for r in RATES]
        for sp in specs:
            tester.run_trial(sp)        # setup (device added, start shell) outside the measurement
        host = inv.hosts[tester.plans[0].tx_host]
        rows = {m: [] for m in MODES}
        writes = {m: [] for m in MODES}
        floor_rows = []
        baseline = []
        k = 0
        for _ in range(a.trials):       # interleaved: both see the same lab load
            for mode in MODES:
                set_mode(tester, mode)
                n0 = tester.engine.control_counts["writes"]
                t0 = time.monotonic()
                r = tester.run_trial(specs[k % 2])
                wall = time.monotonic() - t0
                k += 1
                writes[mode].append(tester.engine.control_counts["writes"] - n0)
                rows[mode].append(phase_row(tester.last_phases, wall, r.traffic_s))
            floor_rows.append(floors(tester, specs[(k - 1) % 2]))
            if a.baseline:
                baseline.append(baseline_trial(host, tester, specs[0]))
        counts = dict(tester.engine.control_counts)
        tester.close()
    finally:
        if own:
            lab.down()
    print(f"control overhead per trial: {a.trials} trials per mode, {'/'.join(map(str, RATES))} frames/s "
          f"alternating x {DURATION} s, generator {tester.generator_name}, receiver {tester.receiver_name}")
    print(f"{'phase (median ms)':<20}" + "".join(f" {m:>10}" for m in MODES))
    for ph in PHASES:
        print(f"{ph:<20}" + "".join(f" {statistics.median(r[ph] for r in rows[m]):>10.1f}" for m in MODES))
    print(f"{'device writes/trial':<20}" + "".join(f" {statistics.median(writes[m]):>10.0f}" for m in MODES))
    print("floor (median ms, same run)")
    for name in floor_rows[0]:
        print(f"  {name:<18} {statistics.median(f[name] for f in floor_rows):>9.1f}")
    print(f"verified configures {counts['configures']}, full writes {counts['full_writes']}, "
          f"mismatches {counts['mismatches']}, unverifiable {counts['unverifiable']}")
    after = statistics.median(r["total"] for r in rows["after"])
    print(f"after: overhead {after:.1f} ms median (goal <= 20 ms)")
    if baseline:
        over = [(w - t) * 1000 for w, t in baseline]
        print(f"baseline (one ssh per command): overhead {statistics.median(over):.1f} ms median, "
              f"{statistics.median(over) / after:.1f}x the driver's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
