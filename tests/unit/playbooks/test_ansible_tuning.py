"""host_tuning's module against a simulated host (no lab): a fake /sys and
/proc tree plus a fake ethtool/systemctl that keep NIC and service state.
The real module runs in the lab (tests/integration/test_ansible_lab.py)."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MODULE = ROOT / "playbooks/roles/host_tuning/library/host_tuning_values.py"


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ht = load(MODULE)

PAUSE = "Pause parameters for {p}:\nAutonegotiate:\t{autoneg}\nRX:\t\t{rx}\nTX:\t\t{tx}\nRX negotiated: on\n"
COALESCE_KEYS = ["rx-usecs", "rx-frames", "tx-usecs", "tx-frames"]
RING = ("Ring parameters for {p}:\nPre-set maximums:\nRX:\t\t{max_rx}\nRX Mini:\tn/a\nRX Jumbo:\tn/a\n"
        "TX:\t\t{max_tx}\nCurrent hardware settings:\nRX:\t\t{rx}\nRX Mini:\tn/a\nRX Jumbo:\tn/a\nTX:\t\t{tx}\n")


class FakeHost:
    """ethtool and systemctl with state; NICs listed in `nics` support everything,
    names in `virtual` answer 'Operation not supported' like a veth."""

    def __init__(self, tmp_path, nics=("eth1",), virtual=("veth0",), irqbalance="active"):
        self.root = tmp_path
        self.calls = []
        self.nics = {n: {"pause": {"autoneg": "on", "rx": "on", "tx": "on"},
                         "coalesce": {"adaptive-rx": "on", "adaptive-tx": "on", "rx-usecs": "3",
                                      "rx-frames": "0", "tx-usecs": "0", "tx-frames": "0"},
                         "ring": {"rx": 256, "tx": 256, "max_rx": 4096, "max_tx": 4096}} for n in nics}
        self.virtual = set(virtual)
        self.irqbalance = irqbalance
        self.fail_set = set()
        for cpu, gov in enumerate(["schedutil", "powersave"]):
            d = tmp_path / f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
            d.mkdir(parents=True)
            (d / "scaling_governor").write_text(gov + "\n")
            (d / "scaling_available_governors").write_text("performance schedutil powersave\n")
        (tmp_path / "sys/devices/system/cpu/online").write_text("0-3\n")
        for n, irqs in (("eth1", [30, 31, 32]),):
            dev = tmp_path / f"sys/class/net/{n}/device/msi_irqs"
            dev.mkdir(parents=True)
            for irq in irqs:
                (dev / str(irq)).write_text("msix\n")
                p = tmp_path / f"proc/irq/{irq}"
                p.mkdir(parents=True)
                (p / "smp_affinity_list").write_text("0-3\n")
        (tmp_path / "sys/class/net/veth0").mkdir(parents=True)
        self.host = ht.Host(self.run, root=str(tmp_path))

    def run(self, argv):
        self.calls.append(list(argv))
        if argv[:3] == ["ip", "netns", "exec"]:
            argv = argv[4:]
        if argv[0] == "systemctl":
            return self.systemctl(argv)
        assert argv[0] == "ethtool"
        opt, port, rest = argv[1], argv[2], argv[3:]
        if port in self.virtual:
            return 95, "", "Cannot get device settings: Operation not supported\n"
        if port not in self.nics:
            return 1, "", "Cannot get device settings: No such device\n"
        nic = self.nics[port]
        if opt == "-a":
            return 0, PAUSE.format(p=port, **nic["pause"]), ""
        if opt == "-c":
            out = f"Coalesce parameters for {port}:\nAdaptive RX: {nic['coalesce']['adaptive-rx']}  TX: {nic['coalesce']['adaptive-tx']}\n"
            out += "stats-block-usecs: n/a\n" + "".join(f"{k}: {nic['coalesce'][k]}\n" for k in COALESCE_KEYS)
            return 0, out, ""
        if opt == "-g":
            return 0, RING.format(p=port, **nic["ring"]), ""
        if port in self.fail_set:
            return 80, "", "netlink error: Invalid argument\n"
        pairs = dict(zip(rest[::2], rest[1::2]))
        if opt == "-A":
            nic["pause"].update(pairs)
        elif opt == "-C":
            nic["coalesce"].update(pairs)
        elif opt == "-G":
            nic["ring"].update({k: int(v) for k, v in pairs.items()})
        return 0, "", ""

    def systemctl(self, argv):
        if argv[1] == "show":
            if self.irqbalance is None:
                return 0, "LoadState=not-found\nActiveState=inactive\n", ""
            return 0, f"LoadState=loaded\nActiveState={self.irqbalance}\n", ""
        self.irqbalance = {"stop": "inactive", "start": "active"}[argv[1]]
        return 0, "", ""

    def values(self):
        """Everything tuning may touch, as a comparable snapshot."""
        files = sorted(p for p in self.root.rglob("*") if p.is_file() and ("cpufreq" in str(p) or "irq/" in str(p)))
        return {"files": {str(p): p.read_text().strip() for p in files}, "nics": json.dumps(self.nics, sort_keys=True),
                "irqbalance": self.irqbalance}


SNAP = "/var/lib/rfc2544/tuning-tester.json"


def apply_all(fake, check=False, ports=("eth1",), netns=""):
    t = ht.Tuning(fake.host, SNAP, check)
    ht.tune_governor(t, "performance")
    ht.tune_irqbalance(t)
    ht.tune_irq_affinity(t, list(ports), netns, "")
    ht.tune_flow_control(t, list(ports), netns)
    ht.tune_coalesce(t, list(ports), netns, {"adaptive-rx": False, "adaptive-tx": False, "rx-usecs": 0})
    ht.tune_rings(t, list(ports), netns, "max", "max")
    return t


def snapshot(fake):
    path = fake.root / SNAP.lstrip("/")
    return json.loads(path.read_text()) if path.exists() else None


def test_apply_changes_every_concern_and_records_originals_first(tmp_path):
    fake = FakeHost(tmp_path)
    t = apply_all(fake)
    assert fake.irqbalance == "inactive"
    nic = fake.nics["eth1"]
    assert nic["pause"] == {"autoneg": "off", "rx": "off", "tx": "off"}
    assert nic["coalesce"]["adaptive-rx"] == "off" and nic["coalesce"]["rx-usecs"] == "0"
    assert (nic["ring"]["rx"], nic["ring"]["tx"]) == (4096, 4096)
    gov = (tmp_path / "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor").read_text()
    assert gov == "performance"
    assert (tmp_path / "proc/irq/31/smp_affinity_list").read_text() == "1,2,3"   # all but CPU 0
    snap = snapshot(fake)
    entries = {e["key"]: e for e in snap["entries"]}
    assert entries["governor:cpu1"]["original"] == "powersave"
    assert entries["irq:30"]["original"] == "0-3"
    assert entries["pause:eth1"]["original"] == {"autoneg": "on", "rx": "on", "tx": "on"}
    assert entries["coalesce:eth1"]["original"] == {"adaptive-rx": "on", "adaptive-tx": "on", "rx-usecs": "3"}
    assert entries["ring:eth1"]["original"] == {"rx": 256, "tx": 256}
    assert entries["service:irqbalance"]["original"] == "active"
    assert len(t.changes) == len(snap["entries"]) == 9


def queue_irqs_host(tmp_path):
    """A simulated host of 4 CPUs whose /proc/interrupts names per-queue
    vectors (as e1000e and ixgbe name them): eth1's TX queues 0 (IRQ 30)
    and 1 (33, with RX), its RX queue (31) and its other vector (32);
    eth2's queue 0 (40)."""
    fake = FakeHost(tmp_path)
    (tmp_path / "proc/irq/33").mkdir(parents=True)
    (tmp_path / "proc/irq/33/smp_affinity_list").write_text("0-3\n")
    (tmp_path / "sys/class/net/eth1/device/msi_irqs/33").write_text("msix\n")
    (tmp_path / "proc/interrupts").write_text(
        "           CPU0       CPU1       CPU2       CPU3\n"
        "  30:          5          0          0          0   PCI-MSI 1048576-edge      eth1-tx-0\n"
        "  31:          7          0          0          0   PCI-MSI 1048577-edge      eth1-rx-0\n"
        "  32:          1          0          0          0   PCI-MSI 1048578-edge      eth1\n"
        "  33:          1          0          0          0   PCI-MSI 1048579-edge      eth1-TxRx-1\n"
        " NMI:          0          0          0          0   Non-maskable interrupts\n")
    # a second port: its queue 0 goes after eth1's two queues, on CPU 3
    (tmp_path / "sys/class/net/eth2/device/msi_irqs").mkdir(parents=True)
    (tmp_path / "sys/class/net/eth2/device/msi_irqs/40").write_text("msix\n")
    (tmp_path / "proc/irq/40").mkdir(parents=True)
    (tmp_path / "proc/irq/40/smp_affinity_list").write_text("0-3\n")
    with open(tmp_path / "proc/interrupts", "a") as f:
        f.write("  40:          1          0          0          0   PCI-MSI 1048580-edge      eth2-TxRx-0\n")
    return fake


