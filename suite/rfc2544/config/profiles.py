"""Test profiles: what to run and how (YAML), validated with messages that
name the field, and the list of their departures from RFC 2544.

`load(name_or_path)` accepts a built-in name (quick, rfc2544) or a YAML
file. Unknown keys are errors (a typo must not silently change a run).
"""
import copy
import math
import sys
from importlib import resources
from pathlib import Path


from rfc2544 import catalog, input_files
from rfc2544 import rfc_minimums as rfc
from rfc2544.config import profile_model
from rfc2544.errors import BadInput
from rfc2544.model import BOUND_PERCENTILES

BUILTIN_DIR = Path(str(resources.files("rfc2544") / "profiles"))
TESTS = catalog.names()     # the command line's choices; validation reads the table itself
RFC_FRAME_SIZES = rfc.FRAME_SIZES
IMIX = "imix"       # frame_sizes entry: simple IMIX (7:4:1 of 64/576/1518)
MAX_BURST_FRAMES = 65536      # the module's burst_frames bound
MAX_FLOWS_PER_STREAM = 65526    # UDP source ports 9..65534 (drivers/pktgen.DeviceConfig)

# section -> field -> (kind, default); kind: "pos" > 0, "nonneg" >= 0,
# "int" positive integer, "pct" 0 < x <= 100, "bool", "str", "opt_pos" None or > 0.
# The sections every run reads; each test's own section is its settings
# type's (`schema`).
SCHEMA = {
    None: {
        "name": ("str", "custom"), "description": ("str", ""),
        "tests": ("tests", ["throughput"]), "frame_sizes": ("sizes", list(RFC_FRAME_SIZES)),
        "ip_versions": ("ipv", [4]), "flows": ("flows", [1]), "direction": (("uni", "bi"), "uni"),
        # what a stream's flows vary: UDP source ports, destination
        # networks (RFC 2544 section 12's 256 networks: /24s, IPv6 /64s), or
        # IPv4 source addresses (the ones after the tx port's, a /24 up)
        "flow_spread": (("udp_ports", "dst_networks", "src_addresses"), "udp_ports"),
        "link_mbps": ("opt_pos", None),
        "trial_duration_s": ("pos", float(rfc.FINAL_TRIAL_S)),
    },
    "waits": {key: ("nonneg", float(seconds)) for key, seconds, _ in rfc.WAITS},
    "search": {"method": (("bisection", "mlr"), "bisection"), "initial_duration_s": ("pos", 10.0),
               "resolution_pct": ("pct", 0.5), "pdr_loss_pct": ("opt_pct", 0.5),
               "min_load_pct": ("pct", 1.0), "max_load_fps": ("opt_pos", None),
               "early_abort": ("bool", True), "duration_sum_s": ("opt_pos", None),
               "exceed_ratio": ("ratio", 0.0), "tester_limited_retries": ("count", 1),
               # {percentile: 50 | 99 | 99.9 | max, us: N}: a goal of its own beside
               # the NDR (search/outcome.LatencyBound; an extension of RFC 2544)
               "latency_bound": ("latency_bound", None)},
    # RFC 2544 section 11: frames beside the test streams (drivers/modifiers.py); 0 = off
    "modifiers": {"broadcast_pct": ("broadcast_share", 0.0), "management_fps": ("management_rate", 0.0)},
    "thresholds": {"throughput_min_fps": ("opt_pos", None), "throughput_min_pct": ("opt_pct", None),
                   "latency_p999_max_us": ("opt_pos", None), "latency_median_max_us": ("opt_pos", None)},
}


def schema():
    """Every section's fields: the run's, with each test's own after `search`,
    in the table's order (catalog.py, config/profile_model.py)."""
    out = {}
    for section, section_fields in SCHEMA.items():
        if section == "modifiers":
            out.update({name: profile_model.schema_of(settings_type)
                        for name, settings_type in profile_model.test_sections().items()})
        out[section] = section_fields
    return out


