#!/usr/bin/env python3
"""Write the known results files the report and compare tests read.

    python tests/data/results/generate.py     # rewrites the *.json beside it

They are simulated, and say so in `notes`: a two-host 1 GbE run against a
Linux router model that forwards 64- and 128-byte frames below line rate.
Every section is derived from the simulated trial log the same way the suite
derives it (bisection on the highest zero-loss load, RFC 2544 frame-loss steps
from 100 % down by 10 %, and so on), so the files are self-consistent:
- complete.json          every planned test finished
- partial.json           the same run cut short during throughput at 1024 B
- corrupt.json           complete.json truncated mid-file (a damaged copy)
- unknown-version.json   complete.json claiming schema_version 99
"""
import copy
import json
import math
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINK_MBPS = 1000
FRAME_SIZES = [64, 128, 256, 512, 1024, 1280, 1518]
DUT_CAPACITY_FPS = {64: 822_400, 128: 834_000}   # others forward at line rate
TESTER_CEILING_FPS = {64: 1_412_000, 128: 828_000}  # calibrated, frames/s
SEARCH_TRIAL_S = 10.0
FINAL_TRIAL_S = 60.0
RESOLUTION_PCT = 0.5
START = datetime(2026, 11, 21, 22, 0, 0, tzinfo=timezone.utc)


def max_fps(size):
    return LINK_MBPS * 1e6 / ((size + 20) * 8)


def iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class Run:
    """The simulated run: a clock, the trial log and the DUT/tester model."""

    def __init__(self, seed=2544):
        self.rng = random.Random(seed)
        self.clock = START + timedelta(seconds=20)
        self.trials = []

    def trial(self, test, size, load_fps, duration_s, latency=None, burst=None):
        cap = DUT_CAPACITY_FPS.get(size, max_fps(size))
        # Bursts go out of a prepared queue at line rate; sustained rates hit the ceiling.
        ceiling = math.inf if burst is not None else TESTER_CEILING_FPS.get(size, math.inf)
        achieved = min(load_fps, ceiling) * (1 - self.rng.uniform(0, 2e-5))
        tester_limited = achieved < load_fps * 0.999
        tx = burst if burst is not None else int(round(achieved * duration_s))
        if burst is not None:
            # A burst at line rate: the DUT buffer absorbs the first frames.
            buffer_frames = self.b2b_buffer(size)
            rx = tx if tx <= buffer_frames else int(buffer_frames + (tx - buffer_frames) * cap / load_fps)
        elif achieved <= cap:
            rx = tx
        else:
            rx = int(tx * cap / achieved)
        lost = tx - rx
        if tester_limited:
            verdict = "tester-limited"
        else:
            verdict = "pass" if lost == 0 else "fail"
        row = {
            "id": len(self.trials) + 1, "test": test, "frame_size": size,
            "load_fps": round(load_fps, 1), "load_pct": round(load_fps / max_fps(size) * 100, 3),
            "duration_s": round(duration_s, 6), "traffic_s": round(duration_s, 6),
            "tx_frames": tx, "rx_frames": rx, "lost_frames": lost,
            "loss_ratio": lost / tx if tx else 0.0,
            "achieved_fps": round(achieved, 1), "verdict": verdict,
            "aborted_early": False, "saved_traffic_s": 0.0,
            "started": iso(self.clock), "latency": latency,
        }
        self.trials.append(row)
        # learning frames + 2 s, the trial, 2 s residual, 5 s settle (RFC 2544 section 23)
        self.clock += timedelta(seconds=4 + duration_s + 2 + 5)
        return row

    def b2b_buffer(self, size):
        # the DUT's buffer in frames, varying a little from burst to burst
        return {64: 4_120, 128: 3_880}.get(size, 1_000_000) + self.rng.randint(-30, 30)

    def latency_stats(self, size, samples):
        base = 14_000 + size * 8.0  # ns: a store-and-forward copy grows with size
        jitter = self.rng.uniform(0.97, 1.03)
        return {
            "samples": samples,
            "min_ns": round(base * 0.62 * jitter),
            "mean_ns": round(base * jitter),
            "median_ns": round(base * 0.93 * jitter),
            "p999_ns": round(base * 3.9 * jitter),
            "max_ns": round(base * 11.0 * jitter),
            "stddev_ns": round(base * 0.31 * jitter),
            "pdv_mean_ns": round(base * 0.06 * jitter),
            "pdv_max_ns": round(base * 4.2 * jitter),
        }


