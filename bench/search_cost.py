#!/usr/bin/env python3
"""Traffic-seconds to the NDR at 0.5 % resolution: classic RFC 2544
bisection vs MLRsearch (RFC 9971), each with and without early abort.

Runs on the simulated DUT (rfc2544.sim.dut: no network, simulated time) for
each DUT kind, all in one run, and prints one table side by side. The
baseline is the classic bisection with every trial full length (60 s), as
RFC 2544 is usually run. `wall` adds the RFC 2544 section 23 waits per trial
(2 s learning + 2 s residual + 5 s settle) to the traffic time.

    .venv/bin/python bench/search_cost.py [--final 60] [--resolution 0.5]

With `--lab NAME` (a running lab: `rfc2544 lab up --name NAME`) the same
strategies also run for real against the lab's DUT capped by a token bucket
(Lab.cap_dut: 3000 packets/s, a 1500-packet bucket, so the true NDR of a
trial of D s is 3000 + 1500 / D), with trials scaled down (`--lab-final`,
default 4 s; search trials 1 s) to fit TCG; `wall s` is then measured.
"""
import argparse
import time

from rfc2544.sim import dut as simdut
from rfc2544.procedures.measure import make_measure
from rfc2544.model import theoretical_max_fps
from rfc2544.search import search

WAITS_PER_TRIAL_S = 2 + 2 + 5


def strategies(final):
    return [
        ("bisection, all trials full length (baseline)", "bisection", dict(search_duration=final), False),
        ("bisection, all trials full length + early abort", "bisection", dict(search_duration=final), True),
        ("bisection, 10 s trials + full-length confirm", "bisection", dict(search_duration=10.0), False),
        ("bisection, 10 s trials + confirm + early abort", "bisection", dict(search_duration=10.0), True),
        ("MLRsearch 1 s -> full length", "mlr", dict(search_duration=1.0), False),
        ("MLRsearch 1 s -> full length + early abort", "mlr", dict(search_duration=1.0), True),
    ]


def lab_table(name, final, res):
    from rfc2544.config import inventory
    from rfc2544.lab import Lab
    from rfc2544.engine.tester import SSHTester

    lab = Lab(name)
    inv = inventory.load(lab.inventory_path)
    cap, burst = 3000, 1500
    known = cap + burst / final
    waits = {"learning_s": 0.2, "residual_s": 0.3, "settle_s": 0.2}
    lab.cap_dut(cap, burst)
    rows = []
    try:
        with SSHTester(inv, waits=waits) as tester:
            for label, method, kw, abort in strategies(final):
                # full-length strategies stay full length; the others search with 1 s trials
                kw = dict(kw, search_duration=final if kw["search_duration"] == final else 1.0)
                t0 = time.monotonic()
                r = search(method, make_measure(tester.run_trial, 64, early_abort=abort,
                                                tester_limited_retries=1),
                           min_load=cap / 10, max_load=2 * cap, resolution=res, final_duration=final, **kw)
                wall = time.monotonic() - t0
                err = (r.ndr_fps - known) / known * 100 if r.ndr_fps else float("nan")
                rows.append((label.replace("10 s trials", "1 s trials"), r.trials, r.traffic_s, wall, err))
    finally:
        lab.uncap_dut()
    print(f"\nIn the lab '{name}' (TCG): DUT a token bucket of {cap:,} fps + {burst:,} packets "
          f"(true NDR at {final:g} s: {known:,.0f} fps), 64 B, max load {2 * cap:,} fps, "
          f"resolution {res * 100:g} %, full trial {final:g} s")
    print(f"{'strategy':<48} | {'trials':>6} {'traffic s':>9} {'wall s':>7} {'err %':>7}")
    base = rows[0][2]
    for label, trials, traffic, wall, err in rows:
        print(f"{label:<48} | {trials:>6} {traffic:>9.1f} {wall:>7.0f} {err:>7.2f}   ({traffic / base:.2f}x)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--final", type=float, default=60.0, help="full trial length, s")
    ap.add_argument("--resolution", type=float, default=0.5, help="relative width, %%")
    ap.add_argument("--lab", metavar="NAME", help="also run in this (running) lab")
    ap.add_argument("--lab-final", type=float, default=4.0, help="full trial length in the lab, s")
    args = ap.parse_args()
    res = args.resolution / 100
    max_load = theoretical_max_fps(64, 10_000)          # 10GbE, 64 B
    kinds = [k for k in sorted(simdut.KINDS) if simdut.KINDS[k][1] is not None]
    rows = []
    for label, method, kw, abort in strategies(args.final):
        row = [label]
        for kind in kinds:
            true_ndr = simdut.KINDS[kind][1]
            sim = simdut.make(kind)
            r = search(method, make_measure(sim.run_trial, 64, early_abort=abort),
                       min_load=max_load / 100, max_load=max_load, resolution=res,
                       final_duration=args.final, **kw)
            err = (r.ndr_fps - true_ndr) / true_ndr * 100 if r.ndr_fps else float("nan")
            wall = r.traffic_s + r.trials * WAITS_PER_TRIAL_S
            row.append((r.trials, r.traffic_s, wall, err))
        rows.append(row)
    print(f"NDR search cost on the simulated DUT (64 B, max load {max_load:,.0f} fps = 10GbE line rate, "
          f"true NDR 1,000,000 fps or 600,000 at the tester ceiling), resolution {args.resolution} %, "
          f"full trial {args.final:g} s")
    head = f"{'strategy':<48}" + "".join(f" | {k:^33}" for k in kinds)
    sub = f"{'':<48}" + "".join(f" | {'trials':>6} {'traffic s':>9} {'wall s':>7} {'err %':>7}" for _ in kinds)
    print(head)
    print(sub)
    print("-" * len(sub))
    base = rows[0]
    for row in rows:
        cells = "".join(f" | {t:>6} {s:>9.1f} {w:>7.0f} {e:>7.2f}" for t, s, w, e in row[1:])
        print(f"{row[0]:<48}{cells}")
    print()
    print("traffic-seconds relative to the baseline:")
    for row in rows[1:]:
        ratios = "  ".join(f"{k}: {c[1] / b[1]:.2f}x" for k, c, b in zip(kinds, row[1:], base[1:]))
        print(f"  {row[0]:<48} {ratios}")
    if args.lab:
        lab_table(args.lab, args.lab_final, args.resolution / 100)


if __name__ == "__main__":
    main()
