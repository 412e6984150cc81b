"""The tests the suite runs, one entry each: the table the profile, the
plan, the results file, the report and the progress display read (issue
57). Adding a test is its procedure module, its entry here, its template
block and its docs (docs/running.md, "Adding a test").

A fact module: it imports no layer. An entry names its procedure, its
settings type, its results entry type and its time estimate by dotted path ("module" or
"module:name"); the layer that uses one resolves it (`resolve`), so the
table stays below every layer that reads it.
"""
import importlib
from dataclasses import dataclass

# which of the profile's frame sizes a test runs at
EVERY_SIZE = "every"          # every size asked, IMIX too
FIXED_SIZES = "fixed"         # every size but IMIX (a burst or an overload needs one frame length)
SMALLEST_SIZE = "smallest"    # the smallest fixed size only (an outage is the same at any size)
PER_SERVICE = "services"      # one step per Y.1564 service, at the service's own sizes (y1564/services.py)


@dataclass(frozen=True)
class Entry:
    name: str                   # the profile's `tests` word, its results section, the plan's step `test`
    title: str                  # the report's heading
    standard: str               # where the method is written
    procedure: str              # module whose run(ctx, frame_size, ipv6) -> its results entry
    summary: str                # "module:Class" of its results entry (results/summaries.py)
    estimate: str               # "module:function(profile model) -> s" for the ETA
    needs_throughput: bool = False      # runs at its frame size's NDR
    frame_sizes: str = EVERY_SIZE
    report_block: bool = True   # the report's template lays it out; else a table of its entries' fields
    settings: str = ""          # "module:Class" of its profile section (config/profile_model.py); "": none


_S = "rfc2544.results.summaries:"
_P = "rfc2544.procedures."
_C = "rfc2544.config.profile_model:"
TESTS = [
    Entry("throughput", "Throughput (26.1)", "RFC 2544 26.1", _P + "throughput", _S + "ThroughputSummary",
          _P + "throughput:estimate_s"),
    Entry("latency", "Latency (26.2)", "RFC 2544 26.2", _P + "latency", _S + "LatencySummary",
          _P + "latency:estimate_s", needs_throughput=True, settings=_C + "LatencySettings"),
    Entry("frame_loss", "Frame loss rate (26.3)", "RFC 2544 26.3", _P + "frame_loss", _S + "FrameLossSummary",
          _P + "frame_loss:estimate_s", settings=_C + "FrameLossSettings"),
    Entry("back_to_back", "Back-to-back frames (26.4)", "RFC 2544 26.4, RFC 9004", _P + "back_to_back",
          _S + "BackToBackSummary", _P + "back_to_back:estimate_s", needs_throughput=True,
          frame_sizes=FIXED_SIZES, settings=_C + "BackToBackSettings"),
    Entry("bursty", "Bursty traffic (section 21)", "RFC 2544 21", _P + "bursty", _S + "BurstySummary",
          _P + "bursty:estimate_s", frame_sizes=FIXED_SIZES, settings=_C + "BurstySettings"),
    Entry("system_recovery", "System recovery (26.5)", "RFC 2544 26.5", _P + "recovery",
          _S + "SystemRecoverySummary", _P + "recovery:estimate_s", needs_throughput=True,
          frame_sizes=FIXED_SIZES, settings=_C + "SystemRecoverySettings"),
    Entry("reset", "Reset (26.6)", "RFC 2544 26.6", _P + "reset", _S + "ResetSummary", _P + "reset:estimate_s",
          needs_throughput=True, frame_sizes=SMALLEST_SIZE, settings=_C + "ResetSettings"),
    Entry("y1564_configuration", "Service configuration (Y.1564 8.1)", "ITU-T Y.1564 8.1",
          _P + "y1564_configuration", _S + "ServiceConfigurationSummary", _P + "y1564_configuration:estimate_s",
          frame_sizes=PER_SERVICE, settings=_C + "Y1564ConfigurationSettings"),
]


def names():
    """The tests' names, in the order a run takes them (RFC order: throughput first)."""
    return tuple(t.name for t in TESTS)


def entry(name):
    """The table's entry of test `name` (KeyError: no such test)."""
    for t in TESTS:
        if t.name == name:
            return t
    raise KeyError(name)


def resolve(path):
    """The module "a.b", or the object "a.b:name", a dotted path names."""
    module, _, attr = path.partition(":")
    found = importlib.import_module(module)
    return getattr(found, attr) if attr else found
