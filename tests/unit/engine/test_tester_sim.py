"""SSHTester against a SIMULATED host (tests/unit/pktgen_sim.py): no SSH, no
kernel. The simulation answers batches in the real pktgen/pgrx text formats,
so the driver's batch building, parsing and trial logic run for real. The
tester and the kernel share a simulated clock (SimClock): the times and rates
asserted here are exact and do not depend on how fast or loaded the machine
is."""

import pytest

from pktgen_sim import SimKernel
from sim_session import SimSession
from rfc2544.config import inventory
from rfc2544.errors import BadInput, InfraError
from rfc2544.model import PROGRESS_KEYS, TrialSpec
from rfc2544.engine.tester import SSHTester, Waits

FAST = {"learning_s": 0.0, "residual_s": 0.02, "learning_frames": 3, "learning_fps": 1000}

INVENTORY = """
all:
  vars:
    rfc2544_streams:
{streams}
  children:
    testers:
      hosts:
        tester:
          ansible_host: 127.0.0.1
          rfc2544_ports:
            - {{name: tx0, role: tx, mac: "52:54:00:00:00:01", ipv4: 198.18.0.1/24, ipv6: "2001:2::1/64", peer_mac: "52:54:00:00:00:02"}}
            - {{name: tx1, role: tx, mac: "52:54:00:00:00:05", ipv4: 198.18.1.1/24, peer_mac: "52:54:00:00:00:06"}}
            - {{name: rx0, role: rx, mac: "52:54:00:00:00:03", ipv4: 198.19.0.1/24, ipv6: "2001:2:0:100::1/64"}}
    duts:
      hosts:
        dut:
          ansible_host: 127.0.0.1
          rfc2544_netns: dut
          rfc2544_ports:
            - {{name: dut0, role: dut, mac: "52:54:00:00:00:02"}}
"""


def make_inventory(tmp_path, streams=(("tester:tx0", "tester:rx0"),)):
    lines = "\n".join(f'      - {{tx: "{a}", rx: "{b}"}}' for a, b in streams)
    path = tmp_path / "inv.yml"
    path.write_text(INVENTORY.format(streams=lines))
    return inventory.load(path)


def make_tester(tmp_path, kernel=None, waits=FAST, streams=(("tester:tx0", "tester:rx0"),), **kw):
    kernel = kernel or SimKernel()
    session = SimSession("tester", kernel)
    tester = SSHTester(make_inventory(tmp_path, streams), waits=waits, sessions={"tester": session, "dut": SimSession("dut", session.kernel)},
                       clock=kernel.clock, **kw)
    return tester, kernel, session


def spec(**kw):
    base = dict(frame_size=64, load_fps=2000, duration_s=0.2)
    base.update(kw)
    return TrialSpec(**base)


def test_low_rate_trial_counts_every_frame(tmp_path):
    tester, kernel, _ = make_tester(tmp_path)
    r = tester.run_trial(spec())
    assert tester.generator_name == "rfc2544_pktgen" and tester.receiver_name == "pgrx"
    assert tester.full_fidelity
    assert r.intended_frames == 400
    assert r.tx_frames == 400 and r.rx_frames == 400 and r.lost_frames == 0
    assert not r.tester_limited and not r.aborted_early
    assert r.achieved_fps == pytest.approx(2000, rel=0.02)
    assert r.streams[0].tx_port == "tester:tx0" and r.streams[0].rx_frames == 400 and r.streams[0].lost == 0
    dev = kernel.devices["tx0"]
    # frame size minus the 4 FCS bytes; destination MAC = the tx port's peer
    assert "pkt_size 60" in dev.writes and "dst_mac 52:54:00:00:00:02" in dev.writes
    assert "dst_min 198.19.0.1" in dev.writes and "src_min 198.18.0.1" in dev.writes
    assert "ratep 2000" in dev.writes and "count 400" in dev.writes


def test_learning_frames_precede_the_trial(tmp_path):
    tester, kernel, _ = make_tester(tmp_path)
    tester.run_trial(spec())
    assert kernel.starts == 2  # learning run + trial
    counts = [c for p, c in kernel.log if p.endswith("/tx0") and c.startswith("count ")]
    assert counts == ["count 3", "count 400"]
    tester.run_trial(spec(learning=False))
    assert kernel.starts == 3


