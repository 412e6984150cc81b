"""The starved-path rule's arrivals form (engine/starved.py, issue 56 item
2): where a DUT's forwarding runs on a tester host, the receiver times the
arrivals against the departure stamps; a failed trial whose path let more
frames go at once than passed trials' paths did, enough to lose what it
lost, is the path's. Synthetic records first, then through the engine with
the simulated tester (its pgrx reports a chosen delay-variation max)."""
import math

from pktgen_sim import SimKernel
from test_generators import sim_tester
from test_tester_sim import spec

from rfc2544.engine.starved import absorbed_holds, held_frames, starved_reason
from rfc2544.model import TrialResult, TrialSpec

RATE = 5400      # fps: 90 % of the lab's 6,000 fps policer


def trial(lost, held_ms, tx=27_000, **counts):
    path = {"tester": {"dropped": 0, "squeezed": 0, "nic_drops": 0, **counts}}
    if held_ms is not None:
        path["tester"]["held_ns"] = int(held_ms * 1e6)
        path["tester"]["held_frames"] = math.ceil(held_ms * RATE / 1e3)    # as the engine records it
    return TrialResult(spec=TrialSpec(frame_size=64, load_fps=RATE, duration_s=5.0), tx_frames=tx,
                       rx_frames=tx - lost, intended_frames=tx, achieved_fps=RATE, traffic_s=5.0,
                       tester_limited=False, host_path=path)


def test_held_frames_are_the_longest_hold_at_the_trials_rate():
    assert held_frames(trial(0, 3.9)) == 22          # 3.9 ms x 5,400 fps = 21.06 -> 22 frames at once
    assert held_frames(trial(0, None)) is None       # arrivals not timed
    assert absorbed_holds([trial(0, 8.7), trial(0, 2.0), trial(3, 50.0)]) == 47    # passed trials only
    assert absorbed_holds([]) == 0


def test_the_labs_measured_losses_stay_the_duts():
    """The lab (police 6,000 fps, bucket 256): a trial lost 2 frames with a
    3.9 ms hold (22 frames at once) where a passed one had held 8.7 ms (47):
    no hold beyond what passed; the loss is the DUT's."""
    passed = [trial(0, 8.7), trial(0, 0.3)]
    assert starved_reason(trial(2, 3.9), passed) is None


def test_a_hold_beyond_the_passed_ones_names_the_loss_within_its_excess():
    """A 60 ms hold lets 324 frames go at once where passed trials let 47:
    up to 277 frames lost are the path's; 300 are beyond one such release."""
    passed = [trial(0, 8.7)]
    reason = starved_reason(trial(3, 60.0), passed)
    assert reason.startswith("tester-starved: the path through the DUT's namespace on the tester held frames "
                             "back up to 60.0 ms and let 324 go at once, where passed trials let at most 47")
    assert starved_reason(trial(277, 60.0), passed) is not None
    assert starved_reason(trial(278, 60.0), passed) is None
    # no passed trial timed its arrivals: nothing was seen absorbed, the loss stays the DUT's
    assert starved_reason(trial(3, 60.0), [trial(0, None)]) is None
    assert starved_reason(trial(3, 60.0), []) is None
    # the same load lost about as much again after a named attempt: the DUT's
    named = trial(40, 60.0)
    named.tester_starved = True
    assert starved_reason(trial(40, 60.0), passed) is not None
    assert starved_reason(trial(42, 60.0), passed + [named]) is None
    # the counters' form comes first: frames the host itself dropped
    assert "dropped 5 frames" in starved_reason(trial(3, 60.0, dropped=5), passed)


def test_arrivals_are_timed_only_where_the_dut_runs_on_the_tester(tmp_path):
    """SIMULATED: the sim inventory's DUT is a namespace of the tester
    (detection finds its ports' queues there): a throughput trial runs
    pgrx at level time and records the hold, which the rule reads; a
    held 60 ms against a passed 1 ms names a lost frame."""
    kernel = SimKernel(pgrx_version=6)
    with sim_tester(tmp_path, kernel) as tester:
        kernel.jitter_max_ns = 1_000_000
        passed = tester.run_trial(spec(load_fps=2000, duration_s=0.2))
        assert kernel.rx_level == "time"
        kernel.jitter_max_ns, kernel.device_loss_every = 60_000_000, {"tx0": 50}
        failed = tester.run_trial(spec(load_fps=2000, duration_s=0.2))
    # at the rate the tester host receives (2,000 fps): 1 ms holds 2 frames, 60 ms 120
    assert (passed.host_path["tester"]["held_ns"], passed.host_path["tester"]["held_frames"]) == (1_000_000, 2)
    assert failed.host_path["tester"]["held_frames"] == 120 and failed.lost_frames > 0
    assert passed.lost_frames == 0
    assert "let 120 go at once, where passed trials let at most 2" in starved_reason(failed, [passed])


def test_a_separate_dut_gets_no_timed_arrivals(tmp_path):
    """SIMULATED: the DUT is a machine of its own (another address than
    the tester's): level basic, no hold recorded."""
    kernel = SimKernel(pgrx_version=6)
    with sim_tester(tmp_path, kernel) as tester:
        tester.inventory.hosts["dut"].address = "192.0.2.99"
        r = tester.run_trial(spec(load_fps=2000, duration_s=0.2))
    assert kernel.rx_level == "basic" and "held_ns" not in r.host_path["tester"]
    assert "held_frames" not in r.host_path["tester"]
