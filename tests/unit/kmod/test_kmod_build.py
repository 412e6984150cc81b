"""Host-side builds of pktgen-kmod: the configure probes' choices per
kernel and their cache, a probe that cannot decide, fetch-headers' input
checks. The zero-warning W=1 and sparse builds of every kernel, vermagic
included, are `make -C pktgen-kmod check-kernels` (test_kernel_matrix.py).

Headers are fetched (apt-get download + dpkg -x, no install) by
pktgen-kmod/scripts/fetch-headers into ~/.cache/rfc2544/headers/. Sources
are copied to a temp dir so the build does not write into the checkout.
"""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rfc2544.lab import module_build

ROOT = Path(__file__).resolve().parents[3]
KMOD = ROOT / "pktgen-kmod"
RELEASES = ["6.1.0-50-amd64", "6.12.107+deb12-amd64"]


def _fetch(release):
    try:
        out = subprocess.run([str(KMOD / "scripts" / "fetch-headers"), release],
                             capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        pytest.skip(f"fetching headers for {release} timed out (make deps)")
    if out.returncode != 0:
        if shutil.which("apt-get") is None or "no package" in out.stderr:
            pytest.skip(f"headers for {release} unavailable (make deps): {out.stderr.strip()}")
        pytest.fail(f"fetch-headers {release} failed: {out.stderr.strip()}")
    return Path(out.stdout.strip().splitlines()[-1])


def _module_sources():
    return module_build.source_files(KMOD)


def _copy_sources(dst):
    for rel in _module_sources():
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(KMOD / rel, dst / rel)


def test_fetch_headers_rejects_bad_release():
    out = subprocess.run([str(KMOD / "scripts" / "fetch-headers"), "6.1;rm -rf /"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "bad release name" in out.stderr


PROBE_NO_CHOICE = """// SPDX-License-Identifier: GPL-2.0
/* choices: one two */
#include <linux/types.h>
#ifdef PROBE_one
int probe_one(void) { return no_such_function_one(); }
#endif
#ifdef PROBE_two
int probe_two(void) { return no_such_function_two(); }
#endif
"""
PROBE_BROKEN_CONTROL = """// SPDX-License-Identifier: GPL-2.0
/* choices: one none */
#include <linux/no_such_header.h>
#ifdef PROBE_one
int probe_one(void);
#endif
"""


@pytest.mark.parametrize("probe,says", [
    (PROBE_NO_CHOICE, "probe zz_undecided cannot decide: none of its choices (one two) compiles"),
    (PROBE_BROKEN_CONTROL, "probe zz_undecided cannot decide: its control"),
], ids=["no-choice-compiles", "control-broken"])
def test_a_probe_that_cannot_decide_fails_the_build_naming_it(probe, says, tmp_path):
    """The configure step never guesses: a probe with no choice that compiles
    (and no 'none'), or whose shared part does not compile, stops the build."""
    if shutil.which("make") is None or shutil.which("gcc-12") is None:
        pytest.skip("make/gcc-12 not installed (make deps)")
    kdir = _fetch(RELEASES[0])
    _copy_sources(tmp_path)
    (tmp_path / "probes" / "zz_undecided.c").write_text(probe)
    out = subprocess.run(["make", f"KDIR={kdir}"], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert out.returncode != 0
    assert says in out.stderr, out.stderr[-2000:]
    assert not (tmp_path / "probes.h").exists() and not (tmp_path / "rfc2544_pktgen.ko").exists()


def test_probes_choose_per_kernel_and_are_cached(tmp_path):
    """6.1 has no <linux/unaligned.h> and marks delivery times with
    mono_delivery_time; 6.12 has both newer forms. A second configure with
    nothing changed leaves probes.h alone."""
    if shutil.which("make") is None or shutil.which("gcc-12") is None:
        pytest.skip("make/gcc-12 not installed (make deps)")
    _copy_sources(tmp_path)
    expect = {RELEASES[0]: ("UNALIGNED_HEADER_ASM", "SKB_TSTAMP_TYPE_MONO_DELIVERY_TIME"),
              RELEASES[1]: ("UNALIGNED_HEADER_LINUX", "SKB_TSTAMP_TYPE_TSTAMP_TYPE")}
    for release, names in expect.items():
        kdir = _fetch(release)
        out = subprocess.run(["bash", "scripts/configure", str(kdir), "probes.h"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        header = (tmp_path / "probes.h").read_text()
        for name in names:
            assert f"#define PG_HAVE_{name} 1" in header, header
        before = (tmp_path / "probes.h").stat().st_mtime_ns
        again = subprocess.run(["bash", "scripts/configure", str(kdir), "probes.h"], cwd=tmp_path,
                               capture_output=True, text=True, timeout=300)
        assert again.returncode == 0 and again.stdout == ""
        assert (tmp_path / "probes.h").stat().st_mtime_ns == before


def _configure_make(src, kdir, *make_vars):
    return subprocess.run(["make", f"KDIR={kdir}", *make_vars, "configure"], cwd=src,
                          capture_output=True, text=True, timeout=600)


def test_make_cc_reaches_the_probes(tmp_path):
    """`make CC=...` compiles the probes with that compiler, as it does the
    module (old configure cleared MAKEFLAGS: the probes used the headers'
    gcc whatever CC said), and a change of compiler probes again instead of
    reusing probes.h."""
    if shutil.which("make") is None or shutil.which("gcc-12") is None:
        pytest.skip("make/gcc-12 not installed (make deps)")
    kdir = _fetch(RELEASES[0])
    src = tmp_path / "src"
    _copy_sources(src)
    log = tmp_path / "cc.log"
    cc = tmp_path / "logging-cc"
    cc.write_text(f"#!/bin/sh\necho \"$*\" >> {log}\nexec gcc-12 \"$@\"\n")
    cc.chmod(0o755)
    plain = _configure_make(src, kdir)
    assert plain.returncode == 0, plain.stderr
    assert not log.exists()
    out = _configure_make(src, kdir, f"CC={cc}")
    assert out.returncode == 0, out.stderr
    calls = log.read_text() if log.exists() else ""
    # every probe's first choice, compiled by CC (kbuild also runs CC for its checks)
    for probe in sorted(p.stem for p in (src / "probes").glob("*.c")):
        assert f"{probe}--" in calls, (probe, calls[-2000:])
    assert f"configure: 6.1.0-50-amd64 (CC={cc}):" in out.stdout
    assert f"for 6.1.0-50-amd64 ({kdir}) with CC={cc}: do not edit" in (src / "probes.h").read_text()


def test_llvm_1_reaches_the_probes(tmp_path):
    """LLVM=1 on make's command line reaches configure and its kbuild runs
    (how CC does: the test above): probes.h records it and configure probes
    again when it changes. Debian's headers name their gcc in
    .kernelvariables, which then wins over LLVM=1's clang for probes and
    module alike; where clang is missing and a kernel's headers do not
    name a gcc, the missing-compiler message names it."""
    if shutil.which("make") is None or shutil.which("gcc-12") is None:
        pytest.skip("make/gcc-12 not installed (make deps)")
    kdir = _fetch(RELEASES[0])
    _copy_sources(tmp_path)
    plain = _configure_make(tmp_path, kdir)
    assert plain.returncode == 0, plain.stderr
    out = _configure_make(tmp_path, kdir, "LLVM=1")
    assert out.returncode == 0, out.stderr
    assert "configure: 6.1.0-50-amd64 (LLVM=1):" in out.stdout, out.stdout
    assert "with LLVM=1: do not edit" in (tmp_path / "probes.h").read_text()
    again = _configure_make(tmp_path, kdir)       # back to the headers' own: probed again
    assert "configure: 6.1.0-50-amd64: " in again.stdout, again.stdout


def _headers_naming(kdir, dst, compiler):
    """A copy of the headers' arch directory whose .kernelvariables names
    another compiler (the shared -common tree and kbuild stay where they are)."""
    shutil.copytree(kdir, dst, symlinks=True)
    for link in ("scripts", "tools"):
        if (dst / link).is_symlink():
            target = (kdir / link).resolve()
            (dst / link).unlink()
            (dst / link).symlink_to(target)
    kv = dst / ".kernelvariables"
    kv.write_text(re.sub(r"\bgcc-\d+\b", compiler, kv.read_text()))
    return dst


@pytest.mark.parametrize("case", ["headers", "command-line"])
def test_a_missing_compiler_is_named_with_how_to_get_it(case, tmp_path):
    """Bullseye's 5.10 headers on a host without gcc-10 said: 'its control
    does not compile against ...:' and nothing after the colon. Now the
    message names the compiler, where its name came from and how to get it."""
    if shutil.which("make") is None or shutil.which("gcc-12") is None:
        pytest.skip("make/gcc-12 not installed (make deps)")
    kdir = _fetch(RELEASES[0])
    src = tmp_path / "src"
    _copy_sources(src)
    if case == "headers":
        fake = _headers_naming(kdir, tmp_path / "headers", "gcc-99")
        out = _configure_make(src, fake)
        says = ["the compiler 'gcc-99' is not installed; the kernel's headers name it",
                "apt-get install gcc-99", "make check-kernels"]
    else:
        out = _configure_make(src, kdir, "CC=nonexistent-gcc")
        says = ["the compiler 'nonexistent-gcc' is not installed; you passed CC=nonexistent-gcc"]
    assert out.returncode != 0
    for s in says:
        assert s in out.stderr, out.stderr[-2000:]
    assert "its control" not in out.stderr and not (src / "probes.h").exists()
