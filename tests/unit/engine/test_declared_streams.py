"""Declared streams (issue 31 item 2): the controller tells pgrx (format v5,
module 1.2) the trial's streams before traffic; frames of any other stream
are foreign, counted apart and never a stream's loss. From module 1.3
(format v6) each stream's frames carry its stream id, and streams are
declared and counted by it. The SSH tester runs
against the simulated host (pktgen_sim.py, simulated), whose pgrx answers in
the real text format; the module itself is checked in the lab
(test_kmod_rx.py)."""
import pytest

from pktgen_sim import STRAY_SOURCE, SimKernel
from sim_session import SimSession
from rfc2544.drivers import pgrx
from rfc2544.engine.tester import SSHTester
from rfc2544.errors import BadInput
from rfc2544.model import TrialSpec

from test_tester_sim import FAST, make_inventory


def ssh_tester(kernel, tmp_path):
    return SSHTester(make_inventory(tmp_path), waits=FAST, sessions={"tester": SimSession("tester", kernel)},
                     clock=kernel.clock)


def declarations(kernel):
    return [cmd for path, cmd in kernel.log if path.endswith("/pgrx") and cmd.startswith("streams ")]


def test_the_declaration_is_one_write_checked_and_listed():
    # duplicates once, IPv6 in the compressed form pgrx prints
    assert pgrx.declare_batch(["198.18.0.1", "2001:2:0:0::1", "198.18.0.1"]).ops == [
        ("write", pgrx.PGRX, "streams 198.18.0.1,2001:2::1")]
    assert pgrx.declare_batch([]).ops == [("write", pgrx.PGRX, "streams any")]
    with pytest.raises(BadInput, match="not an IPv4 address"):
        pgrx.declare_batch(["198.18.0.1; reboot"])
    with pytest.raises(ValueError, match="at most 64"):
        pgrx.declare_batch([f"198.18.0.{i}" for i in range(1, 66)])


def test_a_trial_declares_its_streams_once_and_foreign_frames_are_no_loss(tmp_path):
    kernel = SimKernel(pgrx_version=5, stray_frames=57)
    tester = ssh_tester(kernel, tmp_path)
    for _ in range(2):
        r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2))
        assert (r.tx_frames, r.rx_frames, r.lost_frames, r.foreign_frames) == (400, 400, 0, 57), r.notes
        assert any("57 test frames of streams the trial does not declare (foreign" in n for n in r.notes), \
            r.notes
        assert not any("unknown streams" in n for n in r.notes)
    # declared once: the second trial's configure writes no declaration
    assert declarations(kernel) == ["streams 198.18.0.1"]
    # another IP version: the streams' IPv6 sources are declared instead
    r = tester.run_trial(TrialSpec(frame_size=128, load_fps=2000, duration_s=0.2, ipv6=True))
    assert r.lost_frames == 0 and declarations(kernel)[-1].startswith("streams 2001:")


def test_a_receiver_enabled_anew_is_declared_again(tmp_path):
    kernel = SimKernel(pgrx_version=5)
    tester = ssh_tester(kernel, tmp_path)
    tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2))
    kernel.rx_declared = []         # as after an `rx` behind the tester's back: pgrx forgot them
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2))
    assert r.lost_frames == 0
    assert declarations(kernel) == ["streams 198.18.0.1"] * 2


def test_before_format_v5_nothing_is_declared_and_strangers_are_named(tmp_path):
    kernel = SimKernel(pgrx_version=4, stray_frames=57)
    r = ssh_tester(kernel, tmp_path).run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2))
    assert (r.rx_frames, r.lost_frames) == (400, 0)
    assert any(f"unknown streams {STRAY_SOURCE}" in n for n in r.notes), r.notes
    assert declarations(kernel) == []


def test_declared_streams_listed_empty_are_still_zero():
    text = ("pgrx version=5 enabled=1 dev=rx0 ifindex=5 statistics=basic action=drop pkt_size=60 streams=1 "
            "streams_dropped=0 declared=1 foreign=0\n"
            "cpu id=0 packets=0 bytes=0 first_ns=0 last_ns=0\n"
            "total id=all packets=0 bytes=0 first_ns=0 last_ns=0\n"
            "stream src=198.18.0.1 packets=0 bytes=0 seq_max=0 lost=0 ooo=0 dup=0 old=0\n"
            "invalid bad_len=0 bad_csum=0 bad_ts=0 seq_jump=0 wrong_size=0\nend\n")
    assert pgrx.parse(text).is_zero
    assert not pgrx.parse(text.replace("foreign=0", "foreign=3")).is_zero


def test_stream_ids_declare_and_count_streams_by_id():
    assert pgrx.declare_batch(["sid:2", "sid:1", "sid:2"]).ops == [("write", pgrx.PGRX, "streams sid:2,sid:1")]
    for bad in ("sid:0", "sid:65536", "sid:1x", "sid:"):
        with pytest.raises((ValueError, BadInput)):
            pgrx.declare_batch([bad])
    text = ("pgrx version=6 enabled=1 dev=rx0 ifindex=5 statistics=basic action=drop pkt_size=60 streams=2 "
            "streams_dropped=0 declared=1 foreign=0\n"
            "cpu id=0 packets=7 bytes=420 first_ns=0 last_ns=0\n"
            "total id=all packets=7 bytes=420 first_ns=0 last_ns=0\n"
            "stream sid=7 packets=5 bytes=300 seq_max=5 lost=0 ooo=0 dup=0 old=0\n"
            "stream src=198.18.0.1 packets=2 bytes=120 seq_max=2 lost=0 ooo=0 dup=0 old=0\n"
            "invalid bad_len=0 bad_csum=0 bad_ts=0 seq_jump=0 wrong_size=0\nend\n")
    state = pgrx.parse(text)
    assert (state.stream("sid:7").packets, state.stream("198.18.0.1").packets) == (5, 2)
    assert state.stream("sid:1") is None
    for bad in (text.replace("sid=7", "sid=0"), text.replace("sid=7", "sid=65536"),
                text.replace("version=6", "version=5")):       # v5 has no stream ids
        with pytest.raises(pgrx.PgrxFormatError):
            pgrx.parse(bad)


def test_with_module_1_3_every_stream_carries_its_id(tmp_path):
    """Simulated host with pgrx format v6: the generator writes `stream_id 1`,
    the trial declares `sid:1`, and a stray frame from the stream's own
    source but without its id is foreign."""
    kernel = SimKernel(pgrx_version=6, stray_frames=57)
    tester = ssh_tester(kernel, tmp_path)
    r = tester.run_trial(TrialSpec(frame_size=64, load_fps=2000, duration_s=0.2))
    assert (r.tx_frames, r.rx_frames, r.lost_frames) == (400, 400, 0), r.notes
    assert declarations(kernel) == ["streams sid:1"]
    assert any(cmd == "stream_id 1" for path, cmd in kernel.log if path.endswith("/tx0")), kernel.log[-30:]
    assert any("57 test frames of streams the trial does not declare" in n for n in r.notes), r.notes
    # the IP version changes nothing: the stream keeps its id
    r = tester.run_trial(TrialSpec(frame_size=128, load_fps=2000, duration_s=0.2, ipv6=True))
    assert r.lost_frames == 0 and declarations(kernel) == ["streams sid:1"]
