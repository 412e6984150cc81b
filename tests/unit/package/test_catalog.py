"""A test is one entry (issue 57): the table of tests (rfc2544/catalog.py)
is the one list the profile, the plan, the results file and its loader,
the report and the progress display read. A synthetic test registered in
the table alone (its procedure and summary in a module of its own, as a
new test's would be) is taken by the profile check, planned, run through
the simulated DUT, written, loaded and shown in the report; and every
derived list agrees with the table."""
import json
import sys
import textwrap

import pytest

from rfc2544 import catalog
from rfc2544.errors import BadInput

SYNTHETIC = '''
from dataclasses import dataclass
from typing import Optional

from rfc2544.config.profile_model import setting
from rfc2544.model import TrialSpec
from rfc2544.results.summaries import Summary


@dataclass(frozen=True)
class EchoSettings:
    load_fps: float = setting("pos", 1000.0)


@dataclass
class EchoSummary(Summary):
    frame_size: int
    fps: float
    ip_version: int = 4
    unit: str = ""
    requested_frame_size: Optional[int] = None
    flows: Optional[int] = None


def run(ctx, frame_size, ipv6):
    load = ctx.profile.model.echo.load_fps
    r = ctx.run_trial(TrialSpec(frame_size=frame_size, load_fps=load, duration_s=1.0, ipv6=ipv6, test="echo"))
    return {"frame_size": frame_size, "fps": r.achieved_fps}


def estimate_s(m):
    return 7.0
'''


def schema_with(name):
    """docs/results.schema.json as a new test's docs change it: its name in
    the lists of tests, its section at the top."""
    import jsonschema
    import schema_check

    def add(node):
        if isinstance(node, dict):
            enum = node.get("enum")
            if isinstance(enum, list) and "throughput" in enum and "reset" in enum:
                node["enum"] = enum + [name]
            for value in node.values():
                add(value)
        elif isinstance(node, list):
            for value in node:
                add(value)
    schema = json.loads(schema_check.SCHEMA_PATH.read_text())
    add(schema)
    schema["properties"][name] = {"type": "array", "items": {"type": "object"}}
    schema["$defs"]["profile"]["properties"][name] = {"type": "object"}
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture
def echo(tmp_path, monkeypatch):
    """The synthetic test `echo` registered in the table, its module
    importable, the results schema extended as its docs would be."""
    import schema_check
    monkeypatch.setattr(schema_check, "validator", lambda: schema_with("echo"))
    (tmp_path / "echo_test.py").write_text(textwrap.dedent(SYNTHETIC))
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = catalog.Entry("echo", "Echo (synthetic)", "none", "echo_test", "echo_test:EchoSummary",
                          "echo_test:estimate_s", frame_sizes=catalog.SMALLEST_SIZE, report_block=False,
                          settings="echo_test:EchoSettings")
    monkeypatch.setattr(catalog, "TESTS", catalog.TESTS + [entry])
    yield entry
    sys.modules.pop("echo_test", None)


def test_the_derived_lists_are_the_table():
    import dataclasses
    from rfc2544.config import profiles
    from rfc2544.config.profile_model import schema_of
    from rfc2544.reports.summary import test_titles
    from rfc2544.results.load import entry_fields, lists
    from rfc2544.results.records import sections
    from rfc2544.results.summaries import summary_type
    names = catalog.names()
    assert names[0] == "throughput" and len(set(names)) == len(names)
    assert profiles.TESTS == names == sections() == lists()[1:] == tuple(test_titles())
    with_settings = [t.name for t in catalog.TESTS if t.settings]
    schema = profiles.schema()
    assert [s for s in schema if s in names] == with_settings
    model = profiles.validate({}).model
    for t in catalog.TESTS:
        assert callable(catalog.resolve(t.procedure).run), t.name
        assert callable(catalog.resolve(t.estimate)), t.name
        assert summary_type(t.name).__name__.endswith("Summary"), t.name
        assert t.frame_sizes in (catalog.EVERY_SIZE, catalog.FIXED_SIZES, catalog.SMALLEST_SIZE, catalog.PER_SERVICE)
        summary_fields = {f.name for f in dataclasses.fields(summary_type(t.name))}
        assert set(entry_fields(t.name)[0]) == summary_fields, t.name
        if t.settings:
            settings_type = catalog.resolve(t.settings)
            assert schema[t.name] == schema_of(settings_type), t.name
            assert isinstance(getattr(model, t.name), settings_type), t.name
            assert profiles.validate({})[t.name] == dataclasses.asdict(getattr(model, t.name)), t.name


def test_a_test_registered_in_the_table_alone_runs_end_to_end(echo, tmp_path, monkeypatch):
    from rfc2544.cli.display import estimate_step_s
    from rfc2544.config import profiles
    from rfc2544.procedures.runner import Runner, build_plan
    from rfc2544.reports.render import render_html
    from rfc2544.results.file import Results
    from rfc2544.results.load import load_results
    from rfc2544.cli.display import Display
    from rfc2544.sim import dut as simdut
    prof_path = tmp_path / "p.yml"
    prof_path.write_text("name: echo\ntests: [echo, throughput]\nframe_sizes: [128, 64]\ntrial_duration_s: 1\n"
                         "waits: {route_s: 0, learning_s: 0, residual_s: 0, settle_s: 0}\n"
                         "search: {initial_duration_s: 1, resolution_pct: 5, max_load_fps: 5000}\n")
    prof = profiles.load(str(prof_path))
    assert prof.model.tests == ["throughput", "echo"]          # the table's order
    assert prof.model.echo.load_fps == 1000.0                  # its settings' default
    with pytest.raises(BadInput, match=r"echo\.load_fps: must be a positive number"):
        profiles.validate({"echo": {"load_fps": -1}})
    with pytest.raises(BadInput, match=r"echo\.rate: unknown field \(known: load_fps\)"):
        profiles.validate({"echo": {"rate": 5}})
    plan = build_plan(prof)
    assert [(s["test"], s["frame_size"]) for s in plan] == [("throughput", 128), ("throughput", 64), ("echo", 64)]
    assert estimate_step_s("echo", prof) == 7.0
    results = Results.create(tmp_path / "out", prof, plan, profiles.deviations(prof), {})
    Runner(simdut.SimDUT(capacity_fps=4000), prof, results, Display(quiet=True)).run()
    loaded = load_results(results.path)
    assert [e["fps"] for e in loaded["echo"]] == [pytest.approx(1000, rel=0.05)]
    assert json.loads(results.path.read_text())["echo"][0]["frame_size"] == 64
    assert "Echo (synthetic)" in render_html(loaded)
    data = json.loads(results.path.read_text())
    data["echo"][0]["fps"] = "fast"                            # its summary type's kinds are the loader's
    results.path.write_text(json.dumps(data))
    with pytest.raises(BadInput, match=r"echo\[0\]\.fps: expected a number"):
        load_results(results.path)


def test_a_list_kept_beside_the_table_is_caught(echo):
    """The check above fails when a derived list keeps its own copy."""
    from rfc2544.config import profiles
    stale = profiles.TESTS                  # taken before the registration: the command line's choices
    assert "echo" in catalog.names() and "echo" not in stale
    with pytest.raises(AssertionError):
        assert stale == catalog.names()
