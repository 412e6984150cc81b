"""`--services` on `plan` and `run` (ITU-T Y.1564): the plan of every
service's steps and their time, and every bad input as one line and exit 2
before any host is touched."""
import json
from pathlib import Path

import pytest
import yaml

from rfc2544 import cli
from rfc2544.cli.run import load_services
from rfc2544.config import profiles
from rfc2544.errors import BadInput

from helpers_run import sim_inventory

EXAMPLE_INVENTORY = Path(__file__).resolve().parents[3] / "inventory" / "example-two-box.yml"

SAC = {"flr_pct": 0.1, "ftd_ms": 10, "fdv_ms": 5, "avail_pct": 99.9}


def main(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        cli.main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def services_file(tmp_path, services, defaults=None):
    path = tmp_path / "services.yml"
    path.write_text(yaml.safe_dump({"defaults": {"sac": SAC, **(defaults or {})}, "services": services}))
    return str(path)


def test_the_plan_of_sixteen_services_lists_each_one_s_steps_and_time(tmp_path, capsys):
    path = services_file(tmp_path, [{"name": f"svc-{i:02d}", "vlan": 100 + i, "pcp": i % 8} for i in range(16)],
                         {"frame_size": 512, "cir_mbps": 20, "eir_mbps": 10})
    code, out, err = main(capsys, "plan", "-p", "y1564", "--services", path, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert [s["service"] for s in doc["plan"]] == [f"svc-{i:02d}" for i in range(16)]
    assert all(len(s["steps"]) == 6 for s in doc["services"])       # 4 CIR steps, EIR, policing
    assert doc["deviations"] == []          # RFC 2544's sizes and waits are not what a Y.1564 run runs
    assert doc["services"][0]["seconds"] == pytest.approx(6 * (60 + 2 + 2 + 2 + 1))
    code, out, _ = main(capsys, "plan", "-p", "y1564", "--services", path)
    assert "Y.1564 service configuration: 96 steps" in out and "service svc-15: 6 steps" in out


@pytest.mark.parametrize("services, message", [
    ([{"name": "a", "frame_size": 512, "cir_mbps": 10, "dscp": 64}], "service a: dscp: a whole number from 0 to 63"),
    ([{"name": "a", "frame_size": 512, "cir_mbps": 10, "sac": {"flr_pct": -1}}], "service a: sac.flr_pct"),
    ([{"name": "a", "frame_size": 512, "cir_mbps": 10, "vlan": 1},
      {"name": "a", "frame_size": 64, "cir_mbps": 10, "vlan": 2}], "service a: name: also the name"),
    ([{"name": "a", "frame_size": 512, "cir_mbps": 10, "vlan": 1},
      {"name": "b", "frame_size": 64, "cir_mbps": 10, "vlan": 1}], "service b: traffic class"),
])
def test_a_bad_services_file_is_one_line_and_exit_2(tmp_path, capsys, services, message):
    code, out, err = main(capsys, "plan", "-p", "y1564", "--services", services_file(tmp_path, services))
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_run_refuses_services_it_cannot_use_before_any_host(tmp_path, capsys):
    """The example inventory's hosts are documentation addresses: a run that got past the checks would fail
    to connect, not exit 2 with the check's line."""
    inventory = str(EXAMPLE_INVENTORY)
    path = services_file(tmp_path, [{"name": "a", "frame_size": 512, "cir_mbps": 10}])
    code, _, err = main(capsys, "run", "-p", "quick", "--services", path, "-i", inventory)
    assert code == 2 and "the profile runs no Y.1564 test" in err and err.count("\n") == 1
    code, _, err = main(capsys, "run", "-p", "y1564", "-i", inventory)
    assert code == 2 and "a Y.1564 test needs the services" in err and err.count("\n") == 1
    too_fast = services_file(tmp_path, [{"name": "a", "frame_size": 512, "cir_mbps": 9000, "eir_mbps": 2000}])
    code, _, err = main(capsys, "run", "-p", "y1564", "--services", too_fast, "-i", inventory)
    assert code == 2 and "service a: eir_mbps: CIR + EIR is 11000 Mbit/s" in err and err.count("\n") == 1
    code, _, err = main(capsys, "run", "--resume", str(tmp_path), "--services", path)
    assert code == 2 and "drop" in err and "--services" in err


def test_rates_above_the_inventory_s_line_are_refused_naming_the_service(tmp_path):
    y1564 = profiles.load("y1564")
    fits = services_file(tmp_path, [{"name": "a", "frame_size": 1518, "cir_mbps": 60, "vlan": 1},
                                    {"name": "b", "frame_size": 1518, "cir_mbps": 30, "eir_mbps": 50, "vlan": 2}])
    assert [s.name for s in load_services(fits, y1564, sim_inventory(speed_mbps=100))] == ["a", "b"]
    over = services_file(tmp_path, [{"name": "a", "frame_size": 1518, "cir_mbps": 60, "vlan": 1},
                                    {"name": "b", "frame_size": 1518, "cir_mbps": 40, "vlan": 2}])
    with pytest.raises(BadInput, match=r"service b: cir_mbps: the CIRs of the services sent from sim:tx0 "
                                       r"add up to 100 Mbit/s, above the line's 98\.6996 Mbit/s"):
        load_services(over, y1564, sim_inventory(speed_mbps=100))
    elsewhere = services_file(tmp_path, [{"name": "a", "frame_size": 512, "cir_mbps": 10, "tx": "sim:eth9"}])
    with pytest.raises(BadInput, match="service a: tx: no stream of the inventory leaves sim:eth9"):
        load_services(elsewhere, y1564, sim_inventory())


def test_a_profile_that_leaves_no_step_is_refused(tmp_path):
    path = services_file(tmp_path, [{"name": "a", "frame_size": 512, "cir_mbps": 10}])
    none = profiles.validate({"tests": ["y1564_configuration"], "y1564_configuration": {
        "cir_steps_pct": [], "eir_step": False, "policing_step": False}})
    with pytest.raises(BadInput, match="y1564_configuration: no step to run"):
        load_services(path, none)
