"""Runner: interruptions and resume, with the simulated tester (rfc2544.sim.dut).

A fault is injected mid-trial (the simulated generator is left "running"):
the runner must call stop_all, keep every finished trial on disk, and a
resumed run must finish the plan without redoing finished trials and reach
the same answers as an uninterrupted run."""

import pytest

from rfc2544.sim import dut as simdut
from rfc2544.errors import InfraError
from rfc2544.model import TrialSpec
from rfc2544.results.file import Results
from rfc2544.procedures.runner import check_thresholds

from helpers_run import profile, resume, start

SIM = dict(capacity_fps=40_000, buffer_frames=500)


def prof():
    return profile(tests=["throughput", "latency", "frame_loss", "back_to_back"], frame_sizes=[64, 1518],
                   search={"max_load_fps": 100_000.0, "method": "mlr"})


def summaries(data):
    keep = ("ndr_fps", "pdr_fps", "avg_frames", "points")
    return {s: [{k: v for k, v in row.items() if k in keep} for row in data[s]]
            for s in ("throughput", "frame_loss", "back_to_back")}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    sim = simdut.SimDUT(**SIM)
    runner, results = start(tmp_path_factory.mktemp("ref") / "run", sim, prof())
    runner.run()
    return results.data


@pytest.mark.parametrize("fault", [KeyboardInterrupt(), InfraError("tester: connection lost during 'cat'"),
                                   RuntimeError("a bug"), EOFError()])
@pytest.mark.parametrize("at_trial", [3, 17])
def test_fault_stops_generators_keeps_trials_and_resume_completes(tmp_path, reference, fault, at_trial):
    sim = simdut.SimDUT(**SIM, fail_at={at_trial: fault})
    runner, results = start(tmp_path / "run", sim, prof())
    with pytest.raises(InfraError if isinstance(fault, EOFError) else type(fault)):
        runner.run()
    assert sim.stop_all_calls == 1 and not sim.running       # no generator left running
    on_disk = Results.load(tmp_path / "run")
    assert not on_disk.complete
    kept = len(on_disk.data["trials"])
    assert kept == at_trial - 1                               # every finished trial, not the cut one
    assert on_disk.data["interruptions"][0]["trials_kept"] == kept
    assert str(fault) in on_disk.data["interruptions"][0]["reason"] or isinstance(fault, KeyboardInterrupt)

    fresh = simdut.SimDUT(**SIM)
    runner2, results2 = resume(tmp_path / "run", fresh)
    runner2.run()
    final = Results.load(tmp_path / "run").data
    assert final["complete"]
    assert len(final["trials"]) == len(reference["trials"])
    assert fresh.trials_run == len(reference["trials"]) - kept      # nothing redone
    assert summaries(final) == summaries(reference)
    assert [t["load_fps"] for t in final["trials"]] == [t["load_fps"] for t in reference["trials"]]


def test_resume_of_a_complete_run_sends_nothing(tmp_path):
    runner, _ = start(tmp_path / "run", simdut.SimDUT(**SIM), prof())
    runner.run()
    fresh = simdut.SimDUT(**SIM)
    runner2, _ = resume(tmp_path / "run", fresh)
    runner2.run()
    assert fresh.trials_run == 0


def test_stop_all_failure_is_recorded_not_raised_instead(tmp_path):
    class Stubborn(simdut.SimDUT):
        def stop_all(self):
            super().stop_all()
            raise OSError("host unreachable")

    sim = Stubborn(**SIM, fail_at={2: InfraError("tester: connection lost")})
    runner, results = start(tmp_path / "run", sim, prof())
    with pytest.raises(InfraError):
        runner.run()
    reason = Results.load(tmp_path / "run").data["interruptions"][0]["reason"]
    assert "connection lost" in reason and "stopping the generators failed" in reason


def test_thresholds(tmp_path):
    p = profile(tests=["throughput", "latency"], frame_sizes=[64], search={"max_load_fps": 100_000.0},
                thresholds={"throughput_min_fps": 50_000, "latency_p999_max_us": 1})
    runner, results = start(tmp_path / "run", simdut.SimDUT(**SIM), p)
    misses = runner.run()
    assert len(misses) == 2
    assert "throughput at 64 B" in misses[0] and "below 50000" in misses[0]
    assert "p999" in misses[1]
    p2 = profile(thresholds={"throughput_min_fps": 10_000})
    assert check_thresholds(results.data, p2) == []


# No calibration and no search.max_load_fps: each throughput step starts with
# a probe trial that finds the tester's ceiling (here below line rate).
PROBED_SIM = dict(capacity_fps=40_000, buffer_frames=500, tester_ceiling_fps=100_000)


def probed_prof():
    return profile(tests=["throughput", "latency", "frame_loss"], frame_sizes=[64, 1518])


class SentSpecs(simdut.SimDUT):
    """A SimDUT that remembers the spec of every trial it was asked to send."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.sent = []

    def run_trial(self, spec, progress=None):
        self.sent.append(spec)
        return super().run_trial(spec, progress)


@pytest.mark.parametrize("at_trial", [5, 14])     # mid-step after the probe: 64 B, then 1518 B
def test_resume_after_a_probe_resends_no_finished_trial(tmp_path, at_trial):
    reference, _ = start(tmp_path / "ref", simdut.SimDUT(**PROBED_SIM), probed_prof())
    reference.run()
    ref_trials = Results.load(tmp_path / "ref").data["trials"]
    assert ref_trials[0]["test"] == "probe"

    runner, _ = start(tmp_path / "run", simdut.SimDUT(**PROBED_SIM, fail_at={at_trial: KeyboardInterrupt()}),
                      probed_prof())
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    finished = Results.load(tmp_path / "run").data["trials"]
    assert len(finished) == at_trial - 1

    fresh = SentSpecs(**PROBED_SIM)
    runner2, _ = resume(tmp_path / "run", fresh)
    runner2.run()
    final = Results.load(tmp_path / "run").data
    # exactly the trials the interruption cut off are sent: none of the finished ones again
    assert fresh.sent == [TrialSpec(**t["spec"]) for t in ref_trials[len(finished):]]
    assert not [t for t in final["trials"] if t.get("superseded")]
    assert [t["spec"] for t in final["trials"]] == [t["spec"] for t in ref_trials]
    ref_data = Results.load(tmp_path / "ref").data
    assert summaries(final) == summaries(ref_data)
    assert final["probes"] == ref_data["probes"]
