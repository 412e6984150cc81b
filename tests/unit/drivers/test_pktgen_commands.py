"""The batch script and pktgen commands: validation, quoting, failure reports.

The rendered scripts are also executed with the local /bin/sh against a
temporary directory standing in for /proc/net/pktgen (plain files, no
kernel), to check what the shell really does with them."""
import subprocess

import pytest

from rfc2544.drivers import pgrx, pktgen, validate
from rfc2544.drivers.script import Batch, parse_output
from rfc2544.errors import BadInput


def cfg(**kw):
    base = dict(device="tx0", count=1000, dst_mac="52:54:00:00:00:02", src_ip="198.18.0.1",
                dst_ip="198.19.0.1", pkt_size=60, ratep=1000)
    base.update(kw)
    return pktgen.DeviceConfig(**base)


def test_device_commands_ipv4():
    cmds = cfg().commands()
    assert cmds[:4] == ["pkt_size 60", "count 1000", "clone_skb 0", "ratep 1000"]
    assert "dst_mac 52:54:00:00:00:02" in cmds
    assert "flag !IPV6" in cmds and "dst_min 198.19.0.1" in cmds and "src_max 198.18.0.1" in cmds
    assert cmds[-1] == "clear_counters"


def test_device_commands_ipv6_and_max_rate_and_imix():
    cmds = cfg(ipv6=True, src_ip="2001:2::1/64", dst_ip="2001:0002:0:1::1", ratep=None).commands()
    assert "src6 2001:2::1" in cmds and "dst6 2001:2:0:1::1" in cmds and "flag IPV6" in cmds
    assert "delay 0" in cmds
    cmds = cfg(pkt_size=None, imix=pktgen.SIMPLE_IMIX).commands()
    assert "imix_weights 60,7 572,4 1514,1" in cmds


@pytest.mark.parametrize("name", ["tx0;reboot", "$(reboot)", "tx 0", "tx0\n", "../../etc", "a" * 16,
                                  "-rf", "tx0`id`", "tx0'", "", "tx0@x", "tx0/../x"])
def test_malicious_interface_names_are_rejected(name):
    with pytest.raises(BadInput):
        cfg(device=name).commands()
    with pytest.raises(BadInput):
        pktgen.device_path(name)


@pytest.mark.parametrize("field,value", [
    ("dst_mac", "52:54:00:00:00:02; reboot"), ("dst_mac", "52:54:00:00:00"),
    ("src_ip", "198.18.0.1 && reboot"), ("dst_ip", "198.19.0.256"), ("dst_ip", "$(id)"),
    ("count", -1), ("count", 0), ("count", "10;"), ("count", 1.5), ("count", True), ("count", 2**64),
    ("ratep", 0), ("ratep", "fast"), ("pkt_size", 41), ("pkt_size", 100000),
    ("flags", ("NOT_A_FLAG",)), ("flags", ("IPV6;reboot",)),
])
def test_malicious_or_wrong_values_are_rejected(field, value):
    with pytest.raises(BadInput):
        cfg(**{field: value}).commands()


def test_ipv6_addresses_validated():
    with pytest.raises(BadInput):
        cfg(ipv6=True, src_ip="2001:2::1;id", dst_ip="2001:2::2").commands()


def test_frame_size_to_pkt_size():
    assert pktgen.pkt_size_for_frame(64) == 60
    assert pktgen.pkt_size_for_frame(1518) == 1514
    with pytest.raises(BadInput):
        pktgen.pkt_size_for_frame(45)


def test_batch_refuses_paths_and_commands_outside_the_allow_list():
    b = Batch()
    for path in ("/etc/passwd", "/proc/net/pktgen/../../../etc/shadow", "/proc/net/pktgen/tx0;id",
                 "/sys/class/net/tx0/statistics/../../../../etc/x", "/proc/net/pktgen/tx0 x"):
        with pytest.raises(BadInput):
            b.write(path, "count 1")
        with pytest.raises(BadInput):
            b.read("x", path)
    for command in ("count 1\nstart", "count 1; reboot", "count $(id)", "count `id`", "count 'x'", 'a"b', ""):
        with pytest.raises(BadInput):
            b.write("/proc/net/pktgen/tx0", command)
    assert len(b) == 0


