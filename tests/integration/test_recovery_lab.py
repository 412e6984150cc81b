"""RFC 2544 26.5 (system recovery) and 26.6 (reset) end to end in the QEMU
lab, against DUTs whose answer is known:

- recovery: a queue of known length served faster than the capacity behind
  it (rfc2544.lab.queue); the recovery time must match the queue's drain time
  within one sampling interval;
- reset: the lab inventory's rfc2544_reset_cmd stops forwarding for a fixed
  time and logs the outage it made (rfc2544.lab.dut_reset); the reset time must
  match that outage.

Both seed the throughput (NDR) with the DUT's known capacity instead of
searching for it: the search is tested in test_run_ndr_lab.py and would cost
minutes of emulated time here.
"""
import pytest
import yaml

from rfc2544.config import inventory as inventory_mod
from rfc2544.config import profiles
from rfc2544.engine.assemble import make_dut_reset
from rfc2544.cli.display import Display
from rfc2544.lab import dut_reset, queue
from rfc2544.procedures.throughput import TESTER_STALL_S
from rfc2544.results.file import Results, unit_key
from rfc2544.procedures.runner import Runner, build_plan

pytestmark = pytest.mark.lab

FRAME = 64
RESET_LOAD_FPS = 2000        # low enough for the loaded TCG tester to keep up
# recovery DUT: capacity C (police), queue of LIMIT packets served at Q
CAPACITY_PPS = 1500
CAPACITY_BURST = 150        # 0.1 s: the queue's output comes in bunches under TCG
QUEUE_PPS = 1545            # < 110 % of C: the overload (1650) still fills the queue
QUEUE_LIMIT = 795           # full after ~7.6 s of overload; drains in 1.0 s at 50 %
# The tbf's bucket holds 386 packets (0.25 s at QUEUE_PPS): its watchdog
# timer fires late under TCG, and a shallow bucket caps the tokens that
# accumulate meanwhile, so the queue would serve slower than QUEUE_PPS
# (measured: 20 packets at 4120 pps served ~3000; 75 at 1545 served ~1310;
# 386 at 1545 sent within 1 % of the schedule). While the queue is
# backlogged the bucket is empty, so its depth does not change the drain
# time; it does lengthen the fill: (LIMIT + BURST) / (1650 - 1545) = 11.2 s,
# within OVERLOAD_S.
QUEUE_BURST = 386
OVERLOAD_S = 14
POLL_S = 0.5                # SSHTester's default sampling interval


def profile(tmp_path, test, section):
    raw = {"name": "lab-recovery", "tests": [test], "frame_sizes": [FRAME], "trial_duration_s": 2,
           "waits": {"route_s": 0, "learning_s": 0.2, "residual_s": 0.5, "settle_s": 0.2},
           "search": {"max_load_fps": 40_000, "initial_duration_s": 1}, test: section}
    path = tmp_path / "profile.yml"
    path.write_text(yaml.safe_dump(raw))
    return profiles.load(str(path))


def known_throughput(fps):
    """A throughput entry for a DUT whose NDR is known, not searched."""
    return {"frame_size": FRAME, "fps": fps, "min_load_fps": fps, "mbps": None, "line_mbps": None,
            "pct_of_max": None, "theoretical_max_fps": None, "max_load_fps": fps,
            "max_load_source": "the lab DUT's known capacity", "tester_bound": False,
            "tester_ceiling_fps": None, "search": "mlr", "ndr_fps": fps, "ndr_upper_fps": None,
            "pdr_fps": None, "pdr_upper_fps": None, "pdr_loss_ratio": None, "resolution_pct": 0,
            "trials": 0, "traffic_s": 0, "saved_traffic_s": 0, "at_max_load": False}


def run(lab, tmp_path, prof, known_ndr_fps, dut_reset=None):
    """`prof` through the Runner with the throughput seeded as `known_ndr_fps`."""
    from rfc2544.engine.tester import SSHTester
    inv = inventory_mod.load(lab.inventory_path)
    tester = SSHTester(inv, waits={k: prof["waits"][k] for k in ("learning_s", "residual_s", "settle_s")},
                       poll_interval_s=POLL_S)
    results = Results.create(tmp_path / "out", prof, build_plan(prof), profiles.deviations(prof), {})
    results.set_summary("throughput", unit_key("throughput", 4, FRAME), known_throughput(known_ndr_fps))
    try:
        Runner(tester, prof, results, Display(quiet=True), dut_reset=dut_reset).run()
    finally:
        tester.close()
    return results.data


def shell_on(lab, host_name, command, check=True):
    """`command`'s output on lab host `host_name` ("tester" or "dut")."""
    host = lab.connect(host_name)
    try:
        return host.run(command, check=check)[1]
    finally:
        host.close()


