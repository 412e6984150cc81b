"""The generator's departure spacing (pktgen-kmod/departures.c), compiled
on the host in user space against a minimal shim of the kernel headers and
driven with departure times chosen here: the histogram counts every frame,
the gaps' min/mean/max, micro-bursts (runs of frames each sent less than
half the nominal gap after the one before) with their length in frames, and
what a policer at the nominal rate makes of the frames: the bucket it needs,
and the frames it drops with smaller ones."""
import re

import pytest

from kmod_userspace import build
from test_kmod_stats import SHIM as STATS_SHIM

SHIM = {
    **STATS_SHIM,
    "linux/string.h": "#include <string.h>\n",
    "linux/kernel.h": "#include <linux/types.h>\n#define min(a, b) ((a) < (b) ? (a) : (b))\n"
                      "#define max(a, b) ((a) > (b) ? (a) : (b))\n"
                      "#define READ_ONCE(x) (x)\n#define unlikely(x) (x)\n",
    "linux/overflow.h": "#define check_mul_overflow(a, b, d) __builtin_mul_overflow(a, b, d)\n",
    "linux/bits.h": "#define BIT_ULL(n) (1ULL << (n))\n",
    "linux/math64.h": STATS_SHIM["linux/math64.h"] + "static inline u64 div64_u64(u64 a, u64 b) { return a / b; }\n",
    "linux/seq_file.h": """
#include <stdio.h>
#include <stdarg.h>
struct seq_file { FILE *f; };
static inline void seq_puts(struct seq_file *m, const char *s) { fputs(s, m->f); }
static inline void seq_printf(struct seq_file *m, const char *fmt, ...)
{ va_list ap; va_start(ap, fmt); vfprintf(m->f, fmt, ap); va_end(ap); }
""",
}

