"""Bad input to the CLI, tried as a hostile new user would, with no lab and
no network: every host of the base inventory is 127.0.0.1 on port 1, where
nothing listens, so a case that were accepted could reach nothing.

Each case runs the real CLI in this process (`rfc2544.cli.main`) and must
end with exit 2, one line on stderr that names the file and the field, no
traceback, and nothing written beside the input. The property tests at the
end feed the inventory, profile and results loaders random structures and
bytes and accept only the tool's own bad-input error (or a valid load)."""
import json
import os
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rfc2544 import cli
from rfc2544.config import inventory, profiles
from rfc2544.errors import BadInput
from rfc2544.results.load import load_results

from known_results import DATA

COMPLETE = DATA / "complete.json"

BASE_INVENTORY = textwrap.dedent("""\
    all:
      vars:
        rfc2544_streams:
          - {tx: "tester:tx0", rx: "tester:rx0"}
      children:
        testers:
          hosts:
            tester:
              ansible_host: 127.0.0.1
              ansible_port: 1
              rfc2544_known_hosts: /nonexistent/known_hosts
              rfc2544_ports:
                - {name: tx0, role: tx, mac: "02:00:00:00:00:01", ipv4: 198.18.0.1/24,
                   peer_mac: "02:00:00:00:00:02", peer_ipv4: 198.18.0.2, speed_mbps: 10000}
                - {name: rx0, role: rx, mac: "02:00:00:00:00:03", ipv4: 198.19.0.1/24}
        duts:
          hosts:
            dut:
              ansible_host: 127.0.0.1
              ansible_port: 1
              rfc2544_netns: dut
              rfc2544_ports:
                - {name: dut0, role: dut, mac: "02:00:00:00:00:02"}
    """)

BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10))

