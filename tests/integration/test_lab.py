"""The single-topology lab, for real: boots, SSH with verified host keys,
forwarding through the DUT namespace, exact pktgen counts, the DUT cap,
a host-built module loading in the lab kernel."""
import subprocess
import sys
import textwrap

import pytest

from rfc2544.config import inventory
from rfc2544.errors import BadInput, InfraError
from rfc2544.lab import flow_counter, kernel_pktgen, topology
from rfc2544.lab.topology import PORTS, addr
from rfc2544.drivers.ssh import SSHHost

pytestmark = pytest.mark.lab

TX, RX, DUT0, DUT1 = PORTS["tx0"], PORTS["rx0"], PORTS["dut0"], PORTS["dut1"]


def test_lab_is_up_and_inventory_loads(lab):
    st = lab.status()
    assert st["up"] and st["topology"] == "single"
    inv = inventory.load(lab.inventory_path)
    tester, dut = inv.hosts["tester"], inv.hosts["dut"]
    assert dut.netns == "dut" and dut.port == tester.port
    assert tester.ports["tx0"].peer_mac == DUT0.mac
    assert tester.ports["rx0"].ipv4 == RX.ipv4
    assert [(s.tx_host, s.tx_port, s.rx_host, s.rx_port) for s in inv.streams] == [
        ("tester", "tx0", "tester", "rx0")]


def test_rx_timestamp_key_is_held(lab, tester):
    """Every VM holds the receive-timestamp key on for its life
    (topology.HOLD_RX_TIMESTAMPS): a socket with SO_TIMESTAMPNS set."""
    status, out, _ = tester.run("pgrep -f 'rfc2544-hold-rx-timestamp[s]'", check=False)
    assert status == 0, "the timestamp-holding process is not running"
    [pid] = out.split()
    sockets = tester.run(f"ls -l /proc/{pid}/fd | grep -c socket:", check=False)[1]
    assert int(sockets) == 1


def test_ssh_verifies_host_keys(lab, tester, tmp_path):
    assert tester.run("hostname")[1].strip() == "tester"
    # the openssh client through `rfc2544 lab ssh` (StrictHostKeyChecking=yes)
    r = subprocess.run([sys.executable, "-m", "rfc2544", "lab", "ssh", "--name", lab.name,
                        "dut", "--", "ip", "-br", "link"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "dut0" in r.stdout and "tx0" not in r.stdout
    # a known_hosts entry with some other key for the same [127.0.0.1]:port is refused
    _, port = lab.ssh_port("tester")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = (tmp_path / "other.pub").read_text().split()
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{port} {other[0]} {other[1]}\n")
    with pytest.raises(InfraError, match="does not match"):
        SSHHost.connect("tester", "127.0.0.1", port, "root", lab.key_file, wrong)
    r = subprocess.run(["ssh", "-p", str(port), "-i", str(lab.key_file), "-o", "BatchMode=yes",
                        "-o", f"UserKnownHostsFile={wrong}", "-o", "StrictHostKeyChecking=yes",
                        "root@127.0.0.1", "true"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "HOST IDENTIFICATION HAS CHANGED" in r.stderr


def test_test_ports_are_quiet(lab, tester):
    """No background frames (ARP, ND, MLD, RS) on the test links: counters
    are only moved by test traffic."""
    read = ("for d in tx0 rx0; do cat /sys/class/net/$d/statistics/rx_packets "
            "/sys/class/net/$d/statistics/tx_packets; done")
    before = tester.run(read)[1].split()
    tester.run("sleep 5")
    assert tester.run(read)[1].split() == before


def _dut_rx(tester, lab, dev):
    return flow_counter.rx_packets(tester, dev, prefix=lab.dut_cmd(""))


@pytest.mark.parametrize("family", ["ipv4", "ipv6"])
def test_ping_crosses_the_dut(lab, tester, family):
    src, dst = addr(getattr(TX, family)), addr(getattr(RX, family))
    before = _dut_rx(tester, lab, "dut0"), _dut_rx(tester, lab, "dut1")
    out = tester.run(f"ping -c 3 -i 0.2 -W 5 -I {src} {dst}")[1]
    after = _dut_rx(tester, lab, "dut0"), _dut_rx(tester, lab, "dut1")
    assert "3 received" in out
    assert "ttl=63" in out          # one router hop: the DUT forwarded it
    # requests entered the DUT on dut0, replies on dut1
    assert after[0] - before[0] >= 3 and after[1] - before[1] >= 3


@pytest.mark.parametrize("family,count", [("ipv4", 10000), ("ipv6", 3000)])
def test_kernel_pktgen_count_arrives_exactly(lab, tester, family, count):
    """A run in which a CPU's input backlog overflowed (softnet_stat: the
    burst a generator sends to catch up after a TCG vCPU stall; CI saw 3209
    of 10000 lost so) is the host's doing, and is run again, up to 3 times;
    any other loss fails at once."""
    src, dst = addr(getattr(TX, family)), addr(getattr(RX, family))
    tx0_rx_before = flow_counter.rx_packets(tester, "tx0")
    try:
        for attempt in range(3):
            overflowed = flow_counter.backlog_drops(tester)
            with flow_counter.FlowCounter(tester, "rx0", src, dst) as counter:
                result = kernel_pktgen.send(tester, "tx0", count, src, dst, DUT0.mac)
                received = counter.count()
            overflowed = flow_counter.backlog_drops(tester) - overflowed
            if received == count or not overflowed:
                break
    finally:
        kernel_pktgen.unload(tester)
    # `sent` counts only frames the driver accepted. pktgen's `errors` counts
    # attempts the tester's own veth refused under backlog pressure (a loaded
    # host): those never reach the wire and pktgen retries them, so they are
    # not loss. Exactness is sent == received == count.
    assert result.sent == count, result
    assert received == count, (f"sent {result.sent}, received {received}, tester xmit errors {result.errors}, "
                               f"backlog drops {overflowed}")
    # nothing much comes back: ICMP errors for the closed UDP port are rate-limited
    assert flow_counter.rx_packets(tester, "tx0") - tx0_rx_before <= 6 * (attempt + 1)


def test_capped_dut_forwards_no_more_than_the_cap(lab, tester):
    pps, burst, count = 2000, 20, 20000
    src, dst = addr(TX.ipv4), addr(RX.ipv4)
    lab.cap_dut(pps, burst)
    try:
        with flow_counter.FlowCounter(tester, "rx0", src, dst) as counter:
            t0 = float(tester.run("cat /proc/uptime")[1].split()[0])
            result = kernel_pktgen.send(tester, "tx0", count, src, dst, DUT0.mac)
            tester.run("sleep 0.5")        # let the DUT's backlog drain
            received = counter.count()
            t1 = float(tester.run("cat /proc/uptime")[1].split()[0])
    finally:
        lab.uncap_dut()
        kernel_pktgen.unload(tester)
    window = t1 - t0                      # >= the time the DUT could forward in
    assert result.sent == count
    assert received <= pps * window + burst, (received, window)
    assert received < count
    # the cap limits, it does not black-hole. (Under TCG the DUT handles
    # frames in bursts, and a policer passes only `burst` of each, so well
    # under the cap gets through: 1225 of 2456 in a measured run.)
    assert received >= 0.2 * pps * result.usec / 1e6
    assert "clsact" not in tester.run(lab.dut_cmd(f"tc qdisc show dev {topology.DUT_EGRESS}"))[1]


def test_cap_rejects_bad_rates(lab):
    for bad in (0, -5, "100", 2.5):
        with pytest.raises(BadInput):
            lab.cap_dut(bad)


def test_second_up_is_refused_while_running(lab):
    with pytest.raises(BadInput, match="already up"):
        lab.up("single")
    r = subprocess.run([sys.executable, "-m", "rfc2544", "lab", "up", "--name", lab.name],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().startswith("rfc2544: ") and "already up" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert lab.status()["up"]


def test_module_built_on_host_with_kdir_loads_in_lab_kernel(lab, tester, tmp_path):
    src = tmp_path / "labhello"
    src.mkdir()
    (src / "labhello.c").write_text(textwrap.dedent("""\
        #include <linux/module.h>
        #include <linux/init.h>
        static int __init labhello_init(void) { pr_info("labhello: loaded\\n"); return 0; }
        static void __exit labhello_exit(void) { pr_info("labhello: unloaded\\n"); }
        module_init(labhello_init);
        module_exit(labhello_exit);
        MODULE_LICENSE("GPL");
        """))
    (src / "Kbuild").write_text("obj-m := labhello.o\n")
    r = subprocess.run(["make", "-C", str(lab.kdir), f"M={src}", "modules"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    from rfc2544.drivers.ssh import put_file
    put_file(tester, src / "labhello.ko", "/tmp/labhello.ko")
    try:
        tester.run("insmod /tmp/labhello.ko")
        assert tester.run("uname -r")[1].strip() == lab.kernel_release
        assert "labhello" in tester.run("lsmod")[1]
    finally:
        tester.run("rmmod labhello", check=False)


def test_init_discovers_the_labs_ports(lab, tmp_path):
    """`rfc2544 init` over SSH against the lab's tester and DUT namespace
    finds exactly the test ports `lab up` wired, with their MACs, addresses
    and peers (from the static neighbour entries); the management port,
    which carries the SSH connection, is left out."""
    inv = inventory.load(lab.inventory_path)
    tester = inv.hosts["tester"]
    target = tmp_path / "init.yml"
    where = f"root@{tester.address}:{tester.port}"
    run = subprocess.run([sys.executable, "-m", "rfc2544", "init", str(target), "--tester", where, "--dut", where,
                          "--dut-netns", "dut", "--key", tester.key_file, "--known-hosts", tester.known_hosts],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    import yaml
    written = yaml.safe_load(target.read_text())["all"]["children"]
    for group, host in (("testers", "tester"), ("duts", "dut")):
        found = {p["name"]: p for p in written[group]["hosts"][host]["rfc2544_ports"]}
        wired = inv.hosts[host].ports
        assert set(found) == set(wired), (host, sorted(found))
        for name, port in wired.items():
            got = found[name]
            assert (got["mac"], got["ipv4"], got["ipv6"]) == (port.mac, port.ipv4, port.ipv6), got
            assert (got["peer_mac"], got["peer_ipv4"], got["peer_ipv6"]) == \
                (port.peer_mac, port.peer_ipv4, port.peer_ipv6), got
    assert "# mgmt0: left out, carries this SSH connection (10.0.2.15)" in target.read_text()