PINNED_IRQS = (30, 31, 32, 33, 40)


def test_each_tx_queue_irq_is_pinned_to_a_cpu_of_its_own_and_restored(tmp_path):
    """A NIC whose /proc/interrupts names per-queue vectors (simulated
    files, as e1000e and ixgbe name them): each TX queue's IRQ on one CPU
    of the list (queue q on the q-th), the others on the list; restore
    puts every one back."""
    fake = queue_irqs_host(tmp_path)
    before = fake.values()
    t = ht.Tuning(fake.host, SNAP, False)
    ht.tune_irq_affinity(t, ["eth1", "eth2"], "", "1-3")
    pinned = {irq: (tmp_path / f"proc/irq/{irq}/smp_affinity_list").read_text() for irq in PINNED_IRQS}
    assert pinned == {30: "1", 31: "1-3", 32: "1-3", 33: "2", 40: "3"}
    entries = {e["key"]: e for e in snapshot(fake)["entries"]}
    assert entries["irq:30"]["tx_queue"] == 0 and entries["irq:33"]["tx_queue"] == 1
    assert "tx_queue" not in entries["irq:31"]
    assert ht.tx_queue_of_irq("ice-eth1-TxRx-12", "eth1") == 12 and ht.tx_queue_of_irq("eth11-tx-0", "eth1") is None
    # a second apply changes nothing; restore puts every original back
    t = ht.Tuning(fake.host, SNAP, False)
    ht.tune_irq_affinity(t, ["eth1", "eth2"], "", "1-3")
    assert t.changes == []
    assert ht.restore(ht.Tuning(fake.host, SNAP, False)) == []
    assert fake.values() == before


