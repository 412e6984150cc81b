"""Two generators of one stream judged as the merged stream their DUT sees
(issue 56, item 3): each generator's departures are recorded by the
module's own departures.c (compiled in user space, driven with departure
times chosen here), read by the suite's parser, merged per stream
(rfc2544.engine.catch_ups) and judged by the tester-bursty rule.

  gen 0 ──┐  5,000 fps each,
          ├──> one stream of 10,000 fps ──> DUT: policer at 10,000 fps
  gen 1 ──┘  offset half a gap

A passed trial of the unit needed a 12-frame bucket. In the failed trial
both generators stall 2 ms at once (a host stall) and each owes 10 frames:
each one's own policer needs 11, the DUT's merged one 21 (a frame-by-frame
policer over the merged departures, pacing.policing, is the reference)."""
import pytest

from rfc2544.drivers import pktgen
from rfc2544.engine import catch_ups, pacing
from rfc2544.model import TrialSpec
from rfc2544.sim import dut as simdut

from test_kmod_departures import departures, harness  # noqa: F401 (fixture)

SHARE_GAP = 200_000          # ns: 5,000 fps each
FRAMES = 1000                # each generator's, 0.2 s


def generator(offset, stalls=()):
    """Departure times of one generator on its own schedule: a frame every
    SHARE_GAP from `offset`, except that at each (at_frame, frames) of
    `stalls` it sends nothing for that many slots, then what it owes
    back to back."""
    events, owed = [], {at: n for at, n in stalls}
    i = 0
    while i < FRAMES:
        t = offset + SHARE_GAP * (i + 1)
        if i in owed:
            late = t + owed[i] * SHARE_GAP
            events += [(late, 1)] * (owed[i] + 1)
            i += owed[i] + 1
            continue
        events.append((t, 1))
        i += 1
    return events


DEVICE = """Params: count 1000  min_pkt_size: 60  max_pkt_size: 60
     frags: 0  delay: 200000  clone_skb: 0  ifname: tx0
Current:
     pkts-sofar: 1000  errors: 0  tx_dropped: 0
{departures}Result: OK: 200000(c200000+d0) usec, 1000 (60byte,0frags)
  5000pps 2Mb/sec (2400000bps) errors: 0  tx_dropped: 0
"""


def device(harness, events):  # noqa: F811
    _, _, out = departures(harness, events, nominal=SHARE_GAP)
    return pktgen.parse_device(DEVICE.format(departures=out))


def reference(gen0, gen1):
    """What a policer at the stream's rate makes of the merged departures, frame by frame."""
    needed, drops = pacing.policing(sorted(t for t, n in gen0 + gen1 for _ in range(n)), SHARE_GAP // 2)
    return needed, dict(map(tuple, drops))


def trial(harness, gen0, gen1, lost):  # noqa: F811
    """A failed trial of the stream at 10,000 fps from two generators."""
    devices = [device(harness, gen0), device(harness, gen1)]
    r = simdut.TrialResult(spec=TrialSpec(frame_size=64, load_fps=10_000, duration_s=0.2),
                           tx_frames=2 * FRAMES, rx_frames=2 * FRAMES - lost, intended_frames=2 * FRAMES,
                           achieved_fps=10_000, traffic_s=0.2, tester_limited=False)
    r.spacing = pacing.spacing_of(devices, [5_000, 5_000], streams=[0, 0])
    return r, devices


PASSED = pacing.DutEvidence(absorbed=30, absorbed_bucket=12)


def test_coinciding_catch_ups_are_named(harness):  # noqa: F811
    """A host stall: both owe 10 frames at the same time. Each generator's
    own policer needs 11 (no more than passed trials did); merged, 21: the
    3 frames lost are within what a 16-frame bucket drops of them."""
    gens = generator(0, [(500, 10)]), generator(SHARE_GAP // 2, [(500, 10)])
    r, devices = trial(harness, *gens, lost=3)
    assert [d.departures["bucket_needed"] for d in devices] == [11, 11]
    assert reference(*gens)[0] == 21 and reference(*gens)[1][16] == 5
    assert r.spacing.bucket_needed == 22                 # the reference's and a frame
    assert dict(map(tuple, r.spacing.bucket_drops))[16] == 6
    reason = pacing.bursty_reason(r, PASSED)
    assert reason is not None and "needs a bucket of 22 frames" in reason
    # judged apart, as before, the same trial was the DUT's loss
    apart = pacing.spacing_of(devices, [5_000, 5_000], streams=[0, 1])
    assert apart.bucket_needed == 11
    r.spacing = apart
    assert pacing.bursty_reason(r, PASSED) is None


def test_catch_ups_at_different_times_do_not_add_up(harness):  # noqa: F811
    """The same stalls 200 slots apart: the merged policer refills between
    them; each needs what it needs alone, and the loss stays the DUT's."""
    gens = generator(0, [(300, 10)]), generator(SHARE_GAP // 2, [(500, 10)])
    r, _ = trial(harness, *gens, lost=3)
    assert r.spacing.bucket_needed == reference(*gens)[0] == 11
    assert pacing.bursty_reason(r, PASSED) is None


@pytest.mark.parametrize("offset, needed", [(2, 19), (5, 16), (8, 13)])
def test_catch_ups_that_overlap_in_part_add_up_in_part(harness, offset, needed):  # noqa: F811
    """The second generator stalls `offset` slots after the first: the
    policer refills while it is silent and the first is back on pace."""
    gens = generator(0, [(500, 10)]), generator(SHARE_GAP // 2, [(500 + offset, 10)])
    r, _ = trial(harness, *gens, lost=3)
    assert reference(*gens)[0] <= r.spacing.bucket_needed <= reference(*gens)[0] + 1 == needed + 1


def test_interleaved_even_generators_are_not_named(harness):  # noqa: F811
    """Two even generators half a gap apart: an even 10,000 fps stream;
    any loss is the DUT's."""
    r, devices = trial(harness, generator(0), generator(SHARE_GAP // 2), lost=3)
    assert [d.departures["catch_up_count"] for d in devices] == [0, 0]
    assert r.spacing.bucket_needed == 1 and r.spacing.longest_micro_burst == 0
    assert pacing.bursty_reason(r, PASSED) is None


def test_clusters_take_the_most_under_way_at_once():
    """Pure: three generators at 1,000 fps (1 frame a ms). A's catch-up
    overlaps B's and B's C's: one cluster. A pays 6 at 10 ms, B pays 8 at
    30 ms after 20 ms of A and B, then C silent (drained 14, emptied),
    C pays 10 at 40 ms after 10 ms of C alone (8 - 10 -> 0): peak 10."""
    ms = 1_000_000
    a, b, c = (0, 10 * ms, 5, 1000), (8 * ms, 30 * ms, 7, 1000), (20 * ms, 40 * ms, 9, 1000)
    assert catch_ups.clusters([c, a, b]) == [10]
    # apart: each its own frames and the one on its slot
    assert catch_ups.clusters([a, (11 * ms, 12 * ms, 3, 1000)]) == [6, 4]
    # a module that records no catch-ups: no merge, the caller keeps each one's own
    assert catch_ups.merge([{"bucket_needed": 3}, {"bucket_needed": 4, "catch_ups": []}], [1, 1]) is None
