"""`rfc2544 run` in the QEMU lab with bursts: bursty traffic (RFC 2544
section 21) finds a policer's bucket, and the tester's own bursts (a
catch-up after a vCPU stall, the in-tree generator's) are named as the
tester's, not the DUT's, loss."""
import os
import signal
import threading
import time

import pytest

from rfc2544.config import inventory as inventory_mod
from rfc2544.config import profiles
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


NAMED = ("tester-bursty", "tester-starved", "tester-limited")


def assert_bursty_retried(trials, retries, log):
    """Each trial named the tester's (bursty or starved) is followed by the
    same load, unless it was the last of 1 + retries attempts."""
    for i, t in enumerate(trials):
        if t["verdict"] not in ("tester-bursty", "tester-starved"):
            continue
        attempts = 1
        while i - attempts >= 0 and trials[i - attempts]["load_fps"] == t["load_fps"] \
                and trials[i - attempts]["verdict"] in NAMED:
            attempts += 1
        retried = i + 1 < len(trials) and trials[i + 1]["load_fps"] == t["load_fps"]
        # (the search may ask the same load again: its attempts follow on directly)
        assert retried or attempts % (1 + retries) == 0, f"#{t['id']} not retried: {log}"


def unnamed_below_rate(trials, rate_fps, first_attempts_only=False):
    """The ids of failed trials at or below 99 % of the policer's rate
    that the run did not name as the tester's (tester-bursty, -starved,
    -limited). A token bucket at `rate_fps` drops nothing of frames sent
    evenly below its rate: whatever such a trial lost came too close
    together, through no lack of the DUT's rate, and counted as the DUT's
    loss it would set the NDR low. The expectation is the DUT's, not the
    suite's rule. `first_attempts_only`: judge the first attempt at each
    load only (the rule's repeat clause, pacing.repeats_loss, gives a
    retry that loses about as much again to the DUT by design)."""
    missed, seen = [], set()
    for t in trials:
        first = t["load_fps"] not in seen
        seen.add(t["load_fps"])
        if t["lost_frames"] and t["load_fps"] <= 0.99 * rate_fps and t["verdict"] not in NAMED \
                and (first or not first_attempts_only):
            missed.append(t["id"])
    return missed


def counts_not_the_policers(trials):
    """The trials whose loss is not what the DUT's policer dropped (its
    counter, read by trial hooks) plus what the tester's own path dropped
    (host_path): the count the rules judge must be the DUT's."""
    from run_lab_support import police_drops
    off = []
    for t in trials:
        police = police_drops(t)
        own = sum(c.get("dropped", 0) + c.get("nic_drops", 0) for c in (t.get("host_path") or {}).values())
        if police is None or t["lost_frames"] != police + own:
            off.append((t["id"], t["lost_frames"], police, own))
    return off


SEARCH_ATTEMPTS = 2


def test_a_small_bucket_dut_names_the_testers_bursts(with_module, tmp_path):
    """The DUT policed at CAP_PPS with a bucket of 32 frames, our generator
    and receiver. Judged by what the DUT is, not by the suite's rules:
    every trial lost exactly what the DUT's policer dropped (its counter,
    read by trial hooks) and the tester's own path; named trials are
    retried; and the NDR lands within 1 % of what the DUT forwards (its
    rate plus its bucket over a final trial), or the throughput row says
    the tester set it, and then the last failed trial at its upper bound
    is named and was not above what the DUT forwards (a flag never excuses
    the DUT's own loss). Final trials of 4
    s and one retry keep it short. The search resolves to 0.5 %: at 1 % the
    NDR may lie a whole step under an upper bound that lost 2 frames at
    the police rate itself (seen: 2977 against 3008). The DUT shares the
    host's vCPUs: the receiver times the arrivals there, and a path that
    held frames back is named too (tester-starved, engine/starved.py)."""
    from run_lab_support import POLICE_HOOKS
    lab = with_module
    lab.cap_dut(CAP_PPS, SMALL_BUCKET)
    retries, final_s = 1, 4
    known = CAP_PPS + SMALL_BUCKET / final_s
    attempts = iter(range(1, 10))

    def search():
        path = tmp_path / f"attempt{next(attempts)}"
        path.mkdir()
        return run_ndr_search(lab, path, final_s=final_s, resolution_pct=0.5, tester_limited_retries=retries,
                              dut_hooks=POLICE_HOOKS)

    def flagged(row):
        return row.get("tester_bursty") or row.get("tester_stall_s") or row.get("tester_bound")

    def held_back(results):
        # a search the loaded host held back (CI: trials at 1995 fps that
        # reached 1311, and an NDR of 2035 for 3008) is searched again once,
        # when it missed and the host did disturb the generator (trials it
        # held below their rate, or whose bursts the rule named); the last
        # attempt is judged as it stands
        row = results.data["throughput"][0]
        disturbed = [t["id"] for t in results.data["trials"] if t["verdict"] in NAMED]
        missed = not (flagged(row) or abs(row["ndr_fps"] - known) / known <= 0.01)
        return missed and disturbed and f"NDR {row['ndr_fps']:.0f} fps, trials {disturbed} disturbed"
    results, spoiled = until_clean(search, held_back, attempts=SEARCH_ATTEMPTS)
    trials = [t for t in results.data["trials"] if not t.get("superseded")]
    log = "; ".join(f"#{t['id']} {t['load_fps']:.0f}:{t['lost_frames']}:{t['verdict']}:"
                    f"{(t.get('spacing') or {}).get('longest_micro_burst')}/{(t.get('spacing') or {}).get('close_frames')}"
                    f"/{(t.get('spacing') or {}).get('bucket_needed')}"
                    for t in trials)
    print(log)
    assert all(t.get("spacing") and t["spacing"].get("bucket_needed") for t in trials), \
        "a trial without departure data, or without the policer at its rate"
    assert counts_not_the_policers(trials) == [], log
    assert_bursty_retried(trials, retries, log)
    row = results.data["throughput"][0]
    print(f"NDR {row['ndr_fps']} fps, police rate {known:.0f} fps, tester_bursty {row.get('tester_bursty')}, "
          f"tester_stall_s {row.get('tester_stall_s')}, tester_bound {row.get('tester_bound')}, "
          f"spoiled attempts {spoiled}")
    assert row["ndr_fps"] < known * 1.01, log      # never above what the DUT forwards
    if not flagged(row):
        assert abs(row["ndr_fps"] - known) / known <= 0.01, f"a silent low NDR: {spoiled} {log}"
        return
    # A flagged row rests on the last failed trial at its upper bound (the
    # search's final word there): named the tester's, at a load the DUT
    # forwards (a policer drops nothing of even frames below its rate), so
    # the flag never covers the DUT's own loss. (A loaded CI host held the
    # path back in trials below the rate that the rules could not name:
    # those stand only where a later attempt at the same load decides.)
    upper = row["ndr_upper_fps"]
    at_upper = [t for t in trials if upper and abs(t["load_fps"] - upper) <= upper * 0.001 and t["lost_frames"]]
    assert at_upper and at_upper[-1]["verdict"] in NAMED and upper <= known * 1.01, \
        f"a flag over the DUT's own loss, or not on a named trial at its upper bound: {log}"



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
    assert unnamed_below_rate(trials, CAP_PPS, first_attempts_only=True) == [], log
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