def test_second_apply_changes_nothing_and_keeps_true_originals(tmp_path):
    fake = FakeHost(tmp_path)
    apply_all(fake)
    first = snapshot(fake)
    t = apply_all(fake)
    assert t.changes == []
    assert snapshot(fake) == first
    # A different target later still restores to the value from before any tuning.
    t = ht.Tuning(fake.host, SNAP, False)
    ht.tune_rings(t, ["eth1"], "", "512", "512")
    assert fake.nics["eth1"]["ring"]["rx"] == 512
    ring = [e for e in snapshot(fake)["entries"] if e["key"] == "ring:eth1"]
    assert ring == [{"key": "ring:eth1", "kind": "ethtool", "option": "-G", "port": "eth1", "netns": "",
                     "original": {"rx": 256, "tx": 256}}]


def test_restore_puts_back_exactly_what_was_there(tmp_path):
    fake = FakeHost(tmp_path)
    before = fake.values()
    apply_all(fake)
    assert fake.values() != before
    t = ht.Tuning(fake.host, SNAP, False)
    assert ht.restore(t) == []
    assert fake.values() == before
    assert snapshot(fake) is None
    assert not (tmp_path / "var/lib/rfc2544").exists()     # the directory it made is gone too
    # Restoring again is a no-op.
    t = ht.Tuning(fake.host, SNAP, False)
    assert ht.restore(t) == [] and t.changes == []


def test_check_mode_reports_but_changes_nothing(tmp_path):
    fake = FakeHost(tmp_path)
    before = fake.values()
    t = apply_all(fake, check=True)
    assert len(t.changes) == 9
    assert fake.values() == before
    assert snapshot(fake) is None
    assert not any(c[1][:1] in (["-A"], ["-C"], ["-G"]) for c in fake.calls)
    assert not any(c[:2] == ["systemctl", "stop"] for c in fake.calls)


def test_check_mode_restore_changes_nothing(tmp_path):
    fake = FakeHost(tmp_path)
    apply_all(fake)
    tuned, snap = fake.values(), snapshot(fake)
    t = ht.Tuning(fake.host, SNAP, True)
    assert ht.restore(t) == []
    assert len(t.changes) == 9
    assert fake.values() == tuned and snapshot(fake) == snap


