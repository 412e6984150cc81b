"""Finding Ansible and the shipped playbooks (rfc2544.engine.playbooks): the
ansible-playbook beside the interpreter wins over PATH, so a venv or pipx
install works without its bin/ on PATH; the playbooks come from the package."""
import os
import subprocess
import sys
from pathlib import Path

from rfc2544.engine import playbooks as host_setup

VENV_BIN = Path(sys.executable).parent

INVENTORY = """
all:
  vars:
    rfc2544_streams: [{tx: "t:tx0", rx: "t:rx0"}]
  children:
    testers:
      hosts:
        t:
          ansible_host: 127.0.0.1
          ansible_port: 1
          rfc2544_ports:
            - {name: tx0, role: tx, mac: "02:00:00:00:00:01", ipv4: 198.18.0.1/24, peer_mac: "02:00:00:00:00:02"}
            - {name: rx0, role: rx, mac: "02:00:00:00:00:03", ipv4: 198.19.0.1/24}
"""


def executable(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_find_tool_prefers_the_interpreters_directory_over_path(tmp_path, monkeypatch):
    # A venv's python is a symlink to the system interpreter: the lookup must
    # use the symlink's directory, not the resolved one.
    venv_python = tmp_path / "venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(sys.executable)
    beside = executable(tmp_path / "venv" / "bin" / "ansible-playbook")
    on_path = executable(tmp_path / "elsewhere" / "ansible-playbook")
    monkeypatch.setattr(host_setup.sys, "executable", str(venv_python))
    monkeypatch.setenv("PATH", str(on_path.parent))
    assert host_setup.find_tool("ansible-playbook") == str(beside)
    beside.unlink()
    assert host_setup.find_tool("ansible-playbook") == str(on_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert host_setup.find_tool("ansible-playbook") is None


def test_shipped_playbooks_module_source_and_inventory_are_package_data():
    data = host_setup.data_dir()
    assert (data / "playbooks" / "setup.yml").is_file()
    assert (data / "playbooks" / "ansible.cfg").is_file()
    assert (data / "playbooks" / "roles" / "pktgen_kmod" / "tasks" / "main.yml").is_file()
    assert (data / "pktgen-kmod" / "main.c").is_file()
    assert (data / "inventory" / "example-two-box.yml").is_file()


def test_run_setup_from_the_venv_with_a_system_path_uses_the_venvs_ansible(tmp_path):
    # The CLI as a pipx user starts it: by its full path, with PATH holding
    # only system directories (no ansible there), from an unrelated directory.
    # The host is unreachable, so ansible-playbook fails fast after starting.
    inv = tmp_path / "inventory.yml"
    inv.write_text(INVENTORY)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV"))}
    env["PATH"] = "/usr/bin:/bin"
    run = subprocess.run([str(VENV_BIN / "rfc2544"), "run", "--setup", "-i", str(inv), "-p", "quick",
                          "--out", str(tmp_path / "out")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    playbooks = host_setup.playbooks_dir()
    assert f"rfc2544: {VENV_BIN / 'ansible-playbook'} setup.yml (ANSIBLE_CONFIG={playbooks / 'ansible.cfg'})" \
        in run.stderr, run.stderr
    assert "UNREACHABLE" in run.stdout, run.stdout[-2000:]
    assert run.returncode == 3
    assert run.stderr.strip().splitlines()[-1] == \
        "rfc2544: --setup: ansible-playbook setup.yml failed with exit status 4"
    assert "Traceback" not in run.stdout + run.stderr


def test_doctor_prints_the_ansible_playbook_it_would_use(tmp_path, monkeypatch, capsys):
    import pytest
    import rfc2544.engine.doctor as doc
    from rfc2544 import cli
    inv = tmp_path / "inventory.yml"
    inv.write_text(INVENTORY)
    monkeypatch.setattr(doc, "doctor", lambda inventory, networks=1, ipv6=False, sources=1, bidirectional=False, generators=None, every_cpu=False: [("ssh t", True, "ok")])
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    with pytest.raises(SystemExit) as exc:
        cli.main(["doctor", "-i", str(inv)])
    assert exc.value.code == 0
    assert f"ansible-playbook (setup, run --setup): {VENV_BIN / 'ansible-playbook'}, through Mitogen\n" \
        in capsys.readouterr().out


def test_an_ansible_whose_python_lacks_mitogen_is_named(tmp_path):
    """An ansible-playbook run by a Python that cannot import Mitogen (a
    wrapper hides it) is told apart from ours; a script without a #! line
    cannot be told. (Fake scripts: nothing runs Ansible.)"""
    from rfc2544.engine import playbooks
    from test_ansible_strategy import hide_mitogen
    python = tmp_path / "python-without-mitogen"
    python.write_text(f"#!/bin/sh\nPYTHONPATH={hide_mitogen(tmp_path / 'block')} exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    long_form = f"#!/bin/sh\n'''exec' {sys.executable} \"$0\" \"$@\"\n' '''"    # pip's, for long paths
    for name, head, expected in (("ours", f"#!{sys.executable}", True), ("theirs", f"#!{python}", False),
                                 ("ours-long-path", long_form, True), ("no-shebang", "import sys", None)):
        script = tmp_path / name
        script.write_text(head + "\n")
        assert playbooks.runs_through_mitogen(str(script)) is expected, name


def test_init_writes_the_example_inventory_once(tmp_path, capsys):
    import pytest
    from rfc2544 import cli
    from rfc2544.config import inventory
    target = tmp_path / "lab.yml"
    for expected in (0, 2):
        with pytest.raises(SystemExit) as exc:
            cli.main(["init", str(target)])
        assert exc.value.code == expected
    assert capsys.readouterr().err.strip() == f"rfc2544: {target}: exists; not overwritten (pass --force, choose another path or remove it)"
    loaded = inventory.load(target)
    assert set(loaded.hosts) == {"tester", "dut"} and loaded.streams
