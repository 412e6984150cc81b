"""`rfc2544 run` end to end through the CLI, with the simulated tester
(rfc2544.sim.dut) in place of SSH: exit codes, files, resume."""
import json
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from rfc2544 import cli
from rfc2544.config import inventory as inventory_mod
from rfc2544.engine import assemble
from rfc2544.sim import dut as simdut
from rfc2544.errors import InfraError

INVENTORY = """
all:
  vars:
    rfc2544_streams: [{tx: "t:tx0", rx: "t:rx0"}]
  children:
    testers:
      hosts:
        t:
          ansible_host: 127.0.0.1
          rfc2544_ports:
            - {name: tx0, role: tx, mac: "02:00:00:00:00:01", ipv4: 198.18.0.1/24, peer_mac: "02:00:00:00:00:02"}
            - {name: rx0, role: rx, mac: "02:00:00:00:00:03", ipv4: 198.19.0.1/24}
"""

PROFILE = """
name: unit
tests: [throughput, frame_loss]
frame_sizes: [64]
trial_duration_s: 2
waits: {route_s: 0, learning_s: 0, residual_s: 0, settle_s: 0}
search: {method: bisection, initial_duration_s: 1, resolution_pct: 1, max_load_fps: 100000}
"""


@pytest.fixture
def setup(tmp_path, monkeypatch):
    inv = tmp_path / "inventory.yml"
    inv.write_text(INVENTORY)
    prof = tmp_path / "profile.yml"
    prof.write_text(PROFILE)
    testers = []

    def fake_tester(inventory, profile, generators=None, generator_cpus="free"):
        sim = testers.pop(0) if testers else simdut.SimDUT(capacity_fps=40_000)
        sim.made = True
        return sim

    monkeypatch.setattr(assemble, "make_tester", fake_tester)
    return tmp_path, inv, prof, testers


def main(*args):
    with pytest.raises(SystemExit) as exc:
        cli.main(list(args))
    return exc.value.code


def test_run_writes_complete_results_csv_and_report(setup, capsys):
    tmp, inv, prof, _ = setup
    out = tmp / "out"
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(out)) == 0
    data = json.loads((out / "results.json").read_text())
    assert data["complete"] and 40_000 * 0.99 <= data["throughput"][0]["ndr_fps"] <= 40_000
    assert data["conditions"]["generator"] == "simulated generator"
    assert (out / "trials.csv").exists()
    printed = capsys.readouterr().out
    assert "NDR" in printed and "trial" in printed and "ETA" in printed


def test_threshold_missed_exits_1(setup, capsys):
    tmp, inv, prof, _ = setup
    prof.write_text(PROFILE + "thresholds: {throughput_min_fps: 60000}\n")
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(tmp / "o"), "--format", "csv") == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rfc2544: throughput at 64 B is")


def test_infrastructure_failure_exits_3_and_resume_completes(setup, capsys):
    tmp, inv, prof, testers = setup
    broken = simdut.SimDUT(capacity_fps=40_000, fail_at={4: InfraError("t: connection lost during 'cat'")})
    testers.append(broken)
    out = tmp / "o"
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(out), "--format", "csv") == 3
    err = capsys.readouterr().err
    assert "rfc2544: t: connection lost" in err and "Traceback" not in err
    assert broken.stop_all_calls == 1 and not broken.running
    assert len(json.loads((out / "results.json").read_text())["trials"]) == 3
    fresh = simdut.SimDUT(capacity_fps=40_000)
    testers.append(fresh)
    assert main("run", "--resume", str(out), "--format", "csv") == 0
    data = json.loads((out / "results.json").read_text())
    assert data["complete"] and fresh.trials_run == len(data["trials"]) - 3


def test_ctrl_c_exits_130_and_keeps_trials(setup, capsys):
    tmp, inv, prof, testers = setup
    testers.append(simdut.SimDUT(capacity_fps=40_000, fail_at={2: KeyboardInterrupt()}))
    out = tmp / "o"
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(out)) == 130
    captured = capsys.readouterr()
    assert "--resume" in captured.out and "Traceback" not in captured.err
    assert len(json.loads((out / "results.json").read_text())["trials"]) == 1


