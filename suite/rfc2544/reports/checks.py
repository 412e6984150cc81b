"""What the report checks itself: how complete the run is, and departures
from RFC 2544 visible in the data.

The suite lists the deviations it knows of (`deviations`); these checks are
a second look from the numbers, so that a results file from any writer
shows every departure prominently, even one it did not declare.
"""
from rfc2544.model import GENERATOR_INTREE, SOURCE_GENERATOR, TESTER_BOUND_MARGIN
from rfc2544.results.deviations import code_of, text_of
from rfc2544.reports.summary import key_of, labeller, test_titles

from rfc2544.rfc_minimums import (B2B_TRIALS, FINAL_TRIAL_S, LATENCY_REPETITIONS, LATENCY_SAMPLES,
                                  LATENCY_TRIAL_S, RECOVERY_OVERLOAD)
from rfc2544.rfc_minimums import FRAME_SIZES as RFC_FRAME_SIZES


def completeness(results):
    """Planned tests: done, skipped (with the reason) or without a result."""
    label = labeller(results)
    have = {(section, key_of(results, r)) for section in test_titles() for r in results[section]}
    missing, skipped = {}, []   # missing: test title -> frame size labels
    for step in results["plan"]:
        test = step.get("test")
        title = test_titles().get(test, test)
        where = label(step) if step.get("frame_size") is not None else "all sizes"
        if step.get("state") == "skipped":
            skipped.append(f"{title} at {where}: {step.get('note') or 'skipped'}")
        elif step.get("state") != "done" and (test, key_of(results, step)) not in have:
            missing.setdefault(title, []).append(where)
    trials = [t for t in results["trials"] if not t.get("superseded")]
    return {
        "complete": results["complete"],
        "planned": len(results["plan"]),
        "finished": len(results["plan"]) - sum(map(len, missing.values())) - len(skipped),
        "missing": [f"{title}: {', '.join(where)}" for title, where in missing.items()],
        "skipped": skipped,
        "interruptions": [i for i in results.get("interruptions") or [] if isinstance(i, dict)],
        "last_trial": trials[-1] if trials else None,
    }


# Codes of the checks (the suite's Deviation.code where both mean the same);
# for a sentence-only deviation of an older file: every pattern of the
# topic appears in it (case-insensitive regex).
TOPICS = {
    "final_trial": (r"\b60 s\b", r"\b24\b"),
    "latency_duration": (r"latency", r"\b120 s\b"),
    "latency_repetitions": (r"latency", r"\b20\b"),
    "latency_samples": (r"\b500\b",),
    "loss_start": (r"frame loss", r"\b100 %"),
    "loss_step": (r"frame loss", r"step"),
    "loss_end": (r"frame loss", r"two"),
    "b2b_trials": (r"back-to-back", r"\b50\b"),
    "b2b_at_max": (r"back-to-back", r"maximum"),
    "recovery_overload": (r"recovery", r"\b110\b"),
    "frame_sizes_missing": (r"frame sizes", r"not tested"),
    "frame_sizes_odd": (r"frame sizes", r"not among"),
    "fidelity": (r"fidelity|interface counters",),
    "tester_bound": (r"tester-bound",),
    "tester_limited": (r"tester-limited",),
    "tester_bursty": (r"tester-bursty",),
    "tester_starved": (r"tester-starved",),
    "tester_bursty_ndr": (r"tester's bursts|tester-bursty", r"lower bound"),
    "spacing_unmeasured": (r"spacing", r"cannot be told"),
    "tester_stalled": (r"stopped sending",),
}


def undeclared(found, declared):
    """The detected deviations that no declared deviation already states: a
    record states the topic of the same code; a bare sentence (files written
    before the records) is searched for the topic's words."""
    import re

    codes = {code_of(d) for d in declared}
    sentences = [text_of(d) for d in declared if code_of(d) is None]

    def covered(topic):
        # a topic without patterns is stated by its code only
        patterns = TOPICS.get(topic)
        return topic in codes or bool(patterns) and any(all(re.search(p, d, re.I) for p in patterns)
                                                        for d in sentences)
    return [text for topic, text in found if not covered(topic)]


