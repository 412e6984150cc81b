"""`rfc2544 run` in the QEMU lab (real Debian kernel, real generator and
receiver): the NDR of a DUT capped at a known packet rate, hidden or
policed in one direction; latency and back-to-back with the module; three
runs into a results store judged by `rfc2544 trend`."""
import json
import os
import shutil
import subprocess

import pytest

from rfc2544.config import inventory as inventory_mod
from rfc2544.config import profiles
from rfc2544.cli.display import Display
from rfc2544.results.file import Results
from rfc2544.procedures.runner import Runner, build_plan

from host_load import STALL_MS, until_clean
from run_lab_support import CAP_PPS, CAP_BURST, RFC2544, small_profile, run_ndr_search
from run_lab_support import capped, with_module  # noqa: F401 (fixtures; with_module needs capped)

pytestmark = pytest.mark.lab


HIDDEN_BUCKET = 256     # frames: the bucket of the hidden-capacity trial (5,300 frames/s there)


def test_a_hidden_capacity_is_the_duts_within_one_step(with_module, tmp_path):
    """A police rate the test picks (printed) with a 256-frame bucket, a
    1 % MLRsearch with 5 s final trials, our generator (every trial's
    departures recorded): the NDR is within one step of what the DUT
    forwards (rate + bucket / 5 s), and the row carries no tester label:
    no ceiling is near (none is known) and the failed trials above the
    NDR lost more than their bursts, beyond what passed trials showed the
    DUT absorbing, could overflow. Only a tester that really stopped
    sending (tester_stall_s, a loaded CI host stalling the VM) or bursts
    that do explain the upper bound's loss may mark it, and then the NDR is
    never above what the DUT forwards. MLRsearch's exceed ratio keeps one
    stray loss of a TCG lab from deciding the NDR."""
    import random
    from rfc2544.engine import pacing
    from rfc2544.results.deviations import code_of
    lab = with_module
    police = random.randrange(2600, 3400, 10)
    lab.cap_dut(police, HIDDEN_BUCKET)
    final_s = 5
    results = run_ndr_search(lab, tmp_path, final_s=final_s, resolution_pct=1,
                             max_load_fps=2 * police, duration_sum_s=2 * final_s)
    row = results.data["throughput"][0]
    ndr = row["ndr_fps"]
    log = "; ".join(f"#{t['id']} {t['load_fps']:.0f}/{t['duration_s']:g}s:{t['lost_frames']}:{t['verdict']}:"
                    f"{(t.get('spacing') or {}).get('longest_micro_burst')}/{(t.get('spacing') or {}).get('close_frames')}"
                    f"/{(t.get('spacing') or {}).get('bucket_needed')}"
                    for t in results.data["trials"])
    known = police + HIDDEN_BUCKET / final_s
    print(f"police {police} fps: NDR {ndr} fps, known {known:.0f} fps, tester_bound {row['tester_bound']}, "
          f"tester_bursty {row.get('tester_bursty')}, tester_stall_s {row.get('tester_stall_s')}: {log}")
    assert ndr is not None, log
    assert all(t.get("spacing") for t in results.data["trials"]), f"a trial without departure data: {log}"
    assert row["tester_bound"] is False, log
    assert "tester_bound" not in {code_of(d) for d in results.data["deviations"]}, log
    # every trial put on the tester lost no more than its bursts could
    # overflow, or than a policer at its rate drops with a bucket at least
    # as large as passed trials needed (the rule's two forms)
    trials = Results.load(results.dir).recorded_trials(row["unit"])
    for i, t in enumerate(trials):
        if t.tester_bursty:
            evidence = pacing.evidence_of(trials[:i])
            assert t.lost_frames <= max(pacing.overflow_bound(t.spacing, evidence.absorbed),
                                        pacing.policed_bound(t.spacing, evidence.absorbed_bucket)), log
    if row.get("tester_bursty") or row.get("tester_stall_s"):
        assert ndr <= known * 1.01, log       # a lower bound, never above what the DUT forwards
    else:
        assert known * 0.98 <= ndr <= known * 1.01, log