def test_virtual_nic_and_missing_features_are_skipped_not_failed(tmp_path):
    fake = FakeHost(tmp_path, irqbalance=None)
    for d in (tmp_path / "sys/devices/system/cpu").glob("cpu*/cpufreq"):
        for f in d.iterdir():
            f.unlink()
        d.rmdir()
    t = apply_all(fake, ports=("veth0",))
    assert t.changes == []
    assert snapshot(fake) is None
    text = " | ".join(t.skipped)
    assert "no CPU frequency scaling" in text
    assert "irqbalance: not installed" in text
    assert "veth0: the device has no IRQs" in text
    assert "flow control veth0: not offered" in text and "Operation not supported" in text
    assert "rings veth0: ring sizes not offered" in text


def test_namespace_ports_use_ip_netns_exec_and_skip_irqs(tmp_path):
    fake = FakeHost(tmp_path)
    t = ht.Tuning(fake.host, SNAP, False)
    ht.tune_irq_affinity(t, ["eth1"], "dut", "")
    ht.tune_flow_control(t, ["eth1"], "dut")
    assert any("namespace 'dut'" in s for s in t.skipped)
    assert ["ip", "netns", "exec", "dut", "ethtool", "-A", "eth1", "autoneg", "off", "rx", "off", "tx", "off"] in fake.calls
    assert [e["key"] for e in snapshot(fake)["entries"]] == ["pause:dut/eth1"]


def test_a_refused_setting_is_skipped_and_not_left_in_the_snapshot(tmp_path):
    fake = FakeHost(tmp_path)
    fake.fail_set.add("eth1")
    t = ht.Tuning(fake.host, SNAP, False)
    ht.tune_coalesce(t, ["eth1"], "", {"rx-usecs": 0})
    assert t.changes == []
    assert any("Invalid argument" in s for s in t.skipped)
    assert snapshot(fake)["entries"] == []


def test_coalesce_parameter_the_nic_lacks_is_skipped(tmp_path):
    fake = FakeHost(tmp_path)
    t = ht.Tuning(fake.host, SNAP, False)
    ht.tune_coalesce(t, ["eth1"], "", {"rx-usecs": 0, "stats-block-usecs": 1})
    assert fake.nics["eth1"]["coalesce"]["rx-usecs"] == "0"
    assert any("stats-block-usecs not offered" in s for s in t.skipped)


def test_restore_skips_a_vanished_interface_and_restores_the_rest(tmp_path):
    fake = FakeHost(tmp_path)
    apply_all(fake)
    del fake.nics["eth1"]
    t = ht.Tuning(fake.host, SNAP, False)
    assert ht.restore(t) == []
    assert any("no longer exists" in s for s in t.skipped)
    assert fake.irqbalance == "active"
    assert (tmp_path / "proc/irq/30/smp_affinity_list").read_text() == "0-3"
    assert snapshot(fake) is None


def test_restore_failure_keeps_what_was_not_restored(tmp_path):
    fake = FakeHost(tmp_path)
    apply_all(fake)
    fake.fail_set.add("eth1")
    t = ht.Tuning(fake.host, SNAP, False)
    failed = ht.restore(t)
    assert sorted(f.split(":")[0] + ":" + f.split(":")[1] for f in failed) == ["coalesce:eth1", "pause:eth1", "ring:eth1"]
    left = [e["key"] for e in snapshot(fake)["entries"]]
    assert sorted(left) == ["coalesce:eth1", "pause:eth1", "ring:eth1"]


def test_bad_values_are_refused():
    with pytest.raises(ValueError):
        ht.tune_rings(None, ["eth1"], "", "lots", "")
    with pytest.raises(ValueError):
        ht.tune_coalesce(None, ["eth1"], "", {"rx-usecs; reboot": 0})


def test_damaged_snapshot_is_refused(tmp_path):
    fake = FakeHost(tmp_path)
    path = tmp_path / SNAP.lstrip("/")
    path.parent.mkdir(parents=True)
    path.write_text('{"entries": "x"}')
    with pytest.raises(ValueError, match="not a tuning snapshot"):
        ht.Tuning(fake.host, SNAP, False)


