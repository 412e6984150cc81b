#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: MIT
"""Collect what a benchmark report must say about a host. Changes nothing."""

DOCUMENTATION = r"""
module: facts_collect
short_description: Hardware, kernel, module, tuning and clock facts of a benchmark host
description:
  - Reads NIC driver/firmware/speed/queues, CPU model, kernel, the benchmark
    module's version, the tuning state and the clock synchronisation state.
    Read-only.
options:
  ports:
    description: test NIC names.
    type: list
    elements: str
    default: []
  netns:
    description: network namespace the ports live in (empty = root namespace).
    type: str
    default: ""
  module_name:
    description: the benchmark kernel module.
    type: str
    default: rfc2544_pktgen
  tuning_snapshot_path:
    description: the host_tuning role's snapshot file.
    type: path
    required: true
author: rfc2544 project
"""

EXAMPLES = r"""
- name: Collect the host's facts
  facts_collect:
    ports: [tx0, rx0]
    tuning_snapshot_path: /var/lib/rfc2544/tuning-tester.json
  register: host_facts
"""

RETURN = r"""
facts:
  description: the collected facts (schema rfc2544-host-facts/1).
  type: dict
  returned: always
"""

import ctypes
import ctypes.util
import datetime
import glob
import json
import os
import platform
import re
import struct

from ansible.module_utils.basic import AnsibleModule

IFNAME_RE = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
NETNS_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
TIME_ERROR = 5          # adjtimex(2): clock not synchronised
CLOCK_DAEMONS = ("chronyd", "ntpd", "systemd-timesyn", "ptp4l", "phc2sys", "timemaster", "openntpd")


def read(path, default=None):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return default


def parse_keyvalue(text):
    """Lines of `key: value` (ethtool -i, ethtool IF) -> dict."""
    out = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            out.setdefault(key.strip().lower(), value.strip())
    return out


def parse_channels(text):
    """`ethtool -l`: {'max': {'rx': 1, 'combined': 4}, 'current': {...}}."""
    out = {"max": {}, "current": {}}
    section = None
    for line in (text or "").splitlines():
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            section = "max"
        elif low.startswith("current hardware settings"):
            section = "current"
        else:
            key, sep, value = low.partition(":")
            if section and sep and value.strip().isdigit():
                out[section][key.strip()] = int(value.strip())
    return out


def speed_mbps(text):
    match = re.search(r"^\s*Speed:\s*(\d+)\s*Mb/s", text or "", re.M)
    return int(match.group(1)) if match else None


