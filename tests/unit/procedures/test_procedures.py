"""RFC 2544 procedures against the simulated DUT (rfc2544.sim.dut)."""
import pytest

from rfc2544.sim import dut as simdut
from rfc2544.procedures.recovery import estimate

from helpers_run import profile, start

RATE = 100_000.0        # the "line rate" of these runs (search.max_load_fps)


def run(tmp_path, sim, tests, sizes=(64,), **over):
    prof = profile(tests=list(tests), frame_sizes=list(sizes),
                   search={"max_load_fps": RATE, "resolution_pct": 0.5, "method": "bisection"}, **over)
    runner, results = start(tmp_path / "run", sim, prof, dut_reset=getattr(sim, "reset_dut", None))
    runner.run()
    return results.data


def test_throughput_summary(tmp_path):
    d = run(tmp_path, simdut.SimDUT(capacity_fps=40_000), ["throughput"], link_mbps=100)
    row = d["throughput"][0]
    assert 40_000 * 0.995 <= row["ndr_fps"] <= 40_000
    assert row["theoretical_max_fps"] == pytest.approx(100e6 / (84 * 8))
    assert row["pct_of_max"] == pytest.approx(row["ndr_fps"] * 100 / row["theoretical_max_fps"])
    assert 26 < row["pct_of_max"] < 27                      # percent: 40000 of 148810 fps
    assert all(t["load_pct"] == pytest.approx(t["load_fps"] * 100 / row["theoretical_max_fps"])
               for t in d["trials"])
    assert row["mbps"] == pytest.approx(row["ndr_fps"] * 64 * 8 / 1e6)
    assert row["search"] == "bisection" and row["trials"] > 5 and not row["tester_bound"]
    assert d["complete"] and d["plan"][0]["state"] == "done"


def test_tester_bound_flag_from_calibration(tmp_path):
    prof = profile(tests=["throughput"], frame_sizes=[64], search={"max_load_fps": RATE})
    runner, results = start(tmp_path / "run", simdut.make("tester-ceiling", tester_ceiling_fps=30_000),
                            prof, calibration={"64": 30_500.0})
    runner.run()
    row = results.data["throughput"][0]
    assert row["tester_bound"] is True
    assert any(d["code"] == "tester_bound" and "tester-bound" in d["text"] for d in results.data["deviations"])


def test_frame_loss_steps_down_until_two_clean_trials(tmp_path):
    d = run(tmp_path, simdut.SimDUT(capacity_fps=45_000), ["frame_loss"], frame_loss={"step_pct": 10})
    pts = d["frame_loss"][0]["points"]
    assert [p["load_pct"] for p in pts] == [100, 90, 80, 70, 60, 50, 40, 30]
    assert pts[0]["loss_pct"] == pytest.approx(55.0, abs=0.01)    # (100k - 45k) / 100k
    assert [p["loss_pct"] == 0 for p in pts][-2:] == [True, True]
    assert pts[-3]["loss_pct"] > 0
    assert d["frame_loss"][0]["two_clean_trials"]


def test_back_to_back_finds_the_buffer(tmp_path):
    cap, buf = 40_000.0, 3_000.0
    d = run(tmp_path, simdut.SimDUT(capacity_fps=cap, buffer_frames=buf), ["throughput", "back_to_back"],
            back_to_back={"repetitions": 3, "resolution_pct": 1, "burst_s": 1})
    row = d["back_to_back"][0]
    true_n = buf * RATE / (RATE - cap)            # the burst that exactly fills the buffer
    assert true_n * 0.99 <= row["avg_frames"] <= true_n
    assert row["trials"] == 3 and row["min_frames"] <= row["avg_frames"] <= row["max_frames"]
    assert row["implied_buffer_s"] == pytest.approx(row["avg_frames"] / RATE)
    tp = row["throughput_fps"]
    assert row["corrected_buffer_s"] == pytest.approx(row["avg_frames"] * (1 - tp / RATE) / RATE)


