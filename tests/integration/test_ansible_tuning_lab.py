"""host_tuning against the two-host lab, whose test ports are real virtio-net
NICs (MSI-X IRQs, coalescing and ring parameters): tuning for latency changes
values and records each first, a second run changes nothing, teardown puts
every touched value back exactly; what virtio does not offer (flow control,
cpufreq in a VM) is skipped with a message. Only the host_tuning tags run:
the module is covered by test_ansible_lab.py."""
import json

import pytest

from test_ansible_support import host_state, playbook, state_script

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def hosts(lab2):
    from rfc2544 import inventory
    inv = inventory.load(lab2.inventory_path)
    out = {}
    for name in ("tester", "dut"):
        ssh = lab2.connect(name)
        script = state_script(list(inv.hosts[name].ports))
        out[name] = (ssh, script)
    yield out
    for ssh, _ in out.values():
        ssh.close()


def states(hosts):
    return {name: host_state(ssh, script) for name, (ssh, script) in hosts.items()}


def test_tuning_is_recorded_idempotent_and_restored_exactly(lab2, hosts):
    inv = lab2.inventory_path
    before = states(hosts)
    tune = ("--tags", "host_tuning", "--skip-tags", "pktgen_kmod", "-e", "host_tuning_test_kind=latency")
    run = playbook(inv, "setup.yml", *tune)
    try:
        assert run.rc == 0, run.output[-4000:]
        assert run.recap["tester"]["changed"] > 0 and run.recap["dut"]["changed"] > 0
        # What a virtio NIC in a VM does not offer is skipped with a message.
        text = " ".join(run.output.split())      # warnings are wrapped
        assert "flow control tx0: not offered by its driver" in text
        assert "no CPU frequency scaling on this host" in text
        tuned = states(hosts)
        for name in ("tester", "dut"):
            assert tuned[name]["cpu_dma_latency"] == "0", name
            assert tuned[name]["irq affinity"] != before[name]["irq affinity"], f"{name}: no IRQ was pinned"
            ssh = hosts[name][0]
            snapshot = json.loads(ssh.run(f"cat /var/lib/rfc2544/tuning-{name}.json")[1])
            keys = [e["key"] for e in snapshot["entries"]]
            assert any(k.startswith("irq:") for k in keys), keys
            for entry in snapshot["entries"]:
                if entry["key"].startswith("irq:"):      # the recorded original is what was there
                    line = f"{entry['path']}:{entry['original']}"
                    assert line in before[name]["irq affinity"].splitlines(), line

        again = playbook(inv, "setup.yml", *tune)
        assert again.rc == 0, again.output[-3000:]
        assert again.changed == 0, {h: r["changed"] for h, r in again.recap.items()}
        assert states(hosts) == tuned
    finally:
        down = playbook(inv, "teardown.yml", "--tags", "host_tuning", "--skip-tags", "pktgen_kmod")
    assert down.rc == 0, down.output[-3000:]
    after = states(hosts)
    for name in ("tester", "dut"):
        diff = {k: (before[name].get(k), v) for k, v in after[name].items() if before[name].get(k) != v}
        assert not diff, f"{name}: not restored: {diff}"
