"""The wheel carries the product: built from a copy of the checkout, installed
into a fresh virtualenv outside it, and run from an unrelated directory, it
has the module source, the playbooks and roles, the profiles and the example
inventory as real files, and its CLI works.

The fresh virtualenv gets the wheel alone (--no-deps); the dependencies are
borrowed from the test's own environment through a .pth line (no download),
and that line does not process the editable install's own .pth, so
`rfc2544` can only come from the wheel."""
import subprocess
import sysconfig
from pathlib import Path

import pytest

from wheel_build import build_wheel, install_in_new_venv

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data" / "results"


def git_files(*folders):
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", *folders],
                         cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout: nothing to compare the wheel with")
    return set(out.stdout.split())


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    wheel, build_log = build_wheel(tmp, verbose=True)
    venv = install_in_new_venv(tmp, wheel, with_dependencies=False)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    package = Path(subprocess.run([str(py), "-c", "import rfc2544; print(rfc2544.__file__)"], cwd=tmp,
                                  check=True, capture_output=True, text=True).stdout.strip()).parent
    return {"venv": venv, "package": package, "cwd": tmp, "wheel": wheel, "build_log": build_log}


def test_the_build_prints_no_setuptools_warning(installed):
    # -v shows setuptools' own output, where "Package would be ignored" and
    # other packaging mistakes appear as warnings.
    log = installed["build_log"]
    assert "running bdist_wheel" in log, log[-2000:]
    warnings = [line for line in log.splitlines() if ("warning" in line.lower() or "would be ignored" in line)
                and "byte-compiling is disabled" not in line]      # pip compiles on install
    assert warnings == [], warnings


def rfc2544(installed, *args):
    return subprocess.run([str(installed["venv"] / "bin" / "rfc2544"), *args], cwd=installed["cwd"],
                          capture_output=True, text=True, timeout=300)


def test_the_cli_runs_from_the_wheel(installed):
    assert installed["package"].is_relative_to(installed["venv"]), installed["package"]
    run = rfc2544(installed, "--version")
    assert run.returncode == 0 and run.stdout.strip() == "rfc2544, version 0.1.0", run.stdout + run.stderr
    run = rfc2544(installed, "setup", "--help")
    assert run.returncode == 0 and "Prepare the hosts" in run.stdout


def test_the_wheel_ships_module_source_playbooks_and_inventory(installed):
    data = installed["package"] / "data"
    # (pip compiles the roles' modules to __pycache__ on install)
    shipped = {str(p.relative_to(data)) for p in data.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert not any(p.is_symlink() for p in data.rglob("*"))
    # Every file of the three folders but the kernel tree's .gitignore.
    expected = git_files("playbooks", "pktgen-kmod", "inventory") - {"pktgen-kmod/.gitignore"}
    assert shipped == expected, (sorted(expected - shipped), sorted(shipped - expected))
    for must in ("pktgen-kmod/main.c", "pktgen-kmod/Kbuild", "pktgen-kmod/dkms.conf", "playbooks/setup.yml",
                 "playbooks/teardown.yml", "playbooks/ansible.cfg", "inventory/example-two-box.yml",
                 "inventory/services-example.yml",
                 "playbooks/roles/pktgen_kmod/library/pktgen_kmod_info.py",
                 "playbooks/strategy_plugins/mitogen_or_linear.py"):
        assert must in shipped
    profiles = {p.name for p in (installed["package"] / "profiles").glob("*.yml")}
    assert profiles == {"quick.yml", "rfc2544.yml", "y1564.yml"}


def test_report_from_the_wheel(installed):
    out = installed["cwd"] / "report"
    run = rfc2544(installed, "report", str(DATA / "complete.json"), "--format", "html", "--out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    html = (out / "complete-report.html").read_text()
    assert "<svg" in html and "Throughput" in html
