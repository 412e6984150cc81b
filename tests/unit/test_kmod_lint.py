"""Host-only gate on the kernel module's sources: checkpatch.pl reports no
error. Sparse on every file against every kernel of kernels.list is
`make -C pktgen-kmod check-kernels` (test_kernel_matrix.py).

checkpatch.pl comes from Debian's linux-source-6.1 (a tarball in /usr/src;
the three files checkpatch needs are unpacked once into
~/.cache/rfc2544/checkpatch/); sparse from the sparse package. Both are in
the Makefile's APT_PACKAGES (`make deps`).
"""
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KMOD = ROOT / "pktgen-kmod"
TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
CACHE = Path.home() / ".cache" / "rfc2544" / "checkpatch"
NEEDED = ("checkpatch.pl", "spelling.txt", "const_structs.checkpatch")


def _checkpatch():
    script = CACHE / "scripts" / "checkpatch.pl"
    if script.is_file():
        return script
    if not TARBALL.is_file():
        pytest.skip(f"{TARBALL} missing: install linux-source-6.1 (make deps)")
    tmp = CACHE.with_name("checkpatch.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "scripts").mkdir(parents=True)
    with tarfile.open(TARBALL) as tar:          # one pass over the stream
        for member in tar:
            name = member.name.split("/", 1)[-1]
            if name in (f"scripts/{n}" for n in NEEDED):
                (tmp / name).write_bytes(tar.extractfile(member).read())
                if all((tmp / "scripts" / n).is_file() for n in NEEDED):
                    break
    shutil.rmtree(CACHE, ignore_errors=True)
    tmp.rename(CACHE)
    return script


def _sources():
    return sorted(p for p in KMOD.iterdir() if p.suffix in (".c", ".h"))


def _checked():
    """Module sources and the in-guest fuzzer (kernel style too)."""
    return _sources() + [KMOD / "tools" / "pgfuzz.c"]


def test_checkpatch_no_errors():
    if shutil.which("perl") is None:
        pytest.skip("perl missing")
    script = _checkpatch()
    out = subprocess.run(["perl", str(script), "--no-tree", "--terse", "--show-types", "-f",
                          *map(str, _checked())], capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr[-2000:]     # 1: warnings only
    errors = [line for line in out.stdout.splitlines() if "ERROR:" in line]
    assert errors == [], "\n".join(errors)
    # it really checks: a known error in a copy is reported
    bad = CACHE / "bad.c"
    bad.write_text("// SPDX-License-Identifier: GPL-2.0\nint f(void)\n{\n\treturn (1);;\n}\n"
                   "int g(int a){ if (a) return 1; return 0; }\n")
    out = subprocess.run(["perl", str(script), "--no-tree", "--terse", "-f", str(bad)],
                         capture_output=True, text=True, timeout=60)
    assert "ERROR:" in out.stdout, out.stdout