def test_back_to_back_skipped_at_line_rate(tmp_path):
    d = run(tmp_path, simdut.SimDUT(), ["throughput", "back_to_back"])
    step = [s for s in d["plan"] if s["test"] == "back_to_back"][0]
    assert step["state"] == "skipped" and "RFC 9004" in step["note"]
    assert d["back_to_back"] == []


def test_system_recovery_time(tmp_path):
    sim = simdut.SimDUT(capacity_fps=40_000, recovery_s=0.7, sample_interval_s=0.05)
    d = run(tmp_path, sim, ["throughput", "system_recovery"],
            system_recovery={"overload_s": 3, "recovery_s": 3, "repetitions": 2})
    row = d["system_recovery"][0]
    assert row["overload_fps"] == pytest.approx(1.1 * d["throughput"][0]["ndr_fps"])
    assert row["recovery_time_s"] == pytest.approx(0.7, abs=0.05)
    assert row["repetitions"] == 2
    lo, hi = row["recovery_time_bounds_s"][0]
    assert lo - 1e-3 <= 0.7 <= hi + 1e-3


def test_system_recovery_skipped_without_rate_change_support(tmp_path):
    sim = simdut.SimDUT(capacity_fps=40_000)
    sim.supports_recovery = False
    d = run(tmp_path, sim, ["throughput", "system_recovery"])
    step = [s for s in d["plan"] if s["test"] == "system_recovery"][0]
    assert step["state"] == "skipped" and "rate" in step["note"]


def test_recovery_estimate_from_sequence_numbers():
    # 1000 fps for 2 s (seq 1..2000), then 500 fps; last new gap between seq 2100 and 2150
    samples = [{"elapsed_s": 0.5, "lost_frames": 10, "seq_max": 500},
               {"elapsed_s": 2.2, "lost_frames": 40, "seq_max": 2100},
               {"elapsed_s": 2.3, "lost_frames": 45, "seq_max": 2150},
               {"elapsed_s": 2.4, "lost_frames": 45, "seq_max": 2200}]
    est, lo, hi = estimate(samples, 1000.0, 2.0, 500.0)
    assert (lo, hi) == pytest.approx((0.2, 0.3))
    assert est == pytest.approx(0.25)


def test_recovery_estimate_without_sequence_numbers_uses_sample_times():
    samples = [{"elapsed_s": 1.9, "gap_lost": 5}, {"elapsed_s": 2.5, "gap_lost": 9},
               {"elapsed_s": 3.0, "gap_lost": 9}]
    assert estimate(samples, 1000.0, 2.0, 500.0) == pytest.approx((0.25, 0.0, 0.5))
    assert estimate([{"elapsed_s": 1.0, "lost_frames": 0}], 1000.0, 2.0, 500.0) is None


def test_reset_time(tmp_path):
    sim = simdut.SimDUT(capacity_fps=40_000, reset_s=1.5)
    d = run(tmp_path, sim, ["throughput", "reset"], sizes=(1518, 64), reset={"duration_s": 5, "reset_after_s": 1})
    row = d["reset"][0]
    assert row["frame_size"] == 64                  # the smallest frame size only
    assert row["reset_time_s"] == pytest.approx(1.5, abs=0.11)


def test_reset_skipped_without_a_reset_command(tmp_path):
    prof = profile(tests=["throughput", "reset"], frame_sizes=[64], search={"max_load_fps": RATE})
    runner, results = start(tmp_path / "run", simdut.SimDUT(capacity_fps=40_000), prof, dut_reset=None)
    runner.run()
    step = [s for s in results.data["plan"] if s["test"] == "reset"][0]
    assert step["state"] == "skipped" and "rfc2544_reset_cmd" in step["note"]


