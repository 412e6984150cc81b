"""Several generators per stream (issue 44): the plan, the split of frames
and rates, the refusals, and trials against a SIMULATED tester host
(pktgen_sim.py: no SSH, no kernel) whose devices count by stream id as the
module does."""
import pytest
from hypothesis import given, settings, strategies as st

from pktgen_sim import SimKernel
from sim_session import SimSession
from test_tester_sim import FAST, INVENTORY, spec
from rfc2544.config import inventory
from rfc2544.drivers.streams import (check_declared, plan_streams, shared_queue_notes, stream_groups,
                                  tx_queue_of)
from rfc2544.engine.schedule import RateSchedule, Segment
from rfc2544.engine.tester import SSHTester
from rfc2544.errors import BadInput
from rfc2544.results.records import TrialRecord


def inventory_with(tmp_path, generators=None, streams=(("tester:tx0", "tester:rx0"),), rx_generators=None):
    text = INVENTORY.format(streams="\n".join(f'      - {{tx: "{a}", rx: "{b}"}}' for a, b in streams))
    if generators is not None:
        text = text.replace('peer_mac: "52:54:00:00:00:02"}', f'peer_mac: "52:54:00:00:00:02", generators: {generators}}}')
    if rx_generators is not None:
        text = text.replace('ipv6: "2001:2:0:100::1/64"}', f'ipv6: "2001:2:0:100::1/64", peer_mac: "52:54:00:00:00:02", '
                                                          f'generators: {rx_generators}}}')
    path = tmp_path / "inv.yml"
    path.write_text(text)
    return inventory.load(path)


def sim_tester(tmp_path, kernel, generators=None, **kw):
    session = SimSession("tester", kernel)
    return SSHTester(inventory_with(tmp_path, generators), waits=FAST, sessions={"tester": session, "dut": SimSession("dut", session.kernel)},
                     clock=kernel.clock, **kw)


# ---------------------------------------------------------------- the plan

def test_a_stream_of_two_generators_is_two_devices_with_their_own_ids(tmp_path):
    plans = plan_streams(inventory_with(tmp_path, generators=2))
    assert [p.device for p in plans] == ["tx0@0", "tx0@1"]
    assert [p.stream_id for p in plans] == [1, 2]
    assert [(p.stream, p.generator, p.generators) for p in plans] == [(0, 0, 2), (0, 1, 2)]
    assert plans[1].label == "tester:tx0->tester:rx0 generator 2/2"
    assert plans[1].ends == "tester:tx0->tester:rx0"
    assert [len(g) for g in stream_groups(plans)] == [2]


def test_the_run_overrides_the_port_and_the_reverse_takes_its_own_port(tmp_path):
    inv = inventory_with(tmp_path, generators=2, rx_generators=3)
    assert len(plan_streams(inv, generators=1)) == 1
    plans = plan_streams(inv, bidirectional=True)
    assert [(p.tx_port, p.generators) for p in plans] == [("tx0", 2), ("tx0", 2), ("rx0", 3), ("rx0", 3), ("rx0", 3)]
    assert [p.stream for p in plans] == [0, 0, 1, 1, 1]
    with pytest.raises(BadInput, match="generators per stream"):
        plan_streams(inv, generators=65)


@pytest.mark.parametrize("value, problem", [("0", "positive integer"), ('"2"', "positive integer"),
                                            ("true", "positive integer"), ("65", "at most 64")])
def test_a_bad_generators_value_is_refused(tmp_path, value, problem):
    with pytest.raises(BadInput, match=problem):
        inventory_with(tmp_path, generators=value)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 8), min_size=1, max_size=2), st.booleans())
def test_no_two_generators_ever_share_a_sequence_space(tmp_path_factory, per_port, bidirectional):
    """Every device of a run has its own stream id (its sequence space) and
    its own name on its host, whatever the streams and generators."""
    tmp = tmp_path_factory.mktemp("inv")
    streams = [("tester:tx0", "tester:rx0"), ("tester:tx1", "tester:rx0")][:len(per_port)]
    inv = inventory_with(tmp, streams=streams, rx_generators=1)
    for port, n in zip(("tx0", "tx1"), per_port):
        inv.hosts["tester"].ports[port].generators = n
    plans = plan_streams(inv, bidirectional=bidirectional)
    ids = [p.stream_id for p in plans]
    assert len(set(ids)) == len(ids)
    names = [(p.tx_host, p.device) for p in plans]
    assert len(set(names)) == len(names)
    assert len(plans) == sum(per_port) + (sum(1 for _ in streams) if bidirectional else 0)


