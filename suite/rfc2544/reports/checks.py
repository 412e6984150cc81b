"""What the report checks itself: how complete the run is, and departures
from RFC 2544 visible in the data.

The suite lists the deviations it knows of (`deviations`); these checks are
a second look from the numbers, so that a results file from any writer
shows every departure prominently, even one it did not declare.
"""
from rfc2544.deviations import code_of, text_of
from rfc2544.reports.summary import TEST_TITLES, key_of, labeller

RFC_FRAME_SIZES = (64, 128, 256, 512, 1024, 1280, 1518)   # RFC 2544 section 9.1, Ethernet
FINAL_TRIAL_S = 60        # section 24
LATENCY_TRIAL_S = 120     # section 26.2
LATENCY_REPETITIONS = 20  # section 26.2
LATENCY_SAMPLES = 500     # RFC 8219 section 7.2
B2B_TRIALS = 50           # section 26.4
RECOVERY_OVERLOAD = 1.10  # section 26.5: 110 % of throughput


def completeness(results):
    """Planned tests: done, skipped (with the reason) or without a result."""
    label = labeller(results)
    have = {(section, key_of(results, r)) for section in TEST_TITLES for r in results[section]}
    missing, skipped = {}, []   # missing: test title -> frame size labels
    for step in results["plan"]:
        test = step.get("test")
        title = TEST_TITLES.get(test, test)
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
}


def undeclared(found, declared):
    """The detected deviations that no declared deviation already states: a
    record states the topic of the same code; a bare sentence (files written
    before the records) is searched for the topic's words."""
    import re

    codes = {code_of(d) for d in declared}
    sentences = [text_of(d) for d in declared if code_of(d) is None]

    def covered(topic):
        return topic in codes or any(all(re.search(p, d, re.I) for p in TOPICS[topic]) for d in sentences)
    return [text for topic, text in found if not covered(topic)]


