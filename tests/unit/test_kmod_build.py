"""Host-side builds of pktgen-kmod: the configure probes' choices per
kernel and their cache, a probe that cannot decide, fetch-headers' input
checks. The zero-warning W=1 and sparse builds of every kernel, vermagic
included, are `make -C pktgen-kmod check-kernels` (test_kernel_matrix.py).

Headers are fetched (apt-get download + dpkg -x, no install) by
pktgen-kmod/scripts/fetch-headers into ~/.cache/rfc2544/headers/. Sources
are copied to a temp dir so the build does not write into the checkout.
"""
import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KMOD = ROOT / "pktgen-kmod"
RELEASES = ["6.1.0-50-amd64", "6.12.107+deb12-amd64"]


def _fetch(release):
    try:
        out = subprocess.run([str(KMOD / "scripts" / "fetch-headers"), release],
                             capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        pytest.skip(f"fetching headers for {release} timed out")
    if out.returncode != 0:
        if shutil.which("apt-get") is None or "no package" in out.stderr:
            pytest.skip(f"headers for {release} unavailable: {out.stderr.strip()}")
        pytest.fail(f"fetch-headers {release} failed: {out.stderr.strip()}")
    return Path(out.stdout.strip().splitlines()[-1])


def _module_sources():
    """test_kmod_helpers.module_sources, loaded by path (the integration
    tests' directory is not on this one's import path)."""
    path = ROOT / "tests" / "integration" / "test_kmod_helpers.py"
    spec = importlib.util.spec_from_file_location("rfc2544_tests_kmod_helpers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.module_sources(KMOD)


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
