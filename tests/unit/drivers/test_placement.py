"""Generators off the tester's packet path (issue 56): placement on hosts
of 1, 2, 4 and 64 CPUs with and without receive ports (pure, no host),
the host path counters, and the starved-trial rule on synthetic counters
and through a SIMULATED tester host (pktgen_sim.py: no SSH, no kernel)."""
import pytest

from pktgen_sim import SimKernel
from test_generators import inventory_with, sim_tester
from test_tester_sim import spec
from rfc2544.drivers import host_path
from rfc2544.drivers.placement import assign_threads, host_cpus
from rfc2544.drivers.probe import HostProbe, parse_probe
from rfc2544.drivers.streams import plan_streams
from rfc2544.engine.starved import starved_reason
from rfc2544.model import TrialResult, TrialSpec


def _probe(cpus, rx=None, forwarding=None):
    """A host of `cpus` CPUs; rx0 counted on `rx` (its RX IRQ/RPS CPUs);
    a DUT namespace forwarding on `forwarding`."""
    return HostProbe(threads=list(range(cpus)), rx_cpus={"rx0": set(rx)} if rx is not None else {},
                     forwarding_cpus=set(forwarding or ()),
                     forwarding_ports=["dut:dut0", "dut:dut1"] if forwarding is not None else [])


@pytest.mark.parametrize("cpus, generators, rx, expected", [
    # 1 CPU, which counts rx0: nowhere else to go
    (1, 1, {0}, [0]),
    (1, 1, None, [0]),
    # 2 CPUs, CPU 1 receives: both generators on CPU 0
    (2, 2, {1}, [0, 0]),
    (2, 1, {1}, [0]),
    # 2 CPUs, nothing known to receive: one each
    (2, 2, None, [0, 1]),
    # 4 CPUs, CPU 0 receives: three senders, the fourth generator shares
    (4, 2, {0}, [1, 2]),
    (4, 4, {0}, [1, 2, 3, 1]),
    (4, 4, None, [0, 1, 2, 3]),
    # 64 CPUs, receive queues' IRQs on 0-7: the generators on 8 onwards
    (64, 8, set(range(8)), list(range(8, 16))),
    (64, 60, set(range(8)), list(range(8, 64)) + [8, 9, 10, 11]),
])
def test_generators_leave_the_receive_path_its_cpus(tmp_path, cpus, generators, rx, expected):
    plans = plan_streams(inventory_with(tmp_path, generators=generators))
    probe = _probe(cpus, rx)
    got = assign_threads("tester", plans, [], probe.threads, probe)
    assert [got[p.device] for p in plans] == expected
    placed = host_cpus("tester", plans, got, probe)
    assert placed.path == set(rx or ()) and placed.path_ports == ["rx0"]
    starved = placed.warning()
    if rx is None:
        # no CPU known to carry the path: said, whatever the generators took
        assert "no CPU is known to carry that packet path" in starved
    elif set(rx) == set(range(cpus)):
        assert "CPU(s) 0" in starved and "every CPU carries it" in starved
    else:
        assert starved is None


@pytest.mark.parametrize("cpus, rx", [(2, {1}), (4, {0}), (64, set(range(8)))])
def test_every_cpu_is_taken_only_when_asked_and_then_declared(tmp_path, cpus, rx):
    plans = plan_streams(inventory_with(tmp_path, generators=cpus))
    probe = _probe(cpus, rx)
    got = assign_threads("tester", plans, [], probe.threads, probe, every_cpu=True)
    assert sorted(got.values()) == list(range(cpus))
    # the path's CPUs are taken last
    assert all(got[p.device] not in rx for p in plans[:cpus - len(rx)])
    warning = host_cpus("tester", plans, got, probe, every_cpu=True).warning()
    assert "--generator-cpus all takes them (a deviation)" in warning and "none is left for receiving" in warning


def test_a_dut_namespace_on_the_tester_counts_as_its_receive_path(tmp_path):
    """The single lab: tx0 -> dut0 (a DUT namespace, RPS on CPU 1) -> rx0,
    all on a 2-CPU tester. Without the namespace's facts the generators
    would take CPU 1 too."""
    plans = plan_streams(inventory_with(tmp_path, generators=2))
    probe = _probe(2, rx=set(), forwarding={1})
    got = assign_threads("tester", plans, [], probe.threads, probe)
    assert got == {"tx0@0": 0, "tx0@1": 0}
    placed = host_cpus("tester", plans, got, probe, forwarding_ports=probe.forwarding_ports)
    assert placed.warning() is None
    assert placed.summary() == ("tester: generators on CPU 0: tx0@0, tx0@1; receive path on CPU 1 "
                                "(rx0, dut:dut0, dut:dut1)")
    blind = _probe(2, rx=set(), forwarding=set())
    assert assign_threads("tester", plans, [], blind.threads, blind) == {"tx0@0": 0, "tx0@1": 1}


def test_the_probe_reads_rps_masks_as_receive_cpus():
    probe = parse_probe("thread 0\nthread 1\nqueues dut0 1 1 -1\nrps dut0 rx-0 2\nrps rx0 rx-0 00000000\n")
    assert probe.rx_cpus == {"dut0": {1}, "rx0": set()}


SOFTNET = ("0000a000 00000003 00000010 00000000\n"
           "0000b000 00000001 00000002 00000000\n")


def test_host_path_counters_parse_and_subtract():
    files = {host_path.SOFTNET: SOFTNET, "/sys/class/net/rx0/statistics/rx_dropped": "5",
             "/sys/class/net/rx0/statistics/rx_missed_errors": "2"}
    after = host_path.parse(files)
    assert after == host_path.PathCounters(dropped=4, squeezed=18, nic_drops=7)
    before = host_path.PathCounters(dropped=1, squeezed=18, nic_drops=7)
    assert host_path.deltas({"t": before}, {"t": after, "u": after}) == {
        "t": host_path.PathCounters(dropped=3, squeezed=0, nic_drops=0)}
    assert host_path.parse({}) is None
    assert host_path.path_files(["rx0"])[0] == host_path.SOFTNET


