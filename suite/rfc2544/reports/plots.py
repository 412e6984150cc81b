"""The report's graphs as inline SVG (matplotlib, Agg backend).

Text stays text (svg.fonttype none) so the figures can be searched and
copied, and every id is prefixed per figure so several SVGs can share one
HTML document without their clip paths colliding.
"""
import io
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

from rfc2544.model import theoretical_max_fps  # noqa: E402

STYLE = {
    "svg.fonttype": "none",
    "svg.hashsalt": "rfc2544",
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
SIZE = (7.0, 3.4)
COLORS = ["#1f5fa8", "#c0392b", "#2e8b57", "#8e44ad", "#d4800b", "#16a2b8", "#5d6d7e"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
LINESTYLES = ["-", "--", ":", "-."]


def _rate(value, _pos=None):
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:g}{unit}"
    return f"{value:g}"


def _svg(fig, prefix):
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]                     # drop the XML declaration and doctype
    svg = re.sub(r'(<svg[^>]*?)\s+width="[^"]*"\s+height="[^"]*"', r"\1", svg, count=1)
    svg = svg.replace("<svg ", f'<svg class="plot" role="img" aria-labelledby="{prefix}-title" ', 1)
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    for name in sorted(ids, key=len, reverse=True):
        svg = svg.replace(f'id="{name}"', f'id="{prefix}-{name}"')
        svg = svg.replace(f"#{name})", f"#{prefix}-{name})").replace(f'"#{name}"', f'"#{prefix}-{name}"')
    return svg


def _title(svg, prefix, text):
    return svg.replace(">", f'><title id="{prefix}-title">{_escape(text)}</title>', 1)


def _escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def throughput_svg(rows, link_mbps, calibration_rows=()):
    """RFC 2544 26.1: frame rate vs frame size, with the theoretical maximum line."""
    rows = [r for r in rows if r["frame_size"]]
    if not rows:
        return None
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=SIZE)
        sizes = sorted({r["frame_size"] for r in rows})
        lo, hi = min(sizes + [64]), max(sizes + [1518])
        if link_mbps:
            # At the tested sizes, joined the same way as the measurements, so a
            # result at line rate lies exactly on this line.
            ax.plot(sizes, [theoretical_max_fps(x, link_mbps) for x in sizes], "--", color="#555",
                    linewidth=1.2, label=f"theoretical maximum ({link_mbps:g} Mbit/s)", zorder=4)
        cal = [c for c in calibration_rows if c["frame_size"]]
        if cal:
            ax.plot([c["frame_size"] for c in cal], [c["fps"] for c in cal], ":", marker="x",
                    color="#d4800b", label="tester ceiling (calibrated)")
        versions = sorted({r.get("ip_version") for r in rows}, key=str)
        for i, version in enumerate(versions):
            mine = [r for r in rows if r.get("ip_version") == version]
            ax.plot([r["frame_size"] for r in mine], [r["fps"] for r in mine], "-o", color=COLORS[i * 2],
                    linewidth=1.8, markersize=5, label="measured throughput (0 % loss)"
                    + (f", IPv{version}" if len(versions) > 1 else ""))
        for i, version in enumerate(versions):
            # an extension of RFC 2544: the rate that also kept the latency bound
            within = [r for r in rows if r.get("ip_version") == version and r.get("latency_bound")
                      and r.get("bounded_fps")]
            if within:
                ax.plot([r["frame_size"] for r in within], [r["bounded_fps"] for r in within], "-.s",
                        color=COLORS[i * 2 + 1], linewidth=1.6, markersize=5,
                        label=f"within the latency bound ({within[0]['latency_bound']['text']})"
                        + (f", IPv{version}" if len(versions) > 1 else ""))
        bound = [r for r in rows if r["tester_bound"]]
        if bound:
            ax.plot([r["frame_size"] for r in bound], [r["fps"] for r in bound], "o", markersize=11,
                    markerfacecolor="none", markeredgecolor="#d4800b", markeredgewidth=1.6,
                    label="tester-bound")
        bursty = [r for r in rows if r.get("tester_bursty")]
        if bursty:
            ax.plot([r["frame_size"] for r in bursty], [r["fps"] for r in bursty], "^", markersize=12,
                    markerfacecolor="none", markeredgecolor="#b8336a", markeredgewidth=1.6,
                    label="set by the tester's bursts (lower bound)")
        values = [r["fps"] for r in rows] + ([theoretical_max_fps(lo, link_mbps)] if link_mbps else [])
        if min(values) > 0 and max(values) / min(values) > 30:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(_rate))
        ax.set_xlabel("frame size (bytes)")
        ax.set_ylabel("frames/s")
        ax.set_xlim(0, hi + 60)
        ax.set_xticks(sizes)
        ax.tick_params(axis="x", labelrotation=0, labelsize=8)
        ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
        svg = _svg(fig, "fig-throughput")
    return _title(svg, "fig-throughput", "Throughput: frame rate versus frame size, with the theoretical maximum")


