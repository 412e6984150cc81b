"""Per-trial DUT hooks (inventory rfc2544_trial_hooks) and rate schedules of
any length, on the SIMULATED tester (tests/unit/pktgen_sim.py): the hooks'
commands go to a simulated DUT session that records them."""
import json

import pytest

from rfc2544.drivers.probe import QUEUE_SCRIPT
from pktgen_sim import SimKernel
from sim_session import SimSession
from rfc2544.config import inventory
from rfc2544.errors import BadInput, InfraError
from rfc2544.model import HOOK_OUTPUT_LIMIT
from rfc2544.engine.schedule import RateSchedule, Segment
from rfc2544.engine.tester import SSHTester
from test_tester_sim import FAST, INVENTORY, make_inventory, spec

OLD_PHASES = {"setup", "learning", "settle", "configure", "traffic", "residual", "read", "start_exit"}


def hooked_inventory(tmp_path, hooks_yaml):
    text = INVENTORY.format(streams='      - {tx: "tester:tx0", rx: "tester:rx0"}')
    text = text.replace("          rfc2544_netns: dut\n", "          rfc2544_netns: dut\n" + hooks_yaml)
    path = tmp_path / "inv.yml"
    path.write_text(text)
    return path


HOOKS = """          rfc2544_trial_hooks:
            pre: ["nstat -n", "echo pre2"]
            post: ["nstat -az"]
"""


def make(tmp_path, hooks_yaml=HOOKS, **kw):
    kernel = SimKernel()
    tester_session, dut_session = SimSession("tester", kernel), SimSession("dut", kernel)
    inv = inventory.load(hooked_inventory(tmp_path, hooks_yaml))
    tester = SSHTester(inv, waits=FAST, sessions={"tester": tester_session, "dut": dut_session},
                       clock=kernel.clock, **kw)
    return tester, kernel, dut_session


def test_hooks_run_before_the_configuration_and_after_the_final_read(tmp_path):
    tester, kernel, dut = make(tmp_path)
    dut.replies["nstat -az"] = (0, "IpInReceives 400\n", "")
    r = tester.run_trial(spec())
    # the DUT namespace's queue facts first (the tester's receive path CPUs), then the hooks
    assert [c for c in dut.commands if c != QUEUE_SCRIPT] == ["nstat -n", "echo pre2", "nstat -az"]
    log = kernel.log
    pre = log.index(("run@dut", "echo pre2"))
    post = log.index(("run@dut", "nstat -az"))
    writes = [i for i, (path, _) in enumerate(log) if path.endswith("/tx0")]
    assert pre < writes[0] and post > writes[-1]          # learning configuration comes after pre
    assert r.tx_frames == r.rx_frames == 400 and not r.tester_limited
    assert [(h.host, h.phase, h.command, h.exit_status) for h in r.hooks] == [
        ("dut", "pre", "nstat -n", 0), ("dut", "pre", "echo pre2", 0), ("dut", "post", "nstat -az", 0)]
    assert r.hooks[2].stdout == "IpInReceives 400\n"
    assert set(tester.last_phases) == OLD_PHASES | {"pre_hooks", "post_hooks"}
    assert not any("hook" in n for n in r.notes)


def test_a_failing_hook_is_recorded_not_fatal(tmp_path):
    tester, kernel, dut = make(tmp_path)
    dut.replies["nstat -n"] = (127, "", "sh: nstat: not found\n")
    dut.replies["nstat -az"] = InfraError("dut: command timed out after 120 s")
    r = tester.run_trial(spec())
    assert r.tx_frames == r.rx_frames == 400 and not r.tester_limited
    pre, _, post = r.hooks
    assert pre.exit_status == 127 and pre.stderr == "sh: nstat: not found\n"
    assert post.exit_status is None and "timed out" in post.stderr
    assert "pre hook on dut failed (exit status 127): nstat -n" in r.notes
    assert "post hook on dut failed (exit status None): nstat -az" in r.notes
    r2 = tester.run_trial(spec())      # and the next trial runs them again
    assert len(r2.hooks) == 3 and dut.commands.count("nstat -n") == 2


def test_hook_output_is_truncated(tmp_path):
    tester, kernel, dut = make(tmp_path)
    dut.replies["nstat -az"] = (0, "x" * 10000, "e" * (HOOK_OUTPUT_LIMIT + 1))
    r = tester.run_trial(spec())
    out, err = r.hooks[2].stdout, r.hooks[2].stderr
    assert out.startswith("x" * HOOK_OUTPUT_LIMIT) and out.endswith("[... 5904 more characters not kept]")
    assert err.endswith("[... 1 more characters not kept]")