def test_setup_happens_once_per_session(tmp_path):
    tester, kernel, _ = make_tester(tmp_path)
    tester.run_trial(spec())
    tester.run_trial(spec())
    assert kernel.resets == 1


def test_capped_dut_shows_loss(tmp_path):
    kernel = SimKernel(dut_capacity_fps=1000)
    tester, _, _ = make_tester(tmp_path, kernel)
    r = tester.run_trial(spec(load_fps=2000, duration_s=0.3))
    assert r.tx_frames == 600
    assert 0.4 < r.loss_ratio < 0.6
    assert not r.tester_limited
    assert r.streams[0].lost == r.tx_frames - r.rx_frames


def test_tester_ceiling_is_tester_limited_not_dut_loss(tmp_path):
    kernel = SimKernel(tester_ceiling_fps=1000)
    tester, _, _ = make_tester(tmp_path, kernel)
    r = tester.run_trial(spec(load_fps=2000, duration_s=0.2))
    assert r.tester_limited
    assert r.achieved_fps < 1100
    assert any("reached" in n for n in r.notes)


def test_early_abort_stops_and_counts_saved_time(tmp_path):
    kernel = SimKernel(dut_capacity_fps=1000)
    tester, _, _ = make_tester(tmp_path, kernel, poll_interval_s=0.05)
    r = tester.run_trial(spec(load_fps=2000, duration_s=1.0, abort_loss_ratio=0.0))
    assert r.aborted_early
    assert r.traffic_s < 0.6
    assert r.saved_traffic_s == pytest.approx(1.0 - r.traffic_s)
    assert r.tx_frames < r.intended_frames
    assert r.lost_frames > 0
    assert not r.tester_limited


def test_no_abort_within_budget(tmp_path):
    kernel = SimKernel(loss_every=100)   # 1 % loss
    tester, _, _ = make_tester(tmp_path, kernel, poll_interval_s=0.05)
    r = tester.run_trial(spec(load_fps=2000, duration_s=0.4, abort_loss_ratio=0.05))
    assert not r.aborted_early
    assert r.tx_frames == 800
    assert r.lost_frames == 8


def test_progress_reports_live_counters(tmp_path):
    tester, _, _ = make_tester(tmp_path, poll_interval_s=0.05)
    samples = []
    tester.run_trial(spec(duration_s=0.3), progress=samples.append)
    assert samples
    for key in PROGRESS_KEYS:
        assert key in samples[0]
    assert samples[-1]["tx_frames"] >= samples[0]["tx_frames"] > 0
    assert samples[0]["lost_frames"] == 0


def test_interface_counters_fallback(tmp_path):
    kernel = SimKernel(pgrx=False)
    tester, _, _ = make_tester(tmp_path, kernel)
    r = tester.run_trial(spec())
    assert tester.receiver_name == "interface counters" and tester.generator_name == "pktgen (in-tree)"
    assert not tester.full_fidelity
    # counters start at 12345 in the simulation: the trial reports the difference
    assert r.rx_frames == r.tx_frames == 400
    assert any("lower fidelity" in n for n in r.notes)


def test_counters_not_zero_before_trial_is_an_error(tmp_path):
    kernel = SimKernel(pgrx=False)
    tester, _, _ = make_tester(tmp_path, kernel)
    orig = kernel.read

    def noisy(path):   # something keeps arriving on rx0
        if path.endswith("rx0/statistics/rx_packets"):
            kernel.rx_counter_base += 1
        return orig(path)

    kernel.read = noisy
    with pytest.raises(InfraError, match="not zero before the trial"):
        tester.run_trial(spec(learning=False))
    assert ("/proc/net/pktgen/pgctrl", "stop") in kernel.log   # stop_all ran


def test_pgrx_not_reset_is_an_error(tmp_path):
    kernel = SimKernel()
    tester, _, _ = make_tester(tmp_path, kernel)
    orig = kernel._rx_reset

    def broken_reset():
        orig()
        kernel.rx_delivered = {"tx0": 5}

    kernel._rx_reset = broken_reset
    with pytest.raises(InfraError, match="pgrx counted 5 packets after reset"):
        tester.run_trial(spec(learning=False))


