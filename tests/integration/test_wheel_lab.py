"""The product from its wheel alone, as a pipx user has it: the wheel
installed with its dependencies into a fresh virtualenv outside the
checkout, started by full path from /tmp with PATH holding only system
directories, prepares the lab's tester with the shipped playbooks
(`run --setup`) and runs the quick profile with our module. One test: it
builds the module in the VM and is slow. The module is removed again
(teardown.yml with state=absent) so later tests find the lab as it was."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.lab, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "build", "dist", "results", "*.egg-info", "__pycache__",
                                    ".pytest_cache", "*.o", "*.ko", "*.mod", "*.mod.c", ".*.cmd", "*.order",
                                    "*.symvers", "tests")


def wheel_venv(tmp):
    src = tmp / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=NOT_SOURCE)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp / "dist"), str(src)], check=True, capture_output=True, text=True)
    wheel, = (tmp / "dist").glob("rfc2544-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # The dependencies as a user gets them (pip's cache makes this quick).
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    str(wheel)], check=True, capture_output=True, text=True, timeout=900)
    return venv


def test_run_setup_quick_from_the_wheel(lab, tmp_path):
    venv = wheel_venv(tmp_path)
    cwd = Path("/tmp")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV"))}
    env["PATH"] = "/usr/bin:/bin"
    out = tmp_path / "quick"
    cli = str(venv / "bin" / "rfc2544")
    inv = str(lab.inventory_path)
    try:
        run = subprocess.run([cli, "run", "--setup", "-i", inv, "-p", "quick", "--out", str(out),
                              "--format", "csv"], cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
        playbooks = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages" / \
            "rfc2544" / "data" / "playbooks"
        assert f"rfc2544: {venv / 'bin' / 'ansible-playbook'} setup.yml (ANSIBLE_CONFIG={playbooks / 'ansible.cfg'})" \
            in run.stderr
        data = json.loads((out / "results.json").read_text())
        assert data["complete"]
        assert data["conditions"]["generator"] == "rfc2544_pktgen"
        assert {row["frame_size"] for row in data["throughput"]} == {64, 1518}
        assert all(row["ndr_fps"] and row["ndr_fps"] > 1000 for row in data["throughput"])
    finally:
        down = subprocess.run([cli, "setup", "--teardown", "-i", inv, "-e", "rfc2544_kmod_teardown_state=absent"],
                              cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    assert down.returncode == 0, down.stdout[-3000:] + down.stderr[-2000:]
