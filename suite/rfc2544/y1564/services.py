"""The services file: what a field engineer writes to turn up a link's
services (docs/y1564.md, the shipped data/services-example.yml).

    defaults:                       # every service's, unless it sets its own
      sac: {flr_pct: 0.1, ftd_ms: 10, fdv_ms: 5, avail_pct: 99.9}
    services:
      - name: voice
        frame_size: 128             # or emix: abceg (Y.1564's letters, in equal shares)
        vlan: 100
        pcp: 5
        dscp: 46
        cir_mbps: 10
        eir_mbps: 0
        cbs_bytes: 12176

Every mistake is one BadInput line naming the file, the service and the
field, before any host is touched.
"""
import math
import re
from dataclasses import asdict, dataclass
from typing import Optional, Tuple

from rfc2544 import input_files, wire
from rfc2544.errors import BadInput
from rfc2544.model import ETHERNET_OVERHEAD

NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9 ._:-]{0,31}")
MAX_SERVICES = 32           # a receiver's stream ids to spare beside the RFC 2544 streams
COLOUR_MODES = ("blind", "aware_dei", "aware_dscp")
# Y.1564 Table 1's EMIX letters (h, MTU, and u, user-defined, are not offered)
EMIX_SIZES = {"a": 64, "b": 128, "c": 256, "d": 512, "e": 1024, "f": 1280, "g": 1518}
MAX_EMIX = 8
MAX_BURST_FRAMES = 65536    # the module's burst_frames bound (a CBS or EBS burst step)
MAX_BURST_BYTES = 16 << 20
SERVICE_KEYS = ("name", "tx", "rx", "frame_size", "emix", "vlan", "pcp", "dei", "dscp", "cir_mbps", "eir_mbps",
                "cbs_bytes", "ebs_bytes", "colour_mode", "yellow_dscp", "sac")
SAC_KEYS = ("flr_pct", "ftd_ms", "fdv_ms", "avail_pct")


@dataclass(frozen=True)
class Acceptance:
    """Service acceptance criteria: the most a service may lose (% of its
    frames), its frames' transfer delay and delay variation (ms), and the
    least availability (%) of the performance test."""
    flr_pct: float
    ftd_ms: float
    fdv_ms: float
    avail_pct: float


@dataclass(frozen=True)
class Service:
    name: str
    tx: Optional[str]               # "host:port" of an inventory stream; None: the inventory's first
    rx: Optional[str]
    # frame sizes with FCS: one, a fixed size; several, an EMIX: each frame's
    # size drawn in equal shares (the module's IMIX weights)
    sizes: Tuple[int, ...]
    vlan: Optional[int]
    pcp: Optional[int]
    dei: int
    dscp: int
    cir_mbps: float
    eir_mbps: float
    cbs_bytes: int
    ebs_bytes: int
    colour_mode: str                # blind | aware_dei | aware_dscp: how yellow (EIR) frames are marked
    yellow_dscp: Optional[int]      # aware_dscp: the DSCP of yellow frames
    sac: Acceptance

    @property
    def mean_frame_bytes(self):
        return sum(self.sizes) / len(self.sizes)

    @property
    def traffic_class(self):
        """What tells this service's frames from another's on the link."""
        return (self.tx, self.rx, self.vlan, self.pcp, self.dscp)

    def fps(self, mbps):
        """Frames per second that carry `mbps` of layer-2 information rate."""
        return mbps * 1e6 / (self.mean_frame_bytes * 8)


def to_record(service):
    """The service as results.json keeps it (`from_record` reads it back)."""
    return {**asdict(service), "sizes": list(service.sizes)}


def from_record(record):
    return Service(**{**record, "sizes": tuple(record["sizes"]), "sac": Acceptance(**record["sac"])})


def load(path):
    """The services of the file at `path` (BadInput: one line)."""
    raw = input_files.load_yaml(path, "services file")
    return parse(raw, str(path))


