"""Figures the report shows, derived from a loaded results dict.

Rows are keyed by (IP version, frame size): a profile may run IPv4 and IPv6.
Percentages of the theoretical maximum are recomputed from frames/s and the
link speed whenever both are known, so the report does not depend on how a
writer scaled `pct_of_max` / `load_pct`; the stored value is the fallback.
"""
from rfc2544 import catalog
from rfc2544.results.conditions import stream_port_speeds
from rfc2544.model import ETHERNET_OVERHEAD, theoretical_max_fps

def test_titles():
    """Each test's section -> the report's heading for it, in the table's order (catalog.py)."""
    return {t.name: t.title for t in catalog.TESTS}


def frame_label(size):
    return "IMIX" if size == 0 else f"{size} B"


def default_ip(results):
    return results["conditions"].get("ip_version") or 4


def ip_of(results, entry):
    return entry.get("ip_version") or default_ip(results)


def ip_versions(results):
    seen = {ip_of(results, e) for section in list(test_titles()) + ["trials", "plan"] for e in results[section]}
    return sorted(seen) or [default_ip(results)]


def flows_of(entry):
    """Flows per stream of a row, plan step or trial (a trial's are in its spec)."""
    return entry.get("flows") or (entry.get("spec") or {}).get("flows") or 1


def key_of(results, entry):
    return (ip_of(results, entry), flows_of(entry), entry.get("frame_size"))


def labeller(results):
    """Frame size label, with the IP version only when the run mixed versions."""
    mixed = len(ip_versions(results)) > 1
    # a stream's flows are destination networks (RFC 2544 section 12), source addresses or UDP ports
    unit = {"dst_networks": "networks", "src_addresses": "sources"}.get(
        (results.get("profile") or {}).get("flow_spread"), "flows")

    def label(entry):
        text = frame_label(entry.get("frame_size"))      # the size sent
        if entry.get("requested_frame_size"):
            text += f" ({entry['requested_frame_size']} B asked)"
        text = f"{text} IPv{ip_of(results, entry)}" if mixed else text
        if flows_of(entry) != 1:
            text += f", {flows_of(entry)} {unit}"
        load = entry.get("throughput_pct")       # latency at another load than the throughput's
        if load is not None and load != 100:
            text += f" at {load:g} % of throughput" if load else " at a minimal load"
        return text
    return label


def link_max_fps(size, link_mbps):
    if not size or not link_mbps:
        return None
    return theoretical_max_fps(size, link_mbps)


def _rows(results, section):
    label = labeller(results)
    return [{**r, "label": label(r), "ip_version": ip_of(results, r)}
            for r in sorted(results[section], key=lambda r: key_of(results, r))]


def throughput_rows(results):
    """One row per frame size: fps, Mbit/s, % of the theoretical maximum, tester-bound."""
    link = results["conditions"].get("link_speed_mbps")
    rows = []
    for t in _rows(results, "throughput"):
        size, fps = t["frame_size"], t["fps"]
        top = t.get("theoretical_max_fps") or link_max_fps(size, link)
        mbps = t.get("mbps")
        if mbps is None and size:
            mbps = fps * size * 8 / 1e6
        line_mbps = t.get("line_mbps")
        if line_mbps is None and size:
            line_mbps = fps * (size + ETHERNET_OVERHEAD) * 8 / 1e6
        pct = fps / top * 100 if top else t.get("pct_of_max")
        rows.append({**t, "theoretical_max_fps": top, "mbps": mbps, "line_mbps": line_mbps,
                     "pct_of_max": pct, "tester_bound": bool(t.get("tester_bound")),
                     "tester_bursty": bool(t.get("tester_bursty"))})
    return rows


def headline(results):
    """RFC 2544 26.1: one figure quoted with frame size, limit and protocol.

    The smallest frame size is quoted: it stresses a forwarder most, and RFC
    2544's tables start with it.
    """
    rows = throughput_rows(results)
    if not rows:
        return None
    row = min((r for r in rows if r["frame_size"]), default=rows[0],
              key=lambda r: (r["frame_size"], r["ip_version"]))
    return {"row": row, "protocol": f"IPv{row['ip_version']}",
            "link": link_text(results["conditions"].get("link_speed_mbps")),
            "loss_goal": "0 % loss (RFC 1242 throughput)"}


