"""Per-trial control cost against the simulated host: only changed device
commands are written, the whole device state is verified on read-back in
the same batch (a stale cache is caught, counted and everything rewritten),
and one start shell serves every trial."""
from test_tester_sim import make_tester, spec


def dev_writes(kernel, name="tx0"):
    return list(kernel.devices[name].writes)


def test_second_trial_writes_only_what_changed(tmp_path):
    tester, kernel, _ = make_tester(tmp_path, waits={"learning_s": 0, "residual_s": 0, "learning_frames": 0})
    r = tester.run_trial(spec(load_fps=2000, duration_s=0.2, learning=False))
    assert r.tx_frames == r.rx_frames == 400
    first = dev_writes(kernel)
    assert len(first) >= 15 and first[-1] == "clear_counters"
    kernel.devices["tx0"].writes.clear()
    r = tester.run_trial(spec(load_fps=1000, duration_s=0.2, learning=False))
    assert r.tx_frames == r.rx_frames == 200
    assert dev_writes(kernel) == ["count 200", "ratep 1000", "clear_counters"]
    kernel.devices["tx0"].writes.clear()
    r = tester.run_trial(spec(load_fps=1000, duration_s=0.2, learning=False))
    assert dev_writes(kernel) == ["clear_counters"]
    c = tester.engine.control_counts
    assert (c["configures"], c["full_writes"], c["mismatches"], c["unverifiable"]) == (3, 1, 0, 0)
    # a new frame size is one more write; IPv6 its address commands and flag
    kernel.devices["tx0"].writes.clear()
    tester.run_trial(spec(frame_size=128, load_fps=1000, duration_s=0.2, learning=False))
    assert dev_writes(kernel) == ["pkt_size 124", "clear_counters"]
    kernel.devices["tx0"].writes.clear()
    r = tester.run_trial(spec(frame_size=128, load_fps=1000, duration_s=0.2, learning=False, ipv6=True))
    assert r.rx_frames == 200
    assert [w.split()[0] for w in dev_writes(kernel)] == ["src6", "dst6", "flag", "clear_counters"]
    assert tester.engine.control_counts["mismatches"] == 0


def test_a_change_behind_the_testers_back_is_caught_and_everything_rewritten(tmp_path):
    tester, kernel, _ = make_tester(tmp_path, waits={"learning_s": 0, "residual_s": 0, "learning_frames": 0})
    tester.run_trial(spec(learning=False))
    resets = kernel.resets
    for tamper in (lambda d: d.p.update(delay=123),                 # a value the trial sets
                   lambda d: d.p.update(udp_dst_max=10),            # another one
                   lambda d: d.extra.update(vlan_id="5")):          # one it never sets
        tamper(kernel.devices["tx0"])
        before = tester.engine.control_counts["mismatches"]
        r = tester.run_trial(spec(learning=False))
        assert tester.engine.control_counts["mismatches"] == before + 1
        assert r.tx_frames == r.rx_frames == 400
        d = kernel.devices["tx0"]
        assert d.p["delay"] == 10**9 // 2000 and d.p["udp_dst_max"] == 9 and not d.extra
        assert len(d.writes) >= 15          # re-added and written in full
    assert kernel.resets > resets
    # and the next trial is a diff again
    kernel.devices["tx0"].writes.clear()
    tester.run_trial(spec(learning=False))
    assert dev_writes(kernel) == ["clear_counters"]


def test_learning_and_rate_changes_keep_the_cache_true(tmp_path):
    tester, kernel, _ = make_tester(tmp_path)       # learning frames before every trial
    for load in (2000, 1000, 2000):
        r = tester.run_trial(spec(load_fps=load))
        assert r.tx_frames == r.intended_frames
    assert tester.engine.control_counts["mismatches"] == 0
    r = tester.run_trial(spec(load_fps=2000, duration_s=0.4, recovery_load_fps=1000, recovery_duration_s=0.2))
    r = tester.run_trial(spec(load_fps=2000))
    assert tester.engine.control_counts["mismatches"] == 0
    assert kernel.devices["tx0"].p["delay"] == 10**9 // 2000