class Profile(dict):
    """The validated profile: a plain dict (sections are dicts) with
    attribute access to sections for readability."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key)

    @property
    def model(self):
        """The typed view (profile_model.ProfileModel), built on first use;
        the profile is not changed after validation."""
        if "_model" not in self.__dict__:
            self.__dict__["_model"] = profile_model.ProfileModel.from_dict(self)
        return self.__dict__["_model"]

    @property
    def frame_sizes_numeric(self):
        return [s for s in self.model.frame_sizes if s != IMIX]


def builtin_names():
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.yml"))


def load(name_or_path):
    path = Path(name_or_path)
    if not path.suffix and (BUILTIN_DIR / f"{name_or_path}.yml").exists():
        path = BUILTIN_DIR / f"{name_or_path}.yml"
    if not path.exists() and not path.is_symlink():
        raise BadInput(f"profile '{name_or_path}' not found (built-in: {', '.join(builtin_names())}, or a YAML file)")
    return validate(input_files.load_yaml(path, "profile"), str(path))


def _key(key):
    """A field name as one line of a message: an odd key (a newline, not a
    string) is shown quoted."""
    return key if isinstance(key, str) and key.isprintable() else repr(key)


def validate(raw, origin="profile"):
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise BadInput(f"{origin}: a profile must be a mapping")
    out = Profile()
    sections_schema = schema()
    sections = [s for s in sections_schema if s is not None]
    for key in raw:
        if key not in SCHEMA[None] and key not in sections:
            raise BadInput(f"{origin}: {_key(key)}: unknown field (known: {', '.join(sorted(list(SCHEMA[None]) + sections))})")
    for key, (kind, default) in SCHEMA[None].items():
        out[key] = _check(origin, key, kind, raw.get(key, copy.deepcopy(default)))
    for section in sections:
        given = raw.get(section) or {}
        if not isinstance(given, dict):
            raise BadInput(f"{origin}: {section}: must be a mapping")
        for key in given:
            if key not in sections_schema[section]:
                raise BadInput(f"{origin}: {section}.{_key(key)}: unknown field "
                               f"(known: {', '.join(sections_schema[section])})")
        out[section] = {key: _check(origin, f"{section}.{key}", kind, given.get(key, copy.deepcopy(default)))
                        for key, (kind, default) in sections_schema[section].items()}
    if out["search"]["initial_duration_s"] > out["trial_duration_s"]:
        raise BadInput(f"{origin}: search.initial_duration_s: must not exceed trial_duration_s ({out['trial_duration_s']})")
    if out["search"]["min_load_pct"] >= 100:
        raise BadInput(f"{origin}: search.min_load_pct: must be below 100 (got {out['search']['min_load_pct']:g})")
    if not out["tests"]:
        raise BadInput(f"{origin}: tests: select at least one test")
    return out


def _usable_number(value):
    """An int or float a range check can judge. NaN compares false both
    ways and would pass every range check; an int past a float's range is
    no usable number either (float() of it overflows)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and abs(value) <= sys.float_info.max and math.isfinite(value))


def _check(origin, where, kind, value):
    def bad(msg):
        raise BadInput(f"{origin}: {where}: {msg} (got {value!r})")

    number = _usable_number(value)
    if isinstance(kind, tuple):
        if value not in kind:
            bad(f"must be one of {', '.join(kind)}")
        return value
    if kind == "str":
        if not isinstance(value, str):
            bad("must be a string")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            bad("must be true or false")
        return value
    if kind in ("opt_pos", "opt_pct") and value is None:
        return None
    if kind in ("pos", "opt_pos"):
        if not number or value <= 0:
            bad("must be a positive number")
        return float(value)
    if kind == "nonneg":
        if not number or value < 0:
            bad("must be a number >= 0")
        return float(value)
    if kind in ("pct", "opt_pct"):
        if not number or not 0 < value <= 100:
            bad("must be a percentage in (0, 100]")
        return float(value)
    if kind == "ratio":
        if not number or not 0 <= value < 1:
            bad("must be a number in [0, 1)")
        return float(value)
    if kind == "broadcast_share":
        # 11.2 asks for 1 %; more than a tenth of the frames is no longer the test traffic
        if not number or not 0 <= value <= 10:
            bad("must be a percentage of the offered frames in 0..10 (0 = none; RFC 2544 11.2: 1)")
        return float(value)
    if kind == "management_rate":
        if not number or not 0 <= value <= 100:
            bad("must be frames per second in 0..100 (0 = none; RFC 2544 11.3: 1)")
        return float(value)
    if kind == "latency_bound":
        return _latency_bound(value, bad)
    if kind == "count":
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 10:
            bad("must be a whole number in 0..10")
        return value
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            bad("must be a positive integer")
        return value
    if kind == "tests":
        if isinstance(value, str):
            value = [value]
        known = catalog.names()
        if not isinstance(value, list) or any(t not in known for t in value):
            bad(f"must be a list of: {', '.join(known)}")
        return [t for t in known if t in value]     # RFC order: throughput first
    if kind == "sizes":
        if not isinstance(value, list) or not value:
            bad("must be a non-empty list of frame sizes (64..9216) or 'imix'")
        for s in value:
            if s != IMIX and (not isinstance(s, int) or isinstance(s, bool) or not 64 <= s <= 9216):
                bad(f"{s!r} is not a frame size in 64..9216 or 'imix'")
        if len(set(value)) != len(value):
            bad("has duplicates")
        return value
    if kind == "loads":
        # the latency loads, in % of the throughput: 100 is RFC 2544 26.2's
        # throughput rate, 0 a minimal load (procedures/latency.py)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, list) or not value:
            bad("must be a non-empty list of loads in % of the throughput (0..100; 0 = a minimal load)")
        for load in value:
            if isinstance(load, bool) or not isinstance(load, (int, float)) or not 0 <= load <= 100:
                bad(f"{load!r} is not a load in % of the throughput (a number in 0..100; 0 = a minimal load)")
        if len(set(value)) != len(value):
            bad("has duplicates")
        return [float(load) for load in value]
    if kind == "flows":
        # flows per stream, each count its own steps (RFC 2544 section 12:
        # one flow first, then many); the UDP source port varies per frame
        # (drivers/pktgen.DeviceConfig), up to the port range's end
        return _whole_numbers(value, bad, 1, MAX_FLOWS_PER_STREAM, "flow counts per stream",
                              "a flow count per stream (a whole number in 1..{high})")
    if kind == "bursts":
        # frames per burst (procedures/bursty.py), each size a search of its own
        return sorted(_whole_numbers(value, bad, 2, MAX_BURST_FRAMES, "burst sizes in frames",
                                     "a burst size (a whole number of frames in 2..{high})"))
    if kind == "step_pcts":
        # Y.1564's CIR step loads, in % of the CIR, ascending (may be none: the other steps only)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, list) or len(value) > 10:
            bad("must be a list of at most 10 step loads in % of the CIR (0 < x <= 100)")
        for load in value:
            if isinstance(load, bool) or not isinstance(load, (int, float)) or not 0 < load <= 100 \
                    or not math.isfinite(load):
                bad(f"{load!r} is not a step load in % of the CIR (0 < x <= 100)")
        if len(set(value)) != len(value):
            bad("has duplicates")
        return sorted(float(load) for load in value)
    if kind == "percentile":
        word = _percentile_word(value)
        if word is None:
            bad(f"must be one of {', '.join(BOUND_PERCENTILES)}")
        return word
    if kind == "ipv":
        if isinstance(value, int):
            value = [value]
        if not isinstance(value, list) or not value or any(v not in (4, 6) for v in value):
            bad("must be a list of 4 and/or 6")
        return sorted(set(value))
    raise AssertionError(kind)


