#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: MIT
"""Read, in one round trip, everything pktgen_kmod decides on. Changes nothing."""

DOCUMENTATION = r"""
module: pktgen_kmod_info
short_description: State of the benchmark kernel module on a host (read-only)
description:
  - Reports whether the module and the in-tree pktgen are loaded (and by
    whom they are held), which build is loaded and which is installed, the
    role's stamp file, whether kernel headers exist, and whether the kernel
    enforces module signatures.
options:
  name:
    description: module name.
    required: true
    type: str
  kernel_release:
    description: kernel release the module is built for.
    required: true
    type: str
  stamp_path:
    description: JSON stamp the role writes after a build or load.
    required: true
    type: path
  intree_marker_path:
    description: file that records that the role unloaded the in-tree pktgen.
    required: true
    type: path
  sig_enforce_path:
    description: the kernel's module.sig_enforce switch.
    type: path
    default: /sys/module/module/parameters/sig_enforce
  lockdown_path:
    description: the kernel's lockdown switch.
    type: path
    default: /sys/kernel/security/lockdown
author: rfc2544 project
"""

EXAMPLES = r"""
- name: Read the module's state
  pktgen_kmod_info:
    name: rfc2544_pktgen
    kernel_release: "{{ ansible_facts['kernel'] }}"
    stamp_path: /var/lib/rfc2544/pktgen_kmod-6.1.0-50-amd64.json
    intree_marker_path: /var/lib/rfc2544/pktgen_kmod-intree-unloaded
  register: kmod
"""

RETURN = r"""
loaded:
  description: the module is loaded.
  type: bool
  returned: always
loaded_srcversion:
  description: srcversion of the loaded module ('' when it has none).
  type: str
  returned: always
installed_path:
  description: the installed .ko modprobe would load for kernel_release ('' if none).
  type: str
  returned: always
intree_running:
  description: the devices a loaded in-tree pktgen is sending on ([] if none).
  type: list
  elements: str
  returned: always
stamp:
  description: the stamp file's content ({} if absent).
  type: dict
  returned: always
"""

import hashlib
import json
import os
import re

from ansible.module_utils.basic import AnsibleModule

INTREE = "pktgen"


def read(path, default=""):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return default


def loaded_modules(text):
    """/proc/modules -> {name: {'refcnt': int, 'users': [names]}}."""
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1].isdigit():
            users = [u for u in fields[3].rstrip(",").split(",") if u and u != "-"]
            out[fields[0]] = {"refcnt": int(fields[2]) if fields[2].isdigit() else -1, "users": users}
    return out


def running_devices(proc_dir):
    """The devices a pktgen's threads are running, from each kpktgend_N file's
    'Running:' line. The in-tree pktgen holds a module reference only while a
    'start' writer waits, and that writer returns at once when the thread has
    not started the device within 125 ms of the write (a busy host): a test
    can run with use count 0, and rmmod would end it."""
    names = []
    try:
        threads = sorted(f for f in os.listdir(proc_dir) if re.match(r"^kpktgend_\d+$", f))
    except OSError:
        return names
    for thread in threads:
        for line in read(os.path.join(proc_dir, thread)).splitlines():
            if line.startswith("Running:"):
                names += [n for n in line[len("Running:"):].split() if n not in names]
    return names


def lockdown_mode(text):
    match = re.search(r"\[(\w+)\]", text)
    return match.group(1) if match else ("none" if not text else text.split()[0])


def modinfo_fields(text):
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("filename", "srcversion", "version", "vermagic"):
            out.setdefault(key.strip(), value.strip())
    return out


def sha1(path):
    digest = hashlib.sha1()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 16), b""):
                digest.update(block)
    except OSError:
        return ""
    return digest.hexdigest()


def collect(params, run, root="/"):
    def p(path):
        return os.path.join(root, path.lstrip("/"))

    name, release = params["name"], params["kernel_release"]
    modules = loaded_modules(read(p("/proc/modules")))
    ours, intree = modules.get(name), modules.get(INTREE)
    result = {
        "loaded": ours is not None,
        "loaded_refcnt": ours["refcnt"] if ours else 0,
        "loaded_srcversion": read(p(f"/sys/module/{name}/srcversion")) if ours else "",
        "loaded_version": read(p(f"/sys/module/{name}/version")) if ours else "",
        "intree_loaded": intree is not None,
        "intree_refcnt": intree["refcnt"] if intree else 0,
        "intree_users": intree["users"] if intree else [],
        "intree_running": running_devices(p("/proc/net/pktgen")) if intree and not ours else [],
        # Built into the kernel: /proc/net/pktgen exists with neither module loaded.
        "intree_builtin": ours is None and intree is None and os.path.isdir(p("/proc/net/pktgen")),
        "intree_marker": os.path.exists(p(params["intree_marker_path"])),
        "pgrx_present": os.path.exists(p("/proc/net/pktgen/pgrx")),
        "kdir_exists": os.path.isfile(p(f"/lib/modules/{release}/build/Makefile")),
        "sig_enforce": read(p(params["sig_enforce_path"]), "N") or "N",
        "lockdown": lockdown_mode(read(p(params["lockdown_path"]))),
        "boot_id": read(p("/proc/sys/kernel/random/boot_id")),
        "modules_load_conf_exists": os.path.exists(p(f"/etc/modules-load.d/{name}.conf")),
        "installed_path": "",
        "installed_srcversion": "",
        "installed_checksum": "",
        "stamp": {},
    }
    rc, out, _ = run(["modinfo", "-k", release, name])
    if rc == 0:
        info = modinfo_fields(out)
        result["installed_path"] = info.get("filename", "")
        result["installed_srcversion"] = info.get("srcversion", "")
        if result["installed_path"].startswith("/"):
            result["installed_checksum"] = sha1(p(result["installed_path"]))
    stamp = read(p(params["stamp_path"]))
    if stamp:
        try:
            data = json.loads(stamp)
            result["stamp"] = data if isinstance(data, dict) else {}
        except ValueError:
            result["stamp"] = {}     # a damaged stamp means: rebuild
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            kernel_release=dict(type="str", required=True),
            stamp_path=dict(type="path", required=True),
            intree_marker_path=dict(type="path", required=True),
            sig_enforce_path=dict(type="path", default="/sys/module/module/parameters/sig_enforce"),
            lockdown_path=dict(type="path", default="/sys/kernel/security/lockdown"),
        ),
        supports_check_mode=True,
    )
    if not re.match(r"^[a-z][a-z0-9_]{0,55}$", module.params["name"]):
        module.fail_json(msg=f"'{module.params['name']}' is not a module name")
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$", module.params["kernel_release"]):
        module.fail_json(msg=f"'{module.params['kernel_release']}' is not a kernel release")
    module.exit_json(changed=False, **collect(module.params, lambda argv: module.run_command(argv)))


if __name__ == "__main__":
    main()