def frame_loss_svg(loss_rows):
    """RFC 2544 26.3: frame loss rate vs offered load, both axes 0-100 %."""
    if not loss_rows:
        return None
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=SIZE)
        for i, r in enumerate(loss_rows):
            pts = sorted(r["points"], key=lambda p: p["load_pct"])
            # Curves often coincide (no loss at 90-100 %): shrinking markers and
            # varied dashes keep every frame size visible.
            ax.plot([p["load_pct"] for p in pts], [p["loss_pct"] for p in pts],
                    linestyle=LINESTYLES[i % len(LINESTYLES)], marker=MARKERS[i % len(MARKERS)],
                    markersize=max(8 - 1.5 * i, 3), linewidth=1.6, color=COLORS[i % len(COLORS)],
                    label=r["label"], clip_on=False, zorder=3 + i)
        ax.set_xlim(0, 100)
        ax.set_ylim(0, 100)
        ax.set_xticks(range(0, 101, 10))
        ax.set_yticks(range(0, 101, 20))
        ax.set_xlabel("offered load (% of the maximum rate)")
        ax.set_ylabel("frame loss rate (%)")
        ax.legend(title="frame size", loc="upper left", fontsize=8, title_fontsize=8)
        svg = _svg(fig, "fig-loss")
    return _title(svg, "fig-loss", "Frame loss rate versus offered load")


def bursty_svg(rows):
    """RFC 2544 section 21: the highest mean rate without loss against the
    burst size (log2), one line per frame size, each frame size's steady
    throughput as a dashed line of its colour; a burst size where no rate
    passed sits as a cross on the x axis."""
    rows = [r for r in rows if r.get("bursts")]
    if not rows:
        return None
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=SIZE)
        sizes = sorted({b["frames_per_burst"] for r in rows for b in r["bursts"]})
        for i, r in enumerate(rows):
            color = COLORS[i % len(COLORS)]
            passed = [(b["frames_per_burst"], b["ndr_fps"]) for b in r["bursts"] if b.get("ndr_fps")]
            if passed:
                ax.plot([x for x, _ in passed], [y for _, y in passed], linestyle="-",
                        marker=MARKERS[i % len(MARKERS)], color=color, linewidth=1.8, markersize=5,
                        label=r["label"], zorder=3)
            failed = [b["frames_per_burst"] for b in r["bursts"] if not b.get("ndr_fps")]
            if failed:
                ax.plot(failed, [0] * len(failed), "x", color=color, markersize=9, markeredgewidth=1.8,
                        clip_on=False, zorder=4, label=f"{r['label']}, no rate passed")
            if r.get("throughput_fps"):
                ax.axhline(r["throughput_fps"], color=color, linestyle="--", linewidth=1.2, zorder=2,
                           label=f"{r['label']}, steady throughput")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _p: ""))
        ax.set_xlim(sizes[0] / 1.4, sizes[-1] * 1.4)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(_rate))
        ax.set_xlabel("frames per burst (log2)")
        ax.set_ylabel("mean rate without loss (frames/s)")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
        svg = _svg(fig, "fig-bursty")
    return _title(svg, "fig-bursty", "Bursty traffic: highest mean rate without loss versus burst size, per frame size")