# (id, whole file or (old, new) on BASE_INVENTORY, what stderr must name)
INVENTORY_CASES = [
    ("empty", "", "all"),
    ("all-list", "all: [1, 2]\n", "all"),
    ("top-list", "- a\n- b\n", "all"),
    ("top-scalar", "hello\n", "all"),
    ("vars-list", "all: {vars: [1], children: {}}\n", "all.vars"),
    ("vars-scalar", "all: {vars: 5}\n", "all.vars"),
    ("children-list", "all: {children: [testers]}\n", "all.children"),
    ("group-list", "all: {children: {testers: [a]}}\n", "all.children.testers"),
    ("hosts-list", "all: {children: {testers: {hosts: [a]}}}\n", "all.children.testers.hosts"),
    ("host-string", "all: {children: {testers: {hosts: {t: hello}}}}\n", "testers.t"),
    ("host-list", "all: {children: {testers: {hosts: {t: [1]}}}}\n", "testers.t"),
    ("no-testers", "all: {children: {duts: {hosts: {d: {}}}}}\n", "all.children.testers"),
    ("unclosed", "all: [unclosed\n", "not valid YAML"),
    ("tab", "all:\n\tvars: {}\n", "not valid YAML"),
    ("alias-bomb", BOMB, "aliases expand"),
    ("port-big", ("ansible_port: 1\n          rfc2544_netns", "ansible_port: 67560\n          rfc2544_netns"), "ansible_port"),
    ("port-zero", ("ansible_port: 1\n          rfc2544_known", "ansible_port: 0\n          rfc2544_known"), "ansible_port"),
    ("port-negative", ("ansible_port: 1\n          rfc2544_known", "ansible_port: -1\n          rfc2544_known"),
     "ansible_port"),
    ("port-bool", ("ansible_port: 1\n          rfc2544_known", "ansible_port: true\n          rfc2544_known"), "ansible_port"),
    ("port-word", ("ansible_port: 1\n          rfc2544_known", "ansible_port: ssh\n          rfc2544_known"), "ansible_port"),
    ("port-float", ("ansible_port: 1\n          rfc2544_known", "ansible_port: 22.5\n          rfc2544_known"),
     "ansible_port"),
    ("port-list", ("ansible_port: 1\n          rfc2544_known", "ansible_port: [22]\n          rfc2544_known"), "ansible_port"),
    ("host-var-typo", ("rfc2544_known_hosts:", "rfc2544_known_host:"), "tester.rfc2544_known_host"),
    ("host-var-unknown", ("rfc2544_netns: dut", "rfc2544_netns: dut\n          rfc2544_nets: x"),
     "dut.rfc2544_nets"),
    ("group-var-typo", ("rfc2544_streams:", "rfc2544_stream:"), "all.vars.rfc2544_stream"),
    ("ports-string", ("rfc2544_netns: dut\n          rfc2544_ports:\n            - {name: dut0, role: dut, "
                      "mac: \"02:00:00:00:00:02\"}", "rfc2544_netns: dut\n          rfc2544_ports: dut0"),
     "dut.rfc2544_ports"),
    ("ports-int", ("rfc2544_netns: dut\n          rfc2544_ports:\n            - {name: dut0, role: dut, "
                   "mac: \"02:00:00:00:00:02\"}", "rfc2544_netns: dut\n          rfc2544_ports: 5"),
     "dut.rfc2544_ports"),
    ("ports-mapping", ("rfc2544_netns: dut\n          rfc2544_ports:\n            - {name: dut0, role: dut, "
                       "mac: \"02:00:00:00:00:02\"}", "rfc2544_netns: dut\n          rfc2544_ports: {a: 1}"),
     "dut.rfc2544_ports"),
    ("port-entry-string", ('- {name: dut0, role: dut, mac: "02:00:00:00:00:02"}', "- dut0"),
     "dut.rfc2544_ports[0]"),
    ("port-no-mac", (', mac: "02:00:00:00:00:02"}', "}"), "dut.rfc2544_ports[0].mac"),
    ("port-bad-mac", ('mac: "02:00:00:00:00:02"}', 'mac: "02:00:00:00:00"}'), "rfc2544_ports[0].mac"),
    ("port-mac-newline", ('mac: "02:00:00:00:00:02"}', 'mac: "02:00:00:00:00:02\\nrm -rf /"}'),
     "rfc2544_ports[0].mac"),
    ("port-name-newline", ("name: dut0,", 'name: "dut0\\nreboot",'), "rfc2544_ports[0].name"),
    ("port-name-shell", ("name: dut0,", 'name: "dut0;reboot",'), "rfc2544_ports[0].name"),
    ("port-name-long", ("name: dut0,", "name: abcdefghijklmnopq,"), "rfc2544_ports[0].name"),
    ("port-name-slash", ("name: dut0,", "name: a/b,"), "rfc2544_ports[0].name"),
    ("port-role", ("role: dut,", "role: router,"), "rfc2544_ports[0].role"),
    ("port-unknown-field", ('role: dut,', 'role: dut, colour: red,'), "rfc2544_ports[0].colour"),
    ("port-ipv4", ("ipv4: 198.18.0.1/24,", "ipv4: 198.18.0.300/24,"), "rfc2544_ports[0].ipv4"),
    ("port-ipv4-word", ("ipv4: 198.18.0.1/24,", "ipv4: home,"), "rfc2544_ports[0].ipv4"),
    ("port-peer-ipv4", ("peer_ipv4: 198.18.0.2,", "peer_ipv4: 198.18.0.2/24,"), "rfc2544_ports[0].peer_ipv4"),
    ("port-speed-negative", ("speed_mbps: 10000", "speed_mbps: -1"), "rfc2544_ports[0].speed_mbps"),
    ("port-speed-word", ("speed_mbps: 10000", "speed_mbps: fast"), "rfc2544_ports[0].speed_mbps"),
    ("port-speed-float", ("speed_mbps: 10000", "speed_mbps: 2.5"), "rfc2544_ports[0].speed_mbps"),
    ("port-duplicate", ("name: rx0, role: rx", "name: tx0, role: rx"), "rfc2544_ports[1].name"),
    ("streams-int", ('rfc2544_streams:\n      - {tx: "tester:tx0", rx: "tester:rx0"}', "rfc2544_streams: 5"),
     "all.vars.rfc2544_streams"),
    ("streams-mapping", ('rfc2544_streams:\n      - {tx: "tester:tx0", rx: "tester:rx0"}',
                         'rfc2544_streams: {tx: "tester:tx0"}'), "all.vars.rfc2544_streams"),
    ("stream-string", ('- {tx: "tester:tx0", rx: "tester:rx0"}', '- "tester:tx0"'), "rfc2544_streams[0]"),
    ("stream-no-rx", ('- {tx: "tester:tx0", rx: "tester:rx0"}', '- {tx: "tester:tx0"}'), "rfc2544_streams[0]"),
    ("stream-unknown-port", ('tx: "tester:tx0"', 'tx: "tester:nope"'), "rfc2544_streams[0].tx"),
    ("stream-unknown-host", ('tx: "tester:tx0"', 'tx: "nobody:tx0"'), "rfc2544_streams[0].tx"),
    ("stream-dut-port", ('rx: "tester:rx0"', 'rx: "dut:dut0"'), "rfc2544_streams[0].rx"),
    ("stream-to-itself", ('rx: "tester:rx0"', 'rx: "tester:tx0"'), "rfc2544_streams[0]"),
    ("stream-twice", ('- {tx: "tester:tx0", rx: "tester:rx0"}',
                      '- {tx: "tester:tx0", rx: "tester:rx0"}\n      - {tx: "tester:tx0", rx: "tester:rx0"}'),
     "rfc2544_streams[1]"),
    ("stream-unknown-field", ('rx: "tester:rx0"}', 'rx: "tester:rx0", rate: 5}'), "rfc2544_streams[0].rate"),
    ("vlan-zero", ('rx: "tester:rx0"}', 'rx: "tester:rx0", vlan: 0}'), "rfc2544_streams[0].vlan"),
    ("vlan-big", ('rx: "tester:rx0"}', 'rx: "tester:rx0", vlan: 4095}'), "rfc2544_streams[0].vlan"),
    ("vlan-word", ('rx: "tester:rx0"}', 'rx: "tester:rx0", vlan: ten}'), "rfc2544_streams[0].vlan"),
    ("vlan-bool", ('rx: "tester:rx0"}', 'rx: "tester:rx0", vlan: true}'), "rfc2544_streams[0].vlan"),
    ("svlan-alone", ('rx: "tester:rx0"}', 'rx: "tester:rx0", svlan: 10}'), "rfc2544_streams[0].svlan"),
    ("pcp-big", ('rx: "tester:rx0"}', 'rx: "tester:rx0", vlan: 10, vlan_pcp: 8}'), "rfc2544_streams[0].vlan_pcp"),
    ("pcp-untagged", ('rx: "tester:rx0"}', 'rx: "tester:rx0", vlan_pcp: 1}'), "rfc2544_streams[0].vlan_pcp"),
    ("dei-big", ('rx: "tester:rx0"}', 'rx: "tester:rx0", vlan: 10, vlan_dei: 2}'), "rfc2544_streams[0].vlan_dei"),
    ("rx-vlan-word", ('rx: "tester:rx0"}', 'rx: "tester:rx0", vlan: 10, rx_vlan: ten}'),
     "rfc2544_streams[0].rx_vlan"),
    ("hooks-string", ("rfc2544_netns: dut\n", "rfc2544_netns: dut\n          rfc2544_trial_hooks: reboot\n"),
     "rfc2544_trial_hooks"),
]