def test_the_receiver_counts_only_frames_of_the_size_sent(tmp_path):
    """RFC 2544 section 10: pgrx (format v3) is told the length each trial
    sends (without FCS: 60 for 64 B, 78 for IPv6 at 64 B, which the module
    pads to 82), once per change of size; an IMIX trial counts any length."""
    tester, kernel, _ = make_tester(tmp_path)
    for s in (spec(), spec(load_fps=1000)):
        assert tester.run_trial(s).rx_frames > 0
    assert (kernel.rx_pkt_size, kernel.rx_pkt_size_writes) == (60, 1)
    r = tester.run_trial(spec(ipv6=True))
    assert r.rx_frames == r.tx_frames == 400 and not r.notes
    assert (kernel.rx_pkt_size, kernel.rx_pkt_size_writes) == (78, 2)
    tester.run_trial(spec(frame_size=0))
    assert (kernel.rx_pkt_size, kernel.rx_pkt_size_writes) == (0, 3)


def test_frames_of_another_length_are_lost_and_said(tmp_path):
    """A DUT that adds 4 bytes to every frame (a tag it should not push):
    none is counted as received, the trial loses them all, and its notes
    say why."""
    tester, kernel, _ = make_tester(tmp_path, SimKernel(rx_size_change=4))
    r = tester.run_trial(spec())
    assert r.tx_frames == 400 and r.rx_frames == 0 and r.lost_frames == 400
    assert any("pgrx test frames 400 of another length than 60 B without FCS" in n for n in r.notes), r.notes


def test_a_receiver_before_format_v3_is_not_told_a_size(tmp_path):
    """A module of pgrx format v2 has no `pkt_size`: nothing is written,
    every frame counts as before."""
    tester, kernel, _ = make_tester(tmp_path, SimKernel(pgrx_version=2, rx_size_change=4))
    r = tester.run_trial(spec())
    assert r.rx_frames == r.tx_frames == 400 and kernel.rx_pkt_size_writes == 0


def test_refused_write_reports_the_result_line(tmp_path):
    kernel = SimKernel()
    kernel.fail_on = ("/proc/net/pktgen/tx0", "ratep")
    tester, _, _ = make_tester(tmp_path, kernel)
    with pytest.raises(InfraError, match=r"'ratep 2000' to /proc/net/pktgen/tx0 failed: .*No such parameter"):
        tester.run_trial(spec(learning=False))


def test_ipv6_trial_uses_the_ipv6_addresses(tmp_path):
    tester, kernel, _ = make_tester(tmp_path)
    r = tester.run_trial(spec(ipv6=True))
    assert r.rx_frames == r.tx_frames == 400
    writes = kernel.devices["tx0"].writes
    assert "src6 2001:2::1" in writes and "dst6 2001:2:0:100::1" in writes and "flag IPV6" in writes


def test_ipv6_without_addresses_is_bad_input(tmp_path):
    tester, _, _ = make_tester(tmp_path, streams=(("tester:tx1", "tester:rx0"),))
    with pytest.raises(BadInput, match="tx port tx1 has no ipv6 address"):
        tester.run_trial(spec(ipv6=True))


def test_latency_from_pgrx(tmp_path):
    tester, kernel, _ = make_tester(tmp_path)
    r = tester.run_trial(spec(latency=True))
    assert ("/proc/net/pktgen/pgrx", "statistics time") in kernel.log
    assert r.latency.samples == 400
    assert r.latency.median_ns == 19968 and r.latency.p999_ns == 49920
    assert r.latency.mean_ns == pytest.approx(20000)
    assert r.latency.stddev_ns == pytest.approx(10)
    assert r.latency.pdv_mean_ns == pytest.approx(300)


def test_two_streams_share_the_load(tmp_path):
    tester, kernel, _ = make_tester(tmp_path, streams=(("tester:tx0", "tester:rx0"), ("tester:tx1", "tester:rx0")))
    r = tester.run_trial(spec(load_fps=2000, duration_s=0.2))
    assert r.intended_frames == 400 and r.tx_frames == 400 and r.rx_frames == 400
    assert "ratep 1000" in kernel.devices["tx0"].writes and "ratep 1000" in kernel.devices["tx1"].writes
    assert {s.tx_port for s in r.streams} == {"tester:tx0", "tester:tx1"}
    # two devices on the one kpktgend thread off the DUT namespace's CPU (1, its RPS CPU)
    assert {n: len(v) for n, v in kernel.threads.items() if v} == {0: 2}


