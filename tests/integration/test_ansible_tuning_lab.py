"""host_tuning against a two-host lab, whose test ports are NICs with
drivers (MSI-X IRQs, coalescing, ring and pause parameters): tuning for
latency changes values and records each first, a second run changes
nothing, teardown puts every touched value back exactly; what the driver
does not offer is skipped with a message. Only the host_tuning tags run:
the module is covered by test_ansible_lab.py.

In a session that runs the newest kernel's tests, the lab is that
kernel's two-host lab, on e1000e (the real Intel driver: pause frames,
rx-usecs and rings up to 4096 all change and come back); otherwise the
default two-host lab, on virtio-net (which offers neither flow control nor
ring changes). The lab work (`exercise`) touches only that lab, so the
session's preparation process (session_prep.py) runs it as soon as the lab
is up, while other tests run; the test then checks what it observed. Run
alone, or with RFC2544_REUSE_LAB2, the test runs it itself."""
import json
import re

import pytest

from test_ansible_support import host_state, playbook, state_script

pytestmark = pytest.mark.lab

TUNE = ("--tags", "host_tuning", "--skip-tags", "pktgen_kmod", "-e", "host_tuning_test_kind=latency")
HOSTS = ("tester", "dut")


def exercise(lab2, nice=0):
    """Tune, tune again, tear down; the hosts' state read before, after each
    step and the snapshot files. Returns what was observed (no asserts).
    `nice`: the playbooks' niceness (run in the session's background)."""
    from rfc2544.config import inventory
    inv = lab2.inventory_path
    hosts = inventory.load(inv).hosts
    sessions = {name: (lab2.connect(name), state_script(list(hosts[name].ports))) for name in HOSTS}
    seen = {"nic": lab2.status()["nic"]}
    try:
        states = lambda: {name: host_state(ssh, script) for name, (ssh, script) in sessions.items()}
        seen["before"] = states()
        try:
            seen["tune"] = playbook(inv, "setup.yml", *TUNE, nice=nice)
            if seen["tune"].rc == 0:
                seen["tuned"] = states()
                seen["snapshots"] = {name: json.loads(ssh.run(f"cat /var/lib/rfc2544/tuning-{name}.json")[1])
                                     for name, (ssh, _) in sessions.items()}
                seen["again"] = playbook(inv, "setup.yml", *TUNE, nice=nice)
                seen["again_state"] = states()
        finally:
            seen["down"] = playbook(inv, "teardown.yml", "--tags", "host_tuning", "--skip-tags", "pktgen_kmod",
                                    nice=nice)
        seen["after"] = states()
    finally:
        for ssh, _ in sessions.values():
            ssh.close()
    return seen


@pytest.fixture
def seen(request, early_result):
    # lab2 only when no early step ran the exercise (it may have run on another lab)
    return early_result("tuning") or exercise(request.getfixturevalue("lab2"))


def test_tuning_is_recorded_idempotent_and_restored_exactly(seen):
    before, run = seen["before"], seen["tune"]
    assert run.rc == 0, run.output[-4000:]
    assert run.recap["tester"]["changed"] > 0 and run.recap["dut"]["changed"] > 0
    text = " ".join(run.output.split())      # warnings are wrapped
    assert "no CPU frequency scaling on this host" in text
    tuned = seen["tuned"]
    if seen["nic"] == "virtio":
        # What a virtio NIC does not offer is skipped with a message.
        assert "flow control tx0: not offered by its driver" in text
    else:
        # e1000e offers them: pause frames off, rx-usecs 0 (latency), rings
        # at the driver's maximum, on each test port of both hosts.
        for name, ports in (("tester", ("tx0", "rx0")), ("dut", ("dut0", "dut1"))):
            for port in ports:
                pause, coalesce, rings = (_ethtool(tuned[name], opt, port) for opt in "acg")
                assert re.search(r"^RX:\s+off$", pause, re.M) and re.search(r"^TX:\s+off$", pause, re.M), \
                    (name, pause)
                assert re.search(r"^rx-usecs:\s+0$", coalesce, re.M), (name, coalesce)
                assert _ethtool(before[name], "g", port) != rings, (name, rings)
        # e1000e names its TX vector "tx0-tx-0": pinned to one CPU alone, as
        # TX queue 0's (where the suite then puts tx0's generator)
        entries = seen["snapshots"]["tester"]["entries"]
        [txq] = [e for e in entries if e.get("tx_queue") == 0 and e.get("port") == "tx0"] or [None]
        assert txq is not None, entries
        assert re.fullmatch(r"\d+", _affinity(tuned["tester"], txq["path"])), (txq, tuned["tester"])
    for name in HOSTS:
        assert tuned[name]["cpu_dma_latency"] == "0", name
        assert tuned[name]["irq affinity"] != before[name]["irq affinity"], f"{name}: no IRQ was pinned"
        keys = [e["key"] for e in seen["snapshots"][name]["entries"]]
        assert any(k.startswith("irq:") for k in keys), keys
        for entry in seen["snapshots"][name]["entries"]:
            if entry["key"].startswith("irq:"):      # the recorded original is what was there
                line = f"{entry['path']}:{entry['original']}"
                assert line in before[name]["irq affinity"].splitlines(), line

    again = seen["again"]
    assert again.rc == 0, again.output[-3000:]
    assert again.changed == 0, {h: r["changed"] for h, r in again.recap.items()}
    assert seen["again_state"] == tuned

    down = seen["down"]
    assert down.rc == 0, down.output[-3000:]
    after = seen["after"]
    for name in HOSTS:
        diff = {k: (before[name].get(k), v) for k, v in after[name].items() if before[name].get(k) != v}
        assert not diff, f"{name}: not restored: {diff}"


def _affinity(state, path):
    """The value of an smp_affinity_list file in a host_state() reading."""
    text = state["irq affinity"]
    return next(line.split(":", 1)[1] for line in text.splitlines() if line.startswith(path + ":"))


def _ethtool(state, opt, port):
    """`ethtool -<opt> <port>`'s output in a host_state() reading."""
    [text] = [v for k, v in state.items() if k.endswith(f"ethtool -{opt} {port}")]
    return text