def parse(raw, origin="services"):
    if not isinstance(raw, dict) or not isinstance(raw.get("services"), list) or not raw["services"]:
        raise BadInput(f"{origin}: needs 'services:', a list of at least one service")
    unknown = set(raw) - {"defaults", "services"}
    if unknown:
        raise BadInput(f"{origin}: {sorted(map(str, unknown))[0]}: unknown field (known: defaults, services)")
    defaults = raw.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise BadInput(f"{origin}: defaults: must be a mapping")
    _known(origin, "defaults", defaults, [k for k in SERVICE_KEYS if k != "name"])
    if not isinstance(defaults.get("sac") or {}, dict):
        raise BadInput(f"{origin}: defaults: sac: a mapping of {', '.join(SAC_KEYS)}")
    if len(raw["services"]) > MAX_SERVICES:
        raise BadInput(f"{origin}: services: at most {MAX_SERVICES} services (got {len(raw['services'])})")
    services, names, classes = [], {}, {}
    for i, given in enumerate(raw["services"]):
        if not isinstance(given, dict):
            raise BadInput(f"{origin}: services[{i}]: must be a mapping")
        where = f"services[{i}]" + (f" ({given['name']})" if isinstance(given.get("name"), str) and given["name"] else "")
        _known(origin, where, given, SERVICE_KEYS)
        if not isinstance(given.get("sac") or {}, dict):
            raise BadInput(f"{origin}: {where}: sac: a mapping of {', '.join(SAC_KEYS)}")
        merged = {**defaults, **given, "sac": {**(defaults.get("sac") or {}), **(given.get("sac") or {})}}
        service = _service(origin, where, merged)
        if service.name in names:
            raise BadInput(f"{origin}: service {service.name}: name: also the name of services[{names[service.name]}]")
        if service.traffic_class in classes:
            raise BadInput(f"{origin}: service {service.name}: traffic class (tx, rx, vlan, pcp, dscp) is "
                           f"also service {classes[service.traffic_class]}'s: the DUT cannot tell them apart")
        names[service.name], classes[service.traffic_class] = i, service.name
        services.append(service)
    return services


def _known(origin, where, given, known):
    for key in given:
        if key not in known:
            raise BadInput(f"{origin}: {where}: {key}: unknown field (known: {', '.join(known)})")