def _inventory_text(case):
    if isinstance(case, tuple):
        old, new = case
        assert old in BASE_INVENTORY, old
        return BASE_INVENTORY.replace(old, new, 1)
    return case


def _cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def _one_bad_input_line(code, out, err, path, names):
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and "Traceback" not in out
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert str(path) in err and names in err, err


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A working directory of its own, whose contents after the case show
    whether anything was written; the cache goes elsewhere."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("RFC2544_CACHE", str(tmp_path / "cache"))
    return work


def test_the_base_inventory_is_valid():
    """Each case below breaks one thing of a file that loads."""
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"rfc2544-base-{os.getpid()}.yml"
    path.write_text(BASE_INVENTORY)
    try:
        inv = inventory.load(path)
    finally:
        path.unlink()
    assert {h.address for h in inv.hosts.values()} == {"127.0.0.1"} and len(inv.streams) == 1


@pytest.mark.parametrize("case, names", [(c, n) for _, c, n in INVENTORY_CASES],
                         ids=[i for i, _, _ in INVENTORY_CASES])
def test_a_bad_inventory_is_one_line_and_exit_2(capsys, sandbox, case, names):
    path = sandbox / "inv.yml"
    path.write_text(_inventory_text(case))
    code, out, err = _cli(capsys, "doctor", "-i", path)
    _one_bad_input_line(code, out, err, path, names)
    assert sorted(p.name for p in sandbox.iterdir()) == ["inv.yml"]


@pytest.mark.parametrize("data, names", [
    (b"all:\n  vars: {x: caf\xe9}\n", "not UTF-8 text (byte 0xe9 at offset 20)"),
    (b"\xff\xfeall: {}\n", "not UTF-8 text (byte 0xff at offset 0)"),
    (b"all: {vars: {x: \x00}}\n", "not valid YAML"),
], ids=["latin1", "utf16-bom", "nul"])
def test_inventory_bytes_that_are_not_text(capsys, sandbox, data, names):
    path = sandbox / "inv.yml"
    path.write_bytes(data)
    code, out, err = _cli(capsys, "doctor", "-i", path)
    _one_bad_input_line(code, out, err, path, names)


def test_an_inventory_past_the_size_cap_is_refused_unread(capsys, sandbox):
    path = sandbox / "inv.yml"
    with open(path, "wb") as f:
        f.truncate(17 << 20)            # sparse: 17 MiB of zeros
    code, out, err = _cli(capsys, "doctor", "-i", path)
    _one_bad_input_line(code, out, err, path, "larger than 16 MiB")


PROFILE_CASES = [
    ("nan-duration", "trial_duration_s: .nan\n", "trial_duration_s"),
    ("inf-duration", "trial_duration_s: .inf\n", "trial_duration_s"),
    ("negative-duration", "trial_duration_s: -1\n", "trial_duration_s"),
    ("zero-duration", "trial_duration_s: 0\n", "trial_duration_s"),
    ("word-duration", "trial_duration_s: long\n", "trial_duration_s"),
    ("huge-int-duration", "trial_duration_s: 1" + "0" * 400 + "\n", "trial_duration_s"),
    ("bool-duration", "trial_duration_s: true\n", "trial_duration_s"),
    ("list-duration", "trial_duration_s: [1]\n", "trial_duration_s"),
    ("frame-small", "frame_sizes: [63]\n", "frame_sizes"),
    ("frame-big", "frame_sizes: [9217]\n", "frame_sizes"),
    ("frame-word", "frame_sizes: [big]\n", "frame_sizes"),
    ("frame-empty", "frame_sizes: []\n", "frame_sizes"),
    ("frame-scalar", "frame_sizes: 64\n", "frame_sizes"),
    ("test-unknown", "tests: [speed]\n", "tests"),
    ("test-empty", "tests: []\n", "tests"),
    ("unknown-field", "colour: blue\n", "colour"),
    ("section-scalar", "search: fast\n", "search"),
    ("section-list", "search: [fast]\n", "search"),
    ("search-method", "search: {method: guess}\n", "search.method"),
    ("search-nan", "search: {resolution_pct: .nan}\n", "search.resolution_pct"),
    ("search-zero", "search: {resolution_pct: 0}\n", "search.resolution_pct"),
    ("search-typo", "search: {resolutoin_pct: 1}\n", "search.resolutoin_pct"),
    ("search-inf-load", "search: {max_load_fps: -.inf}\n", "search.max_load_fps"),
    ("search-initial", "trial_duration_s: 5\nsearch: {initial_duration_s: 10}\n", "search.initial_duration_s"),
    ("search-min-load", "search: {min_load_pct: 100}\n", "search.min_load_pct"),
    ("waits-inf", "waits: {settle_s: .inf}\n", "waits.settle_s"),
    ("waits-negative", "waits: {settle_s: -2}\n", "waits.settle_s"),
    ("latency-reps", "latency: {repetitions: 2.5}\n", "latency.repetitions"),
    ("latency-loads", "latency: {loads_pct: [150]}\n", "latency.loads_pct"),
    ("latency-loads-nan", "latency: {loads_pct: [.nan]}\n", "latency.loads_pct"),
    ("ip-versions", "ip_versions: [5]\n", "ip_versions"),
    ("top-list", "- throughput\n", "a profile must be a mapping"),
    ("unclosed", "tests: [unclosed\n", "not valid YAML"),
    ("alias-bomb", BOMB, "aliases expand"),
]


