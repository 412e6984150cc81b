"""`make -C pktgen-kmod check-kernels` in CI: the module built against every
kernel of pktgen-kmod/kernels.list (Debian 11's 5.10 to sid's newest), each
in a Debian root of its own suite with the gcc its headers were built with:
W=1 and sparse with zero warnings, vermagic the headers' release.

conftest.py starts the matrix (session_prep.py, step `kernels`, niced) when
collection ends, so it overlaps the unit tests and the labs' boots; run
alone, this test runs it itself. The roots are cached under
~/.cache/rfc2544/kroots (a cold run builds them: about 5 minutes)."""
import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KMOD = ROOT / "pktgen-kmod"


def _listed():
    names = []
    for line in (KMOD / "kernels.list").read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if fields:
            names.append(fields[0])
    return names


def _range():
    text = (KMOD / "kernel-range.yml").read_text()
    return [tuple(map(int, v.split("."))) for v in re.findall(r'^(?:min|max): "([\d.]+)"', text, re.M)]


def test_every_listed_kernel_builds_without_a_warning(early_result, tmp_path):
    ran = early_result("kernels")
    if ran is None:
        results, log = tmp_path / "kernels.json", tmp_path / "kernels.log"
        run = subprocess.run([str(KMOD / "scripts" / "check-kernels"), "--json", str(results)],
                             capture_output=True, text=True, timeout=3600)
        log.write_text(run.stdout + run.stderr)
        code = run.returncode
    else:
        code, results, log, started, ended = ran
        print(f"check-kernels ran {ended - started:.0f} s beside the rest of the session")
    output = Path(log).read_text()
    print(output[-3000:])
    assert Path(results).is_file(), f"check-kernels (exit {code}) wrote no results:\n{output[-3000:]}"
    res = json.loads(Path(results).read_text())
    assert [k["name"] for k in res["kernels"]] == _listed()
    lo, hi = _range()
    failed = [f"{k['name']} ({k.get('release')}): {k['error']}\n" + "\n".join(k["warning_lines"][:20])
              for k in res["kernels"] if not k["ok"]]
    assert not failed, "\n".join(failed)
    for k in res["kernels"]:
        assert k["w1_warnings"] == 0 and k["sparse_warnings"] == 0 and k["vermagic_ok"], k
        assert k["vermagic"].split()[0] == k["release"], k
        assert lo <= tuple(map(int, re.match(r"(\d+)\.(\d+)", k["release"]).groups())) <= hi, k["release"]
    # the range's ends are built: the oldest and the newest listed kernels
    series = sorted(tuple(map(int, re.match(r"(\d+)\.(\d+)", k["release"]).groups())) for k in res["kernels"])
    assert series[0] == lo and series[-1] == hi, (series, lo, hi)
    assert res["ok"] and code == 0