def test_queues_are_the_generators_own_where_the_port_has_them(tmp_path):
    plans = plan_streams(inventory_with(tmp_path, generators=2))
    assert [tx_queue_of(p, {("tester", "tx0"): 4}) for p in plans] == [0, 1]
    assert [tx_queue_of(p, {("tester", "tx0"): 1}) for p in plans] == [None, None]
    assert shared_queue_notes(plans, {("tester", "tx0"): 4}) == []
    note, = shared_queue_notes(plans, {("tester", "tx0"): 1})
    assert "1 TX queue(s) for the 2 generators" in note
    one = plan_streams(inventory_with(tmp_path, generators=1))
    assert tx_queue_of(one[0], {("tester", "tx0"): 4}) is None


def test_the_streams_of_one_port_take_its_queues_in_turn(tmp_path):
    """Two streams of 2 generators on one port (devices tx0@0..3): queues
    0-3 where it has 4, shared by two where it has 2 (and declared), not
    every stream on queues 0-1 or every generator on queue 0."""
    from dataclasses import replace
    first = plan_streams(inventory_with(tmp_path, generators=2))
    plans = first + [replace(p, index=p.index + 2, device=f"tx0@{p.generator + 2}", stream=1) for p in first]
    assert [p.port_slot for p in plans] == [0, 1, 2, 3]
    assert [tx_queue_of(p, {("tester", "tx0"): 4}) for p in plans] == [0, 1, 2, 3]
    assert [tx_queue_of(p, {("tester", "tx0"): 2}) for p in plans] == [0, 1, 0, 1]
    assert shared_queue_notes(plans, {("tester", "tx0"): 4}) == []
    note, = shared_queue_notes(plans, {("tester", "tx0"): 2})
    assert "2 TX queue(s) for the 4 generators" in note and "share queues" in note
    three = plan_streams(inventory_with(tmp_path, generators=3))
    assert [tx_queue_of(p, {("tester", "tx0"): 2}) for p in three] == [0, 1, 0]


def test_the_declared_stream_limit_counts_every_generator(tmp_path):
    """Each generator is a stream of its own to pgrx (sid:N): past what
    pgrx can be told of, the trial is refused before any traffic."""
    kernel = SimKernel(pgrx_version=6, threads=8)
    inv = inventory_with(tmp_path, generators=3)
    session = SimSession("tester", kernel)
    with SSHTester(inv, waits=FAST, sessions={"tester": session, "dut": SimSession("dut", session.kernel)}, clock=kernel.clock) as tester:
        assert check_declared("tester", {p.rx_key(False, True) for p in tester.plans}, 3) == ("sid:1", "sid:2", "sid:3")
        with pytest.raises(BadInput, match="tester receives 3 streams counting each generator apart.*at most 2"):
            check_declared("tester", {p.rx_key(False, True) for p in tester.plans}, 2)
    kernel = SimKernel(pgrx_version=6, threads=8)
    many = inventory_with(tmp_path, generators=8)
    session = SimSession("tester", kernel)
    with SSHTester(many, waits=FAST, sessions={"tester": session, "dut": SimSession("dut", session.kernel)}, clock=kernel.clock) as tester:
        import rfc2544.drivers.pgrx as pgrx_mod
        limit, pgrx_mod.MAX_DECLARED = pgrx_mod.MAX_DECLARED, 4
        try:
            with pytest.raises(BadInput, match="receives 8 streams.*at most 4"):
                tester.run_trial(spec())
        finally:
            pgrx_mod.MAX_DECLARED = limit
    assert kernel.starts == 0


# ---------------------------------------------------------------- frames and rates

def test_frames_and_rates_split_per_stream_then_per_generator(tmp_path):
    inv = inventory_with(tmp_path, generators=2, streams=(("tester:tx0", "tester:rx0"), ("tester:tx1", "tester:rx0")))
    plans = plan_streams(inv)                       # tx0: 2 generators, tx1: 1
    s = RateSchedule([Segment(3000, duration_s=1.0)], plans)
    assert s.totals() == [750, 750, 1500] and sum(s.totals()) == 3000
    assert s.first_rates() == [750, 750, 1500]       # each stream half the load
    odd = RateSchedule([Segment(None, frames=7)], plans)
    assert odd.totals() == [2, 2, 3] and sum(odd.totals()) == 7
    # a stream's generators' rates add up to the stream's, in whole frames/s
    assert RateSchedule([Segment(3002, duration_s=1.0)], plans).first_rates() == [751, 750, 1501]


