"""Build pieces of pktgen-kmod in user space, for host-only unit tests: a
minimal shim of the kernel headers a source uses, a test harness, gcc."""
import shutil
import subprocess
from pathlib import Path

import pytest

KMOD = Path(__file__).resolve().parents[2] / "pktgen-kmod"


# the sanitizer build: any address error or undefined behaviour aborts the run
SANITIZE = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g")


def build(d: Path, shim: dict, harness: str, sources, name="harness", cflags=()):
    """Compile harness + KMOD/sources against `shim` ({header path: text})
    into d/name; skips the test without a C compiler. `cflags`: more flags
    (e.g. SANITIZE)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (make deps)")
    for header, text in shim.items():
        guard = "SHIM_" + header.replace("/", "_").replace(".", "_").upper()
        (d / "shim" / header).parent.mkdir(parents=True, exist_ok=True)
        (d / "shim" / header).write_text(f"#ifndef {guard}\n#define {guard}\n{text}\n#endif\n")
    (d / f"{name}.c").write_text(harness)
    out = d / name
    res = subprocess.run([cc, "-O1", "-Wall", "-Werror", *cflags, "-I", str(d / "shim"), "-I", str(KMOD),
                          "-o", str(out), str(d / f"{name}.c"), *(str(KMOD / s) for s in sources)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out
