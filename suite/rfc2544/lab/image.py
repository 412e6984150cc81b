"""The lab's Debian 12 image: built once by debootstrap, cached by its inputs.

Layout of ~/.cache/rfc2544/images/<key>/ (complete or absent: a build runs
in a temporary sibling directory renamed into place at the end):
  rootfs.raw          ext4 root filesystem (made by `mkfs.ext4 -d`, no loop
                      mount), read-only: VMs boot qcow2 overlays over it
  vmlinuz, initrd.img the image's kernel and Debian initramfs
  kdir/usr/src/linux-headers-<release>  KBUILD tree for out-of-tree modules
  image.json          key, kernel release, build time
"""
import fcntl
import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from rfc2544.errors import InfraError
from rfc2544.lab import paths

SUITE = "bookworm"
MIRROR = os.environ.get("RFC2544_MIRROR", "http://deb.debian.org/debian")
PACKAGES = (
    "systemd-sysv", "udev", "kmod", "openssh-server", "python3", "python3-apt",
    "iproute2", "ethtool", "iputils-ping", "procps", "tcpdump", "ca-certificates",
    "make", "gcc", "linux-headers-amd64", "linux-image-amd64", "mount",
)
ROOTFS_SIZE = "3G"          # sparse; ~1.3 GiB used
NEED_FREE_BYTES = 5 << 30   # debootstrap tree + ext4 image + kdir, with margin
# Timers and services a short-lived lab VM does not want running under TCG.
MASKED_UNITS = (
    "apt-daily.timer", "apt-daily-upgrade.timer", "dpkg-db-backup.timer",
    "e2scrub_all.timer", "fstrim.timer", "e2scrub_reap.service",
    "networking.service", "systemd-timesyncd.service",
)
GUEST_FILES = {
    # guest file -> (path in image, mode)
    "rfc2544-seed": ("usr/local/sbin/rfc2544-seed", 0o755),
    "rfc2544-seed.service": ("etc/systemd/system/rfc2544-seed.service", 0o644),
    "sshd_config": ("etc/ssh/sshd_config.d/rfc2544.conf", 0o644),
    "sysctl.conf": ("etc/sysctl.d/60-rfc2544.conf", 0o644),
}


def _log(msg):
    print(f"lab image: {msg}", file=sys.stderr, flush=True)


def image_key() -> str:
    """Hash of everything the image is made from."""
    h = hashlib.sha256()
    h.update(f"{SUITE}\n{MIRROR}\n{ROOTFS_SIZE}\n".encode())
    h.update(("\n".join(PACKAGES) + "\n" + "\n".join(MASKED_UNITS)).encode())
    # the code that makes the image (not the whole file: caching and lock
    # edits must not force everyone to rebuild)
    for func in (build_image, _customize, _copy_kdir, _symlink):
        h.update(inspect.getsource(func).encode())
    for name in sorted(GUEST_FILES):
        h.update(name.encode() + b"\0" + (paths.GUEST_DIR / name).read_bytes())
    return h.hexdigest()[:16]