def detected_deviations(results):
    """Departures from RFC 2544 (and RFC 8219 / 9004) visible in the data,
    as (topic, sentence) pairs; see `undeclared` for the ones to add."""
    ctx = _Context(results)
    found = []
    for check in (_final_trial, _latency, _frame_loss, _back_to_back, _recovery, _frame_sizes, _tester):
        found.extend(check(ctx))
    return found


class _Context:
    """What every check needs: the results, the trials that count, and
    labels for rows."""

    def __init__(self, results):
        self.results = results
        self.label = labeller(results)
        self.trials = [t for t in results["trials"] if not t.get("superseded")]

    def key(self, row):
        return key_of(self.results, row)

    def sizes(self, rows):
        return ", ".join(dict.fromkeys(self.label(r) for r in sorted(rows, key=self.key)))


def _final_trial(ctx):
    # Section 24: the final determination uses trials of at least 60 s.
    short, longest = [], 0
    for t in ctx.results["throughput"]:
        durations = [x.get("duration_s") or 0 for x in ctx.trials
                     if x.get("test") == "throughput" and ctx.key(x) == ctx.key(t) and x.get("verdict") == "pass"]
        if durations and max(durations) < FINAL_TRIAL_S:
            short.append(t)
            longest = max(longest, max(durations))
    if short:
        yield ("final_trial", f"throughput at {ctx.sizes(short)}: the longest passing trial lasted {longest:g} s, "
                              f"shorter than the {FINAL_TRIAL_S} s final trial of RFC 2544 section 24")


def _latency(ctx):
    # Section 26.2: latency trials of 120 s, 20 repetitions; RFC 8219: 500 samples.
    lat_trials = [x for x in ctx.trials if x.get("test") == "latency" and x.get("duration_s") is not None]
    if lat_trials:
        shortest = min(x["duration_s"] for x in lat_trials)
        if shortest < LATENCY_TRIAL_S:
            yield ("latency_duration", f"latency trials of {shortest:g} s, shorter than the {LATENCY_TRIAL_S} s "
                                       f"of RFC 2544 section 26.2")
    rows = ctx.results["latency"]
    few = [r for r in rows if r.get("repetitions") is not None and r["repetitions"] < LATENCY_REPETITIONS]
    if few:
        yield ("latency_repetitions", f"latency at {ctx.sizes(few)}: {min(r['repetitions'] for r in few)} "
                                      f"repetitions, fewer than the {LATENCY_REPETITIONS} of RFC 2544 section 26.2")
    sparse = [r for r in rows if r.get("samples") is not None and r["samples"] < LATENCY_SAMPLES]
    if sparse:
        yield ("latency_samples", f"latency at {ctx.sizes(sparse)}: fewer than {LATENCY_SAMPLES} timestamped "
                                  f"frames (RFC 8219 section 7.2)")


def _frame_loss(ctx):
    # Section 26.3: start at 100 %, steps of at most 10 %, end on two zero-loss trials.
    for r in ctx.results["frame_loss"]:
        points = sorted(r["points"], key=lambda p: -p["load_pct"])
        if not points:
            continue
        label = ctx.label(r)
        if points[0]["load_pct"] < 99.5:
            yield ("loss_start", f"frame loss at {label} started at {points[0]['load_pct']:g} % of the "
                                 f"maximum rate, not 100 % (RFC 2544 section 26.3)")
        steps = [a["load_pct"] - b["load_pct"] for a, b in zip(points, points[1:])]
        if steps and max(steps) > 10.5:
            yield ("loss_step", f"frame loss at {label} stepped by up to {max(steps):g} %, coarser than the "
                                f"10 % of RFC 2544 section 26.3")
        clean_end = len(points) >= 2 and all(p["loss_pct"] == 0 and not p.get("tester_limited")
                                             for p in points[-2:])
        if not clean_end:
            yield ("loss_end", f"frame loss at {label} did not end on two successive trials without loss "
                               f"(RFC 2544 section 26.3)")