def test_without_diff_writes_every_command_is_written(tmp_path):
    tester, kernel, _ = make_tester(tmp_path, waits={"learning_s": 0, "residual_s": 0, "learning_frames": 0})
    tester.engine.settings.diff_writes = False
    tester.run_trial(spec(learning=False))
    n = len(dev_writes(kernel))
    kernel.devices["tx0"].writes.clear()
    tester.run_trial(spec(learning=False))
    assert len(dev_writes(kernel)) == n


def test_one_start_shell_serves_every_trial(tmp_path):
    tester, kernel, _ = make_tester(tmp_path)
    for _ in range(3):
        tester.run_trial(spec())
    used = [s for s in kernel.start_channels if getattr(s, "triggers", 0)]
    assert len(used) == 1 and used[0].triggers == 3 and not used[0].closed
    tester.stop_all()
    assert all(s.closed for s in kernel.start_channels)
    tester.run_trial(spec())
    tester.transport.loop_starts = False     # one channel per trial, as before
    tester.transport.drop_spares()
    n = len(kernel.start_channels)
    tester.run_trial(spec())
    tester.run_trial(spec())
    assert len([s for s in kernel.start_channels[n:] if getattr(s, "triggers", 0)]) == 2


def test_a_start_that_returns_before_the_traffic_ends_is_not_believed(tmp_path):
    """The in-tree pktgen's start write can return before its threads run
    (a loaded host): the trial still waits for the devices to finish."""
    import sim_session
    tester, kernel, _ = make_tester(tmp_path)
    real_done = sim_session.SimStart.done
    sim_session.SimStart.done = lambda self: self.triggered or self.closed
    try:
        r = tester.run_trial(spec(load_fps=2000, duration_s=0.5))
    finally:
        sim_session.SimStart.done = real_done
    assert r.tx_frames == r.rx_frames == r.intended_frames == 1000



def test_a_generator_whose_read_out_is_not_as_modelled_gets_full_writes(tmp_path):
    """A value the config sets reads back differently even after a full
    write (another generator's read-out): diff writes are turned off for the
    session, counted, and trials run with every command written, as before."""
    import pktgen_sim
    tester, kernel, _ = make_tester(tmp_path, waits={"learning_s": 0, "residual_s": 0, "learning_frames": 0})
    real_text = pktgen_sim.SimDevice.text
    pktgen_sim.SimDevice.text = lambda self: real_text(self).replace("delay: ", "delay: 1")
    try:
        for load in (2000, 1000, 2000):
            kernel.devices.get("tx0") and kernel.devices["tx0"].writes.clear()
            r = tester.run_trial(spec(load_fps=load, learning=False))
            assert r.tx_frames == r.rx_frames == r.intended_frames
            assert len(dev_writes(kernel)) >= 15
    finally:
        pktgen_sim.SimDevice.text = real_text
    c = tester.engine.control_counts
    assert c["unverifiable"] == 1 and c["mismatches"] == 0 and c["full_writes"] == 3


def test_the_final_read_rides_on_the_start_script(tmp_path):
    """With one tester host the start script reads the final counters after
    the residual wait: a trial is one configure batch and the start, no
    batch of its own for the read; switched off, the read is a batch again."""
    tester, kernel, session = make_tester(tmp_path, waits={"learning_s": 0, "residual_s": 0.3,
                                                           "learning_frames": 0})
    tester.run_trial(spec(learning=False))
    n = len(session.batches)
    t0 = kernel.clock.monotonic()
    r = tester.run_trial(spec(learning=False))
    assert r.tx_frames == r.rx_frames == 400
    assert len(session.batches) == n + 1                 # the configure batch only
    assert kernel.clock.monotonic() - t0 >= 0.2 + 0.3    # the residual wait was kept
    tester.engine.settings.fold_read = False
    n = len(session.batches)
    r = tester.run_trial(spec(learning=False))
    assert r.tx_frames == r.rx_frames == 400
    assert len(session.batches) == n + 2
    assert "final" in session.batches[-1].ops[-1][1]