def _failed(lost, host_path_counts, test="throughput", tx=10_000):
    return TrialResult(spec=TrialSpec(frame_size=64, load_fps=5000, duration_s=2.0, test=test), tx_frames=tx,
                       rx_frames=tx - lost, intended_frames=tx, achieved_fps=5000, traffic_s=2.0,
                       tester_limited=False, host_path=host_path_counts)


def test_the_starved_rule_on_synthetic_counters():
    quiet = {"tester": {"dropped": 0, "squeezed": 40, "nic_drops": 0}}
    # squeezes alone lost nothing on the tester: the DUT's loss
    assert starved_reason(_failed(12, quiet)) is None
    backlog = {"tester": {"dropped": 9, "squeezed": 3, "nic_drops": 0}}
    reason = starved_reason(_failed(12, backlog))
    assert reason.startswith("tester-starved: the tester's own packet path dropped 9 frames")
    assert "of the 12 frames lost" in reason
    nic = {"tester": {"dropped": 0, "squeezed": 0, "nic_drops": 2}, "rx": {"dropped": 0, "squeezed": 0,
                                                                           "nic_drops": 0}}
    assert "dropped 2 frames" in starved_reason(_failed(2, nic))
    # a passed trial, an overload on purpose, or no counters: nothing to name
    assert starved_reason(_failed(0, backlog)) is None
    assert starved_reason(_failed(12, backlog, test="system_recovery")) is None
    assert starved_reason(_failed(12, None)) is None


def test_a_trial_whose_tester_dropped_frames_is_named_through_the_engine(tmp_path):
    """SIMULATED: the sim's softnet backlog drops 7 frames during a trial;
    the result carries the counters and the rule names it."""
    kernel = SimKernel(pgrx_version=6, device_loss_every={"tx0": 50})
    with sim_tester(tmp_path, kernel) as tester:
        quiet = tester.run_trial(spec(load_fps=2000, duration_s=0.2))
        kernel.path_drops_at_start = (7, 2)
        starved = tester.run_trial(spec(load_fps=2000, duration_s=0.2))
    # (the sim's DUT is a namespace of the tester: arrivals timed, its hold recorded)
    assert quiet.host_path == {"tester": {"dropped": 0, "squeezed": 0, "nic_drops": 0, "held_ns": 900,
                                                   "held_frames": 1}}
    assert quiet.lost_frames > 0 and starved_reason(quiet) is None
    # the counters rose between the zero read and the final read of the second trial only
    assert starved.host_path == {"tester": {"dropped": 7, "squeezed": 2, "nic_drops": 0, "held_ns": 900,
                                                     "held_frames": 1}}
    assert "dropped 7 frames" in starved_reason(starved)


def test_a_placement_on_the_receive_path_is_declared_as_a_deviation(tmp_path):
    """assemble.placement_deviations: one record where the generators took
    a CPU of the receive path, none where they left it free (stand-in
    tester: only its host_cpus)."""
    from types import SimpleNamespace
    from rfc2544.engine.assemble import placement_deviations
    plans = plan_streams(inventory_with(tmp_path, generators=2))
    probe = _probe(2, rx={1})

    def tester(every_cpu):
        placed = assign_threads("tester", plans, [], probe.threads, probe, every_cpu)
        return SimpleNamespace(host_cpus=lambda: {"tester": host_cpus("tester", plans, placed, probe, every_cpu)})
    assert placement_deviations(tester(False)) == []
    (dev,) = placement_deviations(tester(True), "all")
    assert dev.code == "generator_cpus" and dev.used == "--generator-cpus all"
    assert "CPU(s) 1" in dev.text and "a deviation" in dev.text
    assert placement_deviations(SimpleNamespace()) == []


def test_a_virtio_nics_queue_irqs_are_found_by_its_virtio_device(tmp_path):
    """virtio-net names its IRQs after its virtio device ("virtio2-input.0"),
    not the interface: the queue script (run here by sh over a fake /sys
    and /proc) maps them to the interface's RX and TX queues, so placement
    knows the CPU that receives."""
    import os
    import subprocess
    from rfc2544.drivers.probe import QUEUE_SCRIPT
    net = tmp_path / "sys/class/net/rx0"
    (net / "queues/rx-0").mkdir(parents=True)
    (net / "queues/rx-0/rps_cpus").write_text("0\n")
    (tmp_path / "sys/devices/pci0000:00/virtio2").mkdir(parents=True)
    os.symlink("../../../devices/pci0000:00/virtio2", net / "device")
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/interrupts").write_text(
        " 24:  0  0  PCI-MSI 49152-edge  virtio2-config\n"
        " 25:  9  0  PCI-MSI 49153-edge  virtio2-input.0\n"
        " 26:  5  0  PCI-MSI 49154-edge  virtio2-output.0\n"
        " 27:  5  0  PCI-MSI 49155-edge  virtio12-input.0\n")
    for irq, cpu in ((25, "1"), (26, "0"), (27, "0")):
        (tmp_path / f"proc/irq/{irq}").mkdir(parents=True)
        (tmp_path / f"proc/irq/{irq}/effective_affinity_list").write_text(cpu + "\n")
    script = QUEUE_SCRIPT.replace("/sys/", f"{tmp_path}/sys/").replace("/proc/", f"{tmp_path}/proc/")
    probe = parse_probe(subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout)
    assert probe.rx_cpus == {"rx0": {1}} and probe.tx_irq_cpus == {"rx0": {0: {0}}}