def compare_svg(rows, threshold_pct):
    """Change per frame size, NEW vs OLD, in % (positive = better), with the
    gate (the rows of a frame size: a Y.1564 service's are in the table only)."""
    rows = [r for r in rows if r["frame_size"] is not None]

    def series(row):        # a bursty row's burst size is a series of its own
        return row["metric"] + (f", bursts of {row['frames_per_burst']}" if "frames_per_burst" in row else "")
    metrics = []
    for row in rows:
        if series(row) not in metrics:
            metrics.append(series(row))
    sizes = sorted({row["frame_size"] for row in rows})
    if not rows or not sizes:
        return None
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=SIZE)
        width = 0.8 / max(len(metrics), 1)
        all_ys = [threshold_pct * 2, -threshold_pct * 2, 1.0, -1.0]
        for m_index, metric in enumerate(metrics):
            xs, ys = [], []
            for s_index, size in enumerate(sizes):
                row = next((r for r in rows if series(r) == metric and r["frame_size"] == size), None)
                if row is None or row["better_pct"] is None:
                    continue
                xs.append(s_index - 0.4 + width * (m_index + 0.5))
                ys.append(row["better_pct"])
            all_ys += ys
            ax.bar(xs, ys, width=width * 0.92, color=COLORS[m_index % len(COLORS)], label=metric)
        ax.axhline(0, color="#333", linewidth=0.8)
        ax.axhline(-threshold_pct, color="#c0392b", linestyle="--", linewidth=1.2,
                   label=f"allowed regression ({threshold_pct:g} %)")
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels(["IMIX" if s == 0 else f"{s} B" for s in sizes], fontsize=8)
        ax.set_ylim(min(all_ys) * 1.15, max(all_ys) * 1.15)
        ax.set_ylabel("change, NEW vs OLD (%)\n(positive = better)")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, frameon=False)
        svg = _svg(fig, "fig-compare")
    return _title(svg, "fig-compare", "Change per frame size between two runs")


def latency_loads_svg(rows, bound=None):
    """Latency against the load, in % of the throughput, one series per
    frame size: the median (typical, solid) and the 99.9th percentile
    (worst case, dashed) of RFC 8219, averaged over the repetitions. Only
    for frame sizes measured at two loads or more. `bound`: the profile's
    search.latency_bound ({percentile, us}), drawn as a line."""
    series = {}
    for r in rows:
        if r.get("median_ns") is not None or r.get("p999_ns") is not None:
            series.setdefault(r["series"], []).append(r)
    series = {name: sorted(rs, key=lambda r: r["throughput_pct"] if r.get("throughput_pct") is not None else 100)
              for name, rs in series.items() if len(rs) > 1}
    if not series:
        return None
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=SIZE)
        for i, (name, rs) in enumerate(series.items()):
            color = COLORS[i % len(COLORS)]
            xs = [r["throughput_pct"] if r.get("throughput_pct") is not None else 100 for r in rs]
            for key, style, what in (("median_ns", "-", "median"), ("p999_ns", "--", "99.9th percentile")):
                pts = [(x, r[key] / 1000) for x, r in zip(xs, rs) if r.get(key) is not None]
                ax.plot([x for x, _ in pts], [y for _, y in pts], style, marker=MARKERS[i % len(MARKERS)],
                        color=color, linewidth=1.6, markersize=5, label=f"{name}, {what}")
        if bound:
            which = "maximum" if bound["percentile"] == "max" else f"p{bound['percentile']}"
            ax.axhline(bound["us"], color="#2a7f62", linestyle="-.", linewidth=1.2,
                       label=f"latency bound ({which} <= {bound['us']:g} µs)")
        ax.set_xlim(-3, 103)
        ax.set_xticks(sorted({x for rs in series.values() for x in
                              (r["throughput_pct"] if r.get("throughput_pct") is not None else 100 for r in rs)}))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: "minimal" if v == 0 else f"{v:g} %"))
        values = [y for line in ax.get_lines() for y in line.get_ydata() if y > 0]
        if values and max(values) / min(values) > 10:
            # a queue near the throughput dwarfs the light loads: log keeps both readable
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _p: f"{v:g}" if str(v)[0] in "1235" else ""))
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel("load (% of the throughput)")
        ax.set_ylabel("latency (µs)")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
        svg = _svg(fig, "fig-latency")
    return _title(svg, "fig-latency", "Latency (median and 99.9th percentile) against the load, per frame size")


