"""Departures from RFC 2544 (and RFC 8219 / RFC 9004) as records.

Each deviation is written into results.json as {code, section, asked, used,
text}: the report matches its own checks against `code` (a stable name,
the same as the report's check topic where both mean the same thing) instead
of searching the English sentence, and shows `text` unchanged. Files written
before the records existed hold sentences only; `text_of` and `code_of` read
both. A dataclass for the reason given in records.py.
"""
from dataclasses import asdict, dataclass
from typing import Optional, Union

from rfc2544 import rfc_minimums as rfc
from rfc2544 import wire
from rfc2544.drivers.streams import arrival_changes, arriving_frame_size


@dataclass
class Deviation:
    code: str                   # e.g. "final_trial", "latency_repetitions" (stable, for matching)
    section: Optional[str]      # where it is asked: "RFC 2544 24", "RFC 9004", ...
    asked: Optional[str]        # what the RFC asks, e.g. "60 s"
    used: Optional[str]         # what the run did, e.g. "2 s"
    text: str                   # the sentence shown in the report

    @classmethod
    def from_dict(cls, d):
        return cls(**d)

    def to_dict(self):
        return asdict(self)


def as_written(deviation: Union[Deviation, str, dict]):
    """The JSON form: a record's dict; a bare sentence stays a sentence."""
    return deviation.to_dict() if isinstance(deviation, Deviation) else deviation


def text_of(deviation):
    """The sentence of a deviation, record or (older files) bare sentence."""
    return deviation.get("text", "") if isinstance(deviation, dict) else str(deviation)


def code_of(deviation):
    """The record's code; None for a bare sentence (older files)."""
    return deviation.get("code") if isinstance(deviation, dict) else None


RFC_WAITS = rfc.WAITS


def profile_deviations(profile, rfc_frame_sizes, imix, tags=0, plans=()):
    """Every departure of the validated profile from the RFCs, in the
    order (and with the sentences) profiles.deviations has always given;
    `plans`: the run's streams (drivers/streams.py StreamPlan), whose tag
    changes at the DUT may leave a received length unknown."""
    out, m = [], profile.model

    def add(code, section, asked, used, text):
        out.append(Deviation(code, section, asked, used, text))

    if m.trial_duration_s < rfc.FINAL_TRIAL_S:
        add("final_trial", "RFC 2544 24", f"{rfc.FINAL_TRIAL_S} s", f"{m.trial_duration_s:g} s",
            f"trial duration {m.trial_duration_s:g} s is shorter than the {rfc.FINAL_TRIAL_S} s of RFC 2544 section 24")
    for key, asked, what in RFC_WAITS:
        wait = getattr(m.waits, key)
        if wait < asked:
            add(f"wait_{key[:-2]}", "RFC 2544 23", f"{asked} s", f"{wait:g} s",
                f"wait {what} is {wait:g} s, RFC 2544 section 23 asks {asked} s")
    missing = [s for s in rfc_frame_sizes if s not in m.frame_sizes]
    if missing:
        add("frame_sizes_missing", "RFC 2544 9", ", ".join(map(str, rfc_frame_sizes)),
            ", ".join(map(str, m.frame_sizes)),
            f"frame sizes {', '.join(map(str, missing))} of RFC 2544 section 9 not tested")
    if imix in m.frame_sizes:
        add("imix", "RFC 2544 9", None, "IMIX", "IMIX is not an RFC 2544 frame size (reported separately)")
    out += frame_size_deviations(m, imix, tags)
    out += rx_length_deviations(m, imix, tags, plans)
    s = m.search
    if s.method == "mlr" and s.exceed_ratio > 0:
        add("mlr_exceed_ratio", "RFC 2544 26.1", "0", f"{s.exceed_ratio:g}",
            f"MLRsearch exceed ratio {s.exceed_ratio:g}: some full-length trials at the NDR may have lost frames")
    if s.latency_bound is not None:
        from rfc2544.model import LatencyBound
        bound = LatencyBound.from_profile(s.latency_bound)
        add("latency_bound", "RFC 2544 26.1", None, bound.text,
            f"throughput is also searched under a latency bound ({bound.text}), an extension of RFC 2544 and "
            "RFC 9971: the NDR keeps its RFC meaning and is reported beside the bounded rate; every search "
            "trial records each frame's latency (receiver level time, about 3 % below level basic's receive "
            "ceiling per CPU in bench/kmod_rx_scaling.py)")
    out += _test_deviations(m)
    return out


def frame_size_deviations(m, imix, tags=0):
    """Sizes of the profile the headers (with `tags` VLAN tags) do not fit
    in, per IP version: the run sends the smallest size that holds them
    instead (rfc2544/wire.py) and states that size everywhere, with every
    rate computed from it."""
    out = []
    tagged = {0: "", 1: ", its VLAN tag", 2: ", its two VLAN tags (QinQ)"}[tags]
    for version in m.ip_versions:
        ipv6 = version == 6
        least = wire.min_frame_size(ipv6, tags)
        small = [s for s in m.frame_sizes if s != imix and wire.wire_frame_size(s, ipv6, tags) != s]
        if small:
            sizes = ", ".join(f"{s} B" for s in small)
            out.append(Deviation(
                "frame_size_raised", "RFC 5180 5.1.1", sizes, f"{least} B",
                f"IPv{version}: {sizes} cannot hold the Ethernet{tagged}, IPv{version} and UDP headers and the "
                f"generator's {wire.TEST_HEADER}-byte test header; sent as {least} B frames (with FCS), "
                f"the smallest that can, and every rate, Mbit/s and % of the maximum is for {least} B"))
        mix = wire.imix_mix(ipv6, tags)
        if imix in m.frame_sizes and mix != wire.SIMPLE_IMIX:
            sent = ":".join(str(w) for _, w in mix) + " of " + "/".join(str(s) for s, _ in mix)
            out.append(Deviation(
                "imix_raised", "RFC 5180 5.1.1", "7:4:1 of 64/576/1518", sent,
                f"IPv{version}: the IMIX's 64 B frames cannot hold the headers and are sent as "
                f"{least} B: the IMIX sent is {sent} B (mean {wire.imix_mean_size(ipv6, tags):.1f} B)"))
    return out