def test_hooks_are_stored_with_the_trial_in_results_json(tmp_path):
    from rfc2544.config import profiles
    from rfc2544.results.file import Results, trial_from_record
    from rfc2544.procedures.runner import build_plan
    tester, kernel, dut = make(tmp_path)
    r = tester.run_trial(spec())
    p = profiles.load("quick")
    res = Results.create(tmp_path / "run", p, build_plan(p), profiles.deviations(p), {"generator": "sim"})
    res.add_trial("throughput/ipv4/64", r)
    record = json.loads(res.path.read_text())["trials"][0]
    assert record["hooks"][0] == {"host": "dut", "phase": "pre", "command": "nstat -n", "exit_status": 0,
                                  "stdout": "kernel 6.1.0-sim\ncpus 2\n@nic tx0\ndriver: veth\nspeed: 10000\n",
                                  "stderr": ""}
    assert trial_from_record(record).hooks == r.hooks


def test_without_hooks_nothing_changes(tmp_path):
    kernel = SimKernel()
    session = SimSession("tester", kernel)
    tester = SSHTester(make_inventory(tmp_path), waits=FAST, sessions={"tester": session, "dut": SimSession("dut", session.kernel)}, clock=kernel.clock)
    r = tester.run_trial(spec())
    assert r.hooks == [] and set(tester.last_phases) == OLD_PHASES
    assert not session.commands or all("pktgen" in c for c in session.commands)   # the probe only


@pytest.mark.parametrize("hooks, where, message", [
    ('            pre: [""]\n', "duts.dut.rfc2544_trial_hooks.pre[0]", "non-empty command string"),
    ('            post: ["ok", 42]\n', "duts.dut.rfc2544_trial_hooks.post[1]", "non-empty command string"),
    ('            post: "nstat"\n', "duts.dut.rfc2544_trial_hooks.post", "list of shell commands"),
    ('            during: ["x"]\n', "duts.dut.rfc2544_trial_hooks.during", "unknown"),
])
def test_bad_hooks_are_rejected_at_load_naming_file_and_field(tmp_path, hooks, where, message):
    path = hooked_inventory(tmp_path, "          rfc2544_trial_hooks:\n" + hooks)
    with pytest.raises(BadInput) as exc:
        inventory.load(path)
    assert str(path) in str(exc.value) and where in str(exc.value) and message in str(exc.value)


def test_hooks_on_a_tester_host_are_rejected(tmp_path):
    text = INVENTORY.format(streams='      - {tx: "tester:tx0", rx: "tester:rx0"}')
    text = text.replace("        tester:\n          ansible_host: 127.0.0.1\n",
                        "        tester:\n          ansible_host: 127.0.0.1\n"
                        "          rfc2544_trial_hooks: {pre: [date]}\n", 1)
    path = tmp_path / "inv.yml"
    path.write_text(text)
    with pytest.raises(BadInput, match=r"testers\.tester\.rfc2544_trial_hooks: trial hooks run on DUT hosts only"):
        inventory.load(path)


def test_a_three_segment_schedule_changes_rate_twice_without_stopping(tmp_path):
    """The engine runs any rate schedule: a trial of three segments writes
    the second and the third rate while the generator sends."""
    tester, kernel, _ = make(tmp_path, hooks_yaml="", poll_interval_s=0.05)
    s = spec(load_fps=2000, duration_s=0.3)
    schedule = RateSchedule([Segment(2000, duration_s=0.3), Segment(500, duration_s=0.4),
                             Segment(800, duration_s=0.25)], 1)
    samples = []
    tester.engine.check_spec(s)
    r = tester.engine.run_trial(s, samples.append, schedule=schedule)
    assert r.intended_frames == 600 + 200 + 200 and r.tx_frames == r.rx_frames == 1000
    assert kernel.starts == 2                       # learning + ONE run
    writes = kernel.devices["tx0"].writes
    assert writes.index("ratep 2000") < writes.index("ratep 500") < writes.index("ratep 800")
    assert {x["load_fps"] for x in samples} == {2000, 500, 800}
    assert sum("rate changed to" in n for n in r.notes) == 2
    assert not r.tester_limited
    assert r.traffic_s == pytest.approx(0.3 + 0.4 + 0.25, abs=0.1)
