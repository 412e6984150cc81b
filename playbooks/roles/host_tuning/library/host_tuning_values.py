#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: MIT
"""Apply one concern of test-host tuning, recording every original value first.

The snapshot is a JSON file on the host. A value is recorded (and the file
written) before it is changed, and only once, so a second apply never
overwrites an original with a tuned value. `action: restore` writes every
recorded value back, newest first, and removes the snapshot.
"""

DOCUMENTATION = r"""
module: host_tuning_values
short_description: Tune a benchmark host and restore exactly what was there
description:
  - Applies one tuning concern (cpufreq governor, irqbalance, NIC IRQ
    affinity, Ethernet flow control, interrupt coalescing, ring sizes),
    recording each value it changes in a JSON snapshot before changing it.
  - Settings the host or NIC does not offer (a VM, a veth) are skipped with a
    warning, not a failure.
  - C(action=restore) puts back every recorded value and removes the snapshot.
options:
  action:
    description: apply a concern, or restore the snapshot.
    choices: [apply, restore]
    default: apply
    type: str
  snapshot_path:
    description: the JSON snapshot of original values on the host.
    required: true
    type: path
  concern:
    description: what to apply (with C(action=apply)).
    choices: [governor, irqbalance, irq_affinity, flow_control, coalesce, rings]
    type: str
  ports:
    description: test NIC names.
    type: list
    elements: str
    default: []
  netns:
    description: network namespace the ports live in (empty = the root namespace).
    type: str
    default: ""
  governor:
    description: cpufreq governor to set.
    type: str
    default: performance
  cpus:
    description: CPU list (e.g. C(1-3)) the ports' IRQs are pinned to, a TX queue's own IRQ to one CPU of it
      (queue q of a port on the (b+q)-th online one, b the queues of the ports before it); empty = every
      online CPU but CPU 0.
    type: str
    default: ""
  coalesce:
    description: ethtool -C parameters to set (e.g. C(adaptive-rx=off), C(rx-usecs=0)).
    type: dict
    default: {}
  ring_rx:
    description: RX ring size, C(max), or empty to leave it.
    type: str
    default: ""
  ring_tx:
    description: TX ring size, C(max), or empty to leave it.
    type: str
    default: ""
author: rfc2544 project
"""

EXAMPLES = r"""
- name: Turn Ethernet flow control off on the test ports
  host_tuning_values:
    concern: flow_control
    ports: [tx0, rx0]
    snapshot_path: /var/lib/rfc2544/tuning-tester.json
"""

RETURN = r"""
changes:
  description: one line per value changed (or, in check mode, that would change).
  type: list
  returned: always
not_offered:
  description: settings left alone because the host or NIC does not offer them
    (also shown as warnings). Not named "skipped": Ansible would take the task as skipped.
  type: list
  returned: always
"""

import datetime
import glob
import json
import os
import re

from ansible.module_utils.basic import AnsibleModule

