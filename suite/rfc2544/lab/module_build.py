"""rfc2544_pktgen.ko for a lab kernel, built on this host from the module
source, once per source state and kernel release.

Built as check-kernels builds: against the lab image's own headers (kdir)
with the compiler they name, on the host when it has that compiler
(Debian 12's gcc-12 for 6.1), else chrooted into the image's kept
debootstrap root (trixie's gcc-14, sid's gcc-16). An emulated guest
compiles the same source in minutes; this takes seconds, and the role
installs the result with pktgen_kmod_prebuilt.

Cache: ~/.cache/rfc2544/modules/<release>-<key>/rfc2544_pktgen.ko, where
the key hashes the source files and the build root; a build runs in a
temporary sibling directory renamed into place whole.
"""
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from rfc2544.errors import InfraError
from rfc2544.lab import paths

MODULE = "rfc2544_pktgen"
BUILD_TIMEOUT_S = 900


def source_files(src: Path):
    """The files a build reads (sources, Kbuild, Makefile, the configure
    step and its probes), relative to `src`; tools/ and generated files
    are not part of the module."""
    return sorted(p.relative_to(src) for p in src.rglob("*")
                  if p.is_file() and p.parts[len(src.parts)] != "tools"
                  and (p.suffix in (".c", ".h") or p.name in ("Kbuild", "Makefile", "configure"))
                  and not p.name.endswith(".mod.c") and p.name != "probes.h")


def kernel_compiler(kdir):
    """The gcc the kernel's headers name (Debian's .kernelvariables:
    CC = ... $(CROSS_COMPILE)gcc-16), or None where they name none."""
    try:
        text = (Path(kdir) / ".kernelvariables").read_text()
    except OSError:
        return None
    found = re.search(r"^CC\s*=.*\b(gcc-\d+)\s*$", text, re.M)
    return found.group(1) if found else None


def build(src: Path, kdir, release: str, root=None, extra=("W=1",)) -> Path:
    """The cached .ko of `src` for kernel `release`, built first if needed.
    With `root` (a Debian root holding the kernel's headers and compiler),
    `kdir` is the headers' path inside it and make runs chrooted there, with
    /proc mounted (objtool reads it) in a mount namespace of its own."""
    src = Path(src)
    files = source_files(src)
    digest = hashlib.sha256(f"{root}:{kdir}:{' '.join(extra)}".encode())
    for p in files:
        digest.update(str(p).encode() + b"\0" + (src / p).read_bytes())
    final = paths.cache_root() / "modules" / f"{release}-{digest.hexdigest()[:16]}"
    ko = final / f"{MODULE}.ko"
    if ko.is_file():
        return ko
    final.parent.mkdir(parents=True, exist_ok=True)
    # inside the root when chrooted: the build must see its files there
    work = Path(tempfile.mkdtemp(prefix=f"{MODULE}-", dir=Path(root, "tmp") if root else final.parent))
    try:
        for p in files:
            (work / p).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / p, work / p)
        make = ["make", f"KDIR={kdir}", *extra]
        if root:
            inside = "/" + str(work.relative_to(root))
            make = ["unshare", "--mount", "--fork", "sh", "-c",
                    'mount -t proc proc "$1/proc" && cd "$1" && shift && '
                    'exec chroot . sh -c \'cd "$0" && exec "$@"\' "$@"',
                    "sh", str(root), inside, *make]
        try:
            res = subprocess.run(make, cwd=work, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise InfraError(f"building {MODULE} for {release} took over {BUILD_TIMEOUT_S} s") from None
        if res.returncode != 0:
            raise InfraError(f"building {MODULE} for {release} failed (make exit {res.returncode}):\n"
                             + (res.stdout + res.stderr)[-4000:])
        staged = Path(tempfile.mkdtemp(prefix=".part-", dir=final.parent))
        shutil.copy2(work / f"{MODULE}.ko", staged / f"{MODULE}.ko")
        (staged / "build.log").write_text(res.stdout + res.stderr)
        try:
            staged.rename(final)
        except OSError:         # another process put the same build there first
            shutil.rmtree(staged, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return ko


def build_for(img, src: Path) -> Path:
    """The module for lab image `img`'s kernel (a Lab's .image): built on
    this host against its kdir when the host has the compiler the kernel's
    headers name, else inside the image's own root with that kernel's
    headers and compiler."""
    cc = kernel_compiler(img.kdir)
    if cc is None or shutil.which(cc):
        return build(src, img.kdir, img.kernel_release)
    root = img.root
    if root is None or not (root / "usr/bin" / cc).exists():
        raise InfraError(f"the lab image {img.dir} has no root with {cc} to build {MODULE} "
                         f"for {img.kernel_release}")
    return build(src, f"/usr/src/linux-headers-{img.kernel_release}", img.kernel_release, root=root)