LINK_SOURCES = {"profile": "the profile's link_mbps", "inventory": "the inventory's port speed",
                "NICs": "the speed the tester's ports reported"}


def ip_versions_text(results):
    """The IP versions the run's measurements used."""
    return ", ".join(f"IPv{v}" for v in ip_versions(results))


def modifiers_text(results):
    """RFC 2544 section 11's frames the run sent beside its streams, in
    words ('' when none: files before schema_minor 6 had none)."""
    mods = (results.get("conditions") or {}).get("modifiers")
    if not isinstance(mods, dict):
        return ""
    parts = []
    if mods.get("broadcast_pct"):
        parts.append(f"broadcast frames, {mods['broadcast_pct']:g} % of the offered frames (RFC 2544 11.2)")
    if mods.get("management_fps"):
        parts.append(f"management frames, {mods['management_fps']:g} a second to the DUT's address (RFC 2544 11.3)")
    return "; ".join(parts)


def link_used(results):
    """The link speed the run used for line-rate figures, where it came
    from, and what the stream ports reported: one line for the report."""
    conditions = results["conditions"]
    mbps = conditions.get("link_speed_mbps")
    text = link_text(mbps)
    source = LINK_SOURCES.get(conditions.get("link_speed_source"))
    if mbps and source:
        text += f" (from {source})"
    reported = [f"{end} {link_text(speed).replace(' Ethernet', '') if speed else 'unknown'}"
                for end, speed in stream_port_speeds(conditions)]
    if reported:
        text += f"; ports reported: {', '.join(reported)}"
    return text


def profile_rows(results):
    """The profile as (key, value) rows; a link_mbps left unset says what was used instead."""
    rows = flatten(results["profile"])
    mbps = results["conditions"].get("link_speed_mbps")
    source = LINK_SOURCES.get(results["conditions"].get("link_speed_source"))
    return [(k, f"not set: {link_text(mbps)} from {source or 'the inventory'} was used"
             if k == "link_mbps" and v is None and mbps else v) for k, v in rows]


def link_text(mbps):
    if not mbps:
        return "unknown link speed"
    if mbps >= 1000:
        return f"{mbps / 1000:g} Gbit/s Ethernet"
    return f"{mbps:g} Mbit/s Ethernet"


def latency_load_pct(entry):
    """A latency row's load in % of the throughput (older files: 100)."""
    pct = entry.get("throughput_pct")
    return 100.0 if pct is None else pct


def latency_rows(results):
    """Per frame size, highest load first; `series` names the frame size
    without the load (one series per frame size over the loads)."""
    label = labeller(results)
    rows = [{**r, "series": label({**r, "throughput_pct": None})} for r in _rows(results, "latency")]
    return sorted(rows, key=lambda r: (key_of(results, r), -latency_load_pct(r)))


def latency_loads(results):
    """The latency loads of the run, in % of the throughput, highest first."""
    return sorted({latency_load_pct(r) for r in results["latency"]}, reverse=True)


def latency_definitions(results):
    """Which RFC 1242 latency definition(s) the run used, and how it was measured."""
    defs = sorted({r.get("definition") for r in results["latency"] if r.get("definition")})
    return {"definitions": defs, "detail": results["conditions"].get("latency_definition")}


def frame_loss_rows(results):
    return [{**r, "points": sorted(r["points"], key=lambda p: -p["load_pct"])}
            for r in _rows(results, "frame_loss")]


def section_rows(results, section):
    return _rows(results, section)


def bursty_rows(results):
    """RFC 2544 section 21: per frame size, its burst sizes smallest first
    (each the NDR of a search over the mean rate), the largest that passed,
    and the steady throughput they compare with."""
    return [{**r, "bursts": sorted(r.get("bursts") or [], key=lambda b: b.get("frames_per_burst") or 0)}
            for r in _rows(results, "bursty")]