IFNAME_RE = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
CPULIST_RE = re.compile(r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$")
NETNS_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
PARAM_RE = re.compile(r"^[a-z][a-z0-9-]{0,40}$")
SERVICE_ACTIVE = ("active", "activating", "reloading")


class Skip(Exception):
    """The host or NIC does not offer this setting."""


class Gone(Exception):
    """The thing a snapshot entry refers to no longer exists."""


class Host:
    """Files and commands of the host; `root` lets unit tests use a fake tree."""

    def __init__(self, run, root="/"):
        self._run = run
        self.root = root

    def path(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def read(self, path):
        with open(self.path(path)) as handle:
            return handle.read()

    def write(self, path, text):
        with open(self.path(path), "w") as handle:
            handle.write(text)

    def exists(self, path):
        return os.path.exists(self.path(path))

    def glob(self, pattern):
        prefix = self.path("/")
        return sorted("/" + p[len(prefix):].lstrip("/") for p in glob.glob(self.path(pattern)))

    def run(self, argv):
        return self._run(argv)

    def ethtool(self, netns, args):
        argv = (["ip", "netns", "exec", netns] if netns else []) + ["ethtool"] + args
        return self.run(argv)


# ---- parsers of ethtool's text output -----------------------------------

def parse_pause(text):
    """`ethtool -a`: {'autoneg': 'on', 'rx': 'off', 'tx': 'off'}."""
    names = {"autonegotiate": "autoneg", "rx": "rx", "tx": "tx"}
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key in names and value.strip() in ("on", "off"):
            out[names[key]] = value.strip()
    return out


def parse_coalesce(text):
    """`ethtool -c`: {'adaptive-rx': 'on', 'rx-usecs': '3', ...}; n/a parameters left out."""
    out = {}
    for line in text.splitlines():
        match = re.match(r"^Adaptive RX:\s*(\S+)\s+TX:\s*(\S+)", line.strip())
        if match:
            for name, value in (("adaptive-rx", match.group(1)), ("adaptive-tx", match.group(2))):
                if value != "n/a":
                    out[name] = value
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if sep and PARAM_RE.match(key) and value and value != "n/a":
            out[key] = value
    return out


def parse_ring(text):
    """`ethtool -g`: {'max': {'rx': 4096, 'tx': 4096}, 'current': {'rx': 256, 'tx': 256}}."""
    out = {"max": {}, "current": {}}
    section = None
    for line in text.splitlines():
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            section = "max"
            continue
        if low.startswith("current hardware settings"):
            section = "current"
            continue
        key, sep, value = low.partition(":")
        key, value = key.strip(), value.strip()
        if section and sep and key in ("rx", "tx") and value.isdigit():
            out[section][key] = int(value)
    return out


def cpulist_set(text):
    cpus = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def onoff(value):
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


# ---- the recording context ------------------------------------------------

class Tuning:
    """Plans, records and applies changes; collects what changed and what was skipped."""

    def __init__(self, host, snapshot_path, check_mode):
        self.host = host
        self.snapshot_path = snapshot_path
        self.check_mode = check_mode
        self.changes = []
        self.skipped = []
        self.snapshot = self._load()

    def _load(self):
        if not self.host.exists(self.snapshot_path):
            return None
        data = json.loads(self.host.read(self.snapshot_path))
        if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("entries"), list):
            raise ValueError(f"{self.snapshot_path} is not a tuning snapshot (version 1)")
        return data

    def _save(self):
        full = self.host.path(self.snapshot_path)
        if not os.path.isdir(os.path.dirname(full)):
            os.makedirs(os.path.dirname(full), mode=0o755)
            self.snapshot["created_dir"] = True     # restore removes it again
        tmp = full + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(self.snapshot, handle, indent=1, sort_keys=True)
            handle.write("\n")
        os.replace(tmp, full)

    def _recorded(self, key):
        return any(e["key"] == key for e in (self.snapshot or {}).get("entries", []))

    def skip(self, message):
        self.skipped.append(message)

    def change(self, entry, desired, apply):
        """Record entry['original'] (first time only), then apply `desired`."""
        line = f"{entry['key']}: {entry['original']} -> {desired}"
        if self.check_mode:
            self.changes.append(line)
            return
        added = False
        if not self._recorded(entry["key"]):
            if self.snapshot is None:
                self.snapshot = {"version": 1, "created": _now(), "entries": []}
            self.snapshot["entries"].append(entry)
            self._save()
            added = True
        try:
            apply()
        except (Skip, OSError) as exc:
            if added:
                self.snapshot["entries"].remove(entry)
                self._save()
            self.skip(f"{entry['key']}: not changed: {exc}")
            return
        self.changes.append(line)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _ethtool_set(host, netns, option, port, values):
    args = [option, port]
    for name, value in values.items():
        args += [name, str(value)]
    rc, out, err = host.ethtool(netns, args)
    if rc != 0:
        raise Skip((err or out).strip() or f"ethtool {option} exited {rc}")


# ---- concerns --------------------------------------------------------------

def tune_governor(t, governor):
    paths = t.host.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")
    if not paths:
        t.skip("cpufreq: no CPU frequency scaling on this host (a VM?): governor left as it is")
        return
    for path in sorted(paths, key=lambda p: int(re.search(r"cpu(\d+)/", p).group(1))):
        cpu = path.split("/")[5]
        avail_path = os.path.join(os.path.dirname(path), "scaling_available_governors")
        avail = t.host.read(avail_path).split() if t.host.exists(avail_path) else []
        if governor not in avail:
            t.skip(f"cpufreq {cpu}: governor '{governor}' not offered (offered: {' '.join(avail) or 'none'})")
            continue
        current = t.host.read(path).strip()
        if current != governor:
            t.change({"key": f"governor:{cpu}", "kind": "file", "path": path, "original": current},
                     governor, lambda p=path: t.host.write(p, governor))


def _service_state(host, unit):
    rc, out, _ = host.run(["systemctl", "show", "-p", "LoadState", "-p", "ActiveState", unit])
    props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    if rc != 0 or props.get("LoadState") != "loaded":
        return None
    return props.get("ActiveState", "")


def _systemctl(host, verb, unit):
    rc, out, err = host.run(["systemctl", verb, unit])
    if rc != 0:
        raise Skip((err or out).strip() or f"systemctl {verb} {unit} exited {rc}")


def tune_irqbalance(t):
    unit = "irqbalance.service"
    state = _service_state(t.host, unit)
    if state is None:
        t.skip("irqbalance: not installed: nothing to stop")
        return
    if state in SERVICE_ACTIVE:
        t.change({"key": "service:irqbalance", "kind": "service", "unit": unit, "original": "active"},
                 "inactive", lambda: _systemctl(t.host, "stop", unit))


def port_irqs(host, port):
    """IRQ numbers of a NIC: its MSI/MSI-X vectors, else its legacy line."""
    dev = f"/sys/class/net/{port}/device"
    irqs = host.glob(f"{dev}/msi_irqs/*")
    if not irqs and os.path.basename(os.path.realpath(host.path(dev))).startswith("virtio"):
        irqs = host.glob(f"{dev}/../msi_irqs/*")    # virtio-net: vectors belong to the PCI function
    numbers = sorted({int(os.path.basename(p)) for p in irqs if os.path.basename(p).isdigit()})
    if not numbers and host.exists(f"{dev}/irq"):
        legacy = host.read(f"{dev}/irq").strip()
        if legacy.isdigit() and int(legacy) > 0:
            numbers = [int(legacy)]
    return numbers


def default_irq_cpus(host):
    online = cpulist_set(host.read("/sys/devices/system/cpu/online"))
    spare = sorted(online - {0}) or sorted(online)
    return ",".join(str(c) for c in spare)


def irq_names(host):
    """{IRQ number: its name} from /proc/interrupts (the last word of a line)."""
    names = {}
    text = host.read("/proc/interrupts") if host.exists("/proc/interrupts") else ""
    for line in text.splitlines():
        number, sep, rest = line.strip().partition(":")
        if sep and number.isdigit() and rest.split():
            names[int(number)] = rest.split()[-1]
    return names


def tx_queue_of_irq(name, port):
    """The TX queue an IRQ named `name` serves alone or with its RX queue
    ("eth0-tx-3", "eth0-TxRx-3", "ice-eth0-TxRx-3": 3), else None. The
    suite places queue q's generator on the CPU this IRQ is on
    (rfc2544.drivers.probe reads the names the same way)."""
    m = re.search(rf"(?:^|-){re.escape(port)}-(?:tx|txrx|rxtx|combined)-(\d+)$", name, re.I)
    return int(m.group(1)) if m else None


def tune_irq_affinity(t, ports, netns, cpus):
    """Every IRQ of a port on `cpus`; a TX queue's own IRQ on one CPU of
    them, as upstream's pktgen_sample06 pins queue and generator together:
    each generator then has its queue's completions on its own CPU. Queue
    q of a port goes on CPU (b + q) of the list, round robin, b being the
    queues of the ports before it, so two ports' queues 0 do not share a
    CPU while there are CPUs enough."""
    if netns:
        t.skip(f"irq affinity: ports in namespace '{netns}' are left to the host that holds it")
        return
    cpus = cpus or default_irq_cpus(t.host)
    # a queue's IRQ goes on one CPU: an offline or absent one the kernel
    # refuses (EINVAL) where a list holding online ones is taken whole
    online = cpulist_set(t.host.read("/sys/devices/system/cpu/online"))
    spread = sorted(cpulist_set(cpus) & online)
    if not spread:
        t.skip(f"irq affinity: none of the CPUs {cpus} is online; TX queues' IRQs keep the whole list")
    names = irq_names(t.host)
    base = 0
    for port in ports:
        if not t.host.exists(f"/sys/class/net/{port}"):
            t.skip(f"irq affinity {port}: no such interface")
            continue
        irqs = port_irqs(t.host, port)
        if not irqs:
            t.skip(f"irq affinity {port}: the device has no IRQs of its own (virtual NIC such as veth)")
            continue
        queues = {irq: tx_queue_of_irq(names.get(irq, ""), port) for irq in irqs}
        if len(irqs) > 1 and all(q is None for q in queues.values()):
            # (virtio's "virtio0-output.0", mlx5's "mlx5_comp0@pci...", a port that is down)
            t.skip(f"irq affinity {port}: none of its {len(irqs)} IRQs is named as a TX queue's "
                   f"({port}-tx-N, {port}-TxRx-N): all stay on the list, no generator gets its queue's CPU")
        for irq in irqs:
            path = f"/proc/irq/{irq}/smp_affinity_list"
            if not t.host.exists(path):
                continue
            queue = queues[irq]
            desired = str(spread[(base + queue) % len(spread)]) if queue is not None and spread else cpus
            current = t.host.read(path).strip()
            if cpulist_set(current) != cpulist_set(desired):
                entry = {"key": f"irq:{irq}", "kind": "file", "path": path, "original": current, "port": port}
                if queue is not None:
                    entry["tx_queue"] = queue
                t.change(entry, desired, lambda p=path, d=desired: t.host.write(p, d))
        base += max((q + 1 for q in queues.values() if q is not None), default=0)


def _port_key(kind, netns, port):
    return f"{kind}:{netns}/{port}" if netns else f"{kind}:{port}"


def tune_flow_control(t, ports, netns):
    desired = {"autoneg": "off", "rx": "off", "tx": "off"}
    for port in ports:
        rc, out, err = t.host.ethtool(netns, ["-a", port])
        current = parse_pause(out) if rc == 0 else {}
        if not current:
            t.skip(f"flow control {port}: not offered by its driver ({(err or out).strip() or 'no pause parameters'})")
            continue
        diff = {k: v for k, v in desired.items() if k in current and current[k] != v}
        if diff:
            t.change({"key": _port_key("pause", netns, port), "kind": "ethtool", "option": "-A", "port": port,
                      "netns": netns, "original": {k: current[k] for k in diff}},
                     diff, lambda p=port, d=diff: _ethtool_set(t.host, netns, "-A", p, d))


def tune_coalesce(t, ports, netns, settings):
    settings = {str(k): onoff(v) for k, v in (settings or {}).items()}
    for name in settings:
        if not PARAM_RE.match(name):
            raise ValueError(f"coalesce parameter '{name}' is not an ethtool -C parameter name")
    if not settings:
        return
    for port in ports:
        rc, out, err = t.host.ethtool(netns, ["-c", port])
        current = parse_coalesce(out) if rc == 0 else {}
        if not current:
            t.skip(f"coalescing {port}: not offered by its driver ({(err or out).strip() or 'no parameters'})")
            continue
        diff = {}
        for name, value in settings.items():
            if name not in current:
                t.skip(f"coalescing {port}: {name} not offered by its driver")
            elif current[name] != value:
                diff[name] = value
        if diff:
            t.change({"key": _port_key("coalesce", netns, port), "kind": "ethtool", "option": "-C", "port": port,
                      "netns": netns, "original": {k: current[k] for k in diff}},
                     diff, lambda p=port, d=diff: _ethtool_set(t.host, netns, "-C", p, d))


def tune_rings(t, ports, netns, ring_rx, ring_tx):
    wanted = {k: str(v).strip() for k, v in (("rx", ring_rx), ("tx", ring_tx)) if str(v).strip()}
    for name, value in wanted.items():
        if value != "max" and not value.isdigit():
            raise ValueError(f"ring size {name} must be a number or 'max', not '{value}'")
    if not wanted:
        return
    for port in ports:
        rc, out, err = t.host.ethtool(netns, ["-g", port])
        rings = parse_ring(out) if rc == 0 else {"max": {}, "current": {}}
        if not rings["current"]:
            t.skip(f"rings {port}: ring sizes not offered by its driver ({(err or out).strip() or 'no ring parameters'})")
            continue
        diff = {}
        for name, value in wanted.items():
            current, maximum = rings["current"].get(name), rings["max"].get(name)
            if current is None or maximum is None:
                t.skip(f"rings {port}: {name} ring not offered by its driver")
                continue
            target = maximum if value == "max" else int(value)
            if target > maximum:
                t.skip(f"rings {port}: {name} {target} is above the maximum {maximum}")
            elif target != current:
                diff[name] = target
        if diff:
            t.change({"key": _port_key("ring", netns, port), "kind": "ethtool", "option": "-G", "port": port,
                      "netns": netns, "original": {k: rings["current"][k] for k in diff}},
                     diff, lambda p=port, d=diff: _ethtool_set(t.host, netns, "-G", p, d))


# ---- restore ---------------------------------------------------------------

def _ethtool_current(host, entry):
    parse = {"-A": ("-a", parse_pause), "-C": ("-c", parse_coalesce), "-G": ("-g", lambda o: parse_ring(o)["current"])}
    query, parser = parse[entry["option"]]
    rc, out, err = host.ethtool(entry.get("netns") or "", [query, entry["port"]])
    if rc != 0:
        if "No such device" in err or "does not exist" in err or "Cannot find device" in err:
            raise Gone(f"interface {entry['port']} no longer exists")
        raise Skip((err or out).strip())
    return {k: str(v) for k, v in parser(out).items()}


def restore_entry(host, entry, check_mode):
    """Put one recorded value back. Returns True if something changed (or would)."""
    kind = entry["kind"]
    if kind == "file":
        if not host.exists(entry["path"]):
            raise Gone(f"{entry['path']} no longer exists")
        if host.read(entry["path"]).strip() == entry["original"]:
            return False
        if not check_mode:
            host.write(entry["path"], entry["original"])
        return True
    if kind == "service":
        if _service_state(host, entry["unit"]) in SERVICE_ACTIVE:
            return False
        if not check_mode:
            _systemctl(host, "start", entry["unit"])
        return True
    if kind == "ethtool":
        current = _ethtool_current(host, entry)
        diff = {k: v for k, v in entry["original"].items() if current.get(k) != str(v)}
        if not diff:
            return False
        if not check_mode:
            _ethtool_set(host, entry.get("netns") or "", entry["option"], entry["port"], diff)
        return True
    raise ValueError(f"unknown snapshot entry kind '{kind}'")


def restore(t):
    """Restore every entry, newest first. Returns the entries that could not be restored."""
    if t.snapshot is None:
        return []
    failed = []
    for entry in reversed(list(t.snapshot["entries"])):
        try:
            if restore_entry(t.host, entry, t.check_mode):
                t.changes.append(f"{entry['key']}: restored {entry['original']}")
        except Gone as exc:
            t.skip(f"{entry['key']}: not restored: {exc}")
        except (Skip, OSError) as exc:
            failed.append(f"{entry['key']}: {exc}")
            continue
        if not t.check_mode:
            t.snapshot["entries"].remove(entry)
    if t.check_mode:
        return failed
    if failed:
        t._save()
    else:
        os.unlink(t.host.path(t.snapshot_path))
        t.changes.append(f"snapshot {t.snapshot_path} removed")
        if t.snapshot.get("created_dir"):
            try:
                os.rmdir(os.path.dirname(t.host.path(t.snapshot_path)))   # only if empty
            except OSError:
                pass
    return failed


# ---- module entry ----------------------------------------------------------

def run_module(module, host):
    p = module.params
    bad = [n for n in p["ports"] if not IFNAME_RE.match(n)]
    if bad:
        module.fail_json(msg=f"not interface names: {', '.join(bad)}")
    if p["netns"] and not NETNS_RE.match(p["netns"]):
        module.fail_json(msg=f"'{p['netns']}' is not a network namespace name")
    if p["cpus"] and not CPULIST_RE.match(p["cpus"]):
        module.fail_json(msg=f"'{p['cpus']}' is not a CPU list such as 1-3 or 2,4")
    try:
        t = Tuning(host, p["snapshot_path"], module.check_mode)
    except (ValueError, OSError) as exc:
        module.fail_json(msg=f"cannot read the tuning snapshot: {exc}")
    failed = []
    try:
        if p["action"] == "restore":
            failed = restore(t)
        elif p["concern"] == "governor":
            tune_governor(t, p["governor"])
        elif p["concern"] == "irqbalance":
            tune_irqbalance(t)
        elif p["concern"] == "irq_affinity":
            tune_irq_affinity(t, p["ports"], p["netns"], p["cpus"])
        elif p["concern"] == "flow_control":
            tune_flow_control(t, p["ports"], p["netns"])
        elif p["concern"] == "coalesce":
            tune_coalesce(t, p["ports"], p["netns"], p["coalesce"])
        elif p["concern"] == "rings":
            tune_rings(t, p["ports"], p["netns"], p["ring_rx"], p["ring_tx"])
        else:
            module.fail_json(msg="action=apply needs a concern")
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    for message in t.skipped:
        module.warn(message)
    if failed:
        module.fail_json(msg="could not restore: " + "; ".join(failed) + f" (left in {p['snapshot_path']})",
                         changed=bool(t.changes), changes=t.changes, not_offered=t.skipped)
    module.exit_json(changed=bool(t.changes), changes=t.changes, not_offered=t.skipped)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            action=dict(type="str", default="apply", choices=["apply", "restore"]),
            snapshot_path=dict(type="path", required=True),
            concern=dict(type="str", choices=["governor", "irqbalance", "irq_affinity",
                                              "flow_control", "coalesce", "rings"]),
            ports=dict(type="list", elements="str", default=[]),
            netns=dict(type="str", default=""),
            governor=dict(type="str", default="performance"),
            cpus=dict(type="str", default=""),
            coalesce=dict(type="dict", default={}),
            ring_rx=dict(type="str", default=""),
            ring_tx=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    run_module(module, Host(lambda argv: module.run_command(argv)))


if __name__ == "__main__":
    main()
