"""host_tuning against the two-host lab, whose test ports are real virtio-net
NICs (MSI-X IRQs, coalescing and ring parameters): tuning for latency changes
values and records each first, a second run changes nothing, teardown puts
every touched value back exactly; what virtio does not offer (flow control,
cpufreq in a VM) is skipped with a message. Only the host_tuning tags run:
the module is covered by test_ansible_lab.py.

The lab work (`exercise`) touches only the two-host lab, so the session's
preparation process (session_prep.py) runs it as soon as that lab is up,
while the unit tests and the single lab's tests run; the test then checks
what it observed. Run alone, or with RFC2544_REUSE_LAB2, the test runs it
itself."""
import json

import pytest

from test_ansible_support import host_state, playbook, state_script

pytestmark = pytest.mark.lab

TUNE = ("--tags", "host_tuning", "--skip-tags", "pktgen_kmod", "-e", "host_tuning_test_kind=latency")
HOSTS = ("tester", "dut")


def exercise(lab2, nice=0):
    """Tune, tune again, tear down; the hosts' state read before, after each
    step and the snapshot files. Returns what was observed (no asserts).
    `nice`: the playbooks' niceness (run in the session's background)."""
    from rfc2544 import inventory
    inv = lab2.inventory_path
    hosts = inventory.load(inv).hosts
    sessions = {name: (lab2.connect(name), state_script(list(hosts[name].ports))) for name in HOSTS}
    seen = {}
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
def seen(lab2, early_result):
    return early_result("tuning") or exercise(lab2)


def test_tuning_is_recorded_idempotent_and_restored_exactly(seen):
    before, run = seen["before"], seen["tune"]
    assert run.rc == 0, run.output[-4000:]
    assert run.recap["tester"]["changed"] > 0 and run.recap["dut"]["changed"] > 0
    # What a virtio NIC in a VM does not offer is skipped with a message.
    text = " ".join(run.output.split())      # warnings are wrapped
    assert "flow control tx0: not offered by its driver" in text
    assert "no CPU frequency scaling on this host" in text
    tuned = seen["tuned"]
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
