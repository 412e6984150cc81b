"""Capping the lab DUT's forwarding rate with tc (a device of known capacity).

A `police pkts_rate` action on a matchall filter on the DUT's egress port
(toward the rx port) drops what exceeds the rate. Policing works per packet
in the kernel, so it holds under TCG too; a shaper queue would depend on timer
precision.
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


def apply(lab, pps, burst=None):
    cmds = commands(pps, burst)
    host = lab.connect("dut")
    try:
        host.run(lab.dut_cmd(cmds[0]))
        # replace an earlier cap; absent is fine
        host.run(lab.dut_cmd(f"tc filter del dev {DUT_EGRESS} egress pref {CAP_PREF}"), check=False)
        host.run(lab.dut_cmd(cmds[1]))
    finally:
        host.close()
    return pps


def remove(lab):
    host = lab.connect("dut")
    try:
        host.run(lab.dut_cmd(f"tc qdisc del dev {DUT_EGRESS} clsact"), check=False)
    finally:
        host.close()
