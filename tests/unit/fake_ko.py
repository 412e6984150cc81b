"""A stand-in for a built kernel module (SIMULATED): a minimal ELF64
little-endian file with the two sections the role's reader looks at,
.shstrtab and .modinfo. Not loadable; for the controller-side checks of
pktgen_kmod_prebuilt without a compiler or a kernel tree."""
import struct


def fake_ko(path, name="rfc2544_pktgen", vermagic="6.1.0-50-amd64 SMP preempt mod_unload modversions ",
            srcversion="0123456789ABCDEF0123456"):
    modinfo = f"license=GPL\0name={name}\0vermagic={vermagic}\0srcversion={srcversion}\0".encode()
    shstrtab = b"\0.shstrtab\0.modinfo\0"
    shoff = 64 + len(modinfo) + len(shstrtab)
    shoff += -shoff % 8
    header = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9) + struct.pack(
        "<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 3, 1)

    def section(name_at, offset, size, kind):
        return struct.pack("<IIQQQQIIQQ", name_at, kind, 0, 0, offset, size, 0, 0, 1, 0)

    body = header + modinfo + shstrtab
    body += bytes(shoff - len(body))
    body += bytes(64) + section(1, 64 + len(modinfo), len(shstrtab), 3) + section(11, 64, len(modinfo), 1)
    path.write_bytes(body)
    return path
