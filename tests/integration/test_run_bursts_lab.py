"""`rfc2544 run` in the QEMU lab with bursts: bursty traffic (RFC 2544
section 21) finds a policer's bucket, and the tester's own bursts (a
catch-up after a vCPU stall, the in-tree generator's) are named as the
tester's, not the DUT's, loss."""
import math
import os
import signal
import threading
import time

import pytest

from rfc2544.config import inventory as inventory_mod
from rfc2544.config import profiles
from rfc2544.config.profiles import MAX_BOUND_US
from rfc2544.lab.topology import CALIBRATION_LINK
from rfc2544.cli.display import Display
from rfc2544.results.file import Results
from rfc2544.procedures.runner import Runner, build_plan

from host_load import until_clean
from run_lab_support import CAP_PPS, small_profile, run_ndr_search
from run_lab_support import capped, with_module  # noqa: F401 (fixtures; with_module needs capped)

pytestmark = pytest.mark.lab


# The bursty test's policer: a low rate, so that the tokens a burst earns
# while it passes (the lab forwards a burst at 10-30 kpps under TCG) stay
# small beside the bucket: at 3000 pps a burst of 1.2 buckets passed whole.
BURSTY_PPS = 1000
BURSTY_BUCKET = 300     # frames
BURST_SIZES = (270, 360)    # 0.9 and 1.2 buckets: one search step across the bucket


def test_bursty_traffic_finds_the_bucket_within_one_step(with_module, tmp_path):
    """RFC 2544 section 21 (issue 31 item 4) against a DUT with a known
    bucket: tc police BURSTY_PPS with a bucket of BURSTY_BUCKET frames.
    Bursts of 270 frames, back to back at the generator's minimum gap, fit
    in it: their mean-rate NDR is found. Bursts of 360 lose their excess at
    any mean rate (a burst passing at 10 kpps earns 36 tokens, 19 at the
    lab's usual speed): no NDR. The largest burst that passes is 270, one
    step below the bucket. The departure records show the bursts as the
    generator sent them.

      tester tx0 --> dut0 [dut] dut1 (police 1000 pps, bucket 300) --> rx0
    """
    lab = with_module
    lab.cap_dut(BURSTY_PPS, BURSTY_BUCKET)
    from rfc2544.engine.assemble import make_tester
    prof = profiles.load(str(small_profile(
        tmp_path, tests=["bursty"], trial_duration_s=2,
        search={"method": "mlr", "max_load_fps": 2 * BURSTY_PPS, "min_load_pct": 10, "initial_duration_s": 1,
                "resolution_pct": 5, "exceed_ratio": 0.5, "duration_sum_s": 4, "tester_limited_retries": 1},
        bursty={"burst_sizes": list(BURST_SIZES)})))
    tester = make_tester(inventory_mod.load(lab.inventory_path), prof)
    results = Results.create(tmp_path / "out", prof, build_plan(prof), profiles.deviations(prof), {})
    try:
        assert tester.paced_bursts, tester.detect()["hosts"]
        Runner(tester, prof, results, Display(quiet=True)).run()
    finally:
        tester.close()
    d = results.data
    (entry,) = d["bursty"]
    rows = {b["frames_per_burst"]: b for b in entry["bursts"]}
    print(f"bursty: {[(n, r['ndr_fps'], r['trials']) for n, r in rows.items()]}, "
          f"largest passing {entry['largest_passing_burst']}")
    assert entry["largest_passing_burst"] == BURST_SIZES[0], rows
    assert rows[BURST_SIZES[0]]["ndr_fps"] > 0.1 * 2 * BURSTY_PPS and rows[BURST_SIZES[1]]["ndr_fps"] is None
    # the mean rate never beats the policer by more than a bucket per trial
    assert rows[BURST_SIZES[0]]["ndr_fps"] <= 1.03 * (BURSTY_PPS + BURSTY_BUCKET / 1), rows
    trials = [t for t in d["trials"] if not t.get("superseded") and t["spec"].get("test") == "bursty"]
    for size in BURST_SIZES:
        own = [t for t in trials if t["spec"]["frames_per_burst"] == size]
        assert own, size
        if size > BURSTY_BUCKET:
            # every burst beyond the bucket lost its excess, at whatever mean rate
            assert all(t["lost_frames"] > 0 for t in own), [(t["load_fps"], t["lost_frames"]) for t in own]
        # the generator sent bursts: runs of frames closer than half the mean gap, about a burst long
        longest = max(t["spacing"]["longest_micro_burst"] for t in own if t.get("spacing"))
        assert 0.8 * size <= longest, (size, longest)



