"""The known results files (tests/data/results) and the simulated run behind
them: generate.py runs the suite against rfc2544.sim.dut, so tests take their
expected figures from the files themselves or from the simulated DUT's known
capacity (gen.DUT_CAPACITY_FPS, gen.TESTER_CEILING_FPS), never from a copy."""
import importlib.util
import json
from pathlib import Path

from rfc2544.reports import checks, fmt
from rfc2544.results.load import load_results

DATA = Path(__file__).resolve().parents[1] / "data" / "results"


def _load_generator():
    spec = importlib.util.spec_from_file_location("results_generate", DATA / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


def raw(name):
    """A known file as written (no loader in between)."""
    return json.loads((DATA / name).read_text())


def row(data, section, frame_size):
    """The one summary row of `section` at `frame_size`."""
    [found] = [r for r in data[section] if r["frame_size"] == frame_size]
    return found


def sizes(data, section):
    return [r["frame_size"] for r in data[section]]


def planned_sizes(data, test, states=("done",)):
    return [p["frame_size"] for p in data["plan"] if p["test"] == test and p["state"] in states]


def key_figures(name="complete.json"):
    """The key figures of a known file as a reader sees them, taken from its records."""
    data = raw(name)
    t64 = row(data, "throughput", 64)
    figures = [fmt.fps(t64["fps"]), fmt.mbps(t64["mbps"]), fmt.pct(t64["pct_of_max"]),
               fmt.fps(t64["theoretical_max_fps"]), fmt.fps(row(data, "throughput", 128)["fps"]),
               "tester-bound"]
    if data["complete"]:
        detected = checks.undeclared(checks.detected_deviations(load_results(DATA / name)), data["deviations"])
        figures += [fmt.fps(row(data, "throughput", 1518)["fps"]),
                    fmt.us(row(data, "latency", 64)["median_ns"]), fmt.us(row(data, "latency", 64)["p999_ns"]),
                    fmt.num(row(data, "back_to_back", 64)["avg_frames"], 1),
                    fmt.seconds(row(data, "reset", 64)["reset_time_s"]),
                    fmt.seconds(row(data, "system_recovery", 64)["recovery_time_s"]),
                    "bit-forwarding", f"Deviations from RFC 2544 ({len(data['deviations']) + len(detected)})"]
    return figures


def headline(name="complete.json"):
    """The report's one-line throughput headline (smallest frame size)."""
    return f"Throughput: {fmt.fps(row(raw(name), 'throughput', 64)['fps'])} frames/s"


def synthetic_run(directory, started, ndr_fps, median_ns=None, tester_bound=False, generator=None,
                  tester_kernel=None, dut_kernel=None, link_mbps=None):
    """A small complete run (complete.json cut down to its 64 B throughput
    and latency rows) with the figures and conditions given: the runs of a
    synthetic series for the store and the trend. Returns its directory."""
    data = raw("complete.json")
    data["started"] = data["finished"] = started
    data["trials"], data["frame_loss"], data["back_to_back"] = [], [], []
    data["system_recovery"], data["reset"] = [], []
    t64 = dict(row(data, "throughput", 64), ndr_fps=ndr_fps, fps=ndr_fps, pdr_fps=None, tester_bound=tester_bound)
    data["throughput"] = [t64]
    data["latency"] = [dict(row(data, "latency", 64), median_ns=median_ns, p999_ns=median_ns * 1.2)] \
        if median_ns else []
    conditions = data["conditions"]
    if generator:
        conditions["generator"] = generator
    if link_mbps:
        conditions["link_speed_mbps"] = link_mbps
    if tester_kernel:
        conditions["hosts"]["tester"]["kernel"] = tester_kernel
    if dut_kernel:
        conditions["hosts"]["dut"]["kernel"] = dut_kernel
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "results.json").write_text(json.dumps(data))
    return directory
