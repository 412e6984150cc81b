#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: MIT
"""Read a built kernel module's .modinfo section (name, vermagic,
srcversion) and checksum, with Python alone: it runs on the controller,
which may have no modinfo. Changes nothing."""

DOCUMENTATION = r"""
module: pktgen_kmod_ko_info
short_description: What a prebuilt .ko was built as and for (read-only)
description:
  - Reads the ELF .modinfo section of a kernel module file and reports its
    module name, vermagic (whose first word is the kernel release it was
    built for) and srcversion, and the file's SHA-256. An uncompressed .ko
    only; a file that is not one fails with the reason.
options:
  path:
    description: the module file.
    required: true
    type: path
author: rfc2544 project
"""

EXAMPLES = r"""
- name: Read the prebuilt module
  pktgen_kmod_ko_info:
    path: /srv/builds/6.1.0-50-amd64/rfc2544_pktgen.ko
  delegate_to: localhost
  register: ko
"""

RETURN = r"""
name:
  description: the module's name (modinfo name=).
  type: str
  returned: success
vermagic:
  description: the module's vermagic string.
  type: str
  returned: success
kernel_release:
  description: the vermagic's first word, the kernel release it was built for.
  type: str
  returned: success
srcversion:
  description: the module's srcversion ('' when it has none).
  type: str
  returned: success
sha256:
  description: SHA-256 of the file.
  type: str
  returned: success
"""

import hashlib
import struct

from ansible.module_utils.basic import AnsibleModule

MAX_BYTES = 64 << 20       # a module is a few MB; refuse anything that could not be one


def modinfo(data):
    """The key=value pairs of an ELF64/ELF32 little- or big-endian file's
    .modinfo section; ValueError naming what is wrong."""
    if data[:4] != b"\x7fELF":
        raise ValueError("not an ELF file (a compressed .ko.xz/.ko.zst? give the uncompressed .ko)")
    wide = {1: False, 2: True}.get(data[4])
    order = {1: "<", 2: ">"}.get(data[5])
    if wide is None or order is None:
        raise ValueError("not a valid ELF header")
    try:
        if wide:
            shoff, = struct.unpack_from(order + "Q", data, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x3A)
            fmt = order + "IIQQQQ"     # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size
        else:
            shoff, = struct.unpack_from(order + "I", data, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x2E)
            fmt = order + "IIIIII"
        headers = [struct.unpack_from(fmt, data, shoff + i * shentsize) for i in range(shnum)]
        strtab = headers[shstrndx]
        names = data[strtab[4]:strtab[4] + strtab[5]]
    except (struct.error, IndexError):
        raise ValueError("truncated or damaged ELF section table")
    for h in headers:
        if names[h[0]:names.find(b"\0", h[0])] == b".modinfo":
            section = data[h[4]:h[4] + h[5]]
            pairs = {}
            for entry in section.split(b"\0"):
                key, sep, value = entry.partition(b"=")
                if sep:
                    pairs.setdefault(key.decode("ascii", "replace"), value.decode("utf-8", "replace"))
            return pairs
    raise ValueError("no .modinfo section: not a kernel module")


def main():
    module = AnsibleModule(argument_spec={"path": {"type": "path", "required": True}}, supports_check_mode=True)
    path = module.params["path"]
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        module.fail_json(msg=f"cannot read {path}: {exc.strerror}")
    if len(data) > MAX_BYTES:
        module.fail_json(msg=f"{path} is larger than {MAX_BYTES >> 20} MiB: not a kernel module")
    try:
        info = modinfo(data)
    except ValueError as exc:
        module.fail_json(msg=f"{path}: {exc}")
    vermagic = info.get("vermagic", "")
    module.exit_json(changed=False, name=info.get("name", ""), vermagic=vermagic,
                     kernel_release=(vermagic.split() or [""])[0], srcversion=info.get("srcversion", ""),
                     sha256=hashlib.sha256(data).hexdigest())


if __name__ == "__main__":
    main()
