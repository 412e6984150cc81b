"""Compare two runs: per frame size, throughput and latency (and the
bursty traffic throughput per burst size), NEW vs OLD.

A row regresses when NEW is worse than OLD by more than the allowed
percentage: lower throughput, or higher latency (mean, median, 99.9th
percentile: the typical and the worst case of RFC 8219; min and max are
shown but not gated, the max being one frame's bad luck). A measurement
present in OLD and absent from NEW fails too: a gate cannot pass on a figure
nobody measured.
"""
from rfc2544.errors import BadInput
from rfc2544.reports.summary import frame_label, ip_versions, key_of

# metric name -> (section, field, higher is better, gated)
METRICS = {
    "throughput (frames/s)": ("throughput", "fps", True, True),
    "latency mean (µs)": ("latency", "mean_ns", False, True),
    "latency median (µs)": ("latency", "median_ns", False, True),
    "latency 99.9th (µs)": ("latency", "p999_ns", False, True),
    "latency min (µs)": ("latency", "min_ns", False, False),
    "latency max (µs)": ("latency", "max_ns", False, False),
}
# RFC 2544 section 21: the bursty traffic throughput per frame size and burst size
BURSTY_METRIC = "bursty throughput (frames/s)"
# ITU-T Y.1564: per service and CIR step: (metric, step field, higher is better, gated, unit)
SERVICE_METRICS = (("Y.1564 received rate (Mbit/s)", "ir_mbps", True, True, "Mbit/s"),
                   ("Y.1564 mean delay (ms)", "ftd_ms", False, True, "ms"),
                   ("Y.1564 delay variation (ms)", "fdv_ms", False, False, "ms"))
CONDITION_FIELDS = ("link_speed_mbps", "ip_version", "generator", "receiver", "fidelity")


def parse_threshold(text):
    """'5%', '5' or '2.5 %' -> 5.0 / 2.5 (percent)."""
    raw = str(text).strip()
    number = raw[:-1].strip() if raw.endswith("%") else raw
    try:
        value = float(number)
    except ValueError:
        raise BadInput(f"--max-regression: {raw!r} is not a percentage (e.g. 5%)") from None
    if not 0 <= value < 100 or value != value:
        raise BadInput(f"--max-regression: {raw!r} must be between 0% and 100%")
    return value


def _index(results, section, field):
    # latency at other loads than the throughput's (latency.loads_pct) is not compared
    return {key_of(results, r): r.get(field) for r in results[section] if r.get("throughput_pct") in (None, 100)}


def _bursty_index(results):
    """{(ip, flows, size, frames per burst): the burst rate found} of the
    bursty section (0 where no rate passed: a regression from any)."""
    return {(*key_of(results, e), b["frames_per_burst"]): b.get("fps")
            for e in results.get("bursty") or [] for b in e.get("bursts") or []}


def _bounds(results):
    """The latency bounds' texts of the throughput rows that have one."""
    return {r["latency_bound"]["text"] for r in results["throughput"] if r.get("latency_bound")}


def _bounded_index(results, text):
    """{key: the rate within the bound `text`} (0 where none passed: a regression from any)."""
    return {key_of(results, r): r.get("bounded_fps") or 0.0 for r in results["throughput"]
            if (r.get("latency_bound") or {}).get("text") == text}


def _row_order(key):
    """(ip, flows, size) keys in order: sizes by number, IMIX (size 0) after them."""
    ip, flows, size = key
    return (ip or 0, flows or 0, not size, size or 0)


def compare(old, new, threshold_pct):
    """Rows (one per frame size and metric), notes on differing conditions, failures."""
    rows = []
    label_ip = len(set(ip_versions(old)) | set(ip_versions(new))) > 1
    for metric, (section, field, higher_better, gated) in METRICS.items():
        before, after = _index(old, section, field), _index(new, section, field)
        for key in sorted(set(before) | set(after), key=_row_order):
            a, b = before.get(key), after.get(key)
            if a is None and b is None:
                continue
            rows.append(_row(metric, key, a, b, higher_better, gated, threshold_pct, label_ip))
    for text in sorted(set(_bounds(old)) | set(_bounds(new))):
        # a series per bound: rates under different bounds are not one figure
        before, after = _bounded_index(old, text), _bounded_index(new, text)
        for key in sorted(set(before) | set(after), key=_row_order):
            rows.append(_row(f"throughput within {text} (frames/s)", key, before.get(key), after.get(key),
                             True, True, threshold_pct, label_ip))
    before, after = _bursty_index(old), _bursty_index(new)
    for key in sorted(set(before) | set(after)):
        row = _row(BURSTY_METRIC, key[:3], before.get(key), after.get(key), True, True, threshold_pct, label_ip)
        row["frames_per_burst"] = key[3]
        row["label"] += f", bursts of {key[3]}"
        rows.append(row)
    rows += _service_rows(old, new, threshold_pct)
    if not rows:
        raise BadInput(f"{new['source']}: nothing to compare with {old['source']}: "
                       "neither file has throughput or latency results")
    if not any(r["old"] is not None and r["new"] is not None for r in rows):
        raise BadInput(f"{new['source']}: no frame size measured in both runs; nothing to compare")
    return {"rows": rows, "notes": condition_notes(old, new),
            "failures": [r for r in rows if r["status"] in ("regression", "missing")],
            "threshold_pct": threshold_pct}


def _service_steps(results):
    """{(service, CIR step label): the step's row} of the Y.1564 section."""
    return {(e["service"], s["label"]): s for e in results.get("y1564_configuration") or []
            for s in e.get("steps") or [] if s.get("kind") == "cir"}