def recovery_reset_svg(recovery_rows, reset_rows):
    """RFC 2544 26.5 and 26.6: each repetition's recovery time with the
    interval it is known to lie in (one sampling interval wide), and each
    repetition's reset time; a dashed line marks each row's mean."""
    series = [(f"recovery {r['label']}", r["recovery_times_s"], r.get("recovery_time_bounds_s"),
               r["recovery_time_s"]) for r in recovery_rows]
    series += [(f"reset {r['label']}", r["reset_times_s"], None, r["reset_time_s"]) for r in reset_rows]
    series = [s for s in series if s[1]]
    if not series:
        return None
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=SIZE)
        for i, (label, times, bounds, mean) in enumerate(series):
            reps = list(range(1, len(times) + 1))
            err = None
            if bounds and len(bounds) == len(times):
                err = [[t - lo for t, (lo, _) in zip(times, bounds)], [hi - t for t, (_, hi) in zip(times, bounds)]]
            color = COLORS[i % len(COLORS)]
            ax.errorbar(reps, times, yerr=err, fmt=MARKERS[i % len(MARKERS)], color=color, capsize=4,
                        label=label, zorder=3)
            ax.axhline(mean, color=color, linestyle="--", linewidth=1)
        ax.set_xlabel("repetition")
        ax.set_ylabel("time (s)")
        ax.set_ylim(bottom=0)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(loc="upper right", fontsize=8)
        svg = _svg(fig, "fig-recovery")
    return _title(svg, "fig-recovery", "System recovery and reset time per repetition, with the recovery time's bounds")


def service_steps_svg(entry, index):
    """Y.1564 8.1: one service's received information rate against what
    each step offered, with its CIR and CIR + EIR drawn."""
    steps = [s for s in entry.get("steps") or [] if s.get("ir_mbps") is not None]
    if not steps:
        return None
    prefix = f"fig-service-{index}"
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=SIZE)
        offered = [s["offered_mbps"] for s in steps]
        top = max(offered + [s["ir_mbps"] for s in steps]) * 1.1
        ax.plot([0, top], [0, top], color="#999999", linestyle=":", linewidth=1, label="received = offered")
        cir, eir = entry["cir_mbps"], entry.get("eir_mbps") or 0
        ax.axhline(cir, color=COLORS[2], linestyle="--", linewidth=1, label="CIR")
        if eir:
            ax.axhline(cir + eir, color=COLORS[4], linestyle="--", linewidth=1, label="CIR + EIR")
        for passed, marker, color, label in ((True, "o", COLORS[0], "step passed"), (False, "X", COLORS[1],
                                                                                     "step failed")):
            pts = [(s["offered_mbps"], s["ir_mbps"]) for s in steps if (s.get("verdict") != "fail") == passed]
            if pts:
                ax.scatter(*zip(*pts), marker=marker, color=color, label=label, zorder=3)
        for s in steps:
            ax.annotate(s["label"], (s["offered_mbps"], s["ir_mbps"]), textcoords="offset points", xytext=(4, -10),
                        fontsize=7)
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_xlabel("offered (Mbit/s, layer 2)")
        ax.set_ylabel("received (Mbit/s)")
        ax.legend(loc="upper left", fontsize=8)
        svg = _svg(fig, prefix)
    return _title(svg, prefix, f"Service {entry['service']}: received against offered information rate per step")


def trend_svg(series, index):
    """One series over the runs: each run's value, each group's average
    (solid) with its spread (band), a triangle where a group starts with a
    regression (red, down) or progression (green, up), and a dashed line
    where the conditions changed and the series split."""
    prefix = f"fig-trend-{index}"
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.0, 2.6))
        x = 0
        for s_index, segment in enumerate(series["segments"]):
            if s_index:
                ax.axvline(x - 0.5, color="#555", linestyle="--", linewidth=1)
            for group in segment["groups"]:
                xs = list(range(x, x + group["runs"]))
                ax.plot(xs, group["values"], "o", color=COLORS[0], markersize=3.5, zorder=3)
                lo, hi = xs[0] - 0.4, xs[-1] + 0.4
                ax.hlines(group["avg"], lo, hi, color="#333", linewidth=1.6, zorder=2)
                ax.fill_between([lo, hi], group["avg"] - group["stdev"], group["avg"] + group["stdev"],
                                color="#999", alpha=0.25, linewidth=0)
                if group["kind"] in ("regression", "progression"):
                    bad = group["kind"] == "regression"
                    ax.plot([xs[0]], [group["avg"]], "v" if bad != (series["better"] == "lower") else "^",
                            color="#c0392b" if bad else "#2e8b57", markersize=9, zorder=2, alpha=0.8)
                x += group["runs"]
        ax.set_xlim(-0.7, max(x - 0.3, 0.7))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("run (oldest first)")
        ax.yaxis.set_major_formatter(FuncFormatter(_rate))
        ax.set_ylabel(series["unit"] or series["metric"])
        svg = _svg(fig, prefix)
    return _title(svg, prefix, series["title"])


# The departure spacing figure draws at most this many trials: beyond it
# the lines cannot be told apart; the figure says how many it left out.
MAX_GAP_SERIES = 8
GAP_FLOOR = 1e-3        # gap / nominal gap drawn for 0 ns gaps (log axis)
CDF_LIMITS = (1e-4, 1 - 1e-4)   # the logit axis shows 0.01 % .. 99.99 %


def gap_cdf(spacing, floor=GAP_FLOOR):
    """The cumulative share of a trial's frames by the gap before them, in
    units of its nominal gap, from its `hist` ([low_ns, high_ns, count]
    buckets, high inclusive): (xs, ys), a point at each bucket's edges so
    that a gap range no frame fell in stays flat. 0 ns gaps (a micro-burst's
    frames) are drawn at `floor`. None without a nominal gap or frames."""
    nominal = spacing.get("nominal_gap_ns")
    buckets = sorted(spacing.get("hist") or [], key=lambda b: b[0])
    total = sum(c for _, _, c in buckets)
    if not nominal or not total:
        return None
    xs, ys, seen = [], [], 0
    for low, high, count in buckets:
        if not count:
            continue
        xs.append(max(low / nominal, floor))
        ys.append(seen / total)
        seen += count
        xs.append(max((high + 1) / nominal, floor))
        ys.append(seen / total)
    return xs, ys


def gap_cdf_figure(rows):
    """(figure, trials drawn, trials left out) of gap_distribution_svg, or None."""
    series = [(r, gap_cdf(r["spacing"])) for r in rows]
    series = [(r, cdf) for r, cdf in series if cdf]
    if not series:
        return None
    drawn, left_out = series[:MAX_GAP_SERIES], len(series) - MAX_GAP_SERIES
    fig, ax = plt.subplots(figsize=(SIZE[0], SIZE[1] + 0.9))
    lo, hi = CDF_LIMITS
    for i, (r, (xs, ys)) in enumerate(drawn):
        # clamped into the logit axis: 0 % and 100 % sit on its edges
        ax.plot(xs, [min(max(y, lo), hi) for y in ys], color=COLORS[i % len(COLORS)],
                linestyle=LINESTYLES[(i // len(COLORS)) % len(LINESTYLES)], linewidth=1.6, zorder=3,
                label=f"#{r['trial']['id']} {r['test']} {r['label']}, {r['which']}")
    ax.axvline(0.5, color="#c0392b", linestyle="--", linewidth=1.2, zorder=1,
               label="half the nominal gap (micro-burst threshold)")
    ax.set_xscale("log")
    ax.set_yscale("logit")
    ax.set_ylim(lo, hi)
    ax.set_yticks([1e-3, 1e-2, 0.1, 0.5, 0.9, 0.99, 0.999])
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v * 100:g} %"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _p: ""))
    right = max(x for _, (xs, _) in drawn for x in xs)
    ax.set_xlim(GAP_FLOOR * 0.7, max(4.0, right * 1.5))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: "0" if v <= GAP_FLOOR else f"{v:g}"))
    ax.set_xlabel("gap before the frame / nominal gap (log; 0 ns gaps at the left edge)")
    ax.set_ylabel("frames with a gap up to x")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, frameon=False)
    if left_out > 0:
        ax.set_title(f"{len(drawn)} of {len(series)} trials drawn; the other {left_out} are in the table above",
                     fontsize=8, loc="left", color="#555")
    return fig, len(drawn), max(left_out, 0)


def gap_distribution_svg(rows):
    """Each chosen trial's departure gaps as a CDF of gap / nominal gap, one
    line per trial (at most MAX_GAP_SERIES), with the half-gap threshold
    that makes a frame part of a micro-burst. An evenly paced trial rises
    as one steep step at 1; the height of a line where it crosses the
    threshold is the share of its frames sent too close to the one before,
    the length of its tail to the right is how late it ran."""
    with plt.rc_context(STYLE):
        made = gap_cdf_figure(rows)
        if made is None:
            return None
        prefix = "fig-gaps"
        svg = _svg(made[0], prefix)
    return _title(svg, prefix, "Departure gaps of the chosen trials: share of frames by gap over nominal gap")