def test_a_rate_under_one_frame_per_generator_is_refused(tmp_path):
    """Each generator sends at least 1 frame/s: a stream's rate below its
    generator count would be sent faster than asked, so it is refused."""
    inv = inventory_with(tmp_path, generators=4, streams=(("tester:tx0", "tester:rx0"), ("tester:tx1", "tester:rx0")))
    plans = plan_streams(inv)                       # tx0: 4 generators, tx1: 1
    assert RateSchedule([Segment(8, duration_s=1.0)], plans).first_rates() == [1, 1, 1, 1, 4]
    with pytest.raises(BadInput, match="6 frames/s over 2 stream.* 3 frames/s a stream: under 1 frame/s for each "
                                       "of its 4 generators"):
        RateSchedule([Segment(6, duration_s=1.0)], plans)


# ---------------------------------------------------------------- trials (simulated host)

def test_a_trial_of_two_generators_is_one_stream_exactly_counted(tmp_path):
    kernel = SimKernel(pgrx_version=6, device_loss_every={"tx0@1": 10})
    kernel.tx_queues["tx0"] = 4
    # every CPU asked for: the DUT namespace's (CPU 1, its RPS CPU) too
    with sim_tester(tmp_path, kernel, generators=2, every_cpu=True) as tester:
        r = tester.run_trial(spec(load_fps=2000, duration_s=0.2))
    # each generator on its own thread, on its own queue, with its own id
    assert sorted(kernel.threads[0] + kernel.threads[1]) == ["tx0@0", "tx0@1"]
    assert kernel.threads[0] != kernel.threads[1]
    for g in (0, 1):
        dev = kernel.devices[f"tx0@{g}"]
        assert f"queue_map_min {g}" in dev.writes and f"queue_map_max {g}" in dev.writes
        assert f"stream_id {g + 1}" in dev.writes and "ratep 1000" in dev.writes and "count 200" in dev.writes
    stream, = r.streams
    assert (stream.tx_frames, stream.rx_frames, stream.lost, stream.duplicates) == (400, 380, 20, 0)
    assert [(g["generator"], g["tx_frames"], g["lost"]) for g in stream.generators] == [(0, 200, 0), (1, 200, 20)]
    assert r.lost_frames == 20 and not r.tester_limited
    assert not any("share a queue" in n for n in r.notes)
    record = TrialRecord.from_result(1, "throughput/ipv4/64", r, "fail", 10.0).to_dict()
    assert len(record["streams"][0]["generators"]) == 2
    assert tester.stream_labels == [{"tx": "tester:tx0", "rx": "tester:rx0", "generators": 2,
                                     "cpus": [0, 1], "tx_queues": [0, 1]}]


def test_generators_take_cpus_of_their_node_away_from_the_receiving_ones(tmp_path):
    """assign_threads: distinct CPUs per stream, the tx port's NUMA node
    first, CPUs that count a receiving port last (pure, no host)."""
    from rfc2544.drivers.placement import assign_threads
    from rfc2544.drivers.probe import HostProbe
    plans = plan_streams(inventory_with(tmp_path, generators=2))
    probe = HostProbe(threads=[0, 1, 2, 3], numa={"tx0": 1}, node_cpus={0: {0, 1}, 1: {2, 3}},
                      rx_cpus={"rx0": {2}})
    assert assign_threads("tester", plans, [], [0, 1, 2, 3], probe) == {"tx0@0": 3, "tx0@1": 0}
    assert assign_threads("tester", plans, [], [0, 1, 2, 3], None) == {"tx0@0": 0, "tx0@1": 1}
    # as many generators as CPUs: the receiving one is left to the receive
    # path (the fourth shares); every CPU once only when asked for
    four = plan_streams(inventory_with(tmp_path, generators=4))
    got = assign_threads("tester", four, ["tx0@bcast"], [0, 1, 2, 3], probe)
    assert sorted(got[f"tx0@{g}"] for g in range(4)) == [0, 1, 3, 3] and got["tx0@bcast"] == 0
    got = assign_threads("tester", four, ["tx0@bcast"], [0, 1, 2, 3], probe, every_cpu=True)
    assert sorted(got[f"tx0@{g}"] for g in range(4)) == [0, 1, 2, 3] and got["tx0@3"] == 2
    assert got["tx0@bcast"] == 0
    # two streams from one port: each stream's on distinct CPUs, spread over all
    inv = inventory_with(tmp_path, generators=2, rx_generators=2)
    both = plan_streams(inv, bidirectional=True)
    got = assign_threads("tester", both, [], [0, 1, 2, 3], None)
    assert got["tx0@0"] != got["tx0@1"] and got["rx0@0"] != got["rx0@1"]
    assert sorted(got.values()) == [0, 1, 2, 3]


