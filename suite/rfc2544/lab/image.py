"""The lab's Debian images (one per release in RELEASES; bookworm by
default): built once by debootstrap, cached by their inputs.

Layout of ~/.cache/rfc2544/images/<key>/ (complete or absent: a build runs
in a temporary sibling directory renamed into place at the end):
  rootfs.raw          ext4 root filesystem (made by `mkfs.ext4 -d`, no loop
                      mount), read-only: VMs boot qcow2 overlays over it
  vmlinuz, initrd.img the image's kernel and Debian initramfs
  kdir/usr/src/linux-headers-<release>  KBUILD tree for out-of-tree modules
  root/               releases with keep_root only: the debootstrap tree, for
                      module builds chrooted there with the kernel's own compiler
  image.json          key, release, kernel release, build time
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
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from rfc2544.errors import BadInput, InfraError
from rfc2544.lab import paths

MIRROR = os.environ.get("RFC2544_MIRROR", "http://deb.debian.org/debian")
PACKAGES = (
    "systemd-sysv", "udev", "kmod", "openssh-server", "python3", "python3-apt",
    "iproute2", "ethtool", "iputils-ping", "procps", "tcpdump", "ca-certificates",
    "make", "gcc", "linux-headers-amd64", "linux-image-amd64", "mount",
    # modules_install compresses modules where the kernel's are (sid: xz)
    "xz-utils", "zstd",
)


@dataclass(frozen=True)
class Release:
    name: str               # debootstrap suite and image.json "suite"
    title: str
    packages: tuple = ()    # installed on top of PACKAGES
    # keep the debootstrap tree as <image>/root (~1 GiB): its kernel is built
    # by a newer gcc than a Debian 12 host has (trixie gcc-14, sid gcc-16),
    # so host-side module builds against kdir need that root's compiler
    keep_root: bool = False


# The Debian releases the lab builds, and everything that differs between them.
# (sid's linux-image prefers dracut, so its initrd is dracut's; see README.md.)
RELEASES = {r.name: r for r in (
    Release("bookworm", "Debian 12"),
    Release("trixie", "Debian 13", keep_root=True),
    # chrony: the clock reader's lab test (test_lab_two_host.py) syncs the
    # two-host lab's VMs with it; the newest kernel's two-host lab is sid
    Release("sid", "Debian unstable", packages=("chrony",), keep_root=True),
)}
DEFAULT_RELEASE = "bookworm"
HOST_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
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


def release_info(name) -> Release:
    """The RELEASES entry for `name` (BadInput for anything else)."""
    if name not in RELEASES:
        raise BadInput(f"unknown Debian release '{name}' for the lab image (known: {', '.join(RELEASES)})")
    return RELEASES[name]


def packages(release=DEFAULT_RELEASE) -> tuple:
    return PACKAGES + release_info(release).packages


def image_key(release=DEFAULT_RELEASE) -> str:
    """Hash of everything the image of `release` is made from."""
    h = hashlib.sha256()
    h.update(f"{release_info(release).name}\n{MIRROR}\n{ROOTFS_SIZE}\n".encode())
    h.update(("\n".join(packages(release)) + "\n" + "\n".join(MASKED_UNITS)).encode())
    h.update(b"keep_root\n" if release_info(release).keep_root else b"")
    # the code that makes the image (not the whole file: caching and lock
    # edits must not force everyone to rebuild)
    for func in (build_image, _customize, _copy_kdir, _symlink, _debootstrap_keyring):
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
        self.release = meta.get("suite", DEFAULT_RELEASE)
        self.kernel_release = meta["kernel_release"]
        self.build_seconds = meta.get("build_seconds")

    rootfs = property(lambda self: self.dir / "rootfs.raw")
    kernel = property(lambda self: self.dir / "vmlinuz")
    initrd = property(lambda self: self.dir / "initrd.img")

    @property
    def kdir(self) -> Path:
        return self.dir / "kdir" / "usr" / "src" / f"linux-headers-{self.kernel_release}"

    @property
    def root(self):
        """The image's Debian root tree (releases with keep_root): chroot there
        to build modules with the kernel's own compiler. None if not kept."""
        d = self.dir / "root"
        return d if d.is_dir() else None


def find_image(key=None, release=DEFAULT_RELEASE):
    """The cached image for the current inputs, or None."""
    d = paths.images_dir() / (key or image_key(release))
    if (d / "image.json").is_file():
        return Image(d)
    return None


def ensure_image(force=False, release=DEFAULT_RELEASE) -> Image:
    key = image_key(release)
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
        return build_image(key, release)


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