SMALL_BUCKET = 32      # frames: a DUT with a small buffer, which a tester's catch-up burst overflows


def assert_bursty_retried(trials, retries, log):
    """Each tester-bursty trial is followed by the same load, unless it was
    the last of 1 + retries attempts."""
    for i, t in enumerate(trials):
        if t["verdict"] != "tester-bursty":
            continue
        attempts = 1
        while i - attempts >= 0 and trials[i - attempts]["load_fps"] == t["load_fps"] \
                and trials[i - attempts]["verdict"] in ("tester-bursty", "tester-limited"):
            attempts += 1
        retried = i + 1 < len(trials) and trials[i + 1]["load_fps"] == t["load_fps"]
        # (the search may ask the same load again: its attempts follow on directly)
        assert retried or attempts % (1 + retries) == 0, f"#{t['id']} not retried: {log}"


def unnamed_bursty(results, cap_fps, min_burst):
    """The ids of failed trials at or below `cap_fps` with a micro-burst,
    or a bucket needed at their rate, of more than `min_burst` frames that
    the tester-bursty rule (engine/pacing.py) explains with the unit's
    trials before them but that were not named: not judged the DUT's for
    repeating the loss of a named attempt just before."""
    from rfc2544.engine import pacing
    unit = results.data["throughput"][0]["unit"]
    records = [t for t in results.data["trials"] if t.get("unit") == unit and not t.get("superseded")]
    trials = Results.load(results.dir).recorded_trials(unit)
    missed = []
    for i, (record, t) in enumerate(zip(records, trials)):
        s = t.spacing
        if t.tester_limited or not t.lost_frames or t.spec.load_fps > cap_fps or s is None \
                or max(s.longest_micro_burst, s.bucket_needed or 0) <= min_burst:
            continue
        before = trials[:i]
        if pacing.bursty_reason(t, pacing.evidence_of(before)) \
                and not pacing.repeats_loss(before[-1] if before else None, t):
            missed.append(record["id"])
    return missed


SEARCH_ATTEMPTS = 2


def explained_by_the_lab(trial, bucket):
    """Why the tester and the lab's path, not the DUT's rate, explain a
    failed trial's loss at a policer of `bucket` frames (at a rate of at
    least the trial's), from the trial's own records, or None. The path
    (the DUT shares the host's vCPUs) bunched frames held up to its latency
    spread: H = spread x rate frames, which the bucket had to hold beside
    the tester's own Q, the bucket a policer at the trial's rate needs
    (departures.h). (The spread also counts delays after the policer: H is
    a bound from above.) With Q + H within the bucket nothing of theirs
    overflowed it: the loss is the DUT's. Otherwise the loss may be theirs
    up to what the policer at the trial's rate drops with a bucket of
    bucket - H (the recorded size at or below it, 1 at least), plus what
    H beyond the bucket overflows at once."""
    lat, spacing = trial.get("latency") or {}, trial.get("spacing") or {}
    held = (lat.get("max_ns", 0) - lat.get("min_ns", 0)) * trial["load_fps"] / 1e9
    needed, left = spacing.get("bucket_needed") or 0, max(int(bucket - held), 1)
    drops = dict(spacing.get("bucket_drops") or [])
    explained = drops.get(1 << (left.bit_length() - 1), 0) + max(math.ceil(held - bucket), 0)
    figures = (f"#{trial['id']}: {trial['lost_frames']} lost; path held {held:.1f} frames, the tester needed a "
               f"bucket of {needed}; one of {left} drops up to {explained}")
    if needed + held <= bucket or trial["lost_frames"] > explained:
        print(f"not the lab's: {figures}")
        return None
    return figures