def test_a_generator_takes_the_cpu_its_tx_queue_s_irq_is_pinned_to(tmp_path):
    """assign_threads (pure, no host): generator g on queue g goes where
    queue g's own IRQ is, as the host tuning role pins them, unless that
    CPU counts a receiving port or the port has too few queues."""
    from rfc2544.drivers.placement import assign_threads
    from rfc2544.drivers.probe import parse_probe
    plans = plan_streams(inventory_with(tmp_path, generators=2))
    text = ("thread 0\nthread 1\nthread 2\nthread 3\nqueues tx0 4 4 -1\nqueues rx0 1 1 -1\n"
            "irq tx0 40 3 tx0-tx-0\nirq tx0 41 2 tx0-tx-1\nirq tx0 42 1 tx0-rx-0\nirq tx0 43 0-3 tx0\n")
    probe = parse_probe(text)
    assert probe.tx_irq_cpus == {"tx0": {0: {3}, 1: {2}}} and probe.rx_cpus == {"tx0": {0, 1, 2, 3}}
    assert probe.irq_cpus["tx0"] == {0, 1, 2, 3} and probe.rx_queues == {"tx0": 4, "rx0": 1}
    assert assign_threads("tester", plans, [], probe.threads, probe) == {"tx0@0": 3, "tx0@1": 2}
    # queue 0's CPU counts the receiving port: the usual order there
    counted = parse_probe(text + "irq rx0 50 3 rx0-TxRx-0\n")
    assert counted.rx_cpus["rx0"] == {3} and counted.tx_irq_cpus["rx0"] == {0: {3}}
    assert assign_threads("tester", plans, [], probe.threads, counted) == {"tx0@0": 0, "tx0@1": 2}
    # one TX queue: no generator has a queue of its own to follow
    one = parse_probe(text.replace("queues tx0 4 4", "queues tx0 1 4"))
    assert assign_threads("tester", plans, [], probe.threads, one) == {"tx0@0": 0, "tx0@1": 1}
    # queue 0's CPU on another NUMA node than the port: not taken
    far = parse_probe(text.replace("queues tx0 4 4 -1", "queues tx0 4 4 0") + "node 0 0-2\nnode 1 3\n")
    assert assign_threads("tester", plans, [], probe.threads, far)["tx0@0"] != 3
    # both directions, the two ports' queues' IRQs on the same CPUs: the
    # second stream does not stack on the CPUs the first took
    two = plan_streams(inventory_with(tmp_path, generators=2, rx_generators=2), bidirectional=True)
    shared = parse_probe(text.replace("irq tx0 43 0-3 tx0\n", "").replace("queues rx0 1 1", "queues rx0 4 4")
                         + "irq rx0 60 3 rx0-tx-0\nirq rx0 61 2 rx0-tx-1\n")
    assert shared.rx_cpus == {"tx0": {1}}
    got = assign_threads("tester", two, [], probe.threads, shared, every_cpu=True)
    assert got == {"tx0@0": 3, "tx0@1": 2, "rx0@0": 0, "rx0@1": 1}, got
    # by default CPU 1, which counts tx0's receiving, sends nothing
    got = assign_threads("tester", two, [], probe.threads, shared)
    assert got == {"tx0@0": 3, "tx0@1": 2, "rx0@0": 0, "rx0@1": 2}, got


def test_irq_names_of_tx_queues():
    from rfc2544.drivers.probe import irq_tx_queue
    assert irq_tx_queue("eth0-TxRx-3", "eth0") == (3, False)
    assert irq_tx_queue("ice-eth0-TxRx-12", "eth0") == (12, False)
    assert irq_tx_queue("eth0-tx-0", "eth0") == (0, True)
    assert irq_tx_queue("eth0-rx-0", "eth0") is None and irq_tx_queue("eth0", "eth0") is None
    assert irq_tx_queue("eth10-tx-0", "eth1") is None and irq_tx_queue("veth0-tx-0", "eth0") is None
    assert irq_tx_queue("vlan.5-tx-1", "vlan.5") == (1, True) and irq_tx_queue("vlanx5-tx-1", "vlan.5") is None