HARNESS = r"""
#include <stdio.h>
#include <string.h>
#include "departures.h"

static struct pg_departures d;

int main(void)
{
    struct seq_file m = { stdout };
    char cmd[16];
    unsigned long long now, gap;
    unsigned int frames;

    while (scanf("%15s", cmd) == 1) {
        if (!strcmp(cmd, "reset")) {          /* reset START */
            scanf("%llu", &now);
            pg_dep_reset(&d, now);
        } else if (!strcmp(cmd, "rec")) {     /* rec NOW FRAMES NOMINAL_GAP */
            scanf("%llu %u %llu", &now, &frames, &gap);
            pg_dep_record(&d, now, frames, gap);
        } else if (!strcmp(cmd, "show")) {    /* show NOMINAL_GAP */
            scanf("%llu", &gap);
            pg_dep_show(&m, &d, gap);
        }
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return build(tmp_path_factory.mktemp("departures"), SHIM, HARNESS, ["departures.c", "stats.c"])


def departures(harness, events, nominal):
    """Run reset 0, then `events` [(now_ns, frames)], then show: the parsed fields."""
    import subprocess
    script = "reset 0\n" + "".join(f"rec {t} {n} {nominal}\n" for t, n in events) + f"show {nominal}\n"
    out = subprocess.run([str(harness)], input=script, capture_output=True, text=True, check=True).stdout
    fields = {k: int(v) for k, v in re.findall(r"(\w+): (\d+)", out)}
    hist = {(int(lo), int(hi)): int(c) for lo, hi, c in re.findall(r" (\d+)-(\d+):(\d+)", _line(out, "gap_hist_ns:"))}
    return fields, hist, out


def _line(out, key):
    return next(line for line in out.splitlines() if line.strip().startswith(key))


def catch_ups_of(out):
    """The catch_ups line: (number ended or under way, [(start, end, frames)] sorted)."""
    words = _line(out, "catch_ups:").split()
    return int(words[1]), sorted(tuple(int(g) for g in re.match(r"(\d+)-(\d+):(\d+)$", w).groups())
                                 for w in words[2:])


def test_even_spacing_has_no_micro_burst(harness):
    fields, hist, _ = departures(harness, [(1000 * (i + 1), 1) for i in range(1000)], nominal=1000)
    assert fields["frames"] == 1000 and sum(hist.values()) == 1000
    assert fields["min_gap_ns"] == fields["max_gap_ns"] == fields["mean_gap_ns"] == 1000
    assert fields["p50_gap_ns"] == pytest.approx(1000, rel=0.01)
    assert fields["micro_bursts"] == 0 and fields["longest_micro_burst"] == 0


def test_a_burst_16_run_shows_micro_bursts_of_16(harness):
    """`burst 16`: each call hands 16 frames over at once, 16 gaps apart."""
    events = [(16_000 * (i + 1), 16) for i in range(50)]
    fields, hist, _ = departures(harness, events, nominal=1000)
    assert fields["frames"] == 800 and sum(hist.values()) == 800
    assert hist[(0, 0)] == 750                      # 15 of every 16 frames left 0 ns after the one before
    assert fields["micro_bursts"] == 50 and fields["longest_micro_burst"] == 16


def test_catching_up_after_a_stall_is_one_long_micro_burst(harness):
    """On schedule, a 1 ms stall, then 40 frames sent 100 ns apart to catch
    up (catchup_pct 0), then on schedule again: one micro-burst of 41 frames
    (the first late frame and the 40 after it)."""
    t, events = 0, []
    for _ in range(100):
        t += 10_000
        events.append((t, 1))
    t += 1_000_000
    events.append((t, 1))
    for _ in range(40):
        t += 100
        events.append((t, 1))
    for _ in range(100):
        t += 10_000
        events.append((t, 1))
    fields, hist, _ = departures(harness, events, nominal=10_000)
    assert fields["frames"] == 241 and sum(hist.values()) == 241
    assert fields["micro_bursts"] == 1 and fields["longest_micro_burst"] == 41
    assert fields["max_gap_ns"] == 1_000_000 and fields["min_gap_ns"] == 100


def test_the_first_frame_after_start_does_not_start_a_burst(harness):
    """The first frame leaves right after `start` (gap from start ~0): not a micro-burst."""
    fields, _, _ = departures(harness, [(5, 1), (10_005, 1), (20_005, 1)], nominal=10_000)
    assert fields["micro_bursts"] == 0 and fields["frames"] == 3 and fields["min_gap_ns"] == 5


def test_unpaced_runs_have_gaps_but_no_micro_bursts(harness):
    """delay 0: no nominal gap, so nothing is 'too close'; the gaps are still counted."""
    fields, hist, out = departures(harness, [(100 * (i + 1), 4) for i in range(10)], nominal=0)
    assert fields["frames"] == 40 and sum(hist.values()) == 40 and fields["nominal_gap_ns"] == 0
    assert fields["longest_micro_burst"] == 0 and out.startswith("Departures:")


def policing_of(out):
    """bucket_needed and the bucket_drops line as {bucket frames: frames dropped}."""
    line = _line(out, "bucket_drops:")
    drops = {int(t): int(n) for t, n in re.findall(r"(\d+):(\d+)", line)}
    return int(re.search(r"bucket_needed: (\d+)", out).group(1)), drops


def policing_reference(events, nominal):
    """The suite's frame-by-frame model of the same policer
    (rfc2544.engine.pacing.policing, used for calibration-link arrivals),
    as {bucket: dropped}: a second implementation to hold the module's
    per-call arithmetic to."""
    from rfc2544.engine.pacing import policing
    needed, drops = policing([now for now, frames in events for _ in range(frames)], nominal)
    return needed, {bucket: n for bucket, n in drops}


def test_even_spacing_needs_a_one_frame_bucket(harness):
    """Each frame on its slot: a bucket of one frame passes them all."""
    _, _, out = departures(harness, [(1000 * (i + 1), 1) for i in range(1000)], nominal=1000)
    assert policing_of(out) == (1, {})


def test_a_burst_16_run_needs_a_bucket_of_16(harness):
    """`burst 16`, 16 gaps apart: a bucket of b < 16 frames passes b of each burst."""
    events = [(16_000 * (i + 1), 16) for i in range(50)]
    _, _, out = departures(harness, events, nominal=1000)
    expected = (16, {1: 50 * 15, 2: 50 * 14, 4: 50 * 12, 8: 50 * 8})
    assert policing_of(out) == expected == policing_reference(events, 1000)


def test_short_catch_up_bursts_that_come_too_often_drain_the_bucket(harness):
    """Runs of 10 frames 100 ns apart every 8 nominal gaps: no micro-burst
    is longer than 10, yet each run brings 2 frames more than the rate
    refills: a 32-frame bucket at this rate drops frames, and the bucket
    needed grows past 40."""
    nominal, events, t = 10_000, [], 0
    for _ in range(20):
        for j in range(10):
            events.append((t + 100 * j, 1))
        t += 8 * nominal
    fields, _, out = departures(harness, events, nominal=nominal)
    assert fields["longest_micro_burst"] == 10
    needed, drops = policing_of(out)
    assert needed > 40 and drops[32] > 0
    assert (needed, drops) == policing_reference(events, nominal)


def test_calls_of_several_frames_police_as_frame_by_frame(harness):
    """Calls of several frames at uneven times, some into a bucket left
    part full: the module's per-call arithmetic drops what a frame-by-frame
    policer does, at every bucket size."""
    import random
    rnd = random.Random(7)
    nominal, events, t = 3_000, [], 0
    for _ in range(400):
        t += rnd.choice((0, 500, 3_000, 9_000, 40_000, 3_000_000))
        events.append((t, rnd.choice((1, 1, 3, 7, 33, 200))))
    _, _, out = departures(harness, events, nominal=nominal)
    needed, drops = policing_of(out)
    assert drops and (needed, drops) == policing_reference(events, nominal)


def test_a_rate_change_keeps_the_bucket_needed_so_far(harness):
    """`ratep` while running: a catch-up of 5 frames at 1 us, then frames
    at 10 us. The bucket needed so far stays 5 frames (the queue is kept
    in ns of the rate: a slower rate's single frame is more ns, not more
    frames), and a later catch-up of 7 at the new rate raises it to 7."""
    import subprocess
    script = "reset 0\n" + "".join(f"rec {t} 1 1000\n" for t in (1000, 2000, 2001, 2002, 2003, 2004)) \
        + "rec 20000 1 10000\nrec 30000 1 10000\nshow 10000\n"
    out = subprocess.run([str(harness)], input=script, capture_output=True, text=True, check=True).stdout
    assert policing_of(out)[0] == 5
    script = script.replace("show 10000\n", "rec 100000 7 10000\nshow 10000\n")
    out = subprocess.run([str(harness)], input=script, capture_output=True, text=True, check=True).stdout
    assert policing_of(out)[0] == 7


def _stalled(t, stall, owed, gap=0):
    """From a frame at t, a stall of `stall` ns, then a frame and the
    `owed` frames behind it, `gap` ns apart: (events, the stall frame's time)."""
    events = [(t + stall + gap * j, 1) for j in range(owed + 1)]
    return events, events[0][0]


def test_even_spacing_has_no_catch_up(harness):
    _, _, out = departures(harness, [(1000 * (i + 1), 1) for i in range(1000)], nominal=1000)
    assert catch_ups_of(out) == (0, [])


def test_a_catch_up_is_kept_with_its_times_and_frames(harness):
    """On schedule, a 1 ms stall at 10 us a frame (100 frames owed), the
    debt sent 100 ns apart, on schedule again: one catch-up from the
    departure before the stall to the last frame of the debt, of what it
    put ahead of the rate (100 frames less the 100 ns gaps: 99)."""
    nominal, t, events = 10_000, 0, []
    for _ in range(50):
        t += nominal
        events.append((t, 1))
    burst, stalled = _stalled(t, 1_000_000, 100, gap=100)
    events += burst + [(burst[-1][0] + nominal * (i + 1), 1) for i in range(50)]
    fields, _, out = departures(harness, events, nominal=nominal)
    assert catch_ups_of(out) == (1, [(t, burst[-1][0], 99)])
    assert fields["bucket_needed"] == 100


def test_a_burst_call_after_a_stall_is_the_same_catch_up(harness):
    """The same debt handed over in one call (`burst N`): the stall is that
    call's own gap, and it puts the frames after the first ahead."""
    nominal, t = 10_000, 50 * 10_000
    events = [(nominal * (i + 1), 1) for i in range(50)] + [(t + 1_000_000, 101)] + \
        [(t + 1_000_000 + nominal * (i + 1), 1) for i in range(50)]
    _, _, out = departures(harness, events, nominal=nominal)
    assert catch_ups_of(out) == (1, [(t, t + 1_000_000, 100)])


def test_the_largest_catch_ups_are_kept(harness):
    """20 catch-ups of 3 .. 22 frames, each after a stall: all counted, the
    16 largest that ended kept with their times, and the last, under way."""
    nominal, t, events, starts = 10_000, 0, [], {}
    for k in range(20):
        for _ in range(5):
            t += nominal
            events.append((t, 1))
        owed = 3 + k
        burst, _ = _stalled(t, owed * nominal, owed)
        starts[owed] = t
        events += burst
        t = burst[-1][0]
    _, _, out = departures(harness, events, nominal=nominal)
    n, kept = catch_ups_of(out)
    assert n == 20
    assert sorted(frames for _, _, frames in kept) == list(range(6, 23))
    assert all(start == starts[frames] for start, _, frames in kept)


def test_a_catch_up_under_way_is_shown(harness):
    """Read while still ahead: the catch-up under way is listed (and counted)."""
    nominal = 10_000
    burst, _ = _stalled(nominal, 500_000, 30)
    _, _, out = departures(harness, [(nominal, 1)] + burst, nominal=nominal)
    assert catch_ups_of(out) == (1, [(nominal, burst[-1][0], 30)])


def test_a_rate_change_in_a_catch_up_ends_it_and_starts_the_rest_afresh(harness):
    """`ratep` while a catch-up grows: the part before is kept in its own
    rate's frames; the rest starts where the change came, from the queue
    then, so the two records do not both count the first part."""
    import subprocess
    nominal = 10_000
    script = "reset 0\n" + "".join(f"rec {nominal * (i + 1)} 1 {nominal}\n" for i in range(10))
    t = 10 * nominal + 500_000                      # a 0.5 ms stall: 50 frames owed
    script += "".join(f"rec {t + j} 1 {nominal}\n" for j in range(21))       # 20 of them ahead
    script += "".join(f"rec {t + 21 + j} 1 {nominal // 2}\n" for j in range(21))  # ratep doubled mid-way
    script += f"show {nominal // 2}\n"
    out = subprocess.run([str(harness)], input=script, capture_output=True, text=True, check=True).stdout
    n, kept = catch_ups_of(out)
    assert n == 2, out
    (s1, e1, f1), (s2, e2, f2) = kept
    assert (s1, e1, f1) == (10 * nominal, t + 20, 20)
    assert s2 == e1 and e2 == t + 41 and f2 == 21      # every frame after the change, ahead
