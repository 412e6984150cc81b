"""Trends over the store: each figure's history split into groups of
statistically equal results, as FD.io CSIT's trending does.

A series is one figure (DUT, profile, test, metric, frame size, IP version)
over the runs, oldest first. Consecutive runs whose conditions differ are
never one sample: the series splits into segments there, and the reason is
kept. Within a segment, `jumpavg` (minimum description length: a new group
must pay for its bits) finds the groups; each boundary is a regression or a
progression, by the direction in which the metric is better, with the size
of the jump. The gate fails on a series whose newest group is a regression.
"""
import jumpavg

from rfc2544.errors import BadInput

CONDITION_NAMES = {
    "tester_kernel": "tester kernel", "generator": "generator", "receiver": "receiver",
    "fidelity": "fidelity", "link_speed_mbps": "link speed (Mbit/s)", "tester_limited": "tester-limited",
    "tester_bursty": "set by the tester's bursts",
}
METRIC_TITLES = {"ndr_fps": "throughput NDR (frames/s)", "pdr_fps": "throughput PDR (frames/s)",
                 "median_ns": "latency median (ns)", "p999_ns": "latency 99.9th percentile (ns)",
                 "ir_mbps": "received rate (Mbit/s)", "ftd_ms": "mean delay (ms)"}
UNITS = {"ndr_fps": "frames/s", "pdr_fps": "frames/s", "bounded_fps": "frames/s", "median_ns": "ns", "p999_ns": "ns",
         "ir_mbps": "Mbit/s", "ftd_ms": "ms"}
SERIES_FIELDS = ("dut", "profile", "test", "metric", "frame_size", "ip_version")


def series_of(figures):
    """Figures (oldest run first) by series key, in first-seen order."""
    series = {}
    for f in figures:
        series.setdefault(tuple(f[k] for k in SERIES_FIELDS), []).append(f)
    return series


def condition_change(old, new):
    """Why two runs' conditions make them incomparable, as a sentence (None: they are comparable)."""
    changed = [f"{CONDITION_NAMES.get(k, k)} {_text(old.get(k))} -> {_text(new.get(k))}"
               for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    return "; ".join(changed) or None


def _text(value):
    return {True: "yes", False: "no", None: "unknown"}.get(value, value) if isinstance(value, (bool, type(None))) \
        else str(value)


def segments_of(points):
    """Split a series where the conditions change: [(reason or None, points)]."""
    segments = []
    for p in points:
        if segments and segments[-1][1][-1]["conditions"] == p["conditions"]:
            segments[-1][1].append(p)
        else:
            reason = condition_change(segments[-1][1][-1]["conditions"], p["conditions"]) if segments else None
            segments.append((reason, [p]))
    return segments


def groups_of(points, better):
    """jumpavg's groups of one segment, each boundary classed by `better`."""
    glist = jumpavg.classify([p["value"] for p in points])
    groups, start, previous = [], 0, None
    for group in glist:
        n = len(group.run_list)
        avg, stdev = group.stats.avg, group.stats.stdev
        change = kind = None
        if previous:
            change = (avg - previous) / previous * 100
            worse = avg < previous if better == "higher" else avg > previous
            kind = "regression" if worse else "progression"
        groups.append({"first_run": points[start]["run_id"], "last_run": points[start + n - 1]["run_id"],
                       "first_started": points[start]["started"], "runs": n, "avg": avg, "stdev": stdev,
                       "change_pct": change, "kind": kind or "normal",
                       "values": [p["value"] for p in points[start:start + n]]})
        start += n
        previous = avg
    return groups


def analyse(figures):
    """The trend document: every series with its segments and groups, and
    which series fail the gate."""
    if not figures:
        raise BadInput("the store holds no runs yet: add some with 'rfc2544 run --store' or "
                       "'rfc2544 store add'")
    series = []
    for key, points in series_of(figures).items():
        better = points[0]["better"]
        segments = []
        for reason, pts in segments_of(points):
            segments.append({"split_reason": reason, "conditions": pts[0]["conditions"],
                             "runs": [{"run_id": p["run_id"], "started": p["started"], "value": p["value"],
                                       "dut_kernel": p.get("dut_kernel")} for p in pts],
                             "groups": groups_of(pts, better)})
        last = segments[-1]["groups"][-1]
        status = last["kind"]           # the first group of a segment is "normal"
        if len(segments) > 1 and len(segments[-1]["groups"]) == 1:
            status = "new conditions"   # no baseline yet under these conditions
        series.append({**dict(zip(SERIES_FIELDS, key)), "better": better, "unit": UNITS.get(key[3], ""),
                       "title": series_title(dict(zip(SERIES_FIELDS, key))), "status": status,
                       "last_group": last, "newest_run": points[-1]["run_id"], "segments": segments,
                       "dut_kernel_changes": dut_kernel_changes(points)})
    series.sort(key=lambda s: (s["dut"], s["profile"], s["test"], s["frame_size"], s["ip_version"], s["metric"]))
    return {"series": series, "regressions": [s["title"] for s in series if s["status"] == "regression"],
            "runs": len({f["run_id"] for f in figures})}


def dut_kernel_changes(points):
    """Where the DUT's kernel changed: shown on the page, never a split (the DUT is what is measured)."""
    changes = []
    for before, after in zip(points, points[1:]):
        if before.get("dut_kernel") != after.get("dut_kernel"):
            changes.append({"run_id": after["run_id"], "from": before.get("dut_kernel"),
                            "to": after.get("dut_kernel")})
    return changes


def series_title(s):
    service = s["test"].startswith("Y.1564 ")
    size = ("EMIX" if service else "IMIX") if s["frame_size"] == 0 else f"{s['frame_size']} B"
    # the rate within a latency bound: the test's name holds the bound; a Y.1564 service and step too
    title = f"{s['test']} (frames/s)" if s["metric"] == "bounded_fps" else \
        f"{s['test']}: {METRIC_TITLES[s['metric']]}" if service else \
        METRIC_TITLES.get(s["metric"], s["test"] + " " + s["metric"])
    return (f"{title} {size} IPv{s['ip_version']}"
            f" ({s['dut']}, {s['profile']})")


def text_table(document):
    """One line per series: what a pipeline log shows."""
    lines = [f"{'series':<58} {'runs':>4} {'last group avg':>15} {'stdev':>9} {'last change':>12}  status"]
    for s in document["series"]:
        g = s["last_group"]
        change = "" if g["change_pct"] is None else f"{g['change_pct']:+.2f} %"
        lines.append(f"{s['title'][:58]:<58} {g['runs']:>4} {g['avg']:>15,.1f} {g['stdev']:>9,.1f} "
                     f"{change:>12}  {s['status']}")
    return "\n".join(lines)
