"""Capping the lab DUT's forwarding rate with tc (a device of known capacity).

A `police pkts_rate` action on a matchall filter on the DUT's egress port
(toward the rx port) drops what exceeds the rate. Policing works per packet
in the kernel, so it holds under TCG too; a shaper queue would depend on timer
precision.

`shape` is the buffering DUT instead: a token bucket shaper (tbf) whose
FIFO holds `queue_s` of frames, which absorbs an overload as a router's
deep buffer does (its rate holds on average; single frames wait for the
shaper's timer, so latency is what it measures, not the rate).
"""
from rfc2544.errors import BadInput
from rfc2544.lab.topology import DUT_EGRESS

CAP_PREF = 49152


def _check(pps, burst):
    if not isinstance(pps, int) or isinstance(pps, bool) or pps <= 0 or pps > 100_000_000:
        raise BadInput(f"DUT cap must be a whole number of packets/s in 1..100000000, not {pps!r}")
    if burst is None:
        burst = max(pps // 100, 10)
    if not isinstance(burst, int) or burst <= 0:
        raise BadInput(f"DUT cap burst must be a positive whole number, not {burst!r}")
    return pps, burst


def commands(pps, burst):
    pps, burst = _check(pps, burst)
    return [
        f"tc qdisc replace dev {DUT_EGRESS} clsact",
        f"tc filter add dev {DUT_EGRESS} egress pref {CAP_PREF} matchall "
        f"action police pkts_rate {pps} pkts_burst {burst} conform-exceed drop/pipe",
    ]


def _on_dut(lab, *commands):
    """Run (command, check) pairs in the DUT's namespace, in order."""
    host = lab.connect("dut")
    try:
        for command, check in commands:
            host.run(lab.dut_cmd(command), check=check)
    finally:
        host.close()


def apply(lab, pps, burst=None):
    cmds = commands(pps, burst)
    # replace an earlier cap; absent is fine
    _on_dut(lab, (cmds[0], True), (f"tc filter del dev {DUT_EGRESS} egress pref {CAP_PREF}", False),
            (cmds[1], True))
    return pps


def remove(lab):
    _on_dut(lab, (f"tc qdisc del dev {DUT_EGRESS} clsact", False))


# The shaper's bucket, in seconds of frames at its rate. Under TCG the
# DUT's softirq and the tester's kthread both stop for tens of ms when the
# host runs something else; tbf then forwards the time it missed from its
# bucket. A bucket of a few frames lost that time for good: the shaped rate
# itself fell, by how busy the host was, and a CI run on a loaded host found
# the rate within the latency bound 6 % below it. 100 ms adds 0.1 s of
# frames to what a trial's excess can hide (2 % of a 5 s trial).
SHAPE_BUCKET_S = 0.1


def shape_commands(pps, frame_len, queue_s, bucket_s=SHAPE_BUCKET_S):
    """tbf at `pps` frames of `frame_len` bytes (as the qdisc counts them:
    without FCS) per second, its FIFO `queue_s` seconds of them deep, its
    bucket `bucket_s` seconds of them."""
    for name, value in (("pps", pps), ("frame_len", frame_len)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= 100_000_000:
            raise BadInput(f"DUT shaper {name} must be a positive whole number, not {value!r}")
    for name, value in (("queue", queue_s), ("bucket", bucket_s)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 < value <= 60:
            raise BadInput(f"DUT shaper {name} must be 0..60 s, not {value!r}")
    limit = max(int(pps * queue_s) * frame_len, 2 * frame_len)
    burst = max(int(pps * bucket_s) * frame_len, 1600)
    return [f"tc qdisc replace dev {DUT_EGRESS} root tbf rate {pps * frame_len * 8}bit "
            f"burst {burst} limit {limit}"]


def shape(lab, pps, frame_len, queue_s):
    _on_dut(lab, *((c, True) for c in shape_commands(pps, frame_len, queue_s)))
    return pps


def unshape(lab):
    _on_dut(lab, (f"tc qdisc del dev {DUT_EGRESS} root", False))
