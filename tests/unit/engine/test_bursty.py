"""Bursty traffic (RFC 2544 section 21, issue 31 item 4): the profile's
`bursty.burst_sizes`, the generator's burst_frames (module 1.2) written and
verified, and a whole run whose largest passing burst is the DUT's bucket.
Whole runs use the simulated DUT (rfc2544.sim.dut, no network) with a
policer's bucket; the SSH tester runs against the simulated host
(pktgen_sim.py, simulated too), whose device files answer in the real text
format."""
import json

import pytest

from pktgen_sim import SimKernel
from sim_session import SimSession
from rfc2544.config import profiles
from rfc2544.drivers import pktgen
from rfc2544.drivers.streams import device_configs
from rfc2544.drivers.probe import HostProbe
from rfc2544.engine import detection
from rfc2544.engine.tester import SSHTester
from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec
from rfc2544.procedures.runner import build_plan
from rfc2544.sim import dut as simdut

from helpers_run import profile, start
from schema_check import assert_valid
from test_tester_sim import FAST, make_inventory


def test_burst_sizes_default_and_their_bad_values_are_refused_with_the_field_named():
    assert profiles.validate({}).model.bursty.burst_sizes == [16, 64, 256, 1024]
    assert profiles.validate({"bursty": {"burst_sizes": [256, 32]}}).model.bursty.burst_sizes == [32, 256]
    for bad, message in (([1], "1 is not a burst size"), ([65537], "65537 is not a burst size"),
                         ([2.5], "2.5 is not"), ([True], "True is not"), ([], "non-empty list"),
                         ([64, 64], "has duplicates")):
        with pytest.raises(BadInput) as exc:
            profiles.validate({"bursty": {"burst_sizes": bad}}, "my.yml")
        assert str(exc.value).startswith("my.yml: bursty.burst_sizes: ") and message in str(exc.value)


def test_bursty_steps_follow_back_to_back_in_the_plan_numeric_sizes_only():
    prof = profile(tests=["bursty", "throughput"], frame_sizes=[64, "imix"])
    assert [(s["test"], s["frame_size"], s["unit"]) for s in build_plan(prof)] == [
        ("throughput", 64, "throughput/ipv4/64"), ("throughput", 0, "throughput/ipv4/0"),
        ("bursty", 64, "bursty/ipv4/64")]


def test_the_device_writes_burst_frames_only_where_the_generator_has_it():
    def cfg(n):
        return pktgen.DeviceConfig(device="tx0", count=10, dst_mac="02:00:00:00:00:01", src_ip="198.18.0.1",
                                   dst_ip="198.19.0.1", pkt_size=60, frames_per_burst=n)
    assert "burst_frames 64" in cfg(64).commands() and "burst_frames 1" in cfg(1).commands()
    assert not [c for c in cfg(None).commands() if c.startswith("burst_frames")]
    # the module shows the line only above 1: expected absent ("") at 1
    assert pktgen.expected_params(cfg(64))["burst_frames"] == "64"
    assert pktgen.expected_params(cfg(1))["burst_frames"] == ""
    assert "burst_frames" not in pktgen.expected_params(cfg(None))
    with pytest.raises(BadInput, match="frames per burst must be between 1 and 65536"):
        cfg(65537).commands()


def test_a_bursty_spec_is_refused_for_a_generator_without_burst_frames(tmp_path):
    spec = TrialSpec(frame_size=64, load_fps=1000, duration_s=1, frames_per_burst=16)
    with pytest.raises(BadInput, match="module 1.2 or later"):
        device_configs([], spec, [], [], extended=False)


@pytest.mark.parametrize("version,pgrx,paced,watches", [
    ("1.2", True, True, 4), ("1.1", True, False, 4), ("1.0", True, False, 1), (None, True, False, 1),
    ("1.2", False, False, 1), ("x.y", True, False, 1)])
def test_the_module_version_says_what_the_tester_can_do(version, pgrx, paced, watches):
    probe = HostProbe(pgrx=pgrx, module_version=version)
    assert detection.module_at_least(probe, detection.PACED_BURSTS_MODULE) is paced
    assert detection.max_rx_devices(probe) == watches