def detected_deviations(results):
    """Departures from RFC 2544 (and RFC 8219 / 9004) visible in the data,
    as (topic, sentence) pairs; see `undeclared` for the ones to add."""
    label = labeller(results)

    def sizes(rows):
        return ", ".join(dict.fromkeys(label(r) for r in sorted(rows, key=lambda r: key_of(results, r))))

    found = []

    def add(topic, text):
        found.append((topic, text))

    trials = [t for t in results["trials"] if not t.get("superseded")]
    conditions = results["conditions"]

    # Section 24: the final determination uses trials of at least 60 s.
    short, longest = [], 0
    for t in results["throughput"]:
        durations = [x.get("duration_s") or 0 for x in trials
                     if x.get("test") == "throughput" and key_of(results, x) == key_of(results, t)
                     and x.get("verdict") == "pass"]
        if durations and max(durations) < FINAL_TRIAL_S:
            short.append(t)
            longest = max(longest, max(durations))
    if short:
        add("final_trial", f"throughput at {sizes(short)}: the longest passing trial lasted {longest:g} s, "
                           f"shorter than the {FINAL_TRIAL_S} s final trial of RFC 2544 section 24")

    # Section 26.2: latency trials of 120 s, 20 repetitions; RFC 8219: 500 samples.
    lat_trials = [x for x in trials if x.get("test") == "latency" and x.get("duration_s") is not None]
    if lat_trials:
        shortest = min(x["duration_s"] for x in lat_trials)
        if shortest < LATENCY_TRIAL_S:
            add("latency_duration", f"latency trials of {shortest:g} s, shorter than the {LATENCY_TRIAL_S} s "
                                    f"of RFC 2544 section 26.2")
    few = [r for r in results["latency"] if r.get("repetitions") is not None
           and r["repetitions"] < LATENCY_REPETITIONS]
    if few:
        add("latency_repetitions", f"latency at {sizes(few)}: {min(r['repetitions'] for r in few)} "
                                   f"repetitions, fewer than the {LATENCY_REPETITIONS} of RFC 2544 section 26.2")
    sparse = [r for r in results["latency"] if r.get("samples") is not None and r["samples"] < LATENCY_SAMPLES]
    if sparse:
        add("latency_samples", f"latency at {sizes(sparse)}: fewer than {LATENCY_SAMPLES} timestamped frames "
                               f"(RFC 8219 section 7.2)")

    # Section 26.3: start at 100 %, steps of at most 10 %, end on two zero-loss trials.
    for r in results["frame_loss"]:
        points = sorted(r["points"], key=lambda p: -p["load_pct"])
        if not points:
            continue
        if points[0]["load_pct"] < 99.5:
            add("loss_start", f"frame loss at {label(r)} started at {points[0]['load_pct']:g} % of the "
                              f"maximum rate, not 100 % (RFC 2544 section 26.3)")
        steps = [a["load_pct"] - b["load_pct"] for a, b in zip(points, points[1:])]
        if steps and max(steps) > 10.5:
            add("loss_step", f"frame loss at {label(r)} stepped by up to {max(steps):g} %, coarser than the "
                             f"10 % of RFC 2544 section 26.3")
        clean_end = len(points) >= 2 and all(p["loss_pct"] == 0 and not p.get("tester_limited")
                                             for p in points[-2:])
        if not clean_end:
            add("loss_end", f"frame loss at {label(r)} did not end on two successive trials without loss "
                            f"(RFC 2544 section 26.3)")

    # Section 26.4 / RFC 9004.
    few = [r for r in results["back_to_back"] if r.get("trials") is not None and r["trials"] < B2B_TRIALS]
    if few:
        add("b2b_trials", f"back-to-back at {sizes(few)}: {min(r['trials'] for r in few)} trials, fewer than "
                          f"the {B2B_TRIALS} of RFC 2544 section 26.4")
    b2b_keys = {key_of(results, b) for b in results["back_to_back"]}
    at_max = [t for t in results["throughput"] if t.get("theoretical_max_fps")
              and t["fps"] >= t["theoretical_max_fps"] * 0.999 and key_of(results, t) in b2b_keys]
    if at_max:
        add("b2b_at_max", f"back-to-back measured at {sizes(at_max)} where throughput is already the "
                          f"theoretical maximum (RFC 9004 tests only frame sizes below it)")

    # Section 26.5: overload at 110 % of throughput.
    tput = {key_of(results, t): t["fps"] for t in results["throughput"]}
    for r in results["system_recovery"]:
        base = tput.get(key_of(results, r))
        if base and r.get("overload_fps") and abs(r["overload_fps"] / base - RECOVERY_OVERLOAD) > 0.01:
            add("recovery_overload", f"system recovery at {label(r)}: overload at "
                                     f"{r['overload_fps'] / base * 100:.0f} % of throughput, not 110 % "
                                     f"(RFC 2544 section 26.5)")

    # Section 9.1: the standard Ethernet frame sizes.
    tested = {p.get("frame_size") for p in results["plan"] if p.get("test") == "throughput"}
    tested |= {t["frame_size"] for t in results["throughput"]}
    if tested:
        absent = [s for s in RFC_FRAME_SIZES if s not in tested]
        odd = sorted(s for s in tested if s and s not in RFC_FRAME_SIZES)
        if absent:
            add("frame_sizes_missing", f"frame sizes {', '.join(map(str, absent))} B of RFC 2544 section 9.1 "
                                       f"not tested")
        if odd:
            add("frame_sizes_odd", f"frame sizes {', '.join(map(str, odd))} B are not among those of "
                                   f"RFC 2544 section 9.1")

    # Fidelity and tester limits: not RFC sections, but they change what a figure means.
    if conditions.get("fidelity") and conditions["fidelity"] != "full":
        add("fidelity", f"{conditions['fidelity']}-fidelity measurement: the receiver is "
                        f"{conditions.get('receiver') or 'unknown'}; loss is counted per interface rather "
                        f"than per test stream")
    bound = [t for t in results["throughput"] if t.get("tester_bound")]
    if bound:
        add("tester_bound", f"throughput at {sizes(bound)} is tester-bound (within 5 % of the tester's own "
                            f"ceiling): the DUT may be faster than shown")
    limited = [x for x in trials if x.get("verdict") == "tester-limited"]
    if limited:
        add("tester_limited", f"{len(limited)} trial(s) could not be sent at the intended load "
                              f"(verdict tester-limited)")
    return found