@pytest.mark.parametrize("text, names", [(t, n) for _, t, n in PROFILE_CASES], ids=[i for i, _, _ in PROFILE_CASES])
def test_a_bad_profile_is_one_line_and_exit_2(capsys, sandbox, text, names):
    path = sandbox / "profile.yml"
    path.write_text(text)
    for args in (("plan", "-p", path), ("plan", "-p", path, "--json")):
        code, out, err = _cli(capsys, *args)
        _one_bad_input_line(code, out, err, path, names)
        assert out == ""
    assert sorted(p.name for p in sandbox.iterdir()) == ["profile.yml"]


def test_a_profile_that_is_not_utf8(capsys, sandbox):
    path = sandbox / "profile.yml"
    path.write_bytes(b"name: caf\xe9\n")
    code, out, err = _cli(capsys, "plan", "-p", path)
    _one_bad_input_line(code, out, err, path, "not UTF-8 text (byte 0xe9 at offset 9)")


def _results_variant(change):
    data = json.loads(COMPLETE.read_text())
    change(data)
    return json.dumps(data)


def _set(section, field, value, index=0):
    def change(data):
        data[section][index][field] = value
    return change


RESULTS_CASES = [
    ("not-json", "{not json", "corrupt results file"),
    ("empty", "", "corrupt results file"),
    ("list", "[1, 2]", "not an rfc2544 results file"),
    ("no-schema", '{"a": 1}', "not an rfc2544 results file"),
    ("version", _results_variant(lambda d: d.update(schema_version=99)), "schema version 99"),
    ("version-bool", _results_variant(lambda d: d.update(schema_version=True)), "schema version true"),
    ("nan", _results_variant(_set("throughput", "fps", "@@")).replace('"@@"', "NaN"), "NaN is not a number"),
    ("inf", _results_variant(_set("throughput", "fps", "@@")).replace('"@@"', "Infinity"),
     "Infinity is not a number"),
    ("huge", _results_variant(_set("throughput", "fps", "@@")).replace('"@@"', "1e999"), "out of range"),
    ("negative-fps", _results_variant(_set("throughput", "fps", -5.0)), "throughput[0].fps"),
    ("negative-ndr", _results_variant(_set("throughput", "ndr_fps", -5.0)), "throughput[0].ndr_fps"),
    ("negative-tx", _results_variant(_set("trials", "tx_frames", -1)), "trials[0].tx_frames"),
    ("string-fps", _results_variant(_set("throughput", "fps", "fast")), "throughput[0].fps"),
    ("bool-fps", _results_variant(_set("throughput", "fps", True)), "throughput[0].fps"),
    ("no-fps", _results_variant(_set("throughput", "fps", None)), "throughput[0].fps"),
    ("size-string", _results_variant(_set("throughput", "frame_size", "64")), "throughput[0].frame_size"),
    ("section-object", _results_variant(lambda d: d.update(throughput={"a": 1})), "throughput"),
    ("entry-list", _results_variant(lambda d: d.update(throughput=[[1]])), "throughput[0]"),
    ("latency-string", _results_variant(_set("latency", "median_ns", "slow")), "latency[0].median_ns"),
    ("conditions-list", _results_variant(lambda d: d.update(conditions=[1])), "conditions"),
    ("complete-string", _results_variant(lambda d: d.update(complete="yes")), "complete"),
]


@pytest.mark.parametrize("text, names", [(t, n) for _, t, n in RESULTS_CASES], ids=[i for i, _, _ in RESULTS_CASES])
def test_a_bad_results_file_is_one_line_and_exit_2(capsys, sandbox, text, names):
    path = sandbox / "results.json"
    path.write_text(text)
    for args in (("compare", COMPLETE, path), ("compare", path, COMPLETE), ("report", path, "--json")):
        code, out, err = _cli(capsys, *args)
        _one_bad_input_line(code, out, err, path, names)
        assert out == ""
    assert sorted(p.name for p in sandbox.iterdir()) == ["results.json"]


def test_a_results_file_that_is_not_utf8(capsys, sandbox):
    path = sandbox / "results.json"
    path.write_bytes(b'{"schema": "caf\xe9"}')
    code, out, err = _cli(capsys, "compare", COMPLETE, path)
    _one_bad_input_line(code, out, err, path, "not UTF-8 text (byte 0xe9 at offset 15)")