def throughput(run, size):
    """Bisection on the zero-loss load, short trials first, a 60 s final trial."""
    top = max_fps(size)
    lo, hi = 0.0, top
    load = top
    trials = 0
    t0 = len(run.trials)
    while True:
        row = run.trial("throughput", size, load, SEARCH_TRIAL_S)
        trials += 1
        if row["verdict"] == "pass":
            lo = load
        else:
            hi = load
        if hi - lo <= top * RESOLUTION_PCT / 100 or lo == top:
            break
        load = (lo + hi) / 2
    final = run.trial("throughput", size, lo, FINAL_TRIAL_S)
    trials += 1
    assert final["verdict"] == "pass", final
    fps = final["load_fps"]
    ceiling = TESTER_CEILING_FPS.get(size)
    traffic = sum(t["traffic_s"] for t in run.trials[t0:])
    return {
        "frame_size": size, "fps": fps,
        "mbps": round(fps * size * 8 / 1e6, 3),
        "line_mbps": round(fps * (size + 20) * 8 / 1e6, 3),
        "pct_of_max": round(fps / top * 100, 3),
        "theoretical_max_fps": round(top, 1),
        "tester_bound": bool(ceiling and fps >= ceiling * 0.95),
        "search": "bisection", "ndr_fps": fps, "pdr_fps": None, "pdr_loss_ratio": 0.005,
        "resolution_pct": RESOLUTION_PCT, "trials": trials, "traffic_s": traffic,
    }


def latency(run, size, load_fps, repetitions=5, duration_s=120.0):
    reps = []
    for _ in range(repetitions):
        samples = int(round(load_fps * (duration_s - 60)))  # timestamps taken after 60 s
        stats = run.latency_stats(size, samples)
        run.trial("latency", size, load_fps, duration_s, latency=stats)
        reps.append(stats)
    mean = lambda key: round(sum(r[key] for r in reps) / len(reps))  # noqa: E731 (RFC: the average)
    return {
        "frame_size": size, "load_fps": load_fps, "definition": "bit-forwarding",
        "repetitions": repetitions, "samples": sum(r["samples"] for r in reps),
        "min_ns": min(r["min_ns"] for r in reps), "mean_ns": mean("mean_ns"),
        "median_ns": mean("median_ns"), "p999_ns": mean("p999_ns"),
        "max_ns": max(r["max_ns"] for r in reps), "pdv_mean_ns": mean("pdv_mean_ns"),
    }


def frame_loss(run, size):
    """RFC 2544 26.3: from 100 % down by 10 % until two successive zero-loss trials."""
    points = []
    zero_in_a_row = 0
    pct = 100
    while pct > 0 and zero_in_a_row < 2:
        row = run.trial("frame_loss", size, max_fps(size) * pct / 100, FINAL_TRIAL_S)
        loss_pct = row["lost_frames"] * 100 / row["tx_frames"]
        limited = row["verdict"] == "tester-limited"
        points.append({"load_pct": float(pct), "load_fps": row["load_fps"], "loss_pct": round(loss_pct, 4),
                       "tester_limited": limited, "achieved_fps": row["achieved_fps"]})
        zero_in_a_row = zero_in_a_row + 1 if row["lost_frames"] == 0 and not limited else 0
        pct -= 10
    return {"frame_size": size, "max_rate_fps": round(max_fps(size), 1), "max_rate_source": "line rate",
            "step_pct": 10, "duration_s": FINAL_TRIAL_S, "points": points,
            "two_clean_trials": zero_in_a_row >= 2}


def back_to_back(run, size, throughput_fps, repetitions=5, burst_s=2.0):
    """RFC 9004: per repetition, the longest lossless burst at line rate, found by
    doubling the burst until frames are lost, then bisecting to 1 %."""
    rate = max_fps(size)
    results = []
    for _ in range(repetitions):
        lo, burst = 0, 1000
        while True:
            row = run.trial("back_to_back", size, rate, burst / rate + burst_s, burst=burst)
            if row["lost_frames"]:
                hi = burst
                break
            lo, burst = burst, burst * 2
        while hi - lo > lo // 100:
            burst = (lo + hi) // 2
            row = run.trial("back_to_back", size, rate, burst / rate + burst_s, burst=burst)
            if row["lost_frames"] == 0:
                lo = burst
            else:
                hi = burst
        results.append(lo)
    avg = sum(results) / len(results)
    std = math.sqrt(sum((r - avg) ** 2 for r in results) / (len(results) - 1))
    return {
        "frame_size": size, "trials": repetitions, "avg_frames": round(avg, 1),
        "min_frames": min(results), "max_frames": max(results), "stddev_frames": round(std, 1),
        "implied_buffer_s": round(avg / rate, 7),
        "corrected_buffer_s": round(avg * (1 - throughput_fps / rate) / rate, 7),
        "throughput_fps": throughput_fps,
        "max_rate_fps": round(rate, 1),
    }


