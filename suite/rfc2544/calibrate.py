"""`calibrate`: the tester's own sending ceiling, without a DUT forwarding.

Decision: every tx port of the inventory sends as fast as the generator can
(pktgen `delay 0`) for `duration` seconds per frame size, all ports at once
as in a trial, with the frames addressed to the tx port's OWN MAC. The DUT
port receiving them drops them at layer 2 (a router ignores frames not for
its MAC; a learning switch does not send a frame back out of the port it
came in on), so nothing is forwarded and no cabling changes: what is
measured is the generator host's ceiling, summed over streams. The
receiver's cost is not included (pgrx counts at the netfilter hook; on the
QEMU lab it shares the same CPUs as the DUT namespace). A result near this
ceiling is the tester's limit, not the DUT's.
"""
from rfc2544.errors import BadInput


def calibrate(inventory, frame_sizes, duration=2.0, *, tester=None, ipv6=False, progress=None):
    """Return {frame_size: frames/s} the tester sends at most (all streams).

    `inventory`: a loaded rfc2544.inventory.Inventory. `frame_sizes`:
    Ethernet frame sizes with FCS (0 = IMIX). `tester`: an SSHTester to reuse
    (default: a new one, closed at the end). `progress(frame_size, fps)` is
    called after each size."""
    from rfc2544.tester import SSHTester

    try:
        duration = float(duration)
    except (TypeError, ValueError):
        raise BadInput(f"calibration duration must be a number of seconds, not {duration!r}")
    if not 0.1 <= duration <= 600:
        raise BadInput(f"calibration duration must be within 0.1..600 s, not {duration}")
    sizes = list(frame_sizes)
    if not sizes:
        raise BadInput("calibration needs at least one frame size")
    own = tester is None
    tester = tester or SSHTester(inventory, waits={"learning_frames": 0})
    try:
        out = {}
        for size in sizes:
            frames, elapsed = tester.send_at_max_rate(size, duration, ipv6=ipv6)
            out[size] = frames / elapsed if elapsed > 0 else 0.0
            if progress is not None:
                progress(size, out[size])
        return out
    finally:
        if own:
            tester.close()