def backlog_drops(lab):
    """Frames the tester VM's kernel dropped from its per-CPU receive backlog
    (/proc/net/softnet_stat, 2nd column, summed over CPUs): the veth pairs
    deliver through it, and it overflows when the emulated vCPU stalls."""
    text = shell_on(lab, "tester", "cat /proc/net/softnet_stat")
    return sum(int(line.split()[1], 16) for line in text.splitlines() if line.strip())


def unrouted(lab):
    """Frames the DUT dropped because forwarding was off (IpInAddrErrors in
    its namespace): what the reset command dropped, counted by the DUT."""
    text = shell_on(lab, "dut", lab.dut_cmd("nstat -az IpInAddrErrors"))
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("IpInAddrErrors")))


@pytest.fixture
def outage_log(lab):
    shell_on(lab, "dut", f"rm -f {dut_reset.OUTAGE_LOG}")
    # Under TCG the reset's SSH login and python3 start stall the vCPU for
    # a second or more; the default backlog (1000 frames) would overflow and
    # add losses that are not the DUT's. Restored afterwards.
    old = shell_on(lab, "tester", "cat /proc/sys/net/core/netdev_max_backlog").strip()
    shell_on(lab, "tester", "echo 50000 > /proc/sys/net/core/netdev_max_backlog")
    yield lab
    shell_on(lab, "tester", f"echo {int(old)} > /proc/sys/net/core/netdev_max_backlog", check=False)
    # forwarding back on whatever happened to the reset command
    shell_on(lab, "dut", lab.dut_cmd(f"sh -c 'echo 1 > /proc/sys/net/ipv4/conf/{dut_reset.RESET_PORT}/forwarding'"),
              check=False)
    shell_on(lab, "dut", f"rm -f {dut_reset.OUTAGE_LOG}", check=False)


def test_reset_time_is_the_outage_the_reset_command_made(outage_log, tmp_path):
    lab = outage_log
    inv = inventory_mod.load(lab.inventory_path)
    assert inv.duts[0].reset_cmd == dut_reset.command(), "the lab inventory gives the reset command"
    # The reset fires over a new SSH login, which takes up to ~10 s on the
    # loaded 2-core host under TCG: the trial is long enough to hold it.
    prof = profile(tmp_path, "reset", {"duration_s": 20, "reset_after_s": 1, "repetitions": 1})
    drops_before, unrouted_before = backlog_drops(lab), unrouted(lab)
    d = run(lab, tmp_path, prof, RESET_LOAD_FPS, dut_reset=make_dut_reset(inv))
    stray, dropped_by_reset = backlog_drops(lab) - drops_before, unrouted(lab) - unrouted_before
    assert [s["state"] for s in d["plan"]] == ["done"], d["plan"]
    r = d["reset"][0]
    outages = [up - down for down, up in dut_reset.parse_outages(shell_on(lab, "dut", f"cat {dut_reset.OUTAGE_LOG}"))]
    t = d["trials"][-1]
    print(f"reset times {r['reset_times_s']} s, outages made {outages} s at {RESET_LOAD_FPS} fps; "
          f"trial sent {t['tx_frames']} lost {t['lost_frames']} achieved {t['achieved_fps']:.0f} fps; "
          f"backlog drops {stray}, dropped by the reset (DUT count) {dropped_by_reset}")
    assert len(outages) == r["repetitions"] == 1
    assert t["lost_frames"] > 0, "nothing lost: the outage fell outside the trial (the reset fired late)"
    assert stray == 0, f"the tester VM dropped {stray} frames itself: the loss is not the reset's alone"
    frame_s = 1 / t["achieved_fps"]
    # Every frame the trial lost is one the DUT dropped while forwarding was
    # off (its own count), so the reported time is the outage the frames saw.
    assert abs(t["lost_frames"] - dropped_by_reset) <= 1, (t["lost_frames"], dropped_by_reset)
    assert r["reset_times_s"][0] == pytest.approx(dropped_by_reset / t["achieved_fps"], abs=frame_s)
    # The generator sent every frame the trial asked for, so the loss is not
    # a short transmit, and it sent no faster than asked: the rate the time
    # is computed with is the rate the frames went out at.
    assert t["tx_frames"] == t["intended_frames"], (t["tx_frames"], t["intended_frames"])
    assert 0 < t["achieved_fps"] <= RESET_LOAD_FPS * 1.01, t["achieved_fps"]
    # Not asserted: the outage timed inside the command (between its two
    # writes, printed above). The frames reach the DUT's forwarding through
    # the VM's receive backlog, and a vCPU stall at either edge moves frames
    # across it; how long a stall lasts is up to the host's scheduler
    # (measured: 0.527 s for 0.531 s and 0.761 s for 0.520 s on a quiet
    # host, 1.059 s for 0.532 s beside one CPU hog), so a bound on it would
    # be a timing test of the host, not of the suite. The DUT's own drop
    # count above is the outage as the frames saw it.