def test_setup_batch_adds_devices_to_threads():
    b = pktgen.setup_batch({"tx0": 0, "tx1@1": 1})
    assert b.ops == [("write", pktgen.PGCTRL, "stop"), ("forget",),
                     ("write", "/proc/net/pktgen/kpktgend_0", "add_device tx0"),
                     ("write", "/proc/net/pktgen/kpktgend_1", "add_device tx1@1")]


def test_pgrx_batches():
    b = pgrx.enable_batch("rx0", "time")
    assert [op[2] for op in b.ops] == ["rx rx0", "display script", "action drop", "statistics time"]
    with pytest.raises(BadInput):
        pgrx.enable_batch("rx0;id")
    assert [op[2] for op in pgrx.reset_batch("basic").ops] == ["statistics basic", "rx_reset"]


def test_start_command_waits_for_the_trigger():
    assert pktgen.start_command() == \
        'read go && [ "$go" = start ] && echo start > /proc/net/pktgen/pgctrl'


def _state(text):
    return pktgen.parse_device(text)


DEV_V4 = """Params: count 500  min_pkt_size: 60  max_pkt_size: 60
     frags: 0  delay: 1000000  clone_skb: 0  ifname: tx0
     flows: 0 flowlen: 0
     queue_map_min: 0  queue_map_max: 0
     dst_min: 198.19.0.1  dst_max: 198.19.0.1
     src_min: 198.18.0.1  src_max: 198.18.0.1
     src_mac: 52:54:00:00:00:01 dst_mac: 52:54:00:00:00:02
     udp_src_min: 9  udp_src_max: 9  udp_dst_min: 9  udp_dst_max: 9
     src_mac_count: 0  dst_mac_count: 0
     Flags: 
Current:
     pkts-sofar: 0  errors: 0  tx_dropped: 0
Result: OK: clear_counters=0
"""


def test_verify_device_checks_every_value_the_config_sets_and_all_others():
    c = cfg(count=500, ratep=1000)
    st = _state(DEV_V4)
    assert pktgen.verify_device(c, st) == []
    ref = pktgen.device_view(st)
    assert pktgen.verify_device(c, st, ref) == []
    # a value the config sets, changed
    assert any("delay" in p for p in pktgen.verify_device(cfg(count=500, ratep=999), st))
    assert any("count" in p for p in pktgen.verify_device(cfg(count=501, ratep=1000), st))
    # a value the config does not set, changed or added behind our back
    other = _state(DEV_V4.replace("queue_map_max: 0", "queue_map_max: 3"))
    assert pktgen.verify_device(c, other) == []
    assert any("queue_map_max" in p for p in pktgen.verify_device(c, other, ref))
    vlan = _state(DEV_V4.replace("     Flags:", "     vlan_id: 5  vlan_p: 0  vlan_cfi: 0\n     Flags:"))
    assert any("vlan_id" in p for p in pktgen.verify_device(c, vlan, ref))
    flag = _state(DEV_V4.replace("Flags: ", "Flags: UDPCSUM  "))
    assert any("flags" in p for p in pktgen.verify_device(c, flag, ref))
    v6 = _state(DEV_V4.replace("Flags: ", "Flags: IPV6  "))
    assert any("IPV6" in p for p in pktgen.verify_device(c, v6))
    # an IPv6 config on an IPv4 reference: the other mode's address lines are not compared
    c6 = cfg(count=500, ratep=1000, ipv6=True, src_ip="2001:db8::1", dst_ip="2001:db8:1::1")
    text6 = DEV_V4.replace("     dst_min: 198.19.0.1  dst_max: 198.19.0.1\n     src_min: 198.18.0.1  src_max: 198.18.0.1",
                           "     saddr: 2001:db8::1  min_saddr: 2001:db8::1  max_saddr: 2001:db8::1\n"
                           "     daddr: 2001:db8:1::1  min_daddr: ::  max_daddr: ::").replace("Flags: ", "Flags: IPV6  ")
    assert pktgen.verify_device(c6, _state(text6), ref) == []
    assert pktgen.verify_device(c6, _state(text6.replace("daddr: 2001:db8:1::1", "daddr: 2001:db8:1::2")), ref)