def test_a_small_bucket_dut_names_the_testers_bursts(with_module, tmp_path):
    """The DUT policed at CAP_PPS with a bucket of 32 frames, our generator
    and receiver: every failed trial at or below the police rate whose
    micro-burst, or the bucket a policer at its rate needs, was larger than
    the DUT's bucket and that the rule explains is named tester-bursty and
    retried, and the NDR lands within 1 % of the police rate, or the
    throughput row says why the tester could not measure it there (its
    bursts, a stall, a rate it could not send): never a silent low NDR.
    Final trials of 4 s and one retry keep it short. The search resolves to
    0.5 %: at 1 % the NDR may lie a whole step under an upper bound that
    lost 2 frames at the police rate itself (seen: 2977 against 3008).
    The DUT shares the host's vCPUs: a held one bunches frames in flight,
    which the bucket drops though the tester sent them well enough. A low
    NDR without a flag stands only where every failed trial at its upper
    bound shows that in its own records (explained_by_the_lab)."""
    lab = with_module
    lab.cap_dut(CAP_PPS, SMALL_BUCKET)
    retries, final_s = 1, 4
    known = CAP_PPS + SMALL_BUCKET / final_s
    attempts = iter(range(1, 10))

    def search():
        path = tmp_path / f"attempt{next(attempts)}"
        path.mkdir()
        # a latency bound no trial reaches: every trial records its latency
        return run_ndr_search(lab, path, final_s=final_s, resolution_pct=0.5, tester_limited_retries=retries,
                              latency_bound={"percentile": "max", "us": MAX_BOUND_US})

    def flagged(row):
        return row.get("tester_bursty") or row.get("tester_stall_s") or row.get("tester_bound")

    def held_back(results):
        # a search the loaded host held back (CI: trials at 1995 fps that
        # reached 1311, and an NDR of 2035 for 3008) is searched again once,
        # when it missed and the host did disturb the generator (trials it
        # held below their rate, or whose bursts the rule named); the last
        # attempt is judged as it stands
        row = results.data["throughput"][0]
        disturbed = [t["id"] for t in results.data["trials"] if t["verdict"] in ("tester-limited", "tester-bursty")]
        missed = not (flagged(row) or abs(row["ndr_fps"] - known) / known <= 0.01)
        return missed and disturbed and f"NDR {row['ndr_fps']:.0f} fps, trials {disturbed} disturbed"
    results, spoiled = until_clean(search, held_back, attempts=SEARCH_ATTEMPTS)
    trials = results.data["trials"]
    log = "; ".join(f"#{t['id']} {t['load_fps']:.0f}:{t['lost_frames']}:{t['verdict']}:"
                    f"{(t.get('spacing') or {}).get('longest_micro_burst')}/{(t.get('spacing') or {}).get('close_frames')}"
                    f"/{(t.get('spacing') or {}).get('bucket_needed')}"
                    for t in trials)
    print(log)
    assert all(t.get("spacing") and t["spacing"].get("bucket_needed") for t in trials), \
        "a trial without departure data, or without the policer at its rate"
    # every failed trial at or below the police rate whose bursts beyond the
    # bucket explain its loss, by the rule (engine/pacing.py), is named
    assert unnamed_bursty(results, CAP_PPS, SMALL_BUCKET) == [], log
    assert_bursty_retried(trials, retries, log)
    row = results.data["throughput"][0]
    print(f"NDR {row['ndr_fps']} fps, police rate {known:.0f} fps, tester_bursty {row.get('tester_bursty')}, "
          f"tester_stall_s {row.get('tester_stall_s')}, tester_bound {row.get('tester_bound')}, "
          f"spoiled attempts {spoiled}")
    if flagged(row) or abs(row["ndr_fps"] - known) / known <= 0.01:
        return
    # A low NDR no flag explains stands only where each failed trial at its
    # upper bound lost no more than the tester's frames and the path's
    # bunching explain at the DUT's known bucket (CI run 7: NDR 2486 for
    # 3008, bursts of 21 where passed trials had 30, a frame 3.3 ms late)
    assert row["ndr_fps"] < known, log      # never above what the DUT forwards
    upper = row["ndr_upper_fps"]
    deciding = [t for t in trials if upper and abs(t["load_fps"] - upper) <= upper * 0.001
                and t["verdict"] in ("fail", "aborted")]
    why = [explained_by_the_lab(t, SMALL_BUCKET) for t in deciding]
    print(f"upper bound {upper}: {why}")
    assert deciding and all(why), f"a silent low NDR: the upper bound's failures {why}: {spoiled} {log}"



def stalling(lab, stall_s, every_s):
    """A context in which the tester VM stalls `stall_s` every `every_s`
    (SIGSTOP, then SIGCONT, of its QEMU process), as a vCPU on a loaded
    host does: the generator then owes the frames due in the stall."""
    pid = lab.running_vms()["tester"]
    done = threading.Event()

    def stall():
        while not done.wait(every_s):
            os.kill(pid, signal.SIGSTOP)
            try:
                time.sleep(stall_s)
            finally:
                os.kill(pid, signal.SIGCONT)

    class Stalls:
        def __enter__(self):
            self.thread = threading.Thread(target=stall, daemon=True)
            self.thread.start()

        def __exit__(self, *exc):
            done.set()
            self.thread.join()
            os.kill(pid, signal.SIGCONT)
    return Stalls()