@pytest.fixture
def queued(lab):
    """The two-stage DUT, and our generator and receiver (pgrx: sequence
    numbers, which the recovery estimate needs) loaded in the tester VM."""
    from kmod_helpers import MODULE, build_ko_for
    from rfc2544.drivers.ssh import put_file
    ko = build_ko_for(lab)
    remote = "/root/rfc2544_pktgen_recovery.ko"
    host = lab.connect("tester")
    try:
        put_file(host, ko, remote)
        host.run(f"echo stop > /proc/net/pktgen/pgctrl 2>/dev/null; rmmod pktgen 2>/dev/null; "
                 f"lsmod | grep -q '^{MODULE} ' && rmmod {MODULE}; insmod {remote}", check=True)
        queue.apply(lab, CAPACITY_PPS, QUEUE_PPS, QUEUE_LIMIT, burst=QUEUE_BURST,
                capacity_burst=CAPACITY_BURST)
        yield lab
    finally:
        queue.remove(lab)
        host.run(f"echo stop > /proc/net/pktgen/pgctrl 2>/dev/null; rmmod {MODULE}; rm -f {remote}", check=False)
        host.close()


def run_until_the_tester_kept_its_pace(lab, tmp_path, prof, known_ndr_fps, attempts=3):
    """run() again (up to `attempts` in all) while the tester did not send
    what the procedure planned: the step skipped because it could not send
    the overload (CI22, CI25), or a trial stopped sending for
    TESTER_STALL_S or more, the product's own stall threshold (CI26: a
    368 ms gap, the rate change 1.1 s late, then a catch-up burst into the
    queue; recovery 2.16 s against a 1.0 s drain). Both happen when the
    loaded CI host starves the tester VM, and neither says anything about
    the DUT's recovery, which this test is about."""
    for attempt in range(attempts):
        where = tmp_path / f"attempt{attempt}"
        where.mkdir()
        d = run(lab, where, prof, known_ndr_fps)
        skipped = any("could not send the overload" in (s.get("note") or "") for s in d["plan"])
        longest_gap_ns = max(((t.get("spacing") or {}).get("max_gap_ns") or 0 for t in d["trials"]), default=0)
        if not skipped and longest_gap_ns < TESTER_STALL_S * 1e9:
            break
        print(f"attempt {attempt}: tester off its pace (skipped {skipped}, longest gap {longest_gap_ns / 1e6:.0f} ms)")
    return d


def test_recovery_time_is_the_queue_drain_time(queued, tmp_path):
    prof = profile(tmp_path, "system_recovery", {"overload_pct": 110, "recovery_pct": 50, "overload_s": OVERLOAD_S,
                                                 "recovery_s": 3, "repetitions": 1})
    d = run_until_the_tester_kept_its_pace(queued, tmp_path, prof, CAPACITY_PPS)
    # (a skipped step's note says why: CI22 skipped it once, reason cut from the repr)
    assert [s["state"] for s in d["plan"]] == ["done"], [(s["state"], s.get("note")) for s in d["plan"]]
    r = d["system_recovery"][0]
    expected = queue.drain_time_s(QUEUE_LIMIT, QUEUE_PPS, r["recovery_fps"])
    t = d["trials"][-1]
    print(f"trial: sent {t['tx_frames']} received {t['rx_frames']} in {t['traffic_s']:.1f} s; {t['notes']}")
    print(shell_on(queued, "dut", queued.dut_cmd(f"tc -s qdisc show dev {queue.QUEUE_DEV}")))
    print(shell_on(queued, "dut", queued.dut_cmd("tc -s filter show dev dut1 egress")))
    print(f"recovery time {r['recovery_time_s']:.3f} s (bounds {r['recovery_time_bounds_s']}), "
          f"drain time {expected:.3f} s")
    # Within one sampling interval (the procedure's resolution): the one the
    # estimate actually had, i.e. its bounds' width, at least POLL_S. Under
    # TCG the samples come further apart than POLL_S (bounds 0.56, 1.04 and
    # 1.01 s wide in the lab), and the midpoint scattered by up to 0.45 s.
    low, high = r["recovery_time_bounds_s"][0]
    interval = max(POLL_S, high - low)
    assert abs(r["recovery_time_s"] - expected) <= interval, (r, expected, interval)
