"""pktgen-kmod/scripts/check-kernels (`make -C pktgen-kmod check-kernels`).

The matrix itself needs root, debootstrap and the Debian archive: it runs
in tests/integration/test_kernel_matrix.py. These tests check the list and
the script's input validation.
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
KMOD = ROOT / "pktgen-kmod"
SCRIPT = KMOD / "scripts" / "check-kernels"


def _entries():
    rows = []
    for line in (KMOD / "kernels.list").read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if fields:
            rows.append(fields)
    return rows


def _run(*args, **env):
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})


def test_list_names_each_kernel_once_in_three_safe_columns():
    rows = _entries()
    assert {r[0] for r in rows} >= {"bullseye", "bookworm", "bookworm-bpo", "trixie", "sid"}
    assert len({r[0] for r in rows}) == len(rows)
    for r in rows:
        assert len(r) == 3 and all(re.fullmatch(r"[A-Za-z0-9._+-]+", f) for f in r), r


@pytest.mark.parametrize("line", ["bad;name bookworm linux-headers-amd64",
                                  "x bookworm $(reboot)",
                                  "two-columns bookworm"])
def test_a_bad_list_line_is_refused_before_anything_runs(tmp_path, line):
    lst = tmp_path / "kernels.list"
    lst.write_text(f"# comment\n{line}\n")
    out = _run("--list", str(lst))
    assert out.returncode == 2
    assert f"{lst}:2:" in out.stderr


def test_an_unknown_kernel_name_is_refused():
    out = _run(KERNELS="sid nosuchkernel")
    assert out.returncode == 2
    assert "nosuchkernel" in out.stderr
