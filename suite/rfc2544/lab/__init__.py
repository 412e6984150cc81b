"""The local QEMU lab: Debian VMs (12 by default; trixie, sid) with real kernels to test against."""


def __getattr__(name):
    # Lazy so `rfc2544.lab.paths` etc. import without paramiko.
    if name == "Lab":
        from rfc2544.lab.lab import Lab
        return Lab
    raise AttributeError(name)


__all__ = ["Lab"]