def test_command_keys_pair_commands_that_overwrite_each_other():
    assert pktgen.command_key("ratep 100") == pktgen.command_key("delay 0") == "delay"
    assert pktgen.command_key("flag IPV6") == pktgen.command_key("flag !IPV6")
    assert pktgen.command_key("count 5") == "count"


# ---- the rendered script, run by the local shell against plain files ----

def run_local(batch, root, shell="bash"):
    text = batch.text().replace("/proc/net/pktgen/", f"{root}/")
    r = subprocess.run([shell, "-c", text], capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout + r.stderr


def test_script_writes_each_command_with_a_newline(tmp_path):
    b = Batch().write("/proc/net/pktgen/tx0", "count 5").write("/proc/net/pktgen/tx0", "dst_mac 52:54:00:00:00:02")
    status, out = run_local(b, tmp_path)
    assert status == 0
    # each write replaces the file: the last command is what is left, newline-terminated
    assert (tmp_path / "tx0").read_text() == "dst_mac 52:54:00:00:00:02\n"


def test_script_stops_at_the_first_failed_write_and_reports_result(tmp_path):
    (tmp_path / "tx1").mkdir()            # writing to a directory fails
    (tmp_path / "kpktgend_0").write_text("Running:\nStopped: tx0\nResult: OK: add_device=tx0\n")
    b = (Batch().write("/proc/net/pktgen/tx0", "count 5")
         .write("/proc/net/pktgen/tx1", "count 6")
         .write("/proc/net/pktgen/tx2", "count 7"))
    status, out = run_local(b, tmp_path)
    assert status == 3
    parsed = parse_output(out.replace(f"{tmp_path}/", "/proc/net/pktgen/"))
    assert len(parsed.errors) == 1
    err = parsed.errors[0]
    assert err.path == "/proc/net/pktgen/tx1" and err.command == "count 6"
    assert err.result == "Result: (none)" and err.error == "Is a directory"
    assert str(err) == "writing 'count 6' to /proc/net/pktgen/tx1 failed: Is a directory; Result: (none)"
    assert not (tmp_path / "tx2").exists()     # nothing after the failure ran


# forget_devices, run by the local shell against plain thread files. A
# plain file would forget at the write (it is overwritten), so these tests
# send the write to a side file and play the kernel thread themselves.
def _forget_script(tmp_path, looks=500):
    b = Batch().forget_devices().write("/proc/net/pktgen/kpktgend_0", "add_device tx0")
    text = b.text().replace('__w "$__t" rem_device_all', '__w "$__t.sent" rem_device_all')
    return text.replace('-gt 500', f'-gt {looks}').replace("/proc/net/pktgen/", f"{tmp_path}/")


LISTING = "Running: {}\nStopped: {}\nResult: OK: add_device=tx0\n"


def test_forget_devices_waits_until_the_thread_lists_none(tmp_path):
    """The in-tree pktgen's thread removes devices some time after
    rem_device_all (simulated here by a timer): add_device must come after."""
    import threading
    import time
    thread0, thread1 = tmp_path / "kpktgend_0", tmp_path / "kpktgend_1"
    thread0.write_text(LISTING.format("", "tx0 tx1 "))
    thread1.write_text(LISTING.format("", ""))
    removed_at = []

    def remove():
        removed_at.append(time.monotonic())
        thread0.write_text(LISTING.format("", ""))
    timer = threading.Timer(0.4, remove)
    timer.start()
    try:
        r = subprocess.run(["bash", "-c", _forget_script(tmp_path)], capture_output=True, text=True, timeout=30)
    finally:
        timer.cancel()
    assert r.returncode == 0, r.stdout + r.stderr
    assert removed_at, "the script ended before the thread removed its devices"
    assert thread0.read_text() == "add_device tx0\n"            # written after the removal
    assert (tmp_path / "kpktgend_0.sent").read_text() == "rem_device_all\n"
    assert not (tmp_path / "kpktgend_1.sent").exists()          # a thread with no devices is not told


def test_forget_devices_fails_clearly_when_the_thread_keeps_its_devices(tmp_path):
    (tmp_path / "kpktgend_0").write_text(LISTING.format("tx0 ", ""))
    r = subprocess.run(["bash", "-c", _forget_script(tmp_path, looks=3)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 3
    parsed = parse_output(r.stdout.replace(f"{tmp_path}/", "/proc/net/pktgen/"))
    assert parsed.errors[0].path == "/proc/net/pktgen/kpktgend_0"
    assert parsed.errors[0].result == "Result: OK: add_device=tx0"
    assert "still listed" in parsed.errors[0].error
    assert (tmp_path / "kpktgend_0").read_text() == LISTING.format("tx0 ", "")   # nothing after the failure ran


def test_failed_write_quotes_the_files_result_line(tmp_path):
    # pktgen refuses a write yet keeps the file readable with its Result
    # line; a plain file cannot refuse, so the write is replaced by `false`.
    b = Batch().write("/proc/net/pktgen/kpktgend_0", "add_device tx0")
    text = b.text().replace('printf \'%s\\n\' "$2" 2>"$__ef" >"$1"', 'false')
    assert "then return 0" in text and "if false; then" in text
    (tmp_path / "kpktgend_0").write_text("Running: \nStopped: \nResult: ERROR: can not add device tx0\n")
    r = subprocess.run(["/bin/sh", "-c", text.replace("/proc/net/pktgen/", f"{tmp_path}/")],
                       capture_output=True, text=True, timeout=30)
    parsed = parse_output(r.stdout.replace(f"{tmp_path}/", "/proc/net/pktgen/"))
    assert parsed.errors[0].result == "Result: ERROR: can not add device tx0"


@pytest.mark.parametrize("shell", ["bash", "/bin/sh"])
def test_script_reads_are_framed_per_file(tmp_path, shell):
    (tmp_path / "tx0").write_text("Params: count 5\n\nResult: OK: count=5")   # no final newline
    (tmp_path / "pgrx").write_text("pgrx version=1\nend\n")
    b = Batch().read("zero", "/proc/net/pktgen/tx0", "/proc/net/pktgen/pgrx")
    status, out = run_local(b, tmp_path, shell)
    parsed = parse_output(out.replace(f"{tmp_path}/", "/proc/net/pktgen/"))
    assert parsed.reads["zero"]["/proc/net/pktgen/tx0"] == "Params: count 5\n\nResult: OK: count=5"
    assert parsed.reads["zero"]["/proc/net/pktgen/pgrx"] == "pgrx version=1\nend"
    assert not parsed.read_failures


@pytest.mark.parametrize("shell", ["bash", "/bin/sh"])
def test_script_read_of_a_missing_file_is_reported(tmp_path, shell):
    b = Batch().read("zero", "/proc/net/pktgen/tx9")
    status, out = run_local(b, tmp_path, shell)
    parsed = parse_output(out.replace(f"{tmp_path}/", "/proc/net/pktgen/"))
    assert "zero" in parsed.read_failures


def test_validators():
    assert validate.ipv4("198.18.0.1/24") == "198.18.0.1"
    assert validate.ipv6("2001:0002::0001/64") == "2001:2::1"
    assert validate.mac("52:54:00:AB:CD:EF") == "52:54:00:ab:cd:ef"
    assert validate.pgdev("enp1s0f0@12") == "enp1s0f0@12"
    # pktgen cuts IF@tag at '@': the interface part obeys the interface-name
    # rule (<= 15 bytes), the whole name fits pktgen's 32-byte field with its NUL
    assert validate.pgdev("enp1s0f0np0@1234") == "enp1s0f0np0@1234"
    assert validate.pgdev("x" * 15 + "@1234") == "x" * 15 + "@1234"
    for bad in ("x" * 16 + "@1", "tx:0@1", "tx0@", "tx0@12345", "@1"):
        with pytest.raises(BadInput):
            validate.pgdev(bad)
    with pytest.raises(BadInput):
        validate.netns("dut; reboot")