def cpu_model(cpuinfo):
    for line in (cpuinfo or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model"):
            return value.strip()
    return platform.processor() or None


def os_release(text):
    out = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip().strip('"')
    return out.get("PRETTY_NAME")


def cpu_dma_latency_us():
    """The CPU latency limit in force (opening the file adds no limit of its own)."""
    try:
        fd = os.open("/dev/cpu_dma_latency", os.O_RDONLY)
    except OSError:
        return None
    try:
        raw = os.read(fd, 4)
        return struct.unpack("=i", raw)[0] if len(raw) == 4 else None
    finally:
        os.close(fd)


def kernel_clock_synchronised():
    """adjtimex(2) with modes=0 only reads; TIME_ERROR means 'not synchronised'."""
    if struct.calcsize("l") != 8:
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    buf = ctypes.create_string_buffer(512)
    state = libc.adjtimex(buf)
    if state < 0:
        return None
    maxerror, esterror = struct.unpack_from("=qq", buf.raw, 24)
    return {"synchronised": state != TIME_ERROR, "state": state,
            "maxerror_us": maxerror, "esterror_us": esterror}


def running_daemons(proc="/proc"):
    names = set()
    for comm in glob.glob(os.path.join(proc, "[0-9]*", "comm")):
        name = read(comm, "")
        if name in CLOCK_DAEMONS:
            names.add(name)
    return sorted(names)


def service_state(run, unit):
    rc, out, _ = run(["systemctl", "show", "-p", "LoadState", "-p", "ActiveState", unit])
    props = dict(line.split("=", 1) for line in (out or "").splitlines() if "=" in line)
    if rc != 0 or props.get("LoadState") != "loaded":
        return "not installed"
    return props.get("ActiveState", "unknown")


def nic_facts(run, port, netns):
    def cmd(argv):
        return run((["ip", "netns", "exec", netns] if netns else []) + argv)

    nic = {"name": port, "netns": netns or None}
    rc, out, err = cmd(["ip", "-j", "-d", "link", "show", "dev", port])
    if rc != 0:
        nic["error"] = (err or out).strip() or "no such interface"
        return nic
    try:
        link = json.loads(out)[0]
    except (ValueError, IndexError):
        link = {}
    nic.update({
        "mac": link.get("address"), "mtu": link.get("mtu"), "state": link.get("operstate"),
        "kind": (link.get("linkinfo") or {}).get("info_kind"),
        "rx_queues": link.get("num_rx_queues"), "tx_queues": link.get("num_tx_queues"),
    })
    rc, out, _ = cmd(["ethtool", "-i", port])
    info = parse_keyvalue(out) if rc == 0 else {}
    nic.update({"driver": info.get("driver"), "driver_version": info.get("version"),
                "firmware": info.get("firmware-version"), "bus": info.get("bus-info")})
    rc, out, _ = cmd(["ethtool", port])
    nic["speed_mbps"] = speed_mbps(out) if rc == 0 else None
    rc, out, _ = cmd(["ethtool", "-l", port])
    nic["channels"] = parse_channels(out)["current"] if rc == 0 else None
    return nic


def collect(params, run):
    uname = os.uname()
    cpus = sorted(glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"))
    module = params["module_name"]
    modules = read("/proc/modules", "")
    snapshot = read(params["tuning_snapshot_path"])
    try:
        snap = json.loads(snapshot) if snapshot else None
    except ValueError:
        snap = None
    return {
        "schema": "rfc2544-host-facts/1",
        "collected_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hostname": uname.nodename,
        "os": os_release(read("/etc/os-release", "")),
        "kernel": {"release": uname.release, "version": uname.version, "machine": uname.machine,
                   "cmdline": read("/proc/cmdline")},
        "cpu": {"model": cpu_model(read("/proc/cpuinfo", "")), "online": read("/sys/devices/system/cpu/online"),
                "count": os.cpu_count()},
        "module": {
            "name": module,
            "loaded": re.search(rf"^{re.escape(module)} ", modules, re.M) is not None,
            "version": read(f"/sys/module/{module}/version"),
            "srcversion": read(f"/sys/module/{module}/srcversion"),
            "intree_pktgen_loaded": re.search(r"^pktgen ", modules, re.M) is not None,
            "kernel_tainted": read("/proc/sys/kernel/tainted"),
        },
        "tuning": {
            "snapshot": params["tuning_snapshot_path"] if snap else None,
            "changed_values": [e.get("key") for e in (snap or {}).get("entries", [])],
            "governors": sorted({read(p, "") for p in cpus}) or None,
            "cpu_dma_latency_us": cpu_dma_latency_us(),
            "irqbalance": service_state(run, "irqbalance.service"),
        },
        "clock": {"kernel": kernel_clock_synchronised(), "daemons": running_daemons(),
                  "ptp_devices": sorted(read(p, "") for p in glob.glob("/sys/class/ptp/ptp*/clock_name"))},
        "nics": [nic_facts(run, port, params["netns"]) for port in params["ports"]],
    }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            ports=dict(type="list", elements="str", default=[]),
            netns=dict(type="str", default=""),
            module_name=dict(type="str", default="rfc2544_pktgen"),
            tuning_snapshot_path=dict(type="path", required=True),
        ),
        supports_check_mode=True,
    )
    bad = [p for p in module.params["ports"] if not IFNAME_RE.match(p)]
    if bad:
        module.fail_json(msg=f"not interface names: {', '.join(bad)}")
    if module.params["netns"] and not NETNS_RE.match(module.params["netns"]):
        module.fail_json(msg=f"'{module.params['netns']}' is not a network namespace name")
    if not re.match(r"^[a-z][a-z0-9_]{0,55}$", module.params["module_name"]):
        module.fail_json(msg=f"'{module.params['module_name']}' is not a module name")
    module.exit_json(changed=False, facts=collect(module.params, lambda argv: module.run_command(argv)))


if __name__ == "__main__":
    main()