def test_an_ssh_trial_writes_burst_frames_verifies_it_and_goes_back_to_one(tmp_path):
    kernel = SimKernel(module_version="1.2")
    tester = SSHTester(make_inventory(tmp_path), waits=FAST, sessions={"tester": SimSession("tester", kernel)},
                       clock=kernel.clock)
    assert tester.paced_bursts
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2, frames_per_burst=32))
    assert r.tx_frames == r.rx_frames == 400, r.notes
    writes = kernel.devices["tx0"].writes
    assert "burst_frames 32" in writes
    before = len(writes)
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2))
    assert r.tx_frames == r.rx_frames == 400, r.notes
    assert writes[before:].count("burst_frames 1") == 1
    assert tester.engine.control_counts["mismatches"] == 0 and tester.engine.control_counts["unverifiable"] == 0


def test_an_older_module_is_never_sent_burst_frames(tmp_path):
    kernel = SimKernel()            # module 1.1
    tester = SSHTester(make_inventory(tmp_path), waits=FAST, sessions={"tester": SimSession("tester", kernel)},
                       clock=kernel.clock)
    assert not tester.paced_bursts
    tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2))
    assert not [w for w in kernel.devices["tx0"].writes if w.startswith("burst_frames")]
    with pytest.raises(BadInput, match="module 1.2"):
        tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2, frames_per_burst=8))


def test_the_simulated_bucket_loses_what_a_burst_holds_beyond_it(tmp_path):
    kernel = SimKernel(module_version="1.2", dut_bucket_frames=20)
    tester = SSHTester(make_inventory(tmp_path), waits=FAST, sessions={"tester": SimSession("tester", kernel)},
                       clock=kernel.clock)
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2, frames_per_burst=25))
    # 400 frames: 16 bursts of 25, each 5 beyond the bucket
    assert (r.tx_frames, r.rx_frames, r.lost_frames) == (400, 320, 80), r.notes


BUCKET = 200
CAPACITY = 50_000.0


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    sim = simdut.SimDUT(capacity_fps=CAPACITY, bucket_frames=BUCKET)
    prof = profile(tests=["throughput", "bursty"], frame_sizes=[64], link_mbps=1000.0,
                   bursty={"burst_sizes": [64, 128, 256, 512]},
                   search={"max_load_fps": 100_000.0, "method": "bisection", "pdr_loss_pct": None})
    runner, results = start(tmp_path_factory.mktemp("bursty") / "run", sim, prof)
    runner.run()
    return results


def test_bursts_up_to_the_bucket_pass_at_the_capacity_and_larger_ones_never(run):
    data = run.data
    (entry,) = data["bursty"]
    rows = {b["frames_per_burst"]: b for b in entry["bursts"]}
    assert entry["largest_passing_burst"] == 128
    for size in (64, 128):
        # the same search as the steady throughput's: the same NDR, within its resolution of the capacity
        assert rows[size]["ndr_fps"] == pytest.approx(entry["throughput_fps"])
        assert CAPACITY * (1 - entry["resolution_pct"] / 100 * 2) <= rows[size]["ndr_fps"] <= CAPACITY
        assert rows[size]["bursts_per_s"] == pytest.approx(rows[size]["ndr_fps"] / size)
        assert rows[size]["burst_interval_us"] == pytest.approx(size / rows[size]["ndr_fps"] * 1e6)
        assert rows[size]["pct_of_throughput"] == pytest.approx(100)
    for size in (256, 512):
        assert rows[size]["ndr_fps"] is None and rows[size]["fps"] == 0.0
    # every bursty trial says its burst size; steady trials say none
    sizes = {t["spec"].get("frames_per_burst") for t in data["trials"] if t["unit"].startswith("bursty/")}
    assert sizes == {64, 128, 256, 512}
    assert all("frames_per_burst" not in t["spec"] for t in data["trials"] if t["unit"].startswith("throughput/"))
    assert any("bursts of 256, 512 frames lost frames" in d.get("text", d.get("message", str(d)))
               for d in data["deviations"] + data.get("notes", [])) or \
        "bursts of 256, 512 frames" in json.dumps(data)
    assert data["schema_minor"] >= 4
    assert_valid(json.loads(run.path.read_text()), "bursty run")


def test_a_tester_without_paced_bursts_skips_the_step_and_says_why(tmp_path):
    sim = simdut.SimDUT(capacity_fps=CAPACITY)
    sim.paced_bursts = False
    prof = profile(tests=["bursty"], frame_sizes=[64], link_mbps=1000.0, bursty={"burst_sizes": [64]},
                   search={"max_load_fps": 100_000.0, "method": "bisection", "pdr_loss_pct": None})
    runner, results = start(tmp_path / "run", sim, prof)
    runner.run()
    (step,) = results.data["plan"]
    assert step["state"] == "skipped" and "module 1.2" in step.get("reason", json.dumps(step))
    assert results.data["bursty"] == [] and sim.trials_run == 0