@pytest.mark.parametrize("args,message", [
    (["--resume", "{out}", "-p", "quick"], "--resume continues a run"),
    (["--resume", "{tmp}/nothing"], "no such results file"),     # the one loader's wording (results_file)
    (["-i", "{tmp}/missing.yml"], "no such inventory"),
    (["-i", "{inv}", "--frame-size", "huge"], "--frame-size"),
    (["-i", "{inv}", "-p", "{prof}", "--out", "{out}"], "already holds a results.json"),
])
def test_bad_input_exits_2(setup, capsys, args, message):
    tmp, inv, prof, _ = setup
    out = tmp / "out"
    out.mkdir()
    (out / "results.json").write_text("{}")
    args = [a.format(tmp=tmp, inv=inv, prof=prof, out=out) for a in args]
    assert main("run", *args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_without_inventory_targets_the_lab(setup, capsys, monkeypatch):
    tmp, _, prof, _ = setup
    monkeypatch.setenv("RFC2544_CACHE", str(tmp / "cache"))
    assert main("run", "-p", str(prof)) == 2
    assert "lab is not up" in capsys.readouterr().err


def test_calibrate_saves_and_run_uses_the_ceiling(setup, monkeypatch, capsys):
    import rfc2544.engine.calibrate as cal
    tmp, inv, prof, testers = setup
    monkeypatch.setattr(cal, "calibrate",
                        lambda inventory, sizes, duration=2.0, tester=None, progress=None: {s: 30_500.0 for s in sizes})
    assert main("calibrate", "-i", str(inv), "--frame-size", "64", "--no-pacing") == 0
    saved = json.loads((tmp / "inventory.yml.calibration.json").read_text())
    assert saved["fps"] == {"64": 30_500.0}
    prof.write_text(PROFILE.replace(", max_load_fps: 100000", ""))
    testers.append(simdut.make("tester-ceiling", tester_ceiling_fps=30_000))
    out = tmp / "o"
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(out), "--format", "csv") == 0
    row = json.loads((out / "results.json").read_text())["throughput"][0]
    assert row["max_load_fps"] == 30_500.0 and row["max_load_source"] == "calibrated tester ceiling"
    assert row["tester_bound"] is True


def test_calibrate_measures_each_generator_count_and_runs_take_their_own(setup, monkeypatch, capsys):
    """`--generators 1 --generators 2`: a ceiling per count, a table of the
    scaling, and a run finds the ceiling of its own count only (simulated
    measurement: the ceiling is 30,000 fps per generator)."""
    import rfc2544.engine.calibrate as cal
    tmp, inv, prof, testers = setup
    monkeypatch.setattr(cal, "calibrate", lambda inventory, sizes, duration=2.0, tester=None, progress=None:
                        {s: 30_000.0 * tester.plans[0].generators for s in sizes})
    text = inv.read_text().replace('peer_mac: "02:00:00:00:00:02"', 'peer_mac: "02:00:00:00:00:02", speed_mbps: 1000', 1)
    inv.write_text(text)
    assert main("calibrate", "-i", str(inv), "--frame-size", "64", "--no-pacing",
                "--generators", "1", "--generators", "2") == 0
    out = capsys.readouterr().out
    assert "64 B  1: 30,000 (30,000 each)  2: 60,000 (30,000 each)" in out, out
    assert "line rate (1,488,095 fps) would take 50 generators at that rate" in out, out
    saved = json.loads((tmp / "inventory.yml.calibration.json").read_text())
    assert saved["fps"] == {"64": 30_000.0}
    assert saved["ceilings"] == [{"generators": "1", "fps": {"64": 30_000.0}, "receive": None},
                                 {"generators": "2", "fps": {"64": 60_000.0}, "receive": None}]
    loaded = inventory_mod.load(inv)
    assert assemble.load_calibration(loaded, "2") == {"64": 60_000.0}
    assert assemble.load_calibration(loaded, "1") == {"64": 30_000.0}
    assert assemble.load_calibration(loaded, "4") is None
    assert assemble.calibrated_generators(loaded) == ["1", "2"]
    # a direction: bi run looks its ceiling up by its forward streams, which
    # calibrate measured (its key counted the reverse ones: "1,1", none found)
    from dataclasses import replace
    from rfc2544.drivers.streams import plan_streams
    forward = plan_streams(loaded, generators=2)
    bi = forward + [replace(p, stream=len(loaded.streams) + p.stream) for p in forward]   # their reverses
    assert assemble.generators_key(bi) == "2,2" and assemble.calibration_key(bi, loaded) == "2"
    assert assemble.load_calibration(loaded, assemble.calibration_key(bi, loaded)) == {"64": 60_000.0}
    # a file from before ceilings named their generators: one per stream's
    (tmp / "inventory.yml.calibration.json").write_text(json.dumps({"fps": {"64": 1.0}}))
    assert assemble.load_calibration(loaded, "1") == {"64": 1.0}
    assert assemble.load_calibration(loaded, "2") is None


