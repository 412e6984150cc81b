"""`rfc2544 run` in the QEMU lab (real Debian kernel, real generator and
receiver): the NDR of a DUT capped at a known packet rate, the quick
profile end to end, and the faults: a killed SSH connection, Ctrl-C and a
rebooted tester VM, each followed by a resume that completes the run; three runs into a results
store judged by `rfc2544 trend`."""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from rfc2544.config import inventory as inventory_mod
from rfc2544.config import profiles
from rfc2544.lab.topology import CALIBRATION_LINK
from rfc2544.cli.display import Display
from rfc2544.errors import InfraError
from rfc2544.results.file import Results
from rfc2544.procedures.runner import Runner, build_plan

from host_load import until_clean

pytestmark = pytest.mark.lab

# The DUT is a token bucket (tc police, Lab.cap_dut) of CAP_PPS with a
# bucket of CAP_BURST packets, well within what the lab's path forwards on a
# 2-core host under TCG. Its NDR for a trial of D seconds starting with a
# full bucket is exactly CAP_PPS + CAP_BURST / D: that is the known rate the
# search must find. The bucket is half a second deep because the tester VM
# stalls now and then and sends the late frames in a bunch; a shallow bucket
# would drop them as if the DUT were overloaded.
CAP_PPS = 3000
CAP_BURST = CAP_PPS // 2
FINAL_S = 6
RFC2544 = [sys.executable, "-m", "rfc2544"]


def tx_packets(lab):
    host = lab.connect("tester")
    try:
        return int(host.run("cat /sys/class/net/tx0/statistics/tx_packets")[1])
    finally:
        host.close()


def wait_for_traffic(lab, frames=200, timeout=120):
    """Until `frames` more frames have left the tester port than when called:
    the next trial's traffic is on the wire (learning frames are a handful).
    One SSH connection for all the reads: a new one per read takes seconds
    on a loaded host, long enough to miss the trial."""
    host = lab.connect("tester")
    try:
        read = lambda: int(host.run("cat /sys/class/net/tx0/statistics/tx_packets")[1])
        start = read()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if read() - start >= frames:
                return
            time.sleep(0.05)
    finally:
        host.close()
    raise AssertionError(f"no traffic on the tester port within {timeout} s")


def assert_generator_idle(lab):
    """No frames leave the tester port over a second: nothing left running."""
    before = tx_packets(lab)
    time.sleep(1.5)
    after = tx_packets(lab)
    assert after - before < 50, f"the generator is still sending ({after - before} frames in 1.5 s)"


def small_profile(tmp_path, **over):
    raw = {
        "name": "lab-test", "tests": ["throughput", "frame_loss"], "frame_sizes": [64],
        "trial_duration_s": 2,
        "waits": {"route_s": 0, "learning_s": 0.2, "residual_s": 0.3, "settle_s": 0.2},
        "search": {"method": "mlr", "initial_duration_s": 0.5, "resolution_pct": 2,
                   "pdr_loss_pct": None, "min_load_pct": 5, "max_load_fps": 40_000,
                   "early_abort": True},
        "frame_loss": {"step_pct": 20},
    }
    for key, value in over.items():
        raw[key] = {**raw.get(key, {}), **value} if isinstance(value, dict) else value
    path = tmp_path / "profile.yml"
    path.write_text(yaml.safe_dump(raw))
    return path


def fault_profile(tmp_path):
    """Seven 3 s frame-loss trials (20k, 17k, ... 5k fps above the capped
    DUT's rate, then 2k below it). The fault strikes in the third: four
    trials (~20 s) are still ahead, so even a heavily loaded host cannot
    finish the run before the fault lands."""
    return small_profile(tmp_path, tests=["frame_loss"], trial_duration_s=3,
                         search={"max_load_fps": 20_000}, frame_loss={"step_pct": 15})