def rx_length_deviations(m, imix, tags, plans):
    """Where the receiver cannot check the length received (RFC 2544
    section 10) because the DUT changes the streams' tags: streams into
    one host that arrive with different tag changes, or frames a removed
    tag leaves shorter than 64 B (streams.arriving_frame_size). It then counts
    frames of any length there."""
    out = []
    if not any(p.tags.rewritten for p in plans):
        return out
    for version in m.ip_versions:
        sizes = sorted({wire.wire_frame_size(s, version == 6, tags) for s in m.frame_sizes if s != imix})
        for host in sorted({p.rx_host for p in plans}):
            unknown = [s for s in sizes if arriving_frame_size(plans, host, s) is None]
            if not unknown:
                continue
            listed = ", ".join(f"{s} B" for s in unknown)
            why = ("its streams arrive with different changes (tags added on some, removed on others)"
                   if len(arrival_changes(plans, host)) > 1 else
                   "a removed tag leaves the frames shorter than 64 B, and the DUT's padding decides their length")
            out.append(Deviation(
                "rx_length_unchecked", "RFC 2544 10", "the length received checked", f"{host}: any length",
                f"IPv{version}: {host} does not check the length of the frames it receives at {listed}: "
                f"the DUT changes their VLAN tags, and {why}"))
    return out


def _test_deviations(m):
    """The deviations of the per-test sections (of the ProfileModel `m`), for the tests it runs."""
    out, tests = [], m.tests

    def add(code, section, asked, used, text):
        out.append(Deviation(code, section, asked, used, text))

    lat, b2b, rec, step = m.latency, m.back_to_back, m.system_recovery, m.frame_loss.step_pct
    if "latency" in tests and lat.duration_s < rfc.LATENCY_TRIAL_S:
        add("latency_duration", "RFC 2544 26.2", f"{rfc.LATENCY_TRIAL_S} s", f"{lat.duration_s:g} s",
            f"latency trials last {lat.duration_s:g} s, RFC 2544 26.2 asks at least {rfc.LATENCY_TRIAL_S} s")
    if "latency" in tests and 100 not in lat.loads_pct:
        loads = ", ".join(f"{x:g} %" for x in lat.loads_pct)
        add("latency_loads", "RFC 2544 26.2", "100 % of the throughput", loads,
            f"latency measured only at {loads} of the throughput (0 %: a minimal load), "
            "RFC 2544 26.2 asks at the throughput rate")
    if "latency" in tests and lat.repetitions < rfc.LATENCY_REPETITIONS:
        add("latency_repetitions", "RFC 2544 26.2", str(rfc.LATENCY_REPETITIONS), str(lat.repetitions),
            f"latency repeated {lat.repetitions} times, RFC 2544 26.2 asks at least {rfc.LATENCY_REPETITIONS}")
    if "frame_loss" in tests and step > rfc.LOSS_STEP_PCT:
        add("loss_step", "RFC 2544 26.3", f"{rfc.LOSS_STEP_PCT} %", f"{step:g} %",
            f"frame loss steps of {step:g} %, RFC 2544 26.3 asks {rfc.LOSS_STEP_PCT} % or finer")
    if "back_to_back" in tests and b2b.burst_s < rfc.B2B_BURST_S:
        add("b2b_burst", "RFC 9004", f"{rfc.B2B_BURST_S} s", f"{b2b.burst_s:g} s",
            f"back-to-back bursts of {b2b.burst_s:g} s, RFC 2544 26.4/RFC 9004 ask at least {rfc.B2B_BURST_S} s")
    if "back_to_back" in tests and b2b.depletion_s < rfc.B2B_DEPLETION_S:
        add("b2b_depletion", "RFC 9004", f"{rfc.B2B_DEPLETION_S} s", f"{b2b.depletion_s:g} s",
            f"back-to-back bursts start {b2b.depletion_s:g} s after the previous one, "
            f"RFC 9004 asks at least {rfc.B2B_DEPLETION_S} s of buffer depletion")
    if "back_to_back" in tests and b2b.repetitions < rfc.B2B_TRIALS:
        add("b2b_trials", "RFC 2544 26.4", str(rfc.B2B_TRIALS), str(b2b.repetitions),
            f"back-to-back repeated {b2b.repetitions} times, RFC 2544 26.4 asks at least {rfc.B2B_TRIALS}")
    if "system_recovery" in tests and rec.overload_s < rfc.RECOVERY_OVERLOAD_S:
        add("recovery_overload_s", "RFC 2544 26.5", f"{rfc.RECOVERY_OVERLOAD_S} s", f"{rec.overload_s:g} s",
            f"system recovery overload lasts {rec.overload_s:g} s, RFC 2544 26.5 asks at least "
            f"{rfc.RECOVERY_OVERLOAD_S} s")
    return out