def test_doctor_failures_exit_3(setup, monkeypatch, capsys):
    import rfc2544.engine.doctor as doc
    _, inv, _, _ = setup
    monkeypatch.setattr(doc, "doctor", lambda inventory, networks=1, ipv6=False, sources=1, bidirectional=False, generators=None, every_cpu=False: [("ssh t", True, "ok"), ("link tx0", False, "down")])
    assert main("doctor", "-i", str(inv)) == 3
    captured = capsys.readouterr()
    assert "FAIL  link tx0: down" in captured.out
    assert captured.err.strip() == "rfc2544: doctor: 1 of 2 checks failed: link tx0"


def test_internal_error_is_one_line_with_a_log(setup, capsys):
    tmp, inv, prof, testers = setup
    testers.append(simdut.SimDUT(capacity_fps=40_000, fail_at={2: ZeroDivisionError("oops")}))
    out = tmp / "o"
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(out)) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "internal error (ZeroDivisionError: oops)" in err[0]
    assert "ZeroDivisionError" in (out / "error.log").read_text()


def test_setup_runs_the_playbook_first(setup, monkeypatch, capsys):
    from rfc2544.engine import playbooks as host_setup
    tmp, inv, prof, _ = setup
    calls = []
    monkeypatch.setattr(host_setup, "find_tool", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(host_setup.subprocess, "call", lambda argv, env: calls.append((argv, env["ANSIBLE_CONFIG"])) or 0)
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(tmp / "o"), "--setup",
                "--format", "csv") == 0
    playbooks = host_setup.playbooks_dir()
    assert calls == [(["/usr/bin/ansible-playbook", str(playbooks / "setup.yml"), "-i", str(inv)],
                      str(playbooks / "ansible.cfg"))]
    monkeypatch.setattr(host_setup.subprocess, "call", lambda argv, env: 4)
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(tmp / "o2"), "--setup") == 3
    assert "setup.yml failed with exit status 4" in capsys.readouterr().err


def test_resume_finds_a_relative_inventory_from_another_directory(setup, monkeypatch, capsys):
    tmp, inv, prof, testers = setup
    testers.append(simdut.SimDUT(capacity_fps=40_000, fail_at={2: KeyboardInterrupt()}))
    monkeypatch.chdir(tmp)
    assert main("run", "-i", "inventory.yml", "-p", str(prof), "--out", "o", "--format", "csv") == 130
    stored = json.loads((tmp / "o" / "results.json").read_text())["conditions"]["inventory"]
    assert stored == str(inv.resolve())
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main("run", "--resume", "../o", "--format", "csv") == 0
    assert json.loads((tmp / "o" / "results.json").read_text())["complete"]


def test_resume_refuses_another_inventory_and_accepts_the_same(setup, monkeypatch, capsys):
    tmp, inv, prof, testers = setup
    testers.append(simdut.SimDUT(capacity_fps=40_000, fail_at={2: KeyboardInterrupt()}))
    out = tmp / "o"
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(out), "--format", "csv") == 130
    other = tmp / "other.yml"
    other.write_text(INVENTORY)
    capsys.readouterr()
    assert main("run", "--resume", str(out), "-i", str(other), "--format", "csv") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(inv) in err[0] and "other.yml" in err[0]
    monkeypatch.chdir(out)
    assert main("run", "--resume", ".", "-i", "../inventory.yml", "--format", "csv") == 0


@pytest.fixture
def without_module(monkeypatch):
    """Make `import NAME` fail as in an install without it; the report
    modules that import it are re-imported."""
    def hide(name):
        monkeypatch.setitem(sys.modules, name, None)
        for module in ("rfc2544.reports.render", "rfc2544.reports.plots"):
            monkeypatch.delitem(sys.modules, module, raising=False)
    return hide


@pytest.mark.parametrize("module", ["matplotlib", "jinja2"])
def test_missing_report_dependency_exits_3_after_results_and_csv(setup, capsys, without_module, module):
    tmp, inv, prof, _ = setup
    without_module(module)
    out = tmp / "out"
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(out)) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"'{module}'" in err[0] and f"pip install {module}" in err[0]
    assert json.loads((out / "results.json").read_text())["complete"]
    assert (out / "trials.csv").exists() and not (out / "report.html").exists()