def test_latency_and_back_to_back_with_the_module(with_module, tmp_path):
    """Throughput, then latency at it (median and p99.9 from pgrx) and
    back-to-back bursts, on the token-bucket DUT. At a burst rate R above
    the cap C the bucket of B packets empties after B * R / (R - C) frames:
    that is the known back-to-back answer (9000 frames, 2 s of the 3 s
    bursts, here: long bursts at a modest rate, so neither the generator's
    start-up time nor a busy host makes them slower than asked). The profile's waits are short,
    but every burst starts idle (back_to_back.depletion_s, 2 s): the 1 s
    the bucket needs to refill after a failed burst. Before that rule the
    bursts found the bucket three quarters full and measured 0.75 of this."""
    from rfc2544.engine.tester import SSHTester
    lab = with_module
    bucket = 2 * CAP_BURST
    lab.cap_dut(CAP_PPS, bucket)
    rate = CAP_PPS * 3 // 2
    prof = profiles.load(str(small_profile(
        tmp_path, tests=["throughput", "latency", "back_to_back"], trial_duration_s=3,
        search={"max_load_fps": rate, "resolution_pct": 2, "min_load_pct": 10, "initial_duration_s": 1,
                "exceed_ratio": 0.5, "duration_sum_s": 6, "tester_limited_retries": 3},
        latency={"duration_s": 2, "repetitions": 2},
        back_to_back={"burst_s": 3, "repetitions": 2, "resolution_pct": 5})))
    inv = inventory_mod.load(lab.inventory_path)
    tester = SSHTester(inv, waits={k: prof["waits"][k] for k in ("learning_s", "residual_s", "settle_s")})
    results = Results.create(tmp_path / "out", prof, build_plan(prof), profiles.deviations(prof), {})
    try:
        assert tester.receiver_name == "pgrx" and tester.full_fidelity
        Runner(tester, prof, results, Display(quiet=True)).run()
    finally:
        tester.close()
    d = results.data
    states = {s["test"]: (s["state"], s.get("note")) for s in d["plan"]}
    assert states == {"throughput": ("done", None), "latency": ("done", None), "back_to_back": ("done", None)}
    lat = d["latency"][0]
    assert lat["load_fps"] == d["throughput"][0]["ndr_fps"]
    assert lat["samples"] >= 500 and lat["repetitions"] == 2
    assert 0 < lat["min_ns"] <= lat["median_ns"] <= lat["p999_ns"] <= lat["max_ns"]
    b2b = d["back_to_back"][0]
    known = bucket * rate / (rate - CAP_PPS)
    print(f"back-to-back lengths {b2b['lengths']}, known {known:.0f}")
    assert 0.85 * known <= b2b["avg_frames"] <= 1.1 * known, (b2b["lengths"], known)
    assert b2b["implied_buffer_s"] == pytest.approx(b2b["avg_frames"] / rate)