def _service(origin, where, raw):
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise BadInput(f"{origin}: {where}: name: 1 to 32 letters, digits, spaces or . _ : - (got {name!r})")
    where = f"service {name}"

    def bad(field, message):
        raise BadInput(f"{origin}: {where}: {field}: {message} (got {raw.get(field)!r})")

    def number(field, low=0.0, default=None, required=True, above=False):
        value = raw.get(field, default)
        if value is None and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value < low or (above and value <= low):
            bad(field, f"a number {'above' if above else 'of at least'} {low:g}")
        return float(value)

    def integer(field, low, high, default=None):
        value = raw.get(field, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            bad(field, f"a whole number from {low} to {high}")
        return value

    sizes = _sizes(raw, bad)
    cir, eir = number("cir_mbps", above=True), number("eir_mbps", default=0)
    colour = raw.get("colour_mode", "blind")
    if colour not in COLOUR_MODES:
        bad("colour_mode", f"one of {', '.join(COLOUR_MODES)}")
    yellow = integer("yellow_dscp", 0, 63)
    if colour == "aware_dscp" and yellow is None:
        bad("yellow_dscp", "colour_mode aware_dscp marks yellow frames with this DSCP: give it (0 to 63)")
    if colour != "aware_dscp" and yellow is not None:
        bad("yellow_dscp", "marks yellow frames with colour_mode aware_dscp only")
    vlan = integer("vlan", *wire.VLAN_IDS) if "vlan" in raw else None
    pcp, dei = integer("pcp", *wire.PRIORITY_RANGES["pcp"]), integer("dei", *wire.PRIORITY_RANGES["dei"], default=0)
    if vlan is None and (pcp is not None or dei or colour == "aware_dei"):
        bad("vlan", "PCP, DEI and colour_mode aware_dei are bits of a VLAN tag: give the tag")
    if colour == "aware_dei" and dei:
        bad("dei", "colour_mode aware_dei sends green frames with DEI 0 and yellow ones with DEI 1: leave it out")
    dscp = integer("dscp", 0, 63, default=0)
    if colour == "aware_dscp" and yellow == dscp:
        bad("yellow_dscp", "must differ from the service's (green) dscp")
    sac = raw.get("sac")
    if not isinstance(sac, dict):
        raise BadInput(f"{origin}: {where}: sac: a mapping of {', '.join(SAC_KEYS)}")
    for key in sac:
        if key not in SAC_KEYS:
            raise BadInput(f"{origin}: {where}: sac.{key}: unknown field (known: {', '.join(SAC_KEYS)})")
    criteria = {}
    for key in SAC_KEYS:
        value = sac.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0 \
                or (key.endswith("_pct") and value > 100):
            raise BadInput(f"{origin}: {where}: sac.{key}: a number of at least 0"
                           f"{' and at most 100' if key.endswith('_pct') else ''} (got {value!r})")
        criteria[key] = float(value)
    cbs, ebs = integer("cbs_bytes", 0, MAX_BURST_BYTES, default=0), integer("ebs_bytes", 0, MAX_BURST_BYTES, default=0)
    if (cbs + ebs) / min(sizes) > MAX_BURST_FRAMES:
        bad("ebs_bytes" if ebs else "cbs_bytes", f"a burst of CBS + EBS bytes is more than the generator's "
                                                 f"{MAX_BURST_FRAMES} frames of {min(sizes)} B")
    return Service(name=name, tx=_end(raw, "tx", bad), rx=_end(raw, "rx", bad), sizes=sizes, vlan=vlan, pcp=pcp,
                   dei=dei, dscp=dscp, cir_mbps=cir, eir_mbps=eir, cbs_bytes=cbs, ebs_bytes=ebs,
                   colour_mode=colour, yellow_dscp=yellow, sac=Acceptance(**criteria))


def _sizes(raw, bad):
    if ("frame_size" in raw) == ("emix" in raw):
        bad("frame_size", "give one of frame_size (bytes with FCS) and emix (letters a to g)")
    if "frame_size" in raw:
        size = raw["frame_size"]
        if isinstance(size, bool) or not isinstance(size, int) or not wire.ETHERNET_MIN_FRAME <= size <= 9216:
            bad("frame_size", f"a frame size in bytes with FCS, {wire.ETHERNET_MIN_FRAME} to 9216")
        return (size,)
    emix = raw["emix"]
    if not isinstance(emix, str) or not 2 <= len(emix) <= MAX_EMIX or any(c not in EMIX_SIZES for c in emix):
        letters = ", ".join(f"{k}={v}" for k, v in EMIX_SIZES.items())
        bad("emix", f"2 to {MAX_EMIX} of Y.1564's letters ({letters})")
    return tuple(EMIX_SIZES[c] for c in emix)


def _end(raw, key, bad):
    value = raw.get(key)
    if value is None:
        return None
    host, sep, port = str(value).partition(":") if isinstance(value, str) else ("", "", "")
    if not sep or not host or not port:
        bad(key, "HOST:PORT of a tester port in the inventory")
    return value


def check_rates(services, line_mbps, origin="services", tx_of=None):
    """The services against their links: `tx_of(service)` names the port it
    leaves (default: its `tx`), `line_mbps(port)` that port's line rate in
    Mbit/s (None: unknown, not checked). A service's CIR + EIR and a port's
    sum of CIRs must fit in the layer-2 rate the line carries at the
    service's frame size (the preamble and gap of 20 bytes a frame take the
    rest)."""
    tx_of = tx_of or (lambda s: s.tx)
    committed = {}
    for s in services:
        tx = tx_of(s)
        line = line_mbps(tx)
        if not line:
            continue
        l2 = l2_capacity_mbps(line, s.mean_frame_bytes)
        if s.cir_mbps + s.eir_mbps > l2 * (1 + 1e-9):
            raise BadInput(f"{origin}: service {s.name}: eir_mbps: CIR + EIR is {s.cir_mbps + s.eir_mbps:g} Mbit/s, "
                           f"above the {l2:.6g} Mbit/s a {line:g} Mbit/s line carries at "
                           f"{s.mean_frame_bytes:g} B frames")
        total, capacity = committed.get(tx, (0.0, math.inf))
        committed[tx] = (total + s.cir_mbps, min(capacity, l2))
        total, capacity = committed[tx]
        if total > capacity * (1 + 1e-9):
            raise BadInput(f"{origin}: service {s.name}: cir_mbps: the CIRs of the services sent from "
                           f"{tx or 'the first stream'} add up to {total:g} Mbit/s, above the line's "
                           f"{capacity:.6g} Mbit/s")


def l2_capacity_mbps(line_mbps, frame_bytes):
    """The layer-2 information rate a line of `line_mbps` carries at full
    load of `frame_bytes` frames: each frame also takes its preamble and
    inter-frame gap."""
    return line_mbps * frame_bytes / (frame_bytes + ETHERNET_OVERHEAD)
