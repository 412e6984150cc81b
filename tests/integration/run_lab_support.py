"""What the `rfc2544 run` lab tests share (test_run_ndr_lab.py,
test_run_bursts_lab.py, test_run_faults_lab.py, test_latency_bound_lab.py):
the capped DUT, the module loaded for one test, small profiles, a search
against the lab's DUT, and the fault runs' helpers. Holds no tests."""
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from rfc2544.config import inventory as inventory_mod
from rfc2544.config import profiles
from rfc2544.lab.topology import CALIBRATION_LINK, DUT_EGRESS
from rfc2544.cli.display import Display
from rfc2544.results.file import Results
from rfc2544.procedures.runner import Runner, build_plan


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


def run_ndr_search(lab, tmp_path, final_s=FINAL_S, calibration_link=False, direction="uni", generators=None,
                   dut_hooks=None, **search):
    """The throughput search (MLRsearch, final_s s final trials) against the
    lab's DUT as it is capped now: the Results. `calibration_link`: name the
    lab tester's cal0-cal1 as its calibration link (the lab's inventory
    leaves it out); `generators` per stream (run's --generators). The
    tester is built as `rfc2544 run` builds it; the conditions hold where
    its generators sent (`cpus`). `dut_hooks`: the DUT's trial hooks
    ({"pre": [...], "post": [...]}, run in its namespace)."""
    from rfc2544.engine.assemble import cpus_condition, make_tester
    prof = profiles.load(str(small_profile(tmp_path, tests=["throughput"], trial_duration_s=final_s,
                                           direction=direction, search={
        "method": "mlr", "max_load_fps": 2 * CAP_PPS, "min_load_pct": 10, "initial_duration_s": 1,
        "exceed_ratio": 0.5, "duration_sum_s": 2 * final_s, **search})))
    inv = inventory_mod.load(lab.inventory_path)
    if calibration_link:
        inv.hosts["tester"].calibration_link = CALIBRATION_LINK
    if dut_hooks:
        inv.hosts["dut"].trial_hooks = dut_hooks
    tester = make_tester(inv, prof, generators)
    results = Results.create(tmp_path / "out", prof, build_plan(prof), profiles.deviations(prof),
                             {"cpus": cpus_condition(tester)})
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


@pytest.fixture
def with_module(capped):
    """Our generator and receiver (rfc2544_pktgen + pgrx) loaded in the tester
    VM for one test, then unloaded: full fidelity, latency from pgrx."""
    from kmod_helpers import MODULE, build_ko_for
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


# The lab DUT's police counter, read by trial hooks in its namespace
# (lab/cap.py polices on its egress port)
POLICE_READ = f"tc -s filter show dev {DUT_EGRESS} egress"
POLICE_HOOKS = {"pre": [POLICE_READ], "post": [POLICE_READ]}


def police_drops(trial):
    """Frames the DUT's policer dropped during a recorded trial (its
    POLICE_HOOKS' two reads), or None when either read failed."""
    reads = {}
    for hook in trial.get("hooks") or ():
        m = re.search(r"dropped (\d+)", hook.get("stdout") or "")
        if hook.get("command") == POLICE_READ and hook.get("exit_status") == 0 and m:
            reads[hook["phase"]] = int(m.group(1))
    return reads["post"] - reads["pre"] if len(reads) == 2 else None