def test_report_with_a_missing_dependency_is_one_line(setup, capsys, without_module):
    tmp, inv, prof, _ = setup
    out = tmp / "out"
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(out), "--format", "csv") == 0
    without_module("jinja2")
    capsys.readouterr()
    assert main("report", str(out), "--format", "html") == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'jinja2'" in err[0] and "Traceback" not in err[0]


def test_report_writes_csv_as_run_does(setup, capsys):
    tmp, inv, prof, _ = setup
    out = tmp / "out"
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(out), "--format", "csv") == 0
    from_run = (out / "trials.csv").read_text()
    (out / "trials.csv").unlink()
    assert main("report", str(out / "results.json"), "--format", "csv") == 0
    assert (out / "trials.csv").read_text() == from_run
    assert main("report", str(out), "--format", "csv", "--out", str(tmp / "elsewhere")) == 0
    assert (tmp / "elsewhere" / "trials.csv").read_text() == from_run


# A child process running the real CLI with the simulated tester in place of
# SSH. Its second trial waits for the test's release file, so the run cannot
# end before the SIGINT arrives, whatever the machine's speed.
HELD_RUN = """
import pathlib, sys, time
from rfc2544 import cli
from rfc2544.config import inventory as inventory_mod
from rfc2544.engine import assemble
from rfc2544.sim import dut as simdut

class Held(simdut.SimDUT):
    def run_trial(self, spec, progress=None):
        while self.trials_run == 1 and not pathlib.Path(sys.argv[1]).exists():
            time.sleep(0.01)
        return super().run_trial(spec, progress)

assemble.make_tester = lambda inventory, profile, generators=None, generator_cpus="free": Held(capacity_fps=40_000)
cli.main(sys.argv[2:])
"""


def wait_for_a_trial(results_json, proc):
    while proc.poll() is None:
        try:
            if json.loads(results_json.read_text())["trials"]:
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"the run ended before its first trial was saved: {proc.communicate()}")


def test_sigint_stops_a_run_whose_parent_ignored_sigint(setup):
    """A CI harness's background job inherits SIGINT ignored; a run must still
    stop on SIGINT, exit 130 and print the --resume hint, never exit 0."""
    tmp, inv, prof, _ = setup
    out, release = tmp / "out", tmp / "release"
    proc = subprocess.Popen(
        [sys.executable, "-c", HELD_RUN, str(release),
         "run", "-i", str(inv), "-p", str(prof), "--out", str(out), "--format", "csv"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        wait_for_a_trial(out / "results.json", proc)
        proc.send_signal(signal.SIGINT)
    finally:
        release.touch()         # an ignored SIGINT lets the run go on to the end
    stdout, stderr = proc.communicate()
    assert proc.returncode == 130, (stdout[-500:], stderr)
    assert "--resume" in stdout and "Traceback" not in stderr
    assert not json.loads((out / "results.json").read_text())["complete"]


def test_calibrate_takes_sigint_for_its_duration_only(setup, monkeypatch):
    import rfc2544.engine.calibrate as cal
    _, inv, _, _ = setup
    seen = []

    def fake_calibrate(inventory, sizes, duration=2.0, tester=None, progress=None):
        seen.append(signal.getsignal(signal.SIGINT))
        return {s: 30_000.0 for s in sizes}

    monkeypatch.setattr(cal, "calibrate", fake_calibrate)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert main("calibrate", "-i", str(inv), "--frame-size", "64", "--no-pacing") == 0
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN       # given back afterwards
    finally:
        signal.signal(signal.SIGINT, previous)
    from rfc2544 import interrupts
    assert seen == [interrupts._handler]


def test_run_json_prints_the_summary_on_stdout_and_progress_on_stderr(setup, capsys, monkeypatch):
    """--json against the simulated DUT (capacity 40,000 frames/s): stdout is
    one JSON document, the same summary as `report --json` plus the run's paths."""
    from rfc2544.reports.outputs import summary_document
    monkeypatch.delenv("RFC2544_STORE", raising=False)
    tmp, inv, prof, _ = setup
    out = tmp / "out"
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(out), "--json") == 0
    printed = capsys.readouterr()
    doc = json.loads(printed.out)
    written = doc.pop("reports")
    assert doc == {**summary_document(out / "results.json"), "results_dir": str(out), "threshold_misses": [],
                   "stored": None}
    # every file the run wrote beside results.json: the CSVs and the report
    assert sorted(written) == sorted(str(p) for p in out.iterdir() if p.name != "results.json")
    assert str(out / "trials.csv") in written and str(out / "report.html") in written
    assert doc["complete"] and 40_000 * 0.99 <= doc["throughput"][0]["ndr_fps"] <= 40_000
    assert [r["frame_size"] for r in doc["frame_loss"]] == [64] and "trials" not in doc
    assert "NDR" in printed.err and "report: " in printed.err      # progress, for a person


def test_run_json_with_a_missed_threshold_still_prints_and_exits_1(setup, capsys):
    tmp, inv, prof, _ = setup
    prof.write_text(PROFILE + "thresholds: {throughput_min_fps: 60000}\n")
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(tmp / "o"), "--format", "csv", "--json") == 1
    printed = capsys.readouterr()
    doc = json.loads(printed.out)
    assert len(doc["threshold_misses"]) == 1 and doc["threshold_misses"][0].startswith("throughput at 64 B is")
    assert str(tmp / "o" / "trials.csv") in doc["reports"] and not [p for p in doc["reports"] if p.endswith(".html")]
    assert printed.err.strip().splitlines()[-1].startswith("rfc2544: throughput at 64 B is")


