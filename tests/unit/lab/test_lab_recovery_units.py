"""The lab's recovery DUT (rfc2544.lab.queue) and reset command
(rfc2544.lab.dut_reset) without a lab: command text, validation, the expected
drain time and the outage log parser. Nothing runs in a VM here; the lab
tests are tests/integration/test_recovery_lab.py."""
import shlex

import pytest

from rfc2544.errors import BadInput
from rfc2544.lab import dut_reset, queue


def test_drain_time_is_the_limit_over_the_net_service_rate():
    assert queue.drain_time_s(2120, 4120, 2000) == pytest.approx(1.0)
    assert queue.drain_time_s(100, 1000, 0) == pytest.approx(0.1)


def test_a_queue_that_cannot_drain_is_an_error():
    with pytest.raises(ValueError):
        queue.drain_time_s(100, 2000, 2000)


def test_queue_commands_serve_packets_at_the_rate_whatever_their_size():
    cmds = queue.commands(4120, 2120, 20)
    tbf = next(c for c in cmds if " tbf " in c)
    # every frame shorter than the MPU costs one MPU of tokens
    assert f"rate {4120 * queue.MPU_BYTES * 8}bit" in tbf and f"mpu {queue.MPU_BYTES}" in tbf
    assert any(c.endswith("pfifo limit 2120") for c in cmds)
    assert any("mirred egress redirect dev ifbq" in c for c in cmds)


@pytest.mark.parametrize("args", [(0, 10, 1), (100, -1, 1), (100, 10, True), ("100; reboot", 10, 1), (1.5, 10, 1)])
def test_queue_settings_must_be_whole_numbers(args):
    with pytest.raises(BadInput):
        queue.commands(*args)


def test_reset_command_is_one_process_with_quoted_arguments():
    words = shlex.split(dut_reset.command(0.25))
    assert words[:2] == ["python3", "-c"]
    compile(words[2], "reset", "exec")
    assert words[3:] == [dut_reset.RESET_PORT, "0.25", dut_reset.OUTAGE_LOG]


@pytest.mark.parametrize("outage", [0, -1, 61, "1; reboot", True])
def test_reset_outage_is_validated(outage):
    with pytest.raises(BadInput):
        dut_reset.command(outage)


def test_reset_port_is_a_dut_port():
    with pytest.raises(BadInput):
        dut_reset.command(0.5, port="eth0; reboot")


def test_outage_log_parses_to_down_up_pairs():
    assert dut_reset.parse_outages("10.000000 10.500100\n\n12.5 13.0\n") == [(10.0, 10.5001), (12.5, 13.0)]


@pytest.mark.parametrize("text", ["1.0\n", "2.0 1.0\n", "a b\n"])
def test_outage_log_rejects_malformed_lines(text):
    with pytest.raises(ValueError):
        dut_reset.parse_outages(text)


def test_lab_inventory_gives_the_dut_the_reset_command(tmp_path):
    from rfc2544.config import inventory
    from rfc2544.lab import inventory_file, topology
    topo = topology.get("single")
    path = tmp_path / "inventory.yml"
    inventory_file.write(path, inventory_file.build("unit", topo, {"tester": 20001}, tmp_path / "k", tmp_path / "kh"))
    assert inventory.load(path).hosts["dut"].reset_cmd == dut_reset.command()