def test_trend_marks_the_capped_run_as_a_regression(capped, tmp_path):
    """Three `rfc2544 run --store` runs of one profile, each then added to
    one store (`rfc2544 store add`), the DUT capped at CAP_PPS for two and
    at half that for the third: `rfc2544 trend` groups the two, marks the
    third's group a regression of about -50 % and exits 1; its page renders
    in headless Chromium. (1 s trials at 10 % resolution made the two
    baseline runs differ by 20 % in CI: 2 s trials at 5 %.) A run whose
    row came out tester-bound is run again (3 attempts): the trend rightly
    puts it under other conditions, so it cannot show the regression (the
    loaded CI host starved the tester VM so in CI25)."""
    lab = capped
    profile = small_profile(tmp_path, tests=["throughput"], trial_duration_s=2, search={
        "max_load_fps": 2 * CAP_PPS, "resolution_pct": 5, "min_load_pct": 10, "initial_duration_s": 0.5,
        "exceed_ratio": 0.5, "duration_sum_s": 4})
    store = tmp_path / "store"
    for i, cap in enumerate((CAP_PPS, CAP_PPS, CAP_PPS // 2)):
        lab.cap_dut(cap, cap // 2)
        for attempt in range(3):
            out, own = tmp_path / f"run{i}-{attempt}", tmp_path / f"store{i}-{attempt}"
            r = subprocess.run(RFC2544 + ["run", "-i", str(lab.inventory_path), "-p", str(profile), "--out",
                                          str(out), "--format", "csv", "--store", str(own)],
                               capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, r.stderr[-2000:]
            assert f"store: {own}: added as " in r.stdout
            rows = json.loads((out / "results.json").read_text())["throughput"]
            if not any(row.get("tester_bound") for row in rows):
                break
            print(f"run {i} attempt {attempt}: tester-bound, run again")
        add = subprocess.run(RFC2544 + ["store", "add", "--store", str(store), str(out)],
                             capture_output=True, text=True, timeout=120)
        assert add.returncode == 0, add.stdout + add.stderr
    r = subprocess.run(RFC2544 + ["trend", "--store", str(store), "--junit", str(tmp_path / "trend.xml")],
                       capture_output=True, text=True, timeout=300)
    print(r.stdout)
    assert r.returncode == 1, r.stdout + r.stderr
    doc = json.loads((store / "trend" / "trend.json").read_text())
    [ndr] = [s for s in doc["series"] if s["metric"] == "ndr_fps"]
    values = [run["value"] for run in ndr["segments"][0]["runs"]]
    assert len(ndr["segments"]) == 1 and len(values) == 3, ndr
    newest = ndr["last_group"]
    assert ndr["status"] == "regression" and newest["runs"] == 1 and newest["first_run"] == ndr["newest_run"]
    assert -60 < newest["change_pct"] < -35, (values, newest)
    assert "regression in" in r.stderr and "throughput NDR (frames/s) 64 B IPv4" in r.stderr
    shot = tmp_path / "trend.png"
    chromium = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               f"--user-data-dir={tmp_path / 'chromium'}", "--enable-logging=stderr", "--v=0",
                               "--window-size=1200,1600", f"--screenshot={shot}",
                               (store / "trend" / "trend.html").as_uri()],
                              capture_output=True, text=True, timeout=120)
    assert chromium.returncode == 0, chromium.stderr[-2000:]
    assert not [line for line in chromium.stderr.splitlines() if ":CONSOLE" in line]
    from matplotlib.image import imread
    pixels = imread(str(shot))
    assert pixels.shape[0] >= 1000 and pixels.std() > 0.05
    if os.environ.get("RFC2544_TEST_ARTIFACTS"):
        shutil.copy(shot, os.environ["RFC2544_TEST_ARTIFACTS"])



def test_bidirectional_ndr_names_the_policed_direction(with_module, tmp_path):
    """Issue 31 item 1 (RFC 2544 section 14): `direction: bi` against the DUT
    policed toward rx0 only (CAP_PPS, a bucket of CAP_BURST). Each tester
    port sends and receives; one pgrx watches both. The aggregate NDR is
    twice what the policed direction forwards (half the load goes each
    way), the row gives each direction its half, and only the policed
    direction is named as the one that limits; the report says so.

      tester tx0 --> dut0 [dut] dut1 (police CAP_PPS) --> rx0   forward
      tester tx0 <-- dut0 [dut] dut1 <----------------- rx0     reverse
    """
    from rfc2544.results.load import load_results
    from rfc2544.reports.render import render_html
    lab = with_module
    final_s = 4
    known = 2 * (CAP_PPS + CAP_BURST / final_s)

    def search():
        path = tmp_path / f"attempt{len(list(tmp_path.iterdir()))}"
        path.mkdir()
        return run_ndr_search(lab, path, final_s=final_s, direction="bi", max_load_fps=4 * CAP_PPS,
                              resolution_pct=2, tester_limited_retries=1)

    def held_back(results):
        # searched again only when no direction was named and a trial at the
        # upper bound shows the tester held back: it reached less than its
        # rate (tester-limited, which per_stream does not judge a direction
        # by) or was tester-bursty, or stopped for STALL_MS. No direction
        # named without that, or a wrong one named, fails at once.
        row = results.data["throughput"][0]
        upper = row.get("ndr_upper_fps")
        at_upper = [t for t in results.data["trials"]
                    if upper and abs(t["load_fps"] - upper) <= upper * 0.001]
        gap_ms = {t["id"]: (t.get("spacing") or {}).get("max_gap_ns", 0) / 1e6 for t in at_upper}
        held = [f"#{t['id']} {t['verdict']}, longest gap {gap_ms[t['id']]:.0f} ms" for t in at_upper
                if t["verdict"] in ("tester-limited", "tester-bursty") or gap_ms[t["id"]] >= STALL_MS]
        return not row.get("limited_by") and held and f"no direction named, the upper bound's trials {held}"
    results, spoiled = until_clean(search, held_back, attempts=2)
    row = results.data["throughput"][0]
    print(f"bidirectional NDR {row['ndr_fps']:.0f} fps (known {known:.0f}), {row['directions']}, "
          f"limited by {row.get('limited_by')}, spoiled {spoiled}")
    assert row["limited_by"] == ["tester:tx0->tester:rx0"], row
    by = {(d["tx"], d["rx"]): d for d in row["directions"]}
    fwd, back = by[("tester:tx0", "tester:rx0")], by[("tester:rx0", "tester:tx0")]
    assert fwd["limiting"] and not back["limiting"]
    assert fwd["fps"] == pytest.approx(row["ndr_fps"] / 2, rel=0.01)
    assert back["fps"] == pytest.approx(row["ndr_fps"] / 2, rel=0.01)
    # the aggregate: a loaded host may cost a step or two, never more than the DUT forwards
    assert 0.8 * known <= row["ndr_fps"] <= 1.03 * known, row
    # every trial counted both directions apart, from one pgrx
    for t in results.data["trials"]:
        if t.get("superseded") or t["spec"].get("test") == "probe":
            continue
        assert {(s["tx_port"], s["rx_port"]) for s in t["streams"]} == set(by), t["streams"]
    html = render_html(load_results(results.path))
    assert "Per direction" in html and html.count('<span class="badge v-bound">limits</span>') == 1


def test_two_generators_find_the_same_ndr_as_one(with_module, tmp_path):
    """Issue 56: `--generators 2` in the single lab, where the DUT is a
    namespace of the 2-vCPU tester and forwards on the CPU its ports' RPS
    names (1). Taking both CPUs starved that path and the search ended 21 %
    low with no flag; by default both generators now send from CPU 0 and
    leave CPU 1 to the DUT and the receiver. The NDR is within one step of
    what the DUT forwards, or the row says the tester set it.

      tx0@0, tx0@1 (kpktgend_0) --> tx0 --> dut0 [dut, CPU 1] dut1 (police, 256 frames) --> rx0: pgrx
    """
    lab = with_module
    police = 3000
    lab.cap_dut(police, HIDDEN_BUCKET)
    final_s, step_pct = 2, 2
    results = run_ndr_search(lab, tmp_path, final_s=final_s, resolution_pct=step_pct, generators=2,
                             max_load_fps=2 * police, duration_sum_s=2 * final_s)
    cpus = results.data["conditions"]["cpus"]["tester"]
    assert cpus["sending"] == {"0": ["tx0@0", "tx0@1"]} and cpus["receive_path"] == [1], cpus
    assert cpus["warning"] is None, cpus
    row = results.data["throughput"][0]
    ndr = row["ndr_fps"]
    trials = [t for t in results.data["trials"] if not t.get("superseded")]
    log = "; ".join(f"#{t['id']} {t['load_fps']:.0f}/{t['duration_s']:g}s:{t['lost_frames']}:{t['verdict']}:"
                    f"{t.get('host_path')}" for t in trials)
    known = police + HIDDEN_BUCKET / final_s
    print(f"two generators, police {police} fps: NDR {ndr}, known {known:.0f}, row {row}: {log}")
    assert ndr is not None, log
    # both generators' counts in every trial, each stream's sum exact
    assert all(len(t["streams"][0].get("generators") or ()) == 2 for t in trials), log
    assert all(t.get("host_path", {}).get("tester") is not None for t in trials), log
    flagged = row.get("tester_bound") or row.get("tester_bursty") or row.get("tester_stall_s")
    if flagged:
        assert ndr <= known * 1.01, log
    else:
        assert known * (1 - step_pct / 100) <= ndr <= known * 1.01, log