def test_the_in_tree_generators_bursts_are_named_from_the_calibration_link(capped, tmp_path):
    """The in-tree pktgen (no departure records) against the DUT policed at
    CAP_PPS with a 32-frame bucket, the tester VM stalling 20 ms every
    second: after a stall the generator sends its debt back to back, more
    than the bucket holds. Every failed trial gets the spacing the
    generator shows on the tester's calibration link (cal0 -> cal1, at the
    trial's rate) and passed ones none; a failed trial at or below the
    police rate that the rule explains is named tester-bursty and retried,
    and the report's banner says the spacing was estimated on the link.
    Then `calibrate`'s pacing rows for the in-tree generator, measured there."""
    from rfc2544.engine.calibrate import pacing_fidelity
    from rfc2544.engine.detection import GENERATOR_INTREE
    from rfc2544.results.load import load_results
    from rfc2544.reports.render import render_html
    from rfc2544.engine.tester import SSHTester
    lab = capped
    lab.cap_dut(CAP_PPS, SMALL_BUCKET)
    with stalling(lab, 0.02, 1.0):
        results = run_ndr_search(lab, tmp_path, final_s=2, calibration_link=True, method="bisection",
                                 resolution_pct=5, tester_limited_retries=1)
    trials = results.data["trials"]
    log = "; ".join(f"#{t['id']} {t['load_fps']:.0f}:{t['lost_frames']}:{t['verdict']}:"
                    f"{(t.get('spacing') or {}).get('longest_micro_burst')}/{(t.get('spacing') or {}).get('close_frames')}"
                    for t in trials)
    print(log)
    failed = [t for t in trials if t["lost_frames"] and not t["tester_limited"] or t["verdict"] == "tester-bursty"]
    assert failed, f"no trial failed: the search never went above the police rate? {log}"
    for t in trials:
        s = t.get("spacing")
        if t not in failed:
            assert s is None, f"#{t['id']} passed but has a spacing estimate: {log}"
            continue
        assert s and s["source"] == "calibration link", f"#{t['id']} failed without an estimate: {t['notes']} {log}"
        # the link's run is counted, as a trial is (rate x duration frames,
        # however late a loaded tester starts: CI's host-timed runs held
        # 3033 of 6000 and 1445 of 1950), and its capture saw them all, at
        # the trial's rate (not one libpcap block of them)
        assert s["nominal_gap_ns"] == pytest.approx(1e9 / t["load_fps"], rel=1e-3)
        # (one measurement per rate, as long as the first trial that asked)
        shortest = min(u["duration_s"] for u in trials if u["load_fps"] == t["load_fps"])
        asked = round(t["load_fps"] * shortest)
        span_s = (s["frames"] - 1) * s["mean_gap_ns"] / 1e9
        assert s["frames"] >= 0.98 * asked and span_s >= 0.8 * shortest, (t["id"], asked, s["frames"], span_s)
    assert unnamed_bursty(results, CAP_PPS, 1) == [], log
    bursty = [t for t in trials if t["verdict"] == "tester-bursty"]
    assert bursty, f"20 ms stalls at up to {CAP_PPS} fps owe more than {SMALL_BUCKET} frames, yet none named: {log}"
    assert all("on the calibration link" in " ".join(t["notes"]) for t in bursty)
    assert_bursty_retried(trials, 1, log)
    html = render_html(load_results(results.path))
    assert "spacing estimated on the calibration link for" in html and "calibration link (estimate)" in html
    # calibrate: the in-tree generator's pacing, measured on the link (no stalls now)
    inv = inventory_mod.load(lab.inventory_path)
    inv.hosts["tester"].calibration_link = CALIBRATION_LINK
    tester = SSHTester(inv, waits={"learning_frames": 0})
    try:
        assert tester.generator_name == GENERATOR_INTREE
        fidelity = pacing_fidelity(tester, {64: 2 * CAP_PPS}, duration=1.0)
    finally:
        tester.close()
    assert fidelity["source"] == "calibration link" and fidelity["generator"] == GENERATOR_INTREE
    for row in fidelity["rows"]:
        assert row["achieved_fps"] > 0.9 * row["fps"] and row["longest_micro_burst"] is not None, row
        assert row["p999_over_nominal"] >= 0.5, row