def test_run_json_interrupted_prints_no_document(setup, capsys):
    tmp, inv, prof, testers = setup
    testers.append(simdut.SimDUT(capacity_fps=40_000, fail_at={2: KeyboardInterrupt()}))
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(tmp / "o"), "--json") == 130
    printed = capsys.readouterr()
    assert printed.out == "" and "interrupted" in printed.err


def test_calibrate_compare_in_tree_needs_pacing(setup, capsys):
    _, inv, _, _ = setup
    assert main("calibrate", "-i", str(inv), "--no-pacing", "--compare-in-tree") == 2
    assert "--compare-in-tree compares pacing" in capsys.readouterr().err


def test_calibrate_compare_in_tree_measures_both_and_saves_them(setup, monkeypatch, capsys):
    """Simulated (no host): a tester whose module paces evenly and whose
    in-tree pktgen, swapped in for the block, sends micro-bursts of 8 on
    the calibration link; both sets of rows are printed and saved, and the
    module is back afterwards."""
    import contextlib
    import rfc2544.engine.calibrate as cal
    import rfc2544.engine.tester as tester_mod
    from rfc2544.model import Spacing
    tmp, inv, _, _ = setup
    monkeypatch.setattr(cal, "calibrate",
                        lambda inventory, sizes, duration=2.0, tester=None, progress=None: {s: 40_000.0 for s in sizes})

    class Sim:
        has_calibration_link = True
        plans = ()

        def __init__(self, inventory, waits=None, generators=None):
            self.generator_name, self.swaps = "rfc2544_pktgen", []

        def module_parameters(self):
            return {"spin_ns": 100_000, "catchup_pct": 0} if self.generator_name == "rfc2544_pktgen" else {}

        def set_module_parameter(self, name, value):
            pass

        def spacing(self, fps, burst, source):
            gap = 1e9 / fps
            return Spacing(source=source, frames=1000, nominal_gap_ns=gap, min_gap_ns=0, mean_gap_ns=gap,
                           max_gap_ns=gap, p50_gap_ns=gap, p99_gap_ns=gap, p999_gap_ns=2 * gap, micro_bursts=1,
                           longest_micro_burst=burst, close_frames=max(burst - 1, 0))

        def send_paced(self, size, fps, duration):
            return int(fps * duration), duration, self.spacing(fps, 0, "generator")

        def send_on_link(self, size, fps, duration):
            assert self.generator_name == "pktgen (in-tree)"
            return int(fps * duration), duration, self.spacing(fps, 8, "calibration link")

        receiver_name = "pgrx"

        def count_on_link(self, size, fps, duration):
            sent = int(fps * duration)
            return SimpleNamespace(tx_frames=sent, rx_frames=sent, achieved_fps=fps, traffic_s=duration)

        @contextlib.contextmanager
        def in_tree_generator(self):
            self.generator_name = "pktgen (in-tree)"
            self.swaps.append("in")
            try:
                yield
            finally:
                self.generator_name = "rfc2544_pktgen"
                self.swaps.append("back")

        def close(self):
            pass
    monkeypatch.setattr(tester_mod, "SSHTester", Sim)
    assert main("calibrate", "-i", str(inv), "--frame-size", "64", "--duration", "0.5", "--compare-in-tree") == 0
    out = capsys.readouterr().out
    assert "the in-tree pktgen at the same steps, on the calibration link" in out
    assert "rfc2544_pktgen loaded again: rfc2544_pktgen" in out
    saved = json.loads((tmp / "inventory.yml.calibration.json").read_text())["pacing"]
    assert saved["source"] == "generator" and saved["in_tree"]["source"] == "calibration link"
    assert [r["longest_micro_burst"] for r in saved["in_tree"]["rows"]] == [8] * 4
    assert [r["fps"] for r in saved["in_tree"]["rows"]] == [r["fps"] for r in saved["rows"]]
    assert "the sender bounds it" in out