def test_the_queue_script_runs_and_parses_on_this_host():
    """QUEUE_SCRIPT under bash on the machine running the tests (its
    loopback at least): the shell is valid and its lines parse."""
    import subprocess
    from rfc2544.drivers.probe import QUEUE_SCRIPT, parse_probe
    out = subprocess.run(["bash", "-c", QUEUE_SCRIPT], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and not out.stderr, out.stderr
    pr = parse_probe(out.stdout)
    assert pr.tx_queues.get("lo", 0) >= 1 and pr.rx_queues.get("lo", 0) >= 1, out.stdout


def test_the_queue_script_names_each_tx_queue_s_irq(tmp_path):
    """QUEUE_SCRIPT under bash on a simulated sysfs and /proc (its paths
    moved under tmp_path): an e1000e-like port with a TX, an RX and a link
    vector, its effective CPUs read per IRQ."""
    import subprocess
    from rfc2544.drivers.probe import QUEUE_SCRIPT, parse_probe
    net, proc = tmp_path / "sys/class/net", tmp_path / "proc"
    for q in ("tx-0", "rx-0"):
        (net / "eth1/queues" / q).mkdir(parents=True)
    (net / "eth1/device").mkdir()
    (net / "eth1/device/numa_node").write_text("0\n")
    (net / "eth1/queues/rx-0/rps_cpus").write_text("0\n")
    (proc / "interrupts").parent.mkdir(parents=True)
    (proc / "interrupts").write_text(
        "           CPU0       CPU1\n"
        "  24:          0       4242   PCI-MSI 1048576-edge      eth1-rx-0\n"
        "  25:        917          0   PCI-MSI 1048577-edge      eth1-tx-0\n"
        "  26:          3          0   PCI-MSI 1048578-edge      eth1\n"
        "  27:          3          0   PCI-MSI 1048579-edge      eth10-tx-0\n")
    for irq, cpu in ((24, "1"), (25, "0"), (26, "0"), (27, "1")):
        (proc / f"irq/{irq}").mkdir(parents=True)
        (proc / f"irq/{irq}/effective_affinity_list").write_text(cpu + "\n")
    script = QUEUE_SCRIPT.replace("/sys/class/net", str(net)).replace("/proc/", f"{proc}/")
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and not out.stderr, out.stderr
    pr = parse_probe(out.stdout)
    assert pr.tx_queues == {"eth1": 1} and pr.numa == {"eth1": 0}, out.stdout
    assert pr.tx_irq_cpus == {"eth1": {0: {0}}} and pr.irq_cpus == {"eth1": {0, 1}}, out.stdout
    assert pr.rx_cpus == {"eth1": {0, 1}}, out.stdout     # the RX vector's CPU 1, the link's CPU 0


def test_a_stream_s_generators_are_staggered_by_a_share_of_the_gap(tmp_path):
    kernel = SimKernel(pgrx_version=6, module_version="1.7", threads=4)
    kernel.tx_queues["tx0"] = 4
    with sim_tester(tmp_path, kernel, generators=4) as tester:
        r = tester.run_trial(spec(load_fps=4000, duration_s=0.2))      # 1000 fps each: a 1 ms gap
    # all held 1 ms (one epoch, however late each thread picks the start up), then g/4 of the gap
    assert [kernel.devices[f"tx0@{g}"].p["start_offset"] for g in range(4)] == \
        [1_000_000, 1_250_000, 1_500_000, 1_750_000]
    assert "start_offset 1250000" in kernel.devices["tx0@1"].writes
    assert not any("start together" in n for n in r.notes) and r.rx_frames == 800
    # without the module's start_offset: said, and nothing written
    older = SimKernel(pgrx_version=6)
    with sim_tester(tmp_path, older, generators=2) as tester:
        r = tester.run_trial(spec())
    assert any("start together, not staggered" in n for n in r.notes)
    assert not any(w.startswith("start_offset") for w in older.devices["tx0@1"].writes)


def test_one_generator_writes_what_it_always_wrote(tmp_path):
    kernel = SimKernel(pgrx_version=6, module_version="1.7")
    with sim_tester(tmp_path, kernel) as tester:
        r = tester.run_trial(spec())
    assert list(kernel.devices) == ["tx0"]
    assert not any(w.startswith(("queue_map", "start_offset")) for w in kernel.devices["tx0"].writes)
    assert r.streams[0].generators is None
    record = TrialRecord.from_result(1, "throughput/ipv4/64", r, "pass", 10.0).to_dict()
    assert "generators" not in record["streams"][0]
    assert tester.stream_labels == [{"tx": "tester:tx0", "rx": "tester:rx0"}]


def test_fewer_queues_than_generators_is_declared(tmp_path):
    kernel = SimKernel(pgrx_version=6)
    with sim_tester(tmp_path, kernel, generators=2) as tester:
        r = tester.run_trial(spec())
    assert any("tester:tx0 has 1 TX queue(s) for the 2 generators" in n for n in r.notes)
    assert not any(w.startswith("queue_map") for w in kernel.devices["tx0@0"].writes)
    assert r.streams[0].rx_frames == 400


def test_more_generators_than_threads_is_refused(tmp_path):
    kernel = SimKernel(pgrx_version=6, threads=2)
    with sim_tester(tmp_path, kernel, generators=3) as tester:
        with pytest.raises(BadInput, match="3 generators, but tester has 2 kpktgend threads"):
            tester.run_trial(spec())
    assert kernel.starts == 0


def test_without_stream_ids_several_generators_are_refused(tmp_path):
    kernel = SimKernel(pgrx_version=4)          # module 1.1: no stream ids
    with sim_tester(tmp_path, kernel, generators=2) as tester:
        with pytest.raises(BadInput, match="several generators per stream need the rfc2544_pktgen module 1.3"):
            tester.run_trial(spec())
    assert kernel.starts == 0


def test_the_recovery_sequence_is_in_frames_of_the_whole_trial(tmp_path):
    """Each generator numbers its own frames: seq_max in the progress
    samples is scaled by its share, so the recovery procedure's mapping
    from sequence to send time holds."""
    kernel = SimKernel(pgrx_version=6)
    samples = []
    with sim_tester(tmp_path, kernel, generators=2, poll_interval_s=0.05) as tester:
        tester.run_trial(spec(load_fps=2000, duration_s=0.5), progress=samples.append)
    seqs = [s["seq_max"] for s in samples if s.get("seq_max")]
    assert seqs and max(seqs) <= 1000
    # a generator's own sequence reaches 500 at most: scaled, the trial's frames
    assert max(seqs) > 500



def test_a_rate_change_goes_to_every_generator(tmp_path):
    kernel = SimKernel(pgrx_version=6)
    kernel.tx_queues["tx0"] = 2
    samples = []
    with sim_tester(tmp_path, kernel, generators=2, poll_interval_s=0.05) as tester:
        r = tester.run_trial(spec(load_fps=2000, duration_s=0.3, recovery_load_fps=500, recovery_duration_s=0.4),
                             progress=samples.append)
    assert (r.intended_frames, r.tx_frames, r.rx_frames) == (800, 800, 800), r.notes
    for g in (0, 1):
        writes = kernel.devices[f"tx0@{g}"].writes
        assert writes.index("ratep 1000") < writes.index("ratep 250") and "count 400" in writes
    assert any("rate changed to 500" in n for n in r.notes) and not r.tester_limited
    assert {s["load_fps"] for s in samples} == {2000, 500}


def test_uneven_shapes_split_or_refuse_in_one_line(tmp_path):
    inv = inventory_with(tmp_path, generators=4, streams=(("tester:tx0", "tester:rx0"), ("tester:tx1", "tester:rx0")))
    plans = plan_streams(inv)                       # tx0: 4 generators, tx1: 1
    tiny = RateSchedule([Segment(10, duration_s=0.1)], plans)     # 1 frame asked: each generator gets one
    assert tiny.totals() == [1, 1, 1, 1, 4] and all(c >= 1 for c in tiny.totals())
    with pytest.raises(BadInput, match="5 frames cannot be split over the 5 generators of 2 streams"):
        RateSchedule([Segment(None, frames=5)], plans)


def test_run_takes_generators_and_resume_keeps_them(tmp_path, monkeypatch):
    """The CLI hands --generators to the tester and the conditions; a
    resumed run whose inventory now gives other generators is refused
    (simulated tester: no SSH)."""
    from click.testing import CliRunner
    from rfc2544.cli import run as run_cmd
    from rfc2544.engine import assemble
    made = {}

    class Stop(Exception):
        pass

    def make(inventory, profile, generators=None, generator_cpus="free"):
        made["generators"], made["generator_cpus"] = generators, generator_cpus
        raise Stop()
    monkeypatch.setattr(assemble, "make_tester", make)
    inv = inventory_with(tmp_path, generators=2)
    result = CliRunner().invoke(run_cmd.run, ["-i", str(inv.path), "-p", "quick", "--generators", "3",
                                              "--out", str(tmp_path / "out")])
    assert isinstance(result.exception, Stop) and made["generators"] == 3 and made["generator_cpus"] == "free"
    result = CliRunner().invoke(run_cmd.run, ["-i", str(inv.path), "-p", "quick", "--generator-cpus", "all",
                                              "--out", str(tmp_path / "out2")])
    assert isinstance(result.exception, Stop) and made["generator_cpus"] == "all"
    result = CliRunner().invoke(run_cmd.run, ["-i", str(inv.path), "--generator-cpus", "most"])
    assert result.exit_code == 2 and "--generator-cpus" in result.output
    result = CliRunner().invoke(run_cmd.run, ["-i", str(inv.path), "--generators", "0"])
    assert result.exit_code == 2 and "--generators" in result.output

    class Labels:
        stream_labels = [{"tx": "tester:tx0", "rx": "tester:rx0", "generators": 2}]

    class Started:
        path = "results.json"
        data = {"conditions": {"streams": [{"tx": "tester:tx0", "rx": "tester:rx0"}]}}
    with pytest.raises(BadInput, match=r"started with \[1\] generators per stream and the inventory now gives \[2\]"):
        run_cmd.check_same_generators(Started, Labels)
    Started.data["conditions"]["streams"][0]["generators"] = 2
    run_cmd.check_same_generators(Started, Labels)


# ---------------------------------------------------------------- results and report

def test_the_schema_and_the_report_take_the_generators(tmp_path):
    import json
    from pathlib import Path
    from schema_check import schema_errors
    from rfc2544.results.load import load_results
    from rfc2544.reports.render import render_html
    data = json.loads((Path(__file__).parents[2] / "data" / "results" / "complete.json").read_text())
    data["conditions"]["streams"] = [{"tx": "tester:tx0", "rx": "tester:rx0", "generators": 2}]
    data["conditions"]["generators"] = 2
    trial = data["trials"][0]
    s = trial["streams"][0]
    s["generators"] = [{"generator": g, "tx_frames": s["tx_frames"] // 2, "rx_frames": s["rx_frames"] // 2,
                        "lost": 0, "out_of_order": 0, "duplicates": 0, "achieved_fps": 1000.0} for g in (0, 1)]
    assert schema_errors(data) == []
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    page = render_html(load_results(path))
    row = page[page.index("<th>Streams</th>"):]
    assert "tester:tx0 &rarr; tester:rx0, 2 generators</td>" in row[:row.index("</tr>")]
    data["conditions"]["streams"][0]["generators"] = 1       # one generator is written as none
    assert schema_errors(data)


def test_streams_are_declared_per_ip_version_without_the_ports_that_lack_it(tmp_path):
    """Simulated: the receiver is told of the streams of one IP version;
    without stream ids (an in-tree tx host) a port with no IPv6 address
    names no IPv6 stream, and is left out rather than sorted beside one
    (a TypeError before)."""
    from dataclasses import replace
    from types import SimpleNamespace
    from rfc2544.drivers import pgrx as pgrx_mod
    from rfc2544.engine.trial_configure import ConfigurePhase
    inv = inventory_with(tmp_path, streams=(("tester:tx0", "tester:rx0"), ("tester:tx1", "tester:rx0")))
    plans = plan_streams(inv)
    plans[1] = replace(plans[1], src6=None)
    engine = SimpleNamespace(_rx_format={"tester": pgrx_mod.DECLARE_VERSION}, plans=plans,
                             detect=lambda: {"stream_ids": False})
    assert ConfigurePhase._declarable(engine, "tester", ipv6=True) == (plans[0].src6,)
    assert ConfigurePhase._declarable(engine, "tester", ipv6=False) == tuple(sorted(p.src4 for p in plans))