def trial_rows(results):
    link = results["conditions"].get("link_speed_mbps")
    label = labeller(results)
    rows = []
    last_day = None
    for t in results["trials"]:
        started = str(t.get("started") or "")
        day = started[:10] if len(started) >= 19 else None
        # The time of day, with the date on the first trial and whenever it changes.
        started_text = (started.replace("T", " ")[:19] if day != last_day else started[11:19]) if day else started
        last_day = day or last_day
        loss_pct = None
        if t.get("loss_ratio") is not None:
            loss_pct = t["loss_ratio"] * 100
        elif t.get("tx_frames"):
            loss_pct = (t.get("lost_frames") or 0) * 100 / t["tx_frames"]
        top = link_max_fps(t.get("frame_size"), link)
        load_pct = t["load_fps"] / top * 100 if top and t.get("load_fps") is not None else t.get("load_pct")
        rows.append({**t, "label": label(t), "loss_pct": loss_pct, "load_pct": load_pct,
                     "verdict": t.get("verdict") or "unknown", "started_text": started_text or None})
    return rows


def spacing_rows(results):
    """Departure spacing per test and frame size: for throughput the trial
    at the NDR and the one just above it (the upper bound), for the other
    tests the trial with the longest micro-burst. Each row is a trial with
    its `spacing` and a `which` label; [] when no trial has spacing (the
    in-tree generator records no departures)."""
    label = labeller(results)
    trials = [t for t in results["trials"] if t.get("spacing") and not t.get("superseded")]
    rows = []
    units = {}
    for t in trials:
        units.setdefault((t.get("test") or "",) + key_of(results, t), []).append(t)
    ndr = {key_of(results, r): r for r in results["throughput"]}
    for (test, *key), unit in sorted(units.items(), key=lambda kv: kv[0][:3] + (kv[0][3] or 0,)):
        picks = []
        row = ndr.get(tuple(key)) if test == "throughput" else None
        if row:
            for which, load in (("at the NDR", row.get("ndr_fps")), ("just above", row.get("ndr_upper_fps"))):
                at = [t for t in unit if load and abs(t["load_fps"] - load) <= load * 0.001]
                if at:
                    picks.append((which, at[-1]))
        if not picks:
            picks.append(("longest micro-burst", max(unit, key=lambda t: t["spacing"]["longest_micro_burst"])))
        bursty = sum(1 for t in unit if t.get("verdict") == "tester-bursty")
        for which, t in picks:
            rows.append({"test": test, "label": label(t), "which": which, "trial": t, "spacing": t["spacing"],
                         "bursty_trials": bursty, "longest_in_unit": max(x["spacing"]["longest_micro_burst"]
                                                                          for x in unit)})
    return rows


def trial_totals(results):
    counted = [t for t in results["trials"] if not t.get("superseded")]
    by_verdict = {}
    for t in counted:
        v = t.get("verdict") or "unknown"
        by_verdict[v] = by_verdict.get(v, 0) + 1
    return {"count": len(counted), "superseded": len(results["trials"]) - len(counted),
            "traffic_s": sum(t.get("traffic_s") or 0 for t in counted),
            "by_verdict": dict(sorted(by_verdict.items()))}


def hosts(results):
    """Hosts as rows; tuning flattened to key=value, NICs as a list."""
    known = ("role", "kernel", "cpu", "module_version", "tuning", "nics")
    out = []
    for name, h in (results["conditions"].get("hosts") or {}).items():
        out.append({"name": name, "role": h.get("role"), "kernel": h.get("kernel"), "cpu": h.get("cpu"),
                    "module_version": h.get("module_version"),
                    "tuning": sorted(flatten(h.get("tuning") or {})),
                    "nics": [n for n in h.get("nics") or [] if isinstance(n, dict)],
                    "extra": flatten({k: v for k, v in h.items() if k not in known})})
    return out


def calibration_rows(results):
    rows = []
    for size, fps in (results["conditions"].get("calibration") or {}).items():
        try:
            size = int(size)
        except (TypeError, ValueError):
            continue
        rows.append({"frame_size": size, "label": frame_label(size), "fps": fps})
    return sorted(rows, key=lambda r: r["frame_size"])


def flatten(value, prefix=""):
    """A nested mapping as (dotted.key, value) pairs, for a compact table."""
    if isinstance(value, dict):
        pairs = []
        for k, v in value.items():
            pairs += flatten(v, f"{prefix}{k}.")
        return pairs
    return [(prefix.rstrip("."), value)]