def test_stop_all_never_raises(tmp_path):
    tester, kernel, session = make_tester(tmp_path)
    tester.run_trial(spec())
    session.dead = True
    # the session is dead and reconnecting fails (no SSH here): still no exception
    tester.stop_all()


def test_waits_validation():
    assert Waits.of({"residual_s": 0}).residual_s == 0
    with pytest.raises(BadInput, match="waits.residual_s"):
        Waits.of({"residual_s": -1})
    with pytest.raises(BadInput, match="waits.bogus"):
        Waits.of({"bogus": 1})


def test_bad_spec_is_bad_input(tmp_path):
    tester, _, _ = make_tester(tmp_path)
    with pytest.raises(BadInput):
        tester.run_trial(spec(frame_size=20))
    with pytest.raises(BadInput):
        tester.run_trial(spec(load_fps=0))
    with pytest.raises(BadInput):
        tester.run_trial(spec(abort_loss_ratio=1.5))


def test_calibrate_measures_the_generator_ceiling(tmp_path):
    from rfc2544.engine.calibrate import calibrate
    kernel = SimKernel(tester_ceiling_fps=5000)
    tester, _, _ = make_tester(tmp_path, kernel)
    fps = calibrate(tester.inventory, [64, 1518], 0.3, tester=tester)
    assert set(fps) == {64, 1518}
    assert fps[64] == pytest.approx(5000, rel=0.05)
    dev = kernel.devices["tx0"]
    assert "delay 0" in dev.writes
    assert "dst_mac 52:54:00:00:00:01" in dev.writes   # the tx port's own MAC: the DUT forwards nothing
    with pytest.raises(BadInput):
        calibrate(tester.inventory, [64], 0, tester=tester)


def test_a_paced_run_sends_its_frames_however_late_the_generator_starts(tmp_path):
    """(simulated) A paced run (calibrate's pacing rows, the calibration
    link) is counted, as a trial is: the generator ends it after
    rate x duration frames. On a loaded tester whose threads begin 0.5 s
    after the start write, a run stopped on the host's clock held 0.75 s of
    a 1 s run (CI: 1445 of 1950 frames on the link); this one holds them all
    and its sending time is the generator's own."""
    kernel = SimKernel(start_delay_s=0.5)
    tester, _, _ = make_tester(tmp_path, kernel)
    frames, elapsed, _ = tester.send_paced(64, 1950, 1.0)
    assert frames == 1950
    assert "count 1950" in kernel.devices["tx0"].writes
    assert elapsed == pytest.approx(1.0, abs=0.01)


def test_a_paced_run_beyond_the_generator_is_stopped_after_twice_its_length(tmp_path):
    """(simulated) A generator at 1000 fps asked for 5000: the run is given
    twice its length plus PACED_GRACE_S, then stopped; its frames over its
    sending time say the rate it kept."""
    from rfc2544.engine.trial_engine import PACED_GRACE_S
    kernel = SimKernel(tester_ceiling_fps=1000)
    tester, _, _ = make_tester(tmp_path, kernel)
    t0 = kernel.clock.monotonic()
    frames, elapsed, _ = tester.send_paced(64, 5000, 1.0)
    assert kernel.clock.monotonic() - t0 < 2.0 + PACED_GRACE_S + 1.0
    assert elapsed == pytest.approx(2.0 + PACED_GRACE_S, abs=0.1)
    assert frames / elapsed == pytest.approx(1000, rel=0.02)


def test_a_ceiling_run_whose_start_outran_its_stop_is_stopped_again(tmp_path):
    """(simulated) A loaded tester's start can reach pgctrl after the stop
    that should end it (CI: a ceiling run "did not stop"): the stop is
    written again until the start write returns; a generator that ignores
    every stop is an InfraError naming the host."""
    from rfc2544.errors import InfraError
    kernel = SimKernel(tester_ceiling_fps=5000, stops_before_start=1)
    tester, _, _ = make_tester(tmp_path, kernel)
    frames, elapsed = tester.send_at_max_rate(64, 0.3)
    assert frames / elapsed == pytest.approx(5000, rel=0.05)
    assert kernel.stops_before_start == 0 and not kernel.running
    kernel.stops_before_start = 99
    with pytest.raises(InfraError, match="tester: the generator did not stop"):
        tester.send_at_max_rate(64, 0.3)


