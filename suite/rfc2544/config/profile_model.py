"""The validated profile as typed sections (one dataclass per YAML section).

Dataclasses rather than a validation library: no new runtime dependency, and
the suite already models trials with dataclasses (model.py). The YAML is
still validated by profiles.validate (which names the field in its errors);
`ProfileModel.from_dict` only reads a validated profile, so `profile.model`
gives `profile.model.search.resolution_pct` instead of
`profile["search"]["resolution_pct"]`, and a misspelled field is an
AttributeError at the first run instead of a silent KeyError-or-default.
"""
from dataclasses import asdict, dataclass, fields
from typing import List, Optional, Union


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


@dataclass(frozen=True)
class LatencySettings:
    duration_s: float
    repetitions: int
    loads_pct: List[float]              # % of the throughput; 100 = RFC 2544 26.2, 0 = a minimal load


@dataclass(frozen=True)
class FrameLossSettings:
    step_pct: float
    duration_s: Optional[float]         # None: the profile's trial_duration_s


@dataclass(frozen=True)
class BackToBackSettings:
    burst_s: float
    repetitions: int
    resolution_pct: float
    depletion_s: float


@dataclass(frozen=True)
class BurstySettings:
    burst_sizes: List[int]              # frames per burst, ascending; each a search of its own


@dataclass(frozen=True)
class SystemRecoverySettings:
    overload_pct: float
    recovery_pct: float
    overload_s: float
    recovery_s: float
    repetitions: int


@dataclass(frozen=True)
class ResetSettings:
    duration_s: float
    reset_after_s: float
    repetitions: int


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


SECTION_TYPES = {"waits": Waits, "search": SearchSettings, "latency": LatencySettings,
                 "frame_loss": FrameLossSettings, "back_to_back": BackToBackSettings, "bursty": BurstySettings,
                 "system_recovery": SystemRecoverySettings, "reset": ResetSettings,
                 "modifiers": Modifiers, "thresholds": Thresholds}


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
    latency: LatencySettings
    frame_loss: FrameLossSettings
    back_to_back: BackToBackSettings
    bursty: BurstySettings
    system_recovery: SystemRecoverySettings
    reset: ResetSettings
    modifiers: Modifiers
    thresholds: Thresholds

    @classmethod
    def from_dict(cls, profile):
        """From a validated profile (every field present): unknown or missing keys raise TypeError."""
        values = dict(profile)
        for section, section_type in SECTION_TYPES.items():
            values[section] = section_type(**profile[section])
        return cls(**{f.name: values.pop(f.name) for f in fields(cls)}, **values)

    def to_dict(self):
        return asdict(self)