def system_recovery(run, size, throughput_fps, repetitions=3):
    times = []
    for _ in range(repetitions):
        run.trial("system_recovery", size, throughput_fps * 1.1, 60.0)
        run.trial("system_recovery", size, throughput_fps * 0.5, 30.0)
        times.append(round(run.rng.uniform(0.08, 0.16), 3))
    return {"frame_size": size, "overload_fps": round(throughput_fps * 1.1, 1),
            "recovery_fps": round(throughput_fps * 0.5, 1), "repetitions": repetitions,
            "recovery_time_s": round(sum(times) / len(times), 3), "recovery_times_s": times}


def reset(run, size, throughput_fps):
    run.trial("reset", size, throughput_fps, 120.0)
    return {"frame_size": size, "repetitions": 1, "reset_time_s": 41.7, "reset_times_s": [41.7]}


def conditions():
    nic = lambda name: {"name": name, "driver": "igb", "firmware": "1.63, 0x800009fa",  # noqa: E731
                        "speed_mbps": 1000, "model": "Intel I350 Gigabit Network Connection"}
    tuning = {"cpu_governor": "performance", "irqbalance": "stopped", "rx_ring": 4096,
              "tx_ring": 4096, "gro": "off", "lro": "off", "flow_control": "off",
              "irq_affinity": "tx0,rx0 -> cpu2,cpu3"}
    return {
        "generator": "rfc2544_pktgen", "receiver": "pgrx", "fidelity": "full",
        "latency_definition": "bit-forwarding (RFC 1242): first bit out of the tester to "
                              "first bit back, measured in software at the receiver hook",
        "link_speed_mbps": LINK_MBPS, "ip_version": 4,
        "streams": [{"tx": "tester:tx0", "rx": "tester:rx0"}],
        "hosts": {
            "tester": {"role": "tester", "kernel": "6.1.0-50-amd64",
                       "cpu": "Intel(R) Xeon(R) E-2236 CPU @ 3.40GHz (6 cores)",
                       "module_version": "rfc2544_pktgen 0.1.0 (srcversion 5B1E0F3C2A9D7E6F1A2B3C4)",
                       "tuning": tuning, "nics": [nic("tx0"), nic("rx0")]},
            "dut": {"role": "dut", "kernel": "6.1.0-50-amd64",
                    "cpu": "Intel(R) Atom(TM) C3558 CPU @ 2.20GHz (4 cores)",
                    "module_version": None, "tuning": {"ip_forward": 1, "rp_filter": 0},
                    "nics": [nic("dut0"), nic("dut1")]},
        },
        "calibration": {str(k): float(v) for k, v in TESTER_CEILING_FPS.items()},
    }


PROFILE = {
    "name": "rfc2544-1g", "frame_sizes": FRAME_SIZES,
    "tests": ["throughput", "latency", "frame_loss", "back_to_back", "system_recovery", "reset"],
    "search": {"method": "bisection", "trial_s": SEARCH_TRIAL_S, "final_trial_s": FINAL_TRIAL_S,
               "resolution_pct": RESOLUTION_PCT},
    "latency": {"duration_s": 120, "repetitions": 5},
    "frame_loss": {"frame_sizes": [64, 512, 1518], "step_pct": 10, "trial_s": 60},
    "back_to_back": {"burst_s": 2, "repetitions": 5},
    "system_recovery": {"frame_sizes": [64], "repetitions": 3},
    "reset": {"frame_sizes": [64]},
}

DEVIATIONS = [
    "latency: 5 repetitions per frame size instead of the 20 of RFC 2544 section 26.2",
    "back-to-back: 5 repetitions per frame size instead of the 50 of RFC 2544 section 26.4",
    "latency is measured in software at the receiver hook, not by hardware timestamps",
]


def step(test, size):
    return {"unit": f"{test}/ipv4/{size}", "test": test, "frame_size": size, "ip_version": 4, "state": "pending"}


def plan():
    items = [step("throughput", s) for s in FRAME_SIZES]
    items += [step("latency", s) for s in FRAME_SIZES]
    items += [step("frame_loss", s) for s in PROFILE["frame_loss"]["frame_sizes"]]
    items += [step("back_to_back", s) for s in FRAME_SIZES]
    items += [step("system_recovery", 64), step("reset", 64)]
    return items