# ---- property tests: random structures and bytes reach only BadInput -------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=25)
KEYS = st.sampled_from(["all", "vars", "children", "testers", "duts", "hosts", "tester", "rfc2544_ports",
                        "rfc2544_streams", "name", "role", "mac", "tx", "rx", "ansible_port", "vlan"])
SHAPED = st.recursive(JSONISH, lambda children: st.dictionaries(KEYS, children, max_size=4), max_leaves=30)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _only_bad_input(load, path):
    try:
        load(path)
    except BadInput as exc:
        assert "\n" not in str(exc).strip() or "not valid YAML" in str(exc), str(exc)


@PROPERTY
@given(doc=SHAPED)
def test_random_inventory_structures_give_bad_input_or_load(tmp_path, doc):
    path = tmp_path / "inv.yml"
    path.write_text(yaml.safe_dump({"all": doc} if isinstance(doc, dict) and "all" not in doc else doc))
    _only_bad_input(inventory.load, path)


@PROPERTY
@given(doc=SHAPED)
def test_random_profile_structures_give_bad_input_or_load(tmp_path, doc):
    path = tmp_path / "profile.yml"
    path.write_text(yaml.safe_dump(doc))
    _only_bad_input(profiles.load, path)


@PROPERTY
@given(doc=JSONISH, section=st.sampled_from(["throughput", "latency", "trials", "conditions", "plan"]))
def test_random_results_fields_give_bad_input_or_load(tmp_path, doc, section):
    data = json.loads(COMPLETE.read_text())
    data[section] = doc
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    _only_bad_input(load_results, path)


@PROPERTY
@given(data=st.binary(max_size=300))
def test_random_bytes_give_bad_input(tmp_path, data):
    for name, load in (("inv.yml", inventory.load), ("profile.yml", profiles.load), ("results.json", load_results)):
        path = tmp_path / name
        path.write_bytes(data)
        _only_bad_input(load, path)


def test_dev_zero_as_an_inventory_ends_with_exit_2_under_a_1_gb_address_space(tmp_path):
    """It grew to 22 GB until the OOM killer ended it: now it is read no
    further than the cap."""
    import resource
    import subprocess
    import sys

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    run = subprocess.run([sys.executable, "-m", "rfc2544", "doctor", "-i", "/dev/zero"], capture_output=True,
                         text=True, timeout=60, preexec_fn=limit, cwd=tmp_path,
                         env=dict(os.environ, RFC2544_CACHE=str(tmp_path / "cache")))
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert run.stderr == "rfc2544: /dev/zero: inventory larger than 16 MiB: refused unread\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, names", [
    (("calibrate", "-i", "INV", "--frame-size", "0"), "--frame-size"),
    (("calibrate", "-i", "INV", "--frame-size", "70000"), "--frame-size"),
    (("calibrate", "-i", "INV", "--duration", "nan"), "--duration"),
    (("calibrate", "-i", "INV", "--duration", "-1"), "--duration"),
    (("calibrate", "-i", "INV", "--duration", "inf"), "--duration"),
    (("doctor", "-i", "INV", "--networks", "0"), "--networks"),
    (("doctor", "-i", "INV", "--sources", "65536"), "--sources"),
    (("compare", COMPLETE, COMPLETE, "--max-regression", "nan%"), "--max-regression"),
    (("compare", COMPLETE, COMPLETE, "--max-regression", "-5%"), "--max-regression"),
    (("compare", COMPLETE, COMPLETE, "--max-regression", "lots"), "--max-regression"),
    (("run", "-i", "INV", "-p", "no-such-profile"), "no-such-profile"),
    (("plan", "-p", "no-such-profile"), "no-such-profile"),
], ids=lambda v: " ".join(map(str, v)) if isinstance(v, tuple) else None)
def test_a_bad_option_is_refused_before_any_work(capsys, sandbox, args, names):
    inv = sandbox / "inv.yml"
    inv.write_text(BASE_INVENTORY)
    code, out, err = _cli(capsys, *[inv if a == "INV" else a for a in args])
    assert code == 2, (code, out, err)
    assert names in err and "Traceback" not in err + out, err
    assert sorted(p.name for p in sandbox.iterdir()) == ["inv.yml"]
