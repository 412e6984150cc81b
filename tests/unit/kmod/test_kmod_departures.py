"""The generator's departure spacing (pktgen-kmod/departures.c), compiled
on the host in user space against a minimal shim of the kernel headers and
driven with departure times chosen here: the histogram counts every frame,
the gaps' min/mean/max, and micro-bursts (runs of frames each sent less than
half the nominal gap after the one before) with their length in frames."""
import re

import pytest

from kmod_userspace import build
from test_kmod_stats import SHIM as STATS_SHIM

SHIM = {
    **STATS_SHIM,
    "linux/string.h": "#include <string.h>\n",
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
    hist = {(int(lo), int(hi)): int(c) for lo, hi, c in re.findall(r" (\d+)-(\d+):(\d+)", out)}
    return fields, hist, out


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