def _back_to_back(ctx):
    # Section 26.4 / RFC 9004.
    rows = ctx.results["back_to_back"]
    few = [r for r in rows if r.get("trials") is not None and r["trials"] < B2B_TRIALS]
    if few:
        yield ("b2b_trials", f"back-to-back at {ctx.sizes(few)}: {min(r['trials'] for r in few)} trials, "
                             f"fewer than the {B2B_TRIALS} of RFC 2544 section 26.4")
    b2b_keys = {ctx.key(b) for b in rows}
    at_max = [t for t in ctx.results["throughput"] if t.get("theoretical_max_fps")
              and t["fps"] >= t["theoretical_max_fps"] * 0.999 and ctx.key(t) in b2b_keys]
    if at_max:
        yield ("b2b_at_max", f"back-to-back measured at {ctx.sizes(at_max)} where throughput is already the "
                             f"theoretical maximum (RFC 9004 tests only frame sizes below it)")


def _recovery(ctx):
    # Section 26.5: overload at 110 % of throughput.
    tput = {ctx.key(t): t["fps"] for t in ctx.results["throughput"]}
    for r in ctx.results["system_recovery"]:
        base = tput.get(ctx.key(r))
        if base and r.get("overload_fps") and abs(r["overload_fps"] / base - RECOVERY_OVERLOAD) > 0.01:
            yield ("recovery_overload", f"system recovery at {ctx.label(r)}: overload at "
                                        f"{r['overload_fps'] / base * 100:.0f} % of throughput, not 110 % "
                                        f"(RFC 2544 section 26.5)")


def _frame_sizes(ctx):
    # Section 9.1: the standard Ethernet frame sizes.
    # the sizes asked: one sent larger because the headers need it is declared as frame_size_raised
    tested = {p.get("requested_frame_size") or p.get("frame_size")
              for p in ctx.results["plan"] if p.get("test") == "throughput"}
    tested |= {t.get("requested_frame_size") or t["frame_size"] for t in ctx.results["throughput"]}
    if not tested:
        return
    absent = [s for s in RFC_FRAME_SIZES if s not in tested]
    odd = sorted(s for s in tested if s and s not in RFC_FRAME_SIZES)
    if absent:
        yield ("frame_sizes_missing", f"frame sizes {', '.join(map(str, absent))} B of RFC 2544 section 9.1 "
                                      f"not tested")
    if odd:
        yield ("frame_sizes_odd", f"frame sizes {', '.join(map(str, odd))} B are not among those of "
                                  f"RFC 2544 section 9.1")


def _tester(ctx):
    # Fidelity and tester limits: not RFC sections, but they change what a figure means.
    conditions = ctx.results["conditions"]
    if conditions.get("fidelity") and conditions["fidelity"] != "full":
        yield ("fidelity", f"{conditions['fidelity']}-fidelity measurement: the receiver is "
                           f"{conditions.get('receiver') or 'unknown'}, the generator "
                           f"{conditions.get('generator') or 'unknown'}; loss is counted per interface rather "
                           f"than per test stream")
    bound = [t for t in ctx.results["throughput"] if t.get("tester_bound")]
    near = [t for t in bound if near_ceiling(t)]
    if near:
        yield ("tester_bound", f"throughput at {ctx.sizes(near)} is tester-bound (within 5 % of the tester's own "
                               f"ceiling): the DUT may be faster than shown")
    unsent = [t for t in bound if not near_ceiling(t)]
    if unsent:
        yield ("tester_bound", f"throughput at {ctx.sizes(unsent)} is tester-bound: the tester could not send the "
                               f"load at the NDR's upper bound, so the DUT may be faster than shown")
    limited = [x for x in ctx.trials if x.get("verdict") == "tester-limited"]
    if limited:
        yield ("tester_limited", f"{len(limited)} trial(s) could not be sent at the intended load "
                                 f"(verdict tester-limited)")
    yield from _tester_bursty(ctx)
    starved = [x for x in ctx.trials if x.get("verdict") == "tester-starved"]
    if starved:
        dropped = sum(c.get("dropped", 0) + c.get("nic_drops", 0)
                      for x in starved for c in (x.get("host_path") or {}).values())
        yield ("tester_starved", f"{len(starved)} failed trial(s) at {ctx.sizes(starved)} lost frames on the tester's "
                                 f"own packet path ({dropped} dropped by its softnet backlog or receiving NICs): "
                                 f"marked tester-starved and retried, not counted as DUT loss")
    yield from _spacing_unmeasured(ctx)
    yield from _tester_stalled(ctx)


