"""One-way latency's clock error (issue 46 item 4): the clock daemons'
read-outs parsed (texts as chronyc, ntpq and pmc print them), the bound of
a run whose tx and rx ports sit on two hosts, and what the results file and
the report say. Hosts are simulated: a SimDUT with a clock reader."""
import json

import pytest

from rfc2544.drivers.clock import ClockState, latency_clock, pair_error, parse_clock, start_reads
from rfc2544.reports.render import render_html
from rfc2544.results.load import load_results
from rfc2544.sim import dut as simdut

from helpers_run import profile, start
from schema_check import assert_valid

CHRONY_SYNCED = ("@chrony\n50484330,PHC0,1,1709727533.139866748,0.000004315,-0.000003372,0.000002759,1.274,"
                 "-0.005,0.161,0.000200000,0.000029493,8.0,Normal\n@ntpd\n@ptp4l\n")
CHRONY_UNSYNCED = "@chrony\n00000000,,0,0.000000000,0.000000000,0.0,0.0,0.0,0.0,0.0,1.0,1.0,0.0,Not synchronised\n"
NTPD = "@chrony\n@ntpd\nleap=00, offset=-0.250, rootdisp=1.500,\nrootdelay=0.500\n@ptp4l\n"
PTP = ("@chrony\n@ntpd\n@ptp4l\nsending: GET TIME_STATUS_NP\n\t52540a.fffe.123456-0 seq 0 RESPONSE MANAGEMENT "
       "TIME_STATUS_NP\n\t\tmaster_offset              -38\n\t\tingress_time               1700000000\n"
       "\t\tgmPresent                  true\n")


def test_chrony_bound_is_offset_plus_dispersion_plus_half_the_delay():
    s = parse_clock(CHRONY_SYNCED)
    assert s.source == "chrony"
    assert s.error_ns == pytest.approx((4.315e-6 + 29.493e-6 + 200e-6 / 2) * 1e9)
    assert s.text == "± 134 µs (chrony)"
    unsynced = parse_clock(CHRONY_UNSYNCED)
    assert unsynced.error_ns is None and unsynced.text == "unbounded (chrony: not synchronised)"


def test_ntpd_and_ptp4l_and_no_daemon():
    n = parse_clock(NTPD)
    assert n.source == "ntpd" and n.error_ns == pytest.approx((0.25 + 1.5 + 0.25) * 1e6)
    assert parse_clock(NTPD.replace("leap=00", "leap=11")).error_ns is None
    p = parse_clock(PTP)
    assert p.source == "ptp4l" and p.error_ns == 38 and "phc2sys" in p.note
    assert parse_clock(PTP.replace("true", "false")).error_ns is None
    none = parse_clock("@chrony\n@ntpd\n@ptp4l\n")
    assert none.source == "none" and none.error_ns is None and "no synchronisation daemon" in none.text
    # chrony and ptp4l both answering: chrony bounds the system clock the
    # receiver stamps with, ptp4l only the NIC's own clock
    both = CHRONY_SYNCED.replace("@ptp4l\n", "@ptp4l\n" + PTP.split("@ptp4l\n")[1])
    assert parse_clock(both).source == "chrony"
    assert parse_clock(CHRONY_UNSYNCED + "@ptp4l\n" + PTP.split("@ptp4l\n")[1]).source == "ptp4l"


def test_two_hosts_add_their_bounds_and_the_worse_read_counts():
    good, loose, none = ClockState("chrony", 100_000.0), ClockState("chrony", 900_000.0), ClockState("none", None)
    assert pair_error([good, good]) == 200_000 and pair_error([good, none]) is None
    shared = latency_clock([("tester", "tester")], {})
    assert shared["shared"] and shared["error_ns"] == 0 and "one host clock" in shared["text"]
    c = latency_clock([("a", "b")], {"a": good, "b": good}, {"a": good, "b": loose})
    assert not c["shared"] and c["error_ns"] == 1_000_000 and c["text"] == "± 1 ms (chrony)"
    assert c["hosts"]["b"]["before"]["error_ns"] == 100_000 and c["hosts"]["b"]["after"]["error_ns"] == 900_000
    # a start read that missed a host: the end read alone bounds the pair
    assert latency_clock([("a", "b")], {"a": good}, {"a": good, "b": loose})["error_ns"] == 1_000_000
    u = latency_clock([("a", "b")], {"a": good, "b": none})
    assert u["error_ns"] is None and u["text"].startswith("unbounded: clocks not synchronised")


class TwoHostSim(simdut.SimDUT):
    """The simulated tester with its streams' ends on two hosts: a clock
    reader that answers as chrony on both (the bound grows by the end)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.reads = 0

    def latency_clock(self, before=None):
        self.reads += 1
        now = {"tx": ClockState("chrony", 200_000.0 * self.reads), "rx": ClockState("chrony", 300_000.0)}
        if before is None:
            return latency_clock([("tx", "rx")], now)
        return latency_clock([("tx", "rx")], start_reads(before), now)


def test_a_two_host_run_states_its_clock_error_and_marks_figures_within_it(tmp_path):
    from rfc2544.engine.assemble import conditions_for
    from rfc2544.config import inventory as inventory_mod
    sim = TwoHostSim(capacity_fps=400_000, latency_ns=20_000.0)
    prof = profile(tests=["throughput", "latency"], frame_sizes=[64], latency={"repetitions": 1},
                   search={"max_load_fps": 600_000.0, "pdr_loss_pct": None})
    inv = inventory_mod.Inventory.__new__(inventory_mod.Inventory)
    inv.path, inv.streams = str(tmp_path / "inventory.yml"), []
    conditions = conditions_for(sim, inv, prof, None, {})
    assert conditions["latency_clock"]["error_ns"] == 500_000
    runner, results = start(tmp_path / "run", sim, prof)
    results.data["conditions"].update(conditions)
    runner.run()
    data = json.loads(results.path.read_text())
    assert_valid(data, "two-host clock run")
    clock = data["conditions"]["latency_clock"]
    # re-read at the end: the sender's bound grew to 0.4 ms, so 0.7 ms counts
    assert sim.reads == 2 and clock["error_ns"] == 700_000 and clock["text"] == "± 700 µs (chrony)"
    page = render_html(load_results(results.path))
    assert "Clock error: <strong>± 700 µs (chrony)</strong>" in page
    # the simulated DUT's latency (about 20 µs) lies within that error: marked
    assert page.count("&dagger;") >= 3
