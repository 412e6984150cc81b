"""Profiles: built-ins load, bad input names the field, deviations listed."""
import subprocess
import sys

import pytest
import yaml

from rfc2544.config import profiles
from rfc2544.errors import BadInput


def test_builtins_are_valid():
    assert {"quick", "rfc2544"} <= set(profiles.builtin_names())
    for name in profiles.builtin_names():
        p = profiles.load(name)
        assert p["name"] == name


def test_strict_profile_has_no_deviations():
    p = profiles.load("rfc2544")
    assert profiles.deviations(p) == []
    assert p["trial_duration_s"] == 60
    assert p["waits"] == {"route_s": 2, "learning_s": 2, "residual_s": 2, "settle_s": 5}
    assert p["frame_sizes"] == list(profiles.RFC_FRAME_SIZES)
    assert p["latency"] == {"duration_s": 120, "repetitions": 20, "loads_pct": [100.0]}   # at the throughput rate
    assert p["back_to_back"]["repetitions"] == 50


def test_quick_profile_is_quick_and_says_so():
    p = profiles.load("quick")
    assert len(p["frame_sizes"]) <= 2 and p["trial_duration_s"] <= 5
    devs = " | ".join(profiles.deviations(p))
    assert "shorter than the 60 s" in devs
    assert "128, 256, 512, 1024, 1280" in devs


def test_short_back_to_back_depletion_is_a_deviation(tmp_path):
    path = tmp_path / "p.yml"
    path.write_text("tests: [throughput, back_to_back]\nback_to_back: {depletion_s: 0.5}\n")
    p = profiles.load(str(path))
    assert p["back_to_back"]["depletion_s"] == 0.5
    assert any("2 s of buffer depletion" in d for d in profiles.deviations(p))
    assert not any("depletion" in d for d in profiles.deviations(profiles.load("rfc2544")))


@pytest.mark.parametrize("raw,field", [
    ({"trial_duration_s": -1}, "trial_duration_s"),
    ({"trial_duration_s": "long"}, "trial_duration_s"),
    ({"frame_sizes": [64, 12]}, "frame_sizes"),
    ({"frame_sizes": []}, "frame_sizes"),
    ({"tests": ["throughput", "speed"]}, "tests"),
    ({"search": {"method": "guess"}}, "search.method"),
    ({"search": {"resolution_pct": 0}}, "search.resolution_pct"),
    ({"search": {"resolutoin_pct": 1}}, "search.resolutoin_pct"),
    ({"latency": {"repetitions": 2.5}}, "latency.repetitions"),
    ({"waits": {"settle_s": -2}}, "waits.settle_s"),
    ({"ip_versions": [5]}, "ip_versions"),
    ({"colour": "blue"}, "colour"),
    ({"search": "fast"}, "search"),
    ({"trial_duration_s": 5, "search": {"initial_duration_s": 10}}, "search.initial_duration_s"),
])
def test_bad_fields_are_named(raw, field):
    with pytest.raises(BadInput) as exc:
        profiles.validate(raw, "my.yml")
    assert f"my.yml: {field}:" in str(exc.value)


def test_custom_yaml_file_and_defaults(tmp_path):
    f = tmp_path / "mine.yml"
    f.write_text(yaml.safe_dump({"name": "mine", "frame_sizes": [64, "imix"], "ip_versions": [4, 6],
                                 "tests": ["latency", "throughput"]}))
    p = profiles.load(str(f))
    assert p["tests"] == ["throughput", "latency"]     # RFC order regardless of the file's
    assert p["search"]["method"] == "bisection"
    assert p["ip_versions"] == [4, 6]
    assert any("IMIX" in d for d in profiles.deviations(p))


def test_missing_and_unparsable_profiles(tmp_path):
    with pytest.raises(BadInput, match="not found"):
        profiles.load("nonesuch")
    f = tmp_path / "bad.yml"
    f.write_text("a: [unclosed")
    with pytest.raises(BadInput, match="not valid YAML"):
        profiles.load(str(f))


def test_cli_bad_profile_is_one_line_exit_2(tmp_path):
    f = tmp_path / "p.yml"
    f.write_text("trial_duration_s: 0\n")
    inv = tmp_path / "inv.yml"
    inv.write_text("all: {children: {testers: {hosts: {t: {}}}}}\n")
    r = subprocess.run([sys.executable, "-m", "rfc2544", "run", "-i", str(inv), "-p", str(f)],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert r.stderr.strip() == f"rfc2544: {f}: trial_duration_s: must be a positive number (got 0)"
