"""The inventory schema: valid files load, every bad field is named."""
import textwrap

import pytest

from rfc2544.config import inventory
from rfc2544.errors import BadInput

GOOD = """
all:
  vars:
    rfc2544_streams:
      - {tx: "tester:tx0", rx: "tester:rx0"}
  children:
    testers:
      hosts:
        tester:
          ansible_host: 192.0.2.10
          ansible_port: 2222
          rfc2544_known_hosts: /tmp/kh
          rfc2544_ports:
            - {name: tx0, role: tx, mac: "02:00:00:00:00:01", ipv4: 198.18.0.1/24,
               peer_mac: "02:00:00:00:00:02", peer_ipv4: 198.18.0.2, speed_mbps: 10000}
            - {name: rx0, role: rx, mac: "02:00:00:00:00:03", ipv4: 198.19.0.1/24}
    duts:
      hosts:
        dut:
          rfc2544_netns: dut
          rfc2544_ports:
            - {name: dut0, role: dut, mac: "02:00:00:00:00:02"}
"""


def write(tmp_path, text):
    p = tmp_path / "inv.yml"
    p.write_text(textwrap.dedent(text))
    return p


def test_good_inventory_loads(tmp_path):
    inv = inventory.load(write(tmp_path, GOOD))
    assert [h.name for h in inv.testers] == ["tester"]
    assert [h.name for h in inv.duts] == ["dut"]
    tester = inv.hosts["tester"]
    assert (tester.address, tester.port, tester.user) == ("192.0.2.10", 2222, "root")
    assert tester.ports["tx0"].peer_mac == "02:00:00:00:00:02"
    assert tester.ports["tx0"].speed_mbps == 10000
    assert inv.hosts["dut"].netns == "dut"
    assert len(inv.streams) == 1 and inv.streams[0].rx_port == "rx0"


@pytest.mark.parametrize("old,new,field", [
    ("name: tx0,", 'name: "tx0\\n",', "rfc2544_ports[0].name"),
    ("name: tx0,", "name: tx0;reboot,", "rfc2544_ports[0].name"),
    ('mac: "02:00:00:00:00:01"', 'mac: "02:00:00:00:00:01\\n"', "rfc2544_ports[0].mac"),
    ("ipv4: 198.18.0.1/24,", "ipv4: 198.18.0.300/24,", "rfc2544_ports[0].ipv4"),
    ("role: tx,", "role: sender,", "rfc2544_ports[0].role"),
    ("speed_mbps: 10000", "speed_mbps: -1", "rfc2544_ports[0].speed_mbps"),
    ('tx: "tester:tx0"', 'tx: "tester:nope"', "rfc2544_streams[0].tx"),
    # a tester port of role rx may send (bidirectional), a DUT port may not; nor to itself
    ('tx: "tester:tx0"', 'tx: "dut:dut0"', "rfc2544_streams[0].tx"),
    ('tx: "tester:tx0"', 'tx: "tester:rx0"', "rfc2544_streams[0]: sends to itself"),
    ("ansible_port: 2222", "ansible_port: ssh", "ansible_port"),
])
def test_bad_field_is_named(tmp_path, old, new, field):
    assert old in GOOD
    with pytest.raises(BadInput) as exc:
        inventory.load(write(tmp_path, GOOD.replace(old, new, 1)))
    assert field in str(exc.value)


CAL = "          rfc2544_calibration_link: {tx: cal0, rx: cal1}\n"


def with_link(text=CAL, host="tester"):
    """GOOD with `text` added to `host`'s variables."""
    anchor = "          ansible_port: 2222\n" if host == "tester" else "          rfc2544_netns: dut\n"
    return GOOD.replace(anchor, anchor + text, 1)


def test_a_calibration_link_loads(tmp_path):
    inv = inventory.load(write(tmp_path, with_link()))
    assert inv.hosts["tester"].calibration_link == ("cal0", "cal1")
    assert inventory.load(write(tmp_path, GOOD)).hosts["tester"].calibration_link is None


@pytest.mark.parametrize("text,host,says", [
    (CAL, "dut", "put it on a host under 'testers'"),
    (CAL.replace("cal1", "cal0"), "tester", "two different ports"),
    (CAL.replace("cal1", "rx0"), "tester", "'rx0' is a test port"),
    (CAL.replace("cal0", "cal0;reboot"), "tester", "rfc2544_calibration_link.tx: 'cal0;reboot' is not a valid"),
    (CAL.replace(", rx: cal1", ""), "tester", "exactly 'tx: PORT' and 'rx: PORT'"),
    ("          rfc2544_calibration_link: cal0\n", "tester", "exactly 'tx: PORT' and 'rx: PORT'"),
])
def test_a_bad_calibration_link_is_named(tmp_path, text, host, says):
    with pytest.raises(BadInput) as exc:
        inventory.load(write(tmp_path, with_link(text, host)))
    assert "rfc2544_calibration_link" in str(exc.value) and says in str(exc.value)


def test_not_yaml_and_missing_file(tmp_path):
    with pytest.raises(BadInput, match="not valid YAML"):
        inventory.load(write(tmp_path, "all: [unclosed"))
    with pytest.raises(BadInput, match="no such inventory"):
        inventory.load(tmp_path / "missing.yml")


def test_no_tester_is_rejected(tmp_path):
    with pytest.raises(BadInput, match="testers"):
        inventory.load(write(tmp_path, "all:\n  children: {}\n"))


# One interface-name rule: the kernel's dev_valid_name() plus what pktgen's
# "IF@tag" device names and the tester's /proc writes can carry.
VALID_NAMES = ["eth0", "enp1s0f0np0", "br0.100", "veth-dut_1", "x" * 15]
INVALID_NAMES = [("tx:0", "Linux refuses"), ("tx/0", "Linux refuses"), ("tx 0", "Linux refuses"),
                 ("tx\u00a00", "Linux refuses"), (".", "reserved by Linux"), ("..", "reserved by Linux"),
                 ("x" * 16, "16 bytes"), ("tx@1", "IF@tag"), ("tx$0", "may hold only"), ("-tx0", "start with")]


@pytest.mark.parametrize("name,reason", INVALID_NAMES)
def test_bad_interface_name_is_refused_at_load_naming_file_and_field(tmp_path, name, reason):
    path = write(tmp_path, GOOD.replace("name: tx0,", f'name: "{name}",', 1))
    with pytest.raises(BadInput) as exc:
        inventory.load(path)
    message = str(exc.value)
    field = "testers.tester.rfc2544_ports[0].name"
    assert message.startswith(f"{path}: {field}: '{name}' is not a valid interface name")
    assert reason in message


@pytest.mark.parametrize("name", VALID_NAMES + [n for n, _ in INVALID_NAMES])
def test_inventory_drivers_and_script_paths_agree_on_interface_names(tmp_path, name):
    from rfc2544.drivers import script, validate

    def accepts(check, *args):
        try:
            check(*args)
            return True
        except BadInput:
            return False

    renamed = GOOD.replace("name: tx0,", f'name: "{name}",', 1).replace("tester:tx0", f"tester:{name}")
    path = write(tmp_path, renamed)
    verdicts = {
        "inventory": accepts(inventory.load, path),
        "validate.ifname": accepts(validate.ifname, name),
        "sys path": accepts(script.check_path, f"/sys/class/net/{name}/operstate"),
        "pktgen device": accepts(validate.pgdev, f"{name}@12"),
        "pktgen file": accepts(script.check_path, f"/proc/net/pktgen/{name}@12"),
    }
    assert set(verdicts.values()) == {name in VALID_NAMES}, verdicts
