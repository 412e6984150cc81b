"""The validated profile as typed sections (one dataclass per YAML section).

Dataclasses rather than a validation library: no new runtime dependency, and
the suite already models trials with dataclasses (model.py). The YAML is
still validated by profiles.validate (which names the field in its errors);
`ProfileModel.from_dict` only reads a validated profile, so `profile.model`
gives `profile.model.search.resolution_pct` instead of
`profile["search"]["resolution_pct"]`, and a misspelled field is an
AttributeError at the first run instead of a silent KeyError-or-default.
"""
from dataclasses import asdict, dataclass, field, fields
from typing import List, Optional, Union

from rfc2544 import catalog
from rfc2544 import rfc_minimums as rfc


def setting(kind, default):
    """A test's setting: its check (profiles._check's kinds) and its default,
    which the profile's schema reads (`schema_of`)."""
    return field(metadata={"kind": kind, "default": default})


def schema_of(settings_type):
    """field -> (kind, default) of a test's settings type, for profiles.validate."""
    return {f.name: (f.metadata["kind"], f.metadata["default"]) for f in fields(settings_type)}


@dataclass(frozen=True)
class Waits:
    route_s: float
    learning_s: float
    residual_s: float
    settle_s: float


@dataclass(frozen=True)
class SearchSettings:
    method: str                         # bisection | mlr
    initial_duration_s: float
    resolution_pct: float
    pdr_loss_pct: Optional[float]
    min_load_pct: float
    max_load_fps: Optional[float]
    early_abort: bool
    duration_sum_s: Optional[float]
    exceed_ratio: float
    tester_limited_retries: int
    latency_bound: Optional[dict]       # {percentile, us} or None (search.outcome.LatencyBound)


# Each test's own section of the profile (catalog.py names its type). A
# setting's kind is one of profiles._check's: "pos" > 0, "nonneg" >= 0, "int"
# a positive integer, "pct" 0 < x <= 100, "opt_pos" None or > 0, or a
# named check ("loads", "bursts").
@dataclass(frozen=True)
class LatencySettings:
    duration_s: float = setting("pos", float(rfc.LATENCY_TRIAL_S))
    repetitions: int = setting("int", rfc.LATENCY_REPETITIONS)
    # % of the throughput; 100 = RFC 2544 26.2, 0 = a minimal load
    loads_pct: List[float] = setting("loads", [100.0])


@dataclass(frozen=True)
class FrameLossSettings:
    step_pct: float = setting("pct", float(rfc.LOSS_STEP_PCT))
    duration_s: Optional[float] = setting("opt_pos", None)     # None: the profile's trial_duration_s


@dataclass(frozen=True)
class BackToBackSettings:
    burst_s: float = setting("pos", float(rfc.B2B_BURST_S))
    repetitions: int = setting("int", rfc.B2B_TRIALS)
    resolution_pct: float = setting("pct", 1.0)
    depletion_s: float = setting("nonneg", float(rfc.B2B_DEPLETION_S))


@dataclass(frozen=True)
class BurstySettings:
    # RFC 2544 section 21: bursts of each size at the generator's minimum
    # gap; frames per burst, ascending; each a search of its own
    burst_sizes: List[int] = setting("bursts", [16, 64, 256, 1024])


@dataclass(frozen=True)
class SystemRecoverySettings:
    overload_pct: float = setting("pos", round(rfc.RECOVERY_OVERLOAD * 100, 6))
    recovery_pct: float = setting("pct", 50.0)
    overload_s: float = setting("pos", float(rfc.RECOVERY_OVERLOAD_S))
    recovery_s: float = setting("pos", 30.0)
    repetitions: int = setting("int", 1)


@dataclass(frozen=True)
class ResetSettings:
    duration_s: float = setting("pos", 60.0)
    reset_after_s: float = setting("pos", 10.0)
    repetitions: int = setting("int", 1)


@dataclass(frozen=True)
class Y1564ConfigurationSettings:
    # ITU-T Y.1564 8.1, each service alone (y1564/steps.py): the CIR step
    # loads in % of the CIR, then the EIR, traffic policing and (optional)
    # CBS/EBS burst steps, each `step_s` long
    cir_steps_pct: List[float] = setting("step_pcts", [25.0, 50.0, 75.0, 100.0])
    step_s: float = setting("pos", 60.0)
    eir_step: bool = setting("bool", True)
    policing_step: bool = setting("bool", True)
    burst_steps: bool = setting("bool", False)
    # M: how far above CIR + EIR the received rate may be, in % (the DUT's meters' bursts)
    m_factor_pct: float = setting("nonneg", 5.0)
    # FDV: the delay at this percentile less the least delay (y1564/rules.py)
    fdv_percentile: str = setting("percentile", "99.9")


@dataclass(frozen=True)
class Modifiers:
    broadcast_pct: float                # % of the offered frames sent to the broadcast address; 0 = off
    management_fps: float               # frames/s to the DUT's own address; 0 = off


@dataclass(frozen=True)
class Thresholds:
    throughput_min_fps: Optional[float]
    throughput_min_pct: Optional[float]
    latency_p999_max_us: Optional[float]
    latency_median_max_us: Optional[float]


# the sections every run reads; each test's own comes from the table
SECTION_TYPES = {"waits": Waits, "search": SearchSettings, "modifiers": Modifiers, "thresholds": Thresholds}


def test_sections():
    """test name -> its settings type, for the tests that have a section (catalog.py)."""
    return {t.name: catalog.resolve(t.settings) for t in catalog.TESTS if t.settings}


@dataclass(frozen=True)
class ProfileModel:
    name: str
    description: str
    tests: List[str]
    frame_sizes: List[Union[int, str]]  # "imix" for the simple IMIX
    ip_versions: List[int]
    flows: List[int]                    # flows per stream, each count its own steps
    direction: str                      # uni | bi: every stream also sent back (RFC 2544 section 14)
    flow_spread: str                    # udp_ports | dst_networks | src_addresses: what a stream's flows vary
    link_mbps: Optional[float]
    trial_duration_s: float
    waits: Waits
    search: SearchSettings
    modifiers: Modifiers
    thresholds: Thresholds
    # each test's own section by its name (`model.latency` reads it)
    settings: dict = field(default_factory=dict)

    def __getattr__(self, name):
        settings = self.__dict__.get("settings") or {}
        if name in settings:
            return settings[name]
        raise AttributeError(name)

    @classmethod
    def from_dict(cls, profile):
        """From a validated profile (every field present): unknown or missing keys raise TypeError."""
        values = dict(profile)
        for section, section_type in SECTION_TYPES.items():
            values[section] = section_type(**profile[section])
        settings = {name: section_type(**values.pop(name)) for name, section_type in test_sections().items()}
        return cls(**{f.name: values.pop(f.name) for f in fields(cls) if f.name != "settings"},
                   settings=settings, **values)

    def to_dict(self):
        out = asdict(self)
        out.update(out.pop("settings"))
        return out
