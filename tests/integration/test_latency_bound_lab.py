"""Throughput under a latency bound in the QEMU lab (issue 46): a DUT that
queues its way to a zero-loss rate above the one it forwards.

    tester VM (rfc2544_pktgen + pgrx)            DUT (netns `dut`)
    +--------------+     veth      +------------------------------------+
    |  tx0  ------------------------> dut0 --forward--> dut1 [tbf S fps, |
    |              |               |          FIFO QUEUE_S of frames]   |
    |  rx0  <-------------------------------------------------'         |
    +--------------+               +------------------------------------+

The shaper's rate S is the DUT's forwarding rate; the search does not know
it. Behind a FIFO of QUEUE_S seconds of frames, a TRIAL_S trial at a load L
above S loses nothing while (L - S) * TRIAL_S frames fit in the FIFO, so
the plain NDR lies near S * (1 + QUEUE_S / TRIAL_S); its frames' latency
climbs to (L - S) * TRIAL_S / S. Under the latency bound the search must
come back to S. Without the deep queue (SHALLOW_S, 0.1 s) both rates are S. Judged on counts and on the receiver's latency of each
frame (in the same VM as the sender: one clock), never on the host's wall
clock. One MLRsearch pass gives both rates.

The shaper's bucket (cap.SHAPE_BUCKET_S, 0.1 s of frames) carries its rate
through the vCPU stalls of a loaded host; at a load above S it hides
another bucket of frames, so the bounded rate may lie up to
(bucket + bound) / TRIAL_S above S, 3 %.
"""
import pytest

from rfc2544.config import inventory as inventory_mod
from rfc2544.config import profiles
from rfc2544.lab.cap import SHAPE_BUCKET_S
from rfc2544.cli.display import Display
from rfc2544.results.deviations import code_of
from rfc2544.results.file import Results
from rfc2544.procedures.runner import Runner, build_plan

from run_lab_support import small_profile
from run_lab_support import capped, with_module  # noqa: F401 (fixtures; with_module needs capped)

pytestmark = pytest.mark.lab

SHAPED_FPS = 3000
FRAME_LEN = 60          # a 64 B frame as the qdisc counts it (no FCS)
QUEUE_S = 2.0           # the FIFO, in seconds of frames at SHAPED_FPS
SHALLOW_S = 0.1         # the FIFO without the deep queue
TRIAL_S = 5             # the issue's trials, and RFC 2544's 2 s residual wait
RESOLUTION_PCT = 4
# The bound sits above the lab's own latency (p99.9 of 3-10 ms below and at
# the shaped rate, from the shaper's timer and the vCPUs under TCG; a TCG
# stall makes the maximum tens of ms) and far below the deep queue's (about
# 2 s at the plain NDR): 50 ms of queue after a 5 s trial is 1 % above S.
BOUND = {"percentile": "99.9", "us": 50_000}
# the highest rate whose queue after a trial stays within the bound
BOUNDED_MAX_FPS = SHAPED_FPS * (1 + (SHAPE_BUCKET_S + BOUND["us"] / 1e6) / TRIAL_S)


def bounded_search(lab, tmp_path, queue_s):
    """MLRsearch with the latency bound against the DUT shaped now: the
    throughput row and the trials."""
    from rfc2544.engine.assemble import make_tester
    tmp_path.mkdir()
    lab.uncap_dut()
    lab.shape_dut(SHAPED_FPS, FRAME_LEN, queue_s)
    try:
        prof = profiles.load(str(small_profile(
            tmp_path, tests=["throughput"], trial_duration_s=TRIAL_S, waits={"residual_s": 2.0},
            search={"method": "mlr", "max_load_fps": 1.6 * SHAPED_FPS, "min_load_pct": 10,
                    "initial_duration_s": 1, "resolution_pct": RESOLUTION_PCT, "exceed_ratio": 0.5,
                    "duration_sum_s": 2 * TRIAL_S, "early_abort": True, "latency_bound": BOUND})))
        tester = make_tester(inventory_mod.load(lab.inventory_path), prof)
        results = Results.create(tmp_path / "out", prof, build_plan(prof), profiles.deviations(prof), {})
        try:
            Runner(tester, prof, results, Display(quiet=True)).run()
        finally:
            tester.close()
    finally:
        lab.unshape_dut()
    return results.data["throughput"][0], results.data["trials"], results.data["deviations"]


def stalled_s(trial):
    """Seconds of the trial in which the generator sent nothing for over
    1 ms at a time (its departure gaps, each counted at its bucket's lower
    edge): the VM was not running the tester's vCPU."""
    hist = (trial.get("spacing") or {}).get("hist") or []
    return sum(count * low for low, _high, count in hist if low >= 1_000_000) / 1e9


def trial_log(trials):
    return "; ".join(f"#{t['id']} {t['load_fps']:.0f}/{t['duration_s']:g}s lost {t['lost_frames']} "
                     f"p99.9 {((t.get('latency') or {}).get('p999_ns') or 0) / 1e6:.1f} ms "
                     f"stalled {stalled_s(t):.3f} s max gap {((t.get('spacing') or {}).get('max_gap_ns') or 0) / 1e6:.1f} ms "
                     f"{t['verdict']}"
                     for t in trials)


def test_a_deep_queue_lifts_the_ndr_and_the_bound_finds_the_shaped_rate(with_module, tmp_path):  # noqa: F811
    step = 1 - RESOLUTION_PCT / 100
    deep, deep_trials, deep_devs = bounded_search(with_module, tmp_path / "deep", QUEUE_S)
    log = trial_log(deep_trials)
    print(f"deep queue: NDR {deep['ndr_fps']} bounded {deep['bounded_fps']} (shaped {SHAPED_FPS}): {log}")
    # the buffer absorbs the excess: the plain NDR lies above the shaped rate
    assert deep["ndr_fps"] > SHAPED_FPS * 1.1, log
    # ... and the report's row says so: both rates, the latency at the NDR over the bound
    assert deep["bounded_fps"] is not None, log
    assert SHAPED_FPS * step * step <= deep["bounded_fps"] <= BOUNDED_MAX_FPS, log
    assert deep["ndr_latency_ns"] > BOUND["us"] * 1000 >= deep["bounded_latency_ns"], log
    assert "latency_bound_below_ndr" in {code_of(d) for d in deep_devs}, log
    # early abort knows the queue: no trial was stopped whose final counts show no loss
    assert not [t for t in deep_trials if t["aborted_early"] and t["lost_frames"] == 0], log

    shallow, shallow_trials, _ = bounded_search(with_module, tmp_path / "shallow", SHALLOW_S)
    log = trial_log(shallow_trials)
    print(f"shallow queue: NDR {shallow['ndr_fps']} bounded {shallow['bounded_fps']}: {log}")
    # without the deep queue both rates agree within one step, at the shaped rate
    assert shallow["ndr_fps"] and shallow["bounded_fps"], log
    assert shallow["bounded_fps"] >= shallow["ndr_fps"] * step, log
    assert SHAPED_FPS * step * step <= shallow["ndr_fps"] <= SHAPED_FPS * (1 + (SHALLOW_S + SHAPE_BUCKET_S) / TRIAL_S) * 1.01, log