def _run(cmd, what, check=True, **kw):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    except OSError as exc:
        raise InfraError(f"lab image: {what}: {exc}")
    if check and r.returncode != 0:
        tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-3:]
        raise InfraError(f"lab image: {what} failed (exit {r.returncode}): {' | '.join(tail)}")
    return r


def _signers(inrelease: Path, keyring) -> tuple:
    """(keys with a valid signature, keys not in `keyring`) of a signed InRelease."""
    r = _run(["gpgv", "--status-fd", "1", "--keyring", str(keyring), str(inrelease)],
             "gpgv", check=False)
    valid, unknown = set(), set()
    for line in r.stdout.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0] == "[GNUPG:]":
            if words[1] == "VALIDSIG":
                valid.add(words[2])
            elif words[1] == "NO_PUBKEY":
                unknown.add(words[2])
    return valid, unknown


def _debootstrap_keyring(release, workdir: Path):
    """None when the host's archive keyring knows every key `release`'s
    InRelease is signed with (debootstrap's default keyring then serves).
    Otherwise (a newer release signed with a key the host lacks as well as one
    it has) `release`'s own debian-archive-keyring, fetched by apt with a
    state and sources dir of our own that trusts only the host's keyring; its
    keyring file is returned for --keyring. The host's /etc/apt is not touched."""
    workdir.mkdir(parents=True, exist_ok=True)
    inrelease = workdir / "InRelease"
    url = f"{MIRROR}/dists/{release}/InRelease"
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:
            inrelease.write_bytes(resp.read())
    except (OSError, ValueError) as exc:
        raise InfraError(f"lab image: cannot fetch {url}: {exc}")
    valid, unknown = _signers(inrelease, HOST_KEYRING)
    if valid and not unknown:
        return None
    if not valid:
        raise InfraError(f"lab image: {release}'s InRelease is signed only by keys the host's {HOST_KEYRING} "
                         f"does not have ({', '.join(sorted(unknown)) or 'no valid signature'}): "
                         "update the host's debian-archive-keyring")
    _log(f"the host keyring lacks {release}'s signing key {', '.join(sorted(unknown))}: "
         f"fetching {release}'s debian-archive-keyring")
    apt = workdir / "apt"
    for sub in ("lists/partial", "cache/archives/partial", "parts", "debs"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    (apt / "status").touch()
    (apt / "sources.list").write_text(
        f"deb [arch=amd64 signed-by={HOST_KEYRING} target=Packages] {MIRROR} {release} main\n")
    opts = [f"-o{k}={v}" for k, v in (
        ("Dir::State", apt), ("Dir::State::Lists", apt / "lists"), ("Dir::State::status", apt / "status"),
        ("Dir::Cache", apt / "cache"), ("Dir::Etc::sourcelist", apt / "sources.list"),
        ("Dir::Etc::sourceparts", apt / "parts"), ("Dir::Etc::trustedparts", apt / "parts"),
        ("Dir::Etc::preferences", apt / "preferences"), ("Dir::Etc::preferencesparts", apt / "parts"),
        ("APT::Sandbox::User", "root"), ("Acquire::Languages", "none"))]
    _run(["apt-get", "-q", *opts, "update"], f"apt-get update ({release}, own state dir)")
    _run(["apt-get", "-q", *opts, "download", "debian-archive-keyring"],
         f"apt-get download debian-archive-keyring ({release})", cwd=apt / "debs")
    deb = next((apt / "debs").glob("debian-archive-keyring_*.deb"))
    _run(["dpkg-deb", "-x", str(deb), str(apt / "keyring")], "dpkg-deb -x debian-archive-keyring")
    keyring = apt / "keyring/usr/share/keyrings/debian-archive-keyring.gpg"
    if not keyring.exists():
        keyring = keyring.with_suffix(".pgp")
    valid, unknown = _signers(inrelease, keyring)
    if not valid or unknown:
        raise InfraError(f"lab image: {release}'s own debian-archive-keyring ({deb.name}) does not know "
                         f"its signing keys {', '.join(sorted(unknown))}")
    return keyring


def build_image(key, release=DEFAULT_RELEASE) -> Image:
    check_tools()
    pkgs = packages(release)
    root = paths.images_dir()
    check_free_disk(root)
    final = root / key
    tmp = root / f".build-{key}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    t0 = time.monotonic()
    try:
        rootfs = tmp / "rootfs"
        keyring = _debootstrap_keyring(release, tmp / "keyring")
        _log(f"debootstrap {release} ({len(pkgs)} extra packages) into {tmp} (2-4 min cold)...")
        _run(["debootstrap", "--variant=minbase", "--include=" + ",".join(pkgs)]
             + ([f"--keyring={keyring}"] if keyring else [])
             + [release, str(rootfs), MIRROR], "debootstrap")
        shutil.rmtree(tmp / "keyring")
        _log(f"debootstrap done in {time.monotonic() - t0:.0f} s; configuring")
        kernel = _customize(rootfs, release)
        _log("copying kernel, initrd and kernel headers out")
        shutil.copy2(next((rootfs / "boot").glob("vmlinuz-*")), tmp / "vmlinuz")
        shutil.copy2(next((rootfs / "boot").glob("initrd.img-*")), tmp / "initrd.img")
        _copy_kdir(rootfs, tmp / "kdir", kernel)
        _log(f"making rootfs.raw (mkfs.ext4 -d, {ROOTFS_SIZE} sparse)")
        # Inode tables and journal zeroed here, on the host, in the sparse
        # file: else every boot of every VM zeroes them again through its
        # overlay (ext4lazyinit), emulated, while the lab boots under load.
        _run(["mkfs.ext4", "-q", "-F", "-L", "rfc2544root",
              "-E", "root_owner=0:0,lazy_itable_init=0,lazy_journal_init=0",
              "-d", str(rootfs), str(tmp / "rootfs.raw"), ROOTFS_SIZE], "mkfs.ext4 -d")
        os.chmod(tmp / "rootfs.raw", 0o444)
        if release_info(release).keep_root:
            rootfs.rename(tmp / "root")
        else:
            shutil.rmtree(rootfs)
        seconds = round(time.monotonic() - t0, 1)
        (tmp / "image.json").write_text(json.dumps(
            {"key": key, "kernel_release": kernel, "suite": release,
             "packages": list(pkgs), "build_seconds": seconds}, indent=1) + "\n")
        if final.exists():          # a concurrent build won: keep theirs
            shutil.rmtree(tmp)
        else:
            tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _log(f"built {final} in {seconds:.0f} s")
    return Image(final)


def _customize(rootfs: Path, release: str) -> str:
    """Make the debootstrap tree of Debian `release` a bootable, seedable lab
    host. Returns the kernel release."""
    kernels = sorted(p.name for p in (rootfs / "lib" / "modules").iterdir())
    if len(kernels) != 1:
        raise InfraError(f"lab image: expected one kernel in the image, found {kernels}")
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
    # No package downloads from inside the lab (debootstrap writes a one-line
    # sources.list; newer releases may also ship deb822 sources.list.d files).
    (rootfs / "etc/apt/sources.list").write_text(f"# lab VMs have no network\n# deb {MIRROR} {release} main\n")
    for src in (rootfs / "etc/apt/sources.list.d").glob("*"):
        src.unlink()
    shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
    (rootfs / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
    return kernels[0]


def _symlink(target, link: Path):
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def _copy_kdir(rootfs: Path, kdir_root: Path, release: str):
    """Copy the kernel headers + kbuild keeping their relative symlinks, and
    make the arch Makefile's absolute /usr/src paths relative so `make -C KDIR`
    works from anywhere on the host (bookworm: `include /usr/src/...-common/Makefile`;
    sid: `KBUILD_OUTPUT=/usr/src/linux-headers-<release>`, the include already relative)."""
    src = rootfs / "usr/src"
    names = [p.name for p in src.iterdir() if p.name.startswith("linux-")]
    for name in names:
        shutil.copytree(src / name, kdir_root / "usr/src" / name, symlinks=True)
    for p in (rootfs / "usr/lib").glob("linux-kbuild-*"):
        shutil.copytree(p, kdir_root / "usr/lib" / p.name, symlinks=True)
    arch = kdir_root / "usr/src" / f"linux-headers-{release}"
    mk = arch / "Makefile"
    text = mk.read_text()
    # /usr/src/linux-headers-X... -> relative to KDIR (make -C cds there)
    text = text.replace("/usr/src/", "../")
    mk.write_text(text)
    for link in kdir_root.rglob("*"):
        if link.is_symlink() and os.readlink(link).startswith("/"):
            _log(f"warning: absolute symlink in kdir: {link} -> {os.readlink(link)}")


def describe(img: Image) -> str:
    size = img.rootfs.stat().st_blocks * 512 / 2**30
    return (f"image {img.key}: {release_info(img.release).title} ({img.release}), kernel {img.kernel_release}, "
            f"rootfs {size:.1f} GiB used, built in {img.build_seconds} s\n"
            f"  dir:  {img.dir}\n  kdir: {img.kdir}" + (f"\n  root: {img.root}" if img.root else ""))


def prune(in_use=()):
    """Remove cached images other than the current one of each release and
    those in `in_use` (dirs of images running labs boot from). Returns the
    removed dirs."""
    keep = {image_key(r) for r in RELEASES} | {Path(p).resolve().name for p in in_use}
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