def test_latency_at_throughput(tmp_path):
    d = run(tmp_path, simdut.SimDUT(capacity_fps=40_000), ["throughput", "latency"],
            latency={"repetitions": 3, "duration_s": 1})
    row = d["latency"][0]
    assert row["load_fps"] == d["throughput"][0]["ndr_fps"]
    assert row["repetitions"] == 3 and row["samples"] > 500
    assert row["min_ns"] <= row["median_ns"] <= row["p999_ns"] <= row["max_ns"]
    assert len([t for t in d["trials"] if t["test"] == "latency"]) == 3


def test_latency_skipped_with_lower_fidelity_receiver(tmp_path):
    sim = simdut.SimDUT(capacity_fps=40_000)
    sim.full_fidelity = False
    d = run(tmp_path, sim, ["throughput", "latency"])
    step = [s for s in d["plan"] if s["test"] == "latency"][0]
    assert step["state"] == "skipped"


def test_dependent_tests_skip_without_a_throughput(tmp_path):
    d = run(tmp_path, simdut.SimDUT(capacity_fps=40_000), ["latency"])
    assert d["plan"][0]["state"] == "skipped" and "throughput" in d["plan"][0]["note"]


def test_ipv6_and_imix_steps(tmp_path):
    d = run(tmp_path, simdut.SimDUT(capacity_fps=40_000), ["throughput"], sizes=(64, "imix"),
            ip_versions=[4, 6])
    # over IPv6, 64 B cannot hold the headers: the step is the 82 B sent (test_frame_on_wire.py)
    assert [s["unit"] for s in d["plan"]] == ["throughput/ipv4/64", "throughput/ipv4/0",
                                              "throughput/ipv6/82", "throughput/ipv6/0"]
    assert {t["spec"]["ipv6"] for t in d["trials"]} == {False, True}
    assert {t["frame_size"] for t in d["trials"]} == {0, 64, 82}


def test_back_to_back_skipped_when_the_tester_cannot_burst(tmp_path):
    # bursts asked at 100k fps, the tester sends 60k: a lossless slow burst proves nothing
    sim = simdut.SimDUT(capacity_fps=40_000, buffer_frames=3_000, tester_ceiling_fps=60_000)
    d = run(tmp_path, sim, ["throughput", "back_to_back"])
    step = [s for s in d["plan"] if s["test"] == "back_to_back"][0]
    assert step["state"] == "skipped" and "could not send" in step["note"]
    b2b = [t for t in d["trials"] if t["test"] == "back_to_back"]
    assert b2b[0]["lost_frames"] > 0                      # lossy bursts still count as fails
    assert b2b[-1]["tester_limited"] and b2b[-1]["lost_frames"] == 0
    assert b2b[-1]["spec"] == b2b[-2]["spec"]             # retried once before giving up


def test_not_tester_bound_when_the_dut_loses_below_the_tester_ceiling(tmp_path):
    """Tester-limited trials far above the DUT's capacity (the search starts
    at the maximum load) do not make the NDR tester-bound: the DUT lost
    frames at the upper bound. Near the ceiling, it is tester-bound."""
    d = run(tmp_path / "dut", simdut.SimDUT(capacity_fps=20_000, tester_ceiling_fps=90_000), ["throughput"])
    row = d["throughput"][0]
    assert any(t["tester_limited"] for t in d["trials"])
    assert 20_000 * 0.99 <= row["ndr_fps"] <= 20_000 and not row["tester_bound"]
    d = run(tmp_path / "tester", simdut.SimDUT(capacity_fps=95_000, tester_ceiling_fps=90_000), ["throughput"])
    assert d["throughput"][0]["tester_bound"]


def test_reset_outage_is_counted_at_the_rate_the_generator_achieved():
    """Simulated numbers from a lab trial: 1708 frames lost while the
    generator achieved 3240 of the 5000 fps asked is 0.527 s of outage, not
    0.34 s."""
    from rfc2544.procedures.reset import outage_s
    assert outage_s(1708, 5000, 3240) == pytest.approx(0.527, abs=1e-3)
    assert outage_s(1000, 5000, 5000) == pytest.approx(0.2)
    assert outage_s(1000, 5000, 0) == pytest.approx(0.2)        # no achieved rate reported