def _service_rows(old, new, threshold_pct):
    """Per service and CIR step, what it got inside its contract; and a
    service that passed in OLD and fails in NEW, as a regression."""
    rows = []
    before, after = _service_steps(old), _service_steps(new)
    for metric, field, higher_better, gated, unit in SERVICE_METRICS:
        for key in sorted(set(before) | set(after)):
            a, b = (before.get(key) or {}).get(field), (after.get(key) or {}).get(field)
            if a is None and b is None:
                continue
            row = _row(metric, (None, 1, 0), a, b, higher_better, gated, threshold_pct, False)
            rows.append({**row, "label": f"service {key[0]}, {key[1]}", "unit": unit, "frame_size": None})
    verdicts = [{e["service"]: e.get("verdict") for e in r.get("y1564_configuration") or []} for r in (old, new)]
    for service in sorted(set(verdicts[0]) & set(verdicts[1])):
        a, b = verdicts[0][service], verdicts[1][service]
        rows.append({"metric": "Y.1564 verdict", "frame_size": None, "ip_version": None, "flows": 1,
                     "label": f"service {service}", "old": a, "new": b, "change_pct": None, "better_pct": None,
                     "gated": True, "unit": "verdict",
                     "status": "regression" if a == "pass" and b == "fail" else "better" if a == "fail" and
                     b == "pass" else "ok"})
    return rows


def _row(metric, key, a, b, higher_better, gated, threshold_pct, label_ip):
    ip, flows, size = key
    change = (b - a) / a * 100 if a not in (None, 0) and b is not None else None
    better = None if change is None else (change if higher_better else -change)
    if b is None:
        status = "missing" if gated else "not measured"
    elif a is None:
        status = "new"
    elif better is not None and better < -threshold_pct and gated:
        status = "regression"
    elif better is not None and better < -threshold_pct:
        status = "worse (not gated)"
    elif better is not None and better > threshold_pct:
        status = "better"
    else:
        status = "ok"
    label = frame_label(size) + (f" IPv{ip}" if label_ip else "") + (f", {flows} flows" if flows != 1 else "")
    return {"metric": metric, "frame_size": size, "ip_version": ip, "flows": flows, "label": label, "old": a, "new": b,
            "change_pct": change, "better_pct": better, "gated": gated, "status": status,
            "unit": "fps" if "throughput" in metric else "ns"}


def condition_notes(old, new):
    """Differences in test conditions that make a comparison questionable."""
    notes = []
    for field in CONDITION_FIELDS:
        a, b = old["conditions"].get(field), new["conditions"].get(field)
        if a != b:
            notes.append(f"{field.replace('_', ' ')} differs: {a} (OLD) vs {b} (NEW)")
    kernels = [{h.get("kernel") for h in (r["conditions"].get("hosts") or {}).values()} - {None}
               for r in (old, new)]
    if kernels[0] != kernels[1]:
        notes.append(f"kernels differ: {', '.join(sorted(kernels[0])) or '?'} (OLD) vs "
                     f"{', '.join(sorted(kernels[1])) or '?'} (NEW)")
    for name, r in (("OLD", old), ("NEW", new)):
        if not r["complete"]:
            notes.append(f"{name} is an incomplete run")
        bound = [frame_label(t["frame_size"]) for t in r["throughput"] if t.get("tester_bound")]
        if bound:
            notes.append(f"{name} throughput is tester-bound at {', '.join(bound)}")
        bursty = [frame_label(t["frame_size"]) for t in r["throughput"] if t.get("tester_bursty")]
        if bursty:
            notes.append(f"{name} throughput is set by the tester's bursts at {', '.join(bursty)} (a lower bound)")
    a, b = old["profile"].get("name"), new["profile"].get("name")
    if a != b:
        notes.append(f"profiles differ: {a} (OLD) vs {b} (NEW)")
    return notes


def format_value(row, value):
    if value is None:
        return "-"
    if row["unit"] == "verdict":
        return str(value)
    if row["unit"] in ("Mbit/s", "ms"):
        return f"{value:,.3f}"
    if row["unit"] == "fps":
        return f"{value:,.0f}"
    return f"{value / 1000:,.1f}"


def text_table(result):
    """The comparison as a plain-text table for the terminal."""
    head = ("frame", "metric", "OLD", "NEW", "change", "verdict")
    lines = [head]
    for r in result["rows"]:
        change = "-" if r["change_pct"] is None else f"{r['change_pct']:+.2f} %"
        lines.append((r["label"], r["metric"], format_value(r, r["old"]), format_value(r, r["new"]), change,
                      r["status"].upper() if r["status"] in ("regression", "missing") else r["status"]))
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    right = {2, 3, 4}
    out = []
    for n, line in enumerate(lines):
        cells = [str(c).rjust(w) if i in right else str(c).ljust(w) for i, (c, w) in enumerate(zip(line, widths))]
        out.append("  ".join(cells).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def failure_message(result, old_path, new_path):
    parts = []
    for r in result["failures"]:
        if r["status"] == "missing":
            parts.append(f"{r['metric']} at {r['label']} not measured in NEW")
        elif r["change_pct"] is None:
            parts.append(f"{r['metric']} at {r['label']} {r['old']} -> {r['new']}")
        else:
            parts.append(f"{r['metric']} at {r['label']} {r['change_pct']:+.1f} %")
    shown = "; ".join(parts[:4]) + (f"; and {len(parts) - 4} more" if len(parts) > 4 else "")
    return (f"{new_path} regressed past {result['threshold_pct']:g} % against {old_path}: {shown}")