def test_rate_change_without_stopping(tmp_path):
    tester, kernel, _ = make_tester(tmp_path, poll_interval_s=0.05)
    assert tester.supports_recovery
    samples = []
    r = tester.run_trial(spec(load_fps=2000, duration_s=0.3, recovery_load_fps=500, recovery_duration_s=0.4),
                         progress=samples.append)
    assert r.intended_frames == 600 + 200 and r.tx_frames == 800 and r.rx_frames == 800
    assert kernel.starts == 2                       # learning + ONE run: no stop in between
    writes = kernel.devices["tx0"].writes
    assert writes.index("ratep 2000") < writes.index("ratep 500")
    assert "count 800" in writes
    assert {s["load_fps"] for s in samples} == {2000, 500}
    assert any("rate changed to 500" in n for n in r.notes)
    assert not r.tester_limited
    assert r.traffic_s == pytest.approx(0.3 + 0.4, abs=0.1)


def test_fixed_size_after_imix_re_adds_the_devices(tmp_path):
    tester, kernel, _ = make_tester(tmp_path)
    tester.run_trial(spec(frame_size=0))
    assert any(c.startswith("imix_weights 60,7 572,4 1514,1") for c in kernel.devices["tx0"].writes)
    tester.run_trial(spec(frame_size=0))
    assert kernel.resets == 1
    tester.run_trial(spec(frame_size=128))
    assert kernel.resets == 2          # IMIX weights cannot be cleared: device re-added
    assert not any(c.startswith("imix") for c in kernel.devices["tx0"].writes)


def test_pgrx_moved_to_another_device_is_re_enabled(tmp_path):
    tester, kernel, _ = make_tester(tmp_path)
    tester.run_trial(spec())
    kernel.rx_dev, kernel.rx_devs = "eth9", ["eth9"]   # someone pointed pgrx elsewhere between trials
    r = tester.run_trial(spec(learning=False))
    assert kernel.rx_devs == ["rx0"] and r.rx_frames == r.tx_frames == 400


def test_stop_all_stops_twice_to_catch_a_racing_start(tmp_path, monkeypatch):
    """Simulated kernel: a 'start' sent just before an interruption can reach
    pgctrl after the first 'stop' (seen in the lab on Ctrl-C), so stop_all
    writes 'stop' again after a short wait."""
    import rfc2544.engine.tester as tester_mod
    monkeypatch.setattr(tester_mod, "STOP_RACE_S", 0.01)
    tester, kernel, _ = make_tester(tmp_path)
    tester.run_trial(spec())
    n_before = kernel.log.count(("/proc/net/pktgen/pgctrl", "stop"))
    tester.stop_all()
    assert kernel.log.count(("/proc/net/pktgen/pgctrl", "stop")) - n_before == 2


def test_idle_s_starts_the_trial_idle_after_the_previous_traffic(tmp_path):
    """A back-to-back burst must find the DUT's buffer empty (RFC 9004): with
    idle_s the next start waits that long after the previous traffic ended,
    whatever the shorter profile waits; without it, only those waits apply."""
    tester, kernel, _ = make_tester(tmp_path)
    gaps = {}
    for idle in (None, 0.6):
        tester.run_trial(spec(learning=False, duration_s=0.2))
        first = kernel.t_start
        tester.run_trial(spec(learning=False, duration_s=0.2, idle_s=idle))
        gaps[idle] = kernel.t_start - first
    assert gaps[0.6] >= 0.2 + 0.6
    assert gaps[None] < 0.2 + 0.6


def test_frames_the_testers_driver_dropped_are_tester_limited_not_dut_loss(tmp_path):
    """rfc2544_pktgen counts frames its own driver refused (NET_XMIT_DROP,
    a full qdisc) in tx_dropped, not in pkts-sofar: they never reached the
    DUT, so the trial is tester-limited and they are not lost frames."""
    kernel = SimKernel(tx_drop_every=100)
    tester, _, _ = make_tester(tmp_path, kernel)
    r = tester.run_trial(spec(learning=False))
    assert r.intended_frames == 400
    assert r.tx_frames == 396 and r.rx_frames == 396 and r.lost_frames == 0
    assert r.tester_limited
    assert any("driver dropped 4 frames" in n for n in r.notes), r.notes