def start_fault_run(lab, tmp_path):
    """`rfc2544 run` of the fault profile as a child process, once two
    trials are in its results: the moment the fault tests strike.
    Returns (process, output dir)."""
    out = tmp_path / "out"
    proc = subprocess.Popen(RFC2544 + ["run", "-i", str(lab.inventory_path), "-p", str(fault_profile(tmp_path)),
                                       "--out", str(out), "--format", "csv"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_trials(out / "results.json", 2, proc=proc)
    return proc, out


def wait_for_trials(results_json, n, timeout=300, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            stdout, stderr = proc.communicate()
            raise AssertionError(f"the run ended early with status {proc.returncode}: "
                                 f"{stdout[-1500:]}{stderr[-1500:]}")
        try:
            if len(json.loads(Path(results_json).read_text())["trials"]) >= n:
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"fewer than {n} trials after {timeout} s")


def resume(out):
    r = subprocess.run(RFC2544 + ["run", "--resume", str(out), "--format", "csv"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    data = json.loads((out / "results.json").read_text())
    assert data["complete"]
    return data


def run_ndr_search(lab, tmp_path, final_s=FINAL_S, calibration_link=False, direction="uni", **search):
    """The throughput search (MLRsearch, final_s s final trials) against the
    lab's DUT as it is capped now: the Results. `calibration_link`: name the
    lab tester's cal0-cal1 as its calibration link (the lab's inventory
    leaves it out). The tester is built as `rfc2544 run` builds it."""
    from rfc2544.engine.assemble import make_tester
    prof = profiles.load(str(small_profile(tmp_path, tests=["throughput"], trial_duration_s=final_s,
                                           direction=direction, search={
        "method": "mlr", "max_load_fps": 2 * CAP_PPS, "min_load_pct": 10, "initial_duration_s": 1,
        "exceed_ratio": 0.5, "duration_sum_s": 2 * final_s, **search})))
    inv = inventory_mod.load(lab.inventory_path)
    if calibration_link:
        inv.hosts["tester"].calibration_link = CALIBRATION_LINK
    tester = make_tester(inv, prof)
    results = Results.create(tmp_path / "out", prof, build_plan(prof), profiles.deviations(prof), {})
    try:
        Runner(tester, prof, results, Display(quiet=True)).run()
    finally:
        tester.close()
    return results


@pytest.fixture
def capped(lab):
    lab.cap_dut(CAP_PPS, CAP_BURST)
    yield lab
    lab.uncap_dut()


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
                    for t in results.data["trials"])
    known = police + HIDDEN_BUCKET / final_s
    print(f"police {police} fps: NDR {ndr} fps, known {known:.0f} fps, tester_bound {row['tester_bound']}, "
          f"tester_bursty {row.get('tester_bursty')}, tester_stall_s {row.get('tester_stall_s')}: {log}")
    assert ndr is not None, log
    assert all(t.get("spacing") for t in results.data["trials"]), f"a trial without departure data: {log}"
    assert row["tester_bound"] is False, log
    assert "tester_bound" not in {code_of(d) for d in results.data["deviations"]}, log
    # every trial put on the tester lost no more than its bursts could overflow
    trials = Results.load(results.dir).recorded_trials(row["unit"])
    for i, t in enumerate(trials):
        if t.tester_bursty:
            absorbed = pacing.evidence_of(trials[:i]).absorbed
            assert t.lost_frames <= pacing.overflow_bound(t.spacing, absorbed), log
    if row.get("tester_bursty") or row.get("tester_stall_s"):
        assert ndr <= known * 1.01, log       # a lower bound, never above what the DUT forwards
    else:
        assert known * 0.98 <= ndr <= known * 1.01, log


# The run's fault tests are not timing-sensitive: the background child
# pytest runs them on its own lab (conftest.py), off the critical path.
@pytest.mark.lab_background
def test_killed_ssh_connection_mid_trial(capped, tmp_path):
    """The tester's SSH connection dies during a trial: the run stops with an
    infrastructure error, the generator is stopped, finished trials stay."""
    lab = capped
    from rfc2544.engine.tester import SSHTester
    prof = profiles.load(str(fault_profile(tmp_path)))
    inv = inventory_mod.load(lab.inventory_path)
    tester = SSHTester(inv, waits={k: prof["waits"][k] for k in ("learning_s", "residual_s", "settle_s")})
    out = tmp_path / "out"
    results = Results.create(out, prof, build_plan(prof), profiles.deviations(prof),
                             {"inventory": str(lab.inventory_path)})
    outcome = {}

    def run():
        try:
            Runner(tester, prof, results, Display(quiet=True)).run()
        except BaseException as exc:       # what the CLI would turn into exit 3
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    wait_for_trials(out / "results.json", 2)
    wait_for_traffic(lab)                                  # inside the next trial
    for conn in list(tester._connections.values()):       # cut the TCP connection under paramiko
        conn._client.get_transport().sock.shutdown(2)
    thread.join(timeout=120)
    assert not thread.is_alive()
    tester.close()
    assert isinstance(outcome.get("error"), InfraError), outcome
    kept = Results.load(out)
    assert kept.data["interruptions"] and len(kept.data["trials"]) >= 2
    assert_generator_idle(lab)
    data = resume(out)
    assert len(data["trials"]) >= len(kept.data["trials"])


@pytest.mark.lab_background
def test_ctrl_c_mid_run(capped, tmp_path):
    lab = capped
    proc, out = start_fault_run(lab, tmp_path)
    wait_for_traffic(lab)                                  # inside the next trial
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout[-2000:] + stderr
    assert "Traceback" not in stderr and "--resume" in stdout
    kept = json.loads((out / "results.json").read_text())
    assert not kept["complete"] and len(kept["trials"]) >= 2
    assert_generator_idle(lab)
    data = resume(out)
    assert data["trials"][:len(kept["trials"])] == kept["trials"]


@pytest.mark.lab_background
@pytest.mark.lab_down_last
def test_tester_reboot_mid_run(capped, tmp_path):
    """The tester VM reboots mid-run (the lab's QEMU runs with -no-reboot, so
    the VM goes away): exit 3, trials kept; the lab is booted again and the
    resumed run completes."""
    lab = capped
    proc, out = start_fault_run(lab, tmp_path)
    host = lab.connect("tester")
    try:
        host.run("systemctl reboot --force", timeout=10, check=False)
    except InfraError:
        pass                                       # the connection goes down with the host
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 3, stdout[-2000:] + stderr
    assert stderr.startswith("rfc2544: ") and "Traceback" not in stderr, stderr
    kept = json.loads((out / "results.json").read_text())
    assert len(kept["trials"]) >= 2 and kept["interruptions"]
    deadline = time.monotonic() + 120
    while lab.is_up() and time.monotonic() < deadline:
        time.sleep(1)
    if lab.is_up():                 # the guest rebooted in place: it is fresh either way
        lab.down(log=lambda m: None)
    lab.up("single", log=lambda m: None)
    assert_generator_idle(lab)
    data = resume(out)
    assert data["trials"][:len(kept["trials"])] == kept["trials"]


@pytest.fixture
def with_module(capped):
    """Our generator and receiver (rfc2544_pktgen + pgrx) loaded in the tester
    VM for one test, then unloaded: full fidelity, latency from pgrx."""
    from test_kmod_helpers import MODULE, build_ko_for
    from rfc2544.drivers.ssh import put_file
    ko = build_ko_for(capped)
    host = capped.connect("tester")
    remote = "/root/rfc2544_pktgen_run.ko"
    put_file(host, ko, remote)
    host.run(f"echo stop > /proc/net/pktgen/pgctrl 2>/dev/null; rmmod pktgen 2>/dev/null; "
             f"lsmod | grep -q '^{MODULE} ' && rmmod {MODULE}; insmod {remote}", check=True)
    yield capped
    host.run(f"echo stop > /proc/net/pktgen/pgctrl 2>/dev/null; rmmod {MODULE}; rm -f {remote}", check=False)
    host.close()


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
    """The ids of failed trials at or below `cap_fps` with a micro-burst
    longer than `min_burst` that the tester-bursty rule (engine/pacing.py)
    explains but that were not named: a buffer that held what passed trials
    showed absorbed can have lost their frames to the bursts, the DUT lost
    no frames at or below their rate with bursts it absorbs, and they do not
    repeat the loss of a named attempt just before."""
    from rfc2544.engine import pacing
    unit = results.data["throughput"][0]["unit"]
    records = [t for t in results.data["trials"] if t.get("unit") == unit and not t.get("superseded")]
    trials = Results.load(results.dir).recorded_trials(unit)
    missed = []
    for i, (record, t) in enumerate(zip(records, trials)):
        s = t.spacing
        if t.tester_limited or not t.lost_frames or t.spec.load_fps > cap_fps or s is None \
                or s.longest_micro_burst <= min_burst:
            continue
        before = trials[:i]
        evidence = pacing.evidence_of(before)
        if (s.longest_micro_burst > evidence.absorbed
                and t.lost_frames <= pacing.overflow_bound(s, evidence.absorbed)
                and (evidence.lossy_even_fps is None or t.spec.load_fps < evidence.lossy_even_fps)
                and not pacing.repeats_loss(before[-1] if before else None, t)):
            missed.append(record["id"])
    return missed


SEARCH_ATTEMPTS = 2


def test_a_small_bucket_dut_names_the_testers_bursts(with_module, tmp_path):
    """The DUT policed at CAP_PPS with a bucket of 32 frames, our generator
    and receiver: every failed trial at or below the police rate whose
    micro-burst was longer than the bucket and lost no more frames than it
    sent too close is named tester-bursty and retried, and the NDR lands
    within 1 % of the police rate, or the throughput row says the tester
    could not space evenly enough to measure it (never a silent low NDR).
    Final trials of 4 s and one retry keep it short. The search resolves to
    0.5 %: at 1 % the NDR may lie a whole step under an upper bound that
    lost 2 frames at the police rate itself (seen: 2977 against 3008)."""
    lab = with_module
    lab.cap_dut(CAP_PPS, SMALL_BUCKET)
    retries, final_s = 1, 4
    known = CAP_PPS + SMALL_BUCKET / final_s
    attempts = iter(range(1, 10))

    def search():
        path = tmp_path / f"attempt{next(attempts)}"
        path.mkdir()
        return run_ndr_search(lab, path, final_s=final_s, resolution_pct=0.5, tester_limited_retries=retries)

    def held_back(results):
        # a search the loaded host held back (CI: trials at 1995 fps that
        # reached 1311, and an NDR of 2035 for 3008) proves nothing: again,
        # when it missed and the host did disturb the generator (trials it
        # held below their rate, or whose bursts the rule named)
        row = results.data["throughput"][0]
        disturbed = [t["id"] for t in results.data["trials"] if t["verdict"] in ("tester-limited", "tester-bursty")]
        missed = not (row.get("tester_bursty") or row.get("tester_stall_s")
                      or abs(row["ndr_fps"] - known) / known <= 0.01)
        return missed and disturbed and f"NDR {row['ndr_fps']:.0f} fps, trials {disturbed} disturbed"
    results, spoiled = until_clean(search, held_back, attempts=SEARCH_ATTEMPTS)
    trials = results.data["trials"]
    log = "; ".join(f"#{t['id']} {t['load_fps']:.0f}:{t['lost_frames']}:{t['verdict']}:"
                    f"{(t.get('spacing') or {}).get('longest_micro_burst')}/{(t.get('spacing') or {}).get('close_frames')}"
                    for t in trials)
    print(log)
    assert all(t.get("spacing") for t in trials), "a trial without departure data"
    # every failed trial at or below the police rate whose bursts beyond the
    # bucket explain its loss, by the rule (engine/pacing.py), is named
    assert unnamed_bursty(results, CAP_PPS, SMALL_BUCKET) == [], log
    assert_bursty_retried(trials, retries, log)
    row = results.data["throughput"][0]
    flagged = row.get("tester_bursty") or row.get("tester_stall_s")
    print(f"NDR {row['ndr_fps']} fps, police rate {known:.0f} fps, tester_bursty {row.get('tester_bursty')}, "
          f"tester_stall_s {row.get('tester_stall_s')}, spoiled attempts {spoiled}")
    if len(spoiled) == SEARCH_ATTEMPTS:
        # every attempt missed on a host that disturbed the generator (CI:
        # NDR 1778 and 2318 fps for 3008, host load 9.9): the rule's own
        # checks above held; where the NDR lands says nothing here (as
        # test_kmod_rx's netem delay test, reported with the figures)
        pytest.xfail(f"the loaded host disturbed every search: {spoiled}")
    assert flagged or abs(row["ndr_fps"] - known) / known <= 0.01, (spoiled, log)


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
        # a search that only failed where the tester could not send says nothing of the DUT
        row = results.data["throughput"][0]
        return not row.get("limited_by") and f"no direction lost frames at the upper bound: {row}"
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
