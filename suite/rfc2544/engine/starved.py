"""When the tester's own packet path, not the DUT, lost a trial's frames.

A failed trial of a steady rate is tester-starved where, during it, a
tester host's own packet path dropped frames (drivers/host_path.py: the
softnet input backlog, the receiving NIC): those frames never reached the
receiver through no fault of the DUT, so the trial says nothing of it.
Generators that take the CPUs of that path (--generator-cpus all, or a
host with none to spare: drivers/placement.py) are the usual cause. Like
a tester-bursty trial (pacing.py) it is retried and never taken as a pass
or as the DUT's loss; a search whose upper bound stays starved ends
flagged tester-bound.

The softnet time_squeeze count is recorded beside the drops but does not
name a trial alone: a squeezed softirq that still delivered every frame
lost nothing on the tester.
"""
from rfc2544.drivers.host_path import dropped_here
from rfc2544.engine.pacing import may_be_bursty


def starved_reason(result):
    """Why `result` (a TrialResult) is tester-starved, or None."""
    if not may_be_bursty(result) or not result.host_path:
        return None
    hosts = {h: c for h, c in result.host_path.items() if dropped_here(c) > 0}
    if not hosts:
        return None
    where = "; ".join(f"{h}: {c.get('dropped', 0)} in the softnet backlog, {c.get('nic_drops', 0)} at its "
                      f"receiving NICs, receive softirq squeezed {c.get('squeezed', 0)} times"
                      for h, c in hosts.items())
    own = sum(dropped_here(c) for c in hosts.values())
    return (f"tester-starved: the tester's own packet path dropped {own} frames during the trial ({where}); "
            f"of the {result.lost_frames} frames lost, those are not the DUT's: the trial is retried and "
            f"not counted as DUT loss")