class Image:
    """A built image in the cache."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        meta = json.loads((self.dir / "image.json").read_text())
        self.key = meta["key"]
        self.kernel_release = meta["kernel_release"]
        self.build_seconds = meta.get("build_seconds")

    rootfs = property(lambda self: self.dir / "rootfs.raw")
    kernel = property(lambda self: self.dir / "vmlinuz")
    initrd = property(lambda self: self.dir / "initrd.img")

    @property
    def kdir(self) -> Path:
        return self.dir / "kdir" / "usr" / "src" / f"linux-headers-{self.kernel_release}"


def find_image(key=None):
    """The cached image for the current inputs, or None."""
    d = paths.images_dir() / (key or image_key())
    if (d / "image.json").is_file():
        return Image(d)
    return None


def ensure_image(force=False) -> Image:
    key = image_key()
    img = None if force else find_image(key)
    if img is not None:
        return img
    root = paths.images_dir()
    root.mkdir(parents=True, exist_ok=True)
    # One build per key at a time: a second `lab up` waits and reuses it.
    with open(root / f".{key}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log("another process is building this image; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        img = None if force else find_image(key)
        if img is not None:
            return img
        _remove_stale_builds(root)
        return build_image(key)


def _remove_stale_builds(root: Path):
    """Temp dirs of builds whose process died (e.g. SIGKILL) are removed."""
    for d in root.glob(".build-*"):
        pid = d.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(d, ignore_errors=True)


def check_tools():
    missing = [t for t in ("debootstrap", "mkfs.ext4") if shutil.which(t) is None
               and not Path("/usr/sbin", t).exists() and not Path("/sbin", t).exists()]
    if missing:
        raise InfraError(f"cannot build the lab image: {', '.join(missing)} not installed (run `make deps`)")
    if os.geteuid() != 0:
        raise InfraError("cannot build the lab image: debootstrap needs root")


def check_free_disk(where: Path, need=NEED_FREE_BYTES):
    where.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(where).free
    if free < need:
        raise InfraError(
            f"not enough free disk for the lab image in {where}: "
            f"{free / 2**30:.1f} GiB free, {need / 2**30:.0f} GiB needed")


def _run(cmd, what, **kw):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    except OSError as exc:
        raise InfraError(f"lab image: {what}: {exc}")
    if r.returncode != 0:
        tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-3:]
        raise InfraError(f"lab image: {what} failed (exit {r.returncode}): {' | '.join(tail)}")
    return r


def build_image(key) -> Image:
    check_tools()
    root = paths.images_dir()
    check_free_disk(root)
    final = root / key
    tmp = root / f".build-{key}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    t0 = time.monotonic()
    try:
        rootfs = tmp / "rootfs"
        _log(f"debootstrap {SUITE} ({len(PACKAGES)} extra packages) into {tmp} (2-4 min cold)...")
        _run(["debootstrap", "--variant=minbase", "--include=" + ",".join(PACKAGES),
              SUITE, str(rootfs), MIRROR], "debootstrap")
        _log(f"debootstrap done in {time.monotonic() - t0:.0f} s; configuring")
        release = _customize(rootfs)
        _log("copying kernel, initrd and kernel headers out")
        shutil.copy2(next((rootfs / "boot").glob("vmlinuz-*")), tmp / "vmlinuz")
        shutil.copy2(next((rootfs / "boot").glob("initrd.img-*")), tmp / "initrd.img")
        _copy_kdir(rootfs, tmp / "kdir", release)
        _log(f"making rootfs.raw (mkfs.ext4 -d, {ROOTFS_SIZE} sparse)")
        _run(["mkfs.ext4", "-q", "-F", "-L", "rfc2544root", "-E", "root_owner=0:0",
              "-d", str(rootfs), str(tmp / "rootfs.raw"), ROOTFS_SIZE], "mkfs.ext4 -d")
        os.chmod(tmp / "rootfs.raw", 0o444)
        shutil.rmtree(rootfs)
        seconds = round(time.monotonic() - t0, 1)
        (tmp / "image.json").write_text(json.dumps(
            {"key": key, "kernel_release": release, "suite": SUITE,
             "packages": list(PACKAGES), "build_seconds": seconds}, indent=1) + "\n")
        if final.exists():          # a concurrent build won: keep theirs
            shutil.rmtree(tmp)
        else:
            tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _log(f"built {final} in {seconds:.0f} s")
    return Image(final)


def _customize(rootfs: Path) -> str:
    """Make the debootstrap tree a bootable, seedable lab host. Returns the kernel release."""
    releases = sorted(p.name for p in (rootfs / "lib" / "modules").iterdir())
    if len(releases) != 1:
        raise InfraError(f"lab image: expected one kernel in the image, found {releases}")
    release = releases[0]
    for name, (rel, mode) in GUEST_FILES.items():
        dst = rootfs / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(paths.GUEST_DIR / name, dst)
        os.chmod(dst, mode)
    wants = rootfs / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    _symlink("/etc/systemd/system/rfc2544-seed.service", wants / "rfc2544-seed.service")
    for unit in MASKED_UNITS:
        _symlink("/dev/null", rootfs / "etc/systemd/system" / unit)
    # Host keys come from each VM's seed disk: the image must not carry any.
    for key in (rootfs / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    (rootfs / "etc/fstab").write_text("/dev/vda / ext4 rw,errors=remount-ro 0 1\n")
    (rootfs / "etc/hostname").write_text("lab\n")
    (rootfs / "etc/hosts").write_text("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n")
    # A fixed machine-id avoids systemd's first-boot preset run on every boot.
    (rootfs / "etc/machine-id").write_text("5f0e2c1d8a6b4e7f9c3a2b1d0e4f6a8c\n")
    # No package downloads from inside the lab.
    (rootfs / "etc/apt/sources.list").write_text(f"# lab VMs have no network\n# deb {MIRROR} {SUITE} main\n")
    shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
    (rootfs / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
    return release


def _symlink(target, link: Path):
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def _copy_kdir(rootfs: Path, kdir_root: Path, release: str):
    """Copy the kernel headers + kbuild keeping their relative symlinks, and
    make the arch Makefile's absolute include relative so `make -C KDIR`
    works from anywhere on the host."""
    src = rootfs / "usr/src"
    names = [p.name for p in src.iterdir() if p.name.startswith("linux-")]
    for name in names:
        shutil.copytree(src / name, kdir_root / "usr/src" / name, symlinks=True)
    for p in (rootfs / "usr/lib").glob("linux-kbuild-*"):
        shutil.copytree(p, kdir_root / "usr/lib" / p.name, symlinks=True)
    arch = kdir_root / "usr/src" / f"linux-headers-{release}"
    mk = arch / "Makefile"
    text = mk.read_text()
    # `include /usr/src/linux-headers-X-common/Makefile` -> relative to KDIR (make -C cds there)
    text = text.replace("include /usr/src/", "include ../")
    mk.write_text(text)
    for link in kdir_root.rglob("*"):
        if link.is_symlink() and os.readlink(link).startswith("/"):
            _log(f"warning: absolute symlink in kdir: {link} -> {os.readlink(link)}")


def describe(img: Image) -> str:
    size = img.rootfs.stat().st_blocks * 512 / 2**30
    return (f"image {img.key}: Debian {SUITE}, kernel {img.kernel_release}, "
            f"rootfs {size:.1f} GiB used, built in {img.build_seconds} s\n"
            f"  dir:  {img.dir}\n  kdir: {img.kdir}")


def prune(in_use=()):
    """Remove cached images other than the current one and those in `in_use`
    (dirs of images running labs boot from). Returns the removed dirs."""
    keep = {image_key()} | {Path(p).resolve().name for p in in_use}
    removed = []
    root = paths.images_dir()
    if not root.is_dir():
        return removed
    for d in sorted(root.iterdir()):
        if d.name.startswith("."):
            continue
        if d.is_symlink():
            if not d.exists() or d.resolve().name not in keep:
                d.unlink()
            continue
        if d.is_dir() and d.name not in keep:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed
