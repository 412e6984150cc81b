"""A stream's generators merged into the one timeline its DUT sees.

Each generator of a stream (--generators N) paces its own share and keeps
its own policer at that share's rate (departures.h). The DUT polices their
merged stream at the stream's rate. A catch-up (a stall, then the frames
owed sent ahead of the rate) that one generator pays back while the others
keep their pace costs the merged policer what it costs that generator's own:
the others take exactly their share of the tokens. Catch-ups of several
generators that overlap in time (a stall of the whole host, a softirq storm
on the CPUs they share) come together: the merged policer needs their sum.

The module records each generator's largest catch-ups with their times on
the clock every CPU shares (ktime ns): from the departure before the stall
to the last frame that put its queue further ahead, and by how many frames.
merge() groups a stream's catch-ups into clusters of overlapping ones and
plays each cluster through the stream's policer, each generator as its
record draws it: silent from its catch-up's start, then at its end the
frames it owed at once (those it put ahead and the one on its slot), on its
share's pace otherwise. The queue ahead of the stream's rate drains while
some are silent by their shares' rates, and each catch-up adds its frames;
its peak is the bucket the cluster needs: within a frame or two of a
frame-by-frame policer where the debt leaves back to back (catchup_pct 0,
the default: tests/unit/kmod/test_merged_catch_ups.py). A generator that
pays its debt at a bounded pace (catchup_pct) is drawn silent longer than
it was, which can only lower a cluster's figure, never raise it above the
truth; each generator's own bucket stays the floor. Then, per stream:
  bucket needed = max(each generator's own, the largest cluster's);
  dropped with a bucket of T = max(the generators' own drops at T summed,
                                   the sum over clusters of (need - T)+).
Only the largest catch-ups are recorded (16 a generator), so the merge can
only add to what the generators' own policers say.
"""
import math

POLICED_BUCKETS = 16    # buckets of 1, 2, 4 .. 2^15 frames, as departures.h


def clusters(catch_ups):
    """[(start_ns, end_ns, frames, rate_fps)] of a stream's generators ->
    the bucket each group of overlapping ones needs of the stream's policer."""
    out, group, group_end = [], [], None
    # a record read while its generator wrote it may be torn: one that ends before it starts is left out
    for item in sorted(c for c in catch_ups if c[0] <= c[1]):
        if group and item[0] > group_end:
            out.append(_played(group))
            group = []
        group.append(item)
        group_end = item[1] if len(group) == 1 else max(group_end, item[1])
    if group:
        out.append(_played(group))
    return out


def _played(group):
    """The peak of the stream's queue through one cluster (frames)."""
    events = sorted([(s, 1, r, 0) for s, _, _, r in group] + [(e, 2, r, f + 1) for _, e, f, r in group])
    queue = peak = silent = 0.0
    last = events[0][0]
    for t, kind, rate, frames in events:
        queue = max(queue - silent * (t - last) / 1e9, 0.0)
        last = t
        if kind == 1:
            silent += rate
        else:
            silent -= rate
            queue += frames
            peak = max(peak, queue)
    return math.ceil(peak - 1e-6)


def merge(departures, rates):
    """The stream's merged (bucket_needed, bucket_drops) from its generators'
    departure records (dicts from pktgen_state) at `rates` (frames/s each),
    or None when one of them records no catch-ups (a module before them),
    no bucket or no rate."""
    if not all("catch_ups" in d and "bucket_needed" in d and r for d, r in zip(departures, rates)):
        return None
    needs = clusters([(s, e, f, r) for d, r in zip(departures, rates) for s, e, f in d["catch_ups"]])
    needed = max([d["bucket_needed"] for d in departures] + needs)
    own = {}
    for d in departures:
        for bucket, dropped in d.get("bucket_drops", []):
            own[bucket] = own.get(bucket, 0) + dropped
    drops = []
    for bucket in (1 << i for i in range(POLICED_BUCKETS)):
        dropped = max(own.get(bucket, 0), sum(max(n - bucket, 0) for n in needs))
        if dropped:
            drops.append([bucket, dropped])
    return needed, drops