def test_parsers_on_ethtool_output():
    assert ht.parse_pause(PAUSE.format(p="x", autoneg="off", rx="on", tx="off")) == {"autoneg": "off", "rx": "on", "tx": "off"}
    coalesce = "Coalesce parameters for x:\nAdaptive RX: n/a  TX: off\nrx-usecs: 8\nrx-frames: n/a\n"
    assert ht.parse_coalesce(coalesce) == {"adaptive-tx": "off", "rx-usecs": "8"}
    ring = ht.parse_ring(RING.format(p="x", max_rx=1024, max_tx=512, rx=256, tx=128))
    assert ring == {"max": {"rx": 1024, "tx": 512}, "current": {"rx": 256, "tx": 128}}
    assert ht.cpulist_set("0-2,5") == {0, 1, 2, 5}


def test_virtio_nic_irqs_come_from_its_pci_function(tmp_path):
    pci = tmp_path / "sys/devices/pci0000:00/0000:00:04.0"
    (pci / "msi_irqs").mkdir(parents=True)
    for irq in (40, 41):
        (pci / "msi_irqs" / str(irq)).write_text("msix\n")
    (pci / "virtio2").mkdir()
    (tmp_path / "sys/class/net/eth2").mkdir(parents=True)
    (tmp_path / "sys/class/net/eth2/device").symlink_to(pci / "virtio2")
    host = ht.Host(lambda argv: (0, "", ""), root=str(tmp_path))
    assert ht.port_irqs(host, "eth2") == [40, 41]


def test_restore_keeps_a_snapshot_directory_that_was_there(tmp_path):
    fake = FakeHost(tmp_path)
    (tmp_path / "var/lib/rfc2544").mkdir(parents=True)
    apply_all(fake)
    assert "created_dir" not in snapshot(fake)
    assert ht.restore(ht.Tuning(fake.host, SNAP, False)) == []
    assert (tmp_path / "var/lib/rfc2544").is_dir()


@pytest.mark.parametrize("cpus, queues, note", [
    ("2,5", {30: "2", 33: "2", 40: "2"}, None),          # CPU 5 is not online: the queues share CPU 2
    ("5-7", {30: "5-7", 33: "5-7", 40: "5-7"}, "none of the CPUs 5-7 is online"),
])
def test_a_queue_irq_goes_on_an_online_cpu_only(tmp_path, cpus, queues, note):
    """Simulated host of CPUs 0-3: a lone offline CPU written to an IRQ is
    refused by the kernel (EINVAL), so a TX queue's IRQ takes the online
    CPUs of the list only; with none online it keeps the whole list, and
    the run says why."""
    fake = queue_irqs_host(tmp_path)
    t = ht.Tuning(fake.host, SNAP, False)
    ht.tune_irq_affinity(t, ["eth1", "eth2"], "", cpus)
    pinned = {irq: (tmp_path / f"proc/irq/{irq}/smp_affinity_list").read_text() for irq in (30, 33, 40)}
    assert pinned == queues
    assert (tmp_path / "proc/irq/31/smp_affinity_list").read_text() == cpus
    said = [line for line in t.skipped if "is online" in line]
    assert len(said) == (1 if note else 0) and all(note in line for line in said), t.skipped


def test_a_port_whose_irqs_name_no_tx_queue_says_so(tmp_path):
    """Simulated host: a port with three IRQs, none named as a TX queue's
    (as virtio names its vectors): every one stays on the list, and the
    run says no generator gets its queue's CPU instead of skipping it
    silently."""
    fake = FakeHost(tmp_path)
    (tmp_path / "proc/interrupts").write_text(
        "           CPU0       CPU1       CPU2       CPU3\n"
        "  30:          5          0          0          0   PCI-MSI 1048576-edge      virtio0-output.0\n"
        "  31:          7          0          0          0   PCI-MSI 1048577-edge      virtio0-input.0\n"
        "  32:          1          0          0          0   PCI-MSI 1048578-edge      virtio0-config\n")
    t = ht.Tuning(fake.host, SNAP, False)
    ht.tune_irq_affinity(t, ["eth1"], "", "1-3")
    assert {irq: (tmp_path / f"proc/irq/{irq}/smp_affinity_list").read_text() for irq in (30, 31, 32)} == \
        {30: "1-3", 31: "1-3", 32: "1-3"}
    said = [line for line in t.skipped if "is named as a TX queue's" in line]
    assert len(said) == 1 and "none of its 3 IRQs" in said[0], t.skipped