MAX_BOUND_US = 3.6e9        # an hour: beyond it no trial could show the bound


def _latency_bound(value, bad):
    """None, or {percentile: "50" | "99" | "99.9" | "max", us: float}."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"percentile", "us"}:
        bad("must be a mapping {percentile: 50 | 99 | 99.9 | max, us: microseconds}")
    word = _percentile_word(value["percentile"])
    if word is None:
        bad(f"percentile must be one of {', '.join(BOUND_PERCENTILES)}")
    us = value["us"]
    if not _usable_number(us) or not 0 < us <= MAX_BOUND_US:
        bad(f"us must be a number of microseconds in (0, {MAX_BOUND_US:g}]")
    return {"percentile": word, "us": float(us)}


def _percentile_word(pct):
    """The BOUND_PERCENTILES word `pct` names (a number names the one it
    equals exactly: 99.90000001 is none), or None."""
    word = pct if isinstance(pct, str) else next(
        (w for w in BOUND_PERCENTILES if w != "max" and _usable_number(pct) and pct == float(w)), None)
    return word if word in BOUND_PERCENTILES else None


def _whole_numbers(value, bad, low, high, plural, one):
    """A non-empty list of distinct whole numbers in low..high (one number
    alone stands for a list of it); `bad(message)` refuses."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value:
        bad(f"must be a non-empty list of {plural} ({low}..{high})")
    for n in value:
        if isinstance(n, bool) or not isinstance(n, int) or not low <= n <= high:
            bad(f"{n!r} is not " + one.format(high=high))
    if len(set(value)) != len(value):
        bad("has duplicates")
    return value


def deviation_records(profile, tags=0, plans=()):
    """Every departure of `profile` from RFC 2544 (and RFC 9004/8219), as
    deviations.Deviation records (what results.json stores); `tags`: the
    VLAN tags the inventory's streams send; `plans`: the streams
    (drivers/streams.py), whose tags a DUT may change."""
    from rfc2544.results.deviations import profile_deviations
    if all(catalog.entry(t).frame_sizes == catalog.PER_SERVICE for t in profile.model.tests):
        return []       # Y.1564 only: RFC 2544's sizes and waits are not what it runs
    return profile_deviations(profile, RFC_FRAME_SIZES, IMIX, tags, plans)


def deviations(profile):
    """The same departures, as sentences."""
    return [d.text for d in deviation_records(profile)]