def mark_done(res):
    """Plan states, and the unit/ip_version every record carries."""
    for section in ("throughput", "latency", "frame_loss", "back_to_back", "system_recovery", "reset"):
        for entry in res[section]:
            entry["ip_version"] = 4
            entry["unit"] = f"{section}/ipv4/{entry['frame_size']}"
    for trial in res["trials"]:
        trial["ip_version"] = 4
        trial["unit"] = f"{trial['test']}/ipv4/{trial['frame_size']}"
    done = {e["unit"] for section in ("throughput", "latency", "frame_loss", "back_to_back",
                                      "system_recovery", "reset") for e in res[section]}
    for item in res["plan"]:
        if item["unit"] in done:
            item["state"] = "done"


def complete_run():
    run = Run()
    res = {
        "schema": "rfc2544-results", "schema_version": 1, "complete": True,
        "started": iso(START), "finished": None, "interruptions": [],
        "tool": {"name": "rfc2544", "version": "0.1.0"},
        "notes": ["simulated by tests/data/results/generate.py: known figures for the report tests"],
        "profile": PROFILE, "plan": plan(), "deviations": list(DEVIATIONS),
        "conditions": conditions(), "trials": run.trials,
        "throughput": [], "latency": [], "frame_loss": [], "back_to_back": [],
        "system_recovery": [], "reset": [],
    }
    for size in FRAME_SIZES:
        res["throughput"].append(throughput(run, size))
    tput = {t["frame_size"]: t["fps"] for t in res["throughput"]}
    for size in FRAME_SIZES:
        res["latency"].append(latency(run, size, tput[size]))
    for size in PROFILE["frame_loss"]["frame_sizes"]:
        res["frame_loss"].append(frame_loss(run, size))
    # RFC 9004: back-to-back only where throughput is below the theoretical maximum.
    for t in res["throughput"]:
        if t["fps"] < t["theoretical_max_fps"] * 0.999:
            res["back_to_back"].append(back_to_back(run, t["frame_size"], t["fps"]))
    res["system_recovery"].append(system_recovery(run, 64, tput[64]))
    res["reset"].append(reset(run, 64, tput[64]))
    res["finished"] = iso(run.clock)
    mark_done(res)
    # RFC 9004: back-to-back is skipped where throughput is the theoretical maximum.
    for item in res["plan"]:
        if item["test"] == "back_to_back" and item["state"] == "pending":
            fps = tput[item["frame_size"]]
            item.update(state="skipped", note=f"throughput {fps:.0f} fps is at the maximum rate "
                        f"{max_fps(item['frame_size']):.0f} fps: nothing is buffered (RFC 9004 tests only "
                        "sizes below it)")
    return res


def partial_run(full):
    """The same run stopped (Ctrl-C) during the throughput search at 1024 B."""
    res = copy.deepcopy(full)
    res["complete"] = False
    res["finished"] = None
    res["throughput"] = [t for t in res["throughput"] if t["frame_size"] <= 512]
    for key in ("latency", "frame_loss", "back_to_back", "system_recovery", "reset"):
        res[key] = []
    first_1024 = next(t["id"] for t in res["trials"] if t["frame_size"] == 1024)
    trials = [t for t in res["trials"] if t["id"] < first_1024 + 2]
    last = trials[-1]
    last.update(verdict="aborted", aborted_early=True, traffic_s=3.2,
                tx_frames=int(last["achieved_fps"] * 3.2), rx_frames=int(last["achieved_fps"] * 3.2),
                lost_frames=0, loss_ratio=0.0)
    res["trials"] = trials
    for item in res["plan"]:
        item["state"] = "pending"
        item.pop("note", None)
    mark_done(res)
    res["interruptions"] = [{"at": "2026-11-21T22:12:33Z", "reason": "interrupted by the user (Ctrl-C)",
                             "trials_kept": len(trials)}]
    return res


def dump(path, data):
    path.write_text(json.dumps(data, indent=1) + "\n")


def main():
    full = complete_run()
    dump(HERE / "complete.json", full)
    dump(HERE / "partial.json", partial_run(full))
    text = json.dumps(full, indent=1)
    (HERE / "corrupt.json").write_text(text[: len(text) * 2 // 5])
    future = copy.deepcopy(full)
    future["schema_version"] = 99
    dump(HERE / "unknown-version.json", future)


if __name__ == "__main__":
    main()
