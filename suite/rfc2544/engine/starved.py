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

Or where the path held frames back and let them go at once. Where a DUT's
forwarding runs on a tester host (a namespace on the same machine: its
softirqs share the generators' CPUs), the receiver times each frame's
arrival against its departure stamp: a frame that arrived H ns later after
the frame before it than it left was held H ns, and the frames due in that
time then came at once, H x the host's receive rate of them, into the DUT's
buffer or policer (`held_ns`, `held_frames` in the trial's host_path).
Judged as the tester-bursty rule judges the generator's bursts: with P
those frames, A the most of a passed trial of the unit and L the frames
lost, the trial is the path's where
  1. A >= 1 and P > A: a passed trial's path was seen holding frames, and
     this one held more (with none seen, the rule says nothing: any
     trial's path holds a frame or two, and the DUT's loss is the default);
  2. L <= P - A: a buffer or bucket that held A frames at once loses at
     most P - A of P; a loss beyond it is spread over the trial, the DUT's;
  3. the same load's attempt just before was not named so with about the
     same loss (pacing.repeats_loss): a DUT that cannot carry the rate
     loses the same again.
Measured in the lab (police 6,000 fps, bucket 256): holds of 1 to 47
frames, lossy trials among them, so a loss there stays the DUT's.

The softnet time_squeeze count is recorded beside the drops but does not
name a trial alone: a squeezed softirq that still delivered every frame
lost nothing on the tester.
"""
from rfc2544.drivers.host_path import dropped_here
from rfc2544.engine.pacing import may_be_bursty, repeats_loss


def held_frames(result):
    """The most frames the path let go at once in `result`'s trial, or None
    where arrivals were not timed."""
    held = [c["held_frames"] for c in (result.host_path or {}).values() if c.get("held_frames") is not None]
    return max(held) if held else None


def absorbed_holds(trials):
    """The most frames a passed trial of the unit's path let go at once (0: none recorded)."""
    return max((held_frames(t) or 0 for t in trials if t.lost_frames == 0 and not t.tester_limited), default=0)


def starved_reason(result, unit_trials=()):
    """Why `result` (a TrialResult) is tester-starved, or None; `unit_trials`:
    the unit's trials before it, in order (what their paths held and still
    passed, and the attempt just before)."""
    if not may_be_bursty(result) or not result.host_path:
        return None
    hosts = {h: c for h, c in result.host_path.items() if dropped_here(c) > 0}
    if hosts:
        where = "; ".join(f"{h}: {c.get('dropped', 0)} in the softnet backlog, {c.get('nic_drops', 0)} at its "
                          f"receiving NICs, receive softirq squeezed {c.get('squeezed', 0)} times"
                          for h, c in hosts.items())
        own = sum(dropped_here(c) for c in hosts.values())
        return (f"tester-starved: the tester's own packet path dropped {own} frames during the trial ({where}); "
                f"of the {result.lost_frames} frames lost, those are not the DUT's: the trial is retried and "
                f"not counted as DUT loss")
    held, absorbed = held_frames(result), absorbed_holds(unit_trials)
    if held is None or absorbed < 1 or held <= absorbed or result.lost_frames > held - absorbed:
        return None
    if repeats_loss(unit_trials[-1] if unit_trials else None, result, named="tester_starved"):
        return None
    longest = max(c.get("held_ns") or 0 for c in result.host_path.values())
    return (f"tester-starved: the path through the DUT's namespace on the tester held frames back up to "
            f"{longest / 1e6:.1f} ms and let {held} go at once, where passed trials let at most {absorbed}; "
            f"the {result.lost_frames} frames lost are within the {held - absorbed} beyond that: the trial is "
            f"retried and not counted as DUT loss")