def test_calibrate_measures_the_receiver_and_a_run_names_the_side_that_bounds(setup, monkeypatch, capsys):
    """Simulated (no host): on the calibration link the receiver counts
    all of a 1518 B ceiling but only 60 % of the 64 B one. calibrate says
    which side bounds each size and saves the rows; a run caps 64 B at what
    the receiver counted, names it the receive ceiling, and records the
    bound in its conditions."""
    import rfc2544.engine.calibrate as cal
    import rfc2544.engine.tester as tester_mod
    tmp, inv, prof, testers = setup
    monkeypatch.setattr(cal, "calibrate", lambda inventory, sizes, duration=2.0, tester=None, progress=None:
                        {s: 50_000.0 for s in sizes})
    offered = []

    class Sim:
        has_calibration_link = True
        receiver_name = "pgrx"
        plans = ()

        def __init__(self, inventory, waits=None, generators=None):
            pass

        def count_on_link(self, size, fps, duration):
            offered.append((size, fps, duration))
            sent = int(fps * duration)
            return SimpleNamespace(tx_frames=sent, rx_frames=int(sent * (0.6 if size == 64 else 1.0)),
                                   achieved_fps=fps, traffic_s=duration)

        def close(self):
            pass
    monkeypatch.setattr(tester_mod, "SSHTester", Sim)
    assert main("calibrate", "-i", str(inv), "--frame-size", "64", "--frame-size", "1518", "--duration", "1",
                "--no-pacing") == 0
    out = capsys.readouterr().out
    assert offered == [(64, 50_000.0, 1.0), (1518, 50_000.0, 1.0)]
    assert "64 B  sent       50,000 fps  received       30,000 fps  (60.00 %): the receiver bounds it at 30,000" in out
    assert "1518 B  sent       50,000 fps  received       50,000 fps  (100.00 %): the sender bounds it" in out
    saved = json.loads((tmp / "inventory.yml.calibration.json").read_text())
    assert [(r["frame_size"], r["bound"]) for r in saved["receive"]] == [(64, "receiver"), (1518, "sender")]
    assert saved["fps"] == {"64": 50_000.0, "1518": 50_000.0}       # the send ceilings as measured
    loaded = inventory_mod.load(inv)
    assert assemble.load_calibration(loaded) == {"64": 30_000.0, "1518": 50_000.0}
    prof.write_text(PROFILE.replace(", max_load_fps: 100000", ""))
    testers.append(simdut.make("tester-ceiling", tester_ceiling_fps=29_000))
    run_out = tmp / "o"
    assert main("run", "-i", str(inv), "-p", str(prof), "--out", str(run_out), "--format", "csv") == 0
    data = json.loads((run_out / "results.json").read_text())
    row = data["throughput"][0]
    assert row["max_load_fps"] == 30_000.0 and row["max_load_source"] == "calibrated receive ceiling"
    assert data["conditions"]["calibration_bound"] == {"64": "receiver", "1518": "sender"}


def test_calibrate_without_a_calibration_link_says_the_receiver_is_not_measured(setup, monkeypatch, capsys):
    import rfc2544.engine.calibrate as cal
    tmp, inv, _, _ = setup
    monkeypatch.setattr(cal, "calibrate", lambda inventory, sizes, duration=2.0, tester=None, progress=None:
                        {s: 50_000.0 for s in sizes})
    assert main("calibrate", "-i", str(inv), "--frame-size", "64", "--no-pacing") == 0
    assert "receive ceiling: not measured (the inventory names no calibration link" in capsys.readouterr().out
    assert json.loads((tmp / "inventory.yml.calibration.json").read_text())["receive"] is None
    assert main("calibrate", "-i", str(inv), "--frame-size", "64", "--no-pacing", "--no-receive") == 0
    assert "receive ceiling" not in capsys.readouterr().out