def near_ceiling(row):
    """A throughput row within 5 % of the tester's ceiling (a row of an
    older file that names no ceiling: its tester_bound said just that)."""
    ceiling = row.get("tester_ceiling_fps")
    if not ceiling:
        return bool(row.get("tester_bound")) and not row.get("tester_bursty")
    return bool(row.get("fps")) and row["fps"] >= ceiling * (1 - TESTER_BOUND_MARGIN)


def _tester_stalled(ctx):
    """Throughput rows whose failed upper-bound trials had a departure gap
    of TESTER_STALL_S or more (tester_stall_s): said here too for results
    files that did not declare it."""
    stalled = [t for t in ctx.results["throughput"] if t.get("tester_stall_s")]
    if stalled:
        worst = max(t["tester_stall_s"] for t in stalled)
        yield ("tester_stalled", f"throughput at {ctx.sizes(stalled)}: the tester stopped sending for up to "
                                 f"{worst * 1000:.0f} ms in the failed trials at the NDR's upper bound: their loss "
                                 f"may be the tester's, so the NDR may be low")


def _spacing_unmeasured(ctx):
    """Failed throughput trials without departure spacing (the in-tree
    pktgen, no calibration link): the tester-bursty rule had nothing to go
    on, so a loss from the generator's catch-up after a stall counted as
    the DUT's. Said, so that a low NDR is never silent about it."""
    if ctx.results["conditions"].get("generator") != GENERATOR_INTREE:
        return
    blind = [x for x in ctx.trials if x.get("test") == "throughput" and x.get("verdict") == "fail"
             and not x.get("spacing")]
    if blind:
        yield ("spacing_unmeasured", f"{len(blind)} failed throughput trial(s) at {ctx.sizes(blind)} have no "
                                     f"departure spacing (the generator records none and no calibration link "
                                     f"estimated it): a loss from the tester's own micro-bursts cannot be told "
                                     f"from DUT loss there, so the NDR may be low; load rfc2544_pktgen or name "
                                     f"the tester's rfc2544_calibration_link")


def _tester_bursty(ctx):
    """Losses the generator's micro-bursts explain (rfc2544.engine.pacing's rule)."""
    bursty = [x for x in ctx.trials if x.get("verdict") == "tester-bursty" and x.get("spacing")]
    if bursty:
        worst = max(bursty, key=lambda x: x["spacing"]["longest_micro_burst"])
        s = worst["spacing"]
        estimated = sum(1 for x in bursty if x["spacing"].get("source") != SOURCE_GENERATOR)
        how = (f" (spacing estimated on the calibration link for {estimated} of them: the generator records no "
               f"departures)" if estimated else "")
        yield ("tester_bursty", f"{len(bursty)} failed trial(s) at {ctx.sizes(bursty)} lost no more frames than "
                                f"the generator sent in micro-bursts{how} (up to {s['longest_micro_burst']} frames, "
                                f"{s['close_frames']} of them less than half the nominal "
                                f"{(s['nominal_gap_ns'] or 0) / 1000:.1f} us gap after the one before, in trial "
                                f"#{worst['id']}): marked tester-bursty and retried, not counted as DUT loss")
    unmeasured = [t for t in ctx.results["throughput"] if t.get("tester_bursty")]
    if unmeasured:
        yield ("tester_bursty_ndr", f"throughput at {ctx.sizes(unmeasured)} is set by the tester's bursts: the tester "
                                    f"could not space its frames evenly enough to measure the DUT above the NDR "
                                    f"shown; the trials at the upper bound failed on the generator's micro-bursts, "
                                    f"retries included, so the NDR is a lower bound set by the tester")
