"""The shipped Ansible playbooks: where they are and how to run them
(`rfc2544 setup`, `rfc2544 run --setup`).

The playbooks, roles, module source and example inventory travel inside the
package (rfc2544/data/, symlinks to the repository's folders in a checkout,
copies in a wheel), so this works from any working directory and from a
wheel or pipx install as from a checkout.
"""
import os
import shlex
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

from rfc2544.errors import InfraError

ANSIBLE_HINT = "install rfc2544 with its dependencies (pip install rfc2544 pulls ansible-core)"


def data_dir() -> Path:
    """rfc2544/data: playbooks/, pktgen-kmod/, inventory/."""
    root = resources.files("rfc2544") / "data"
    # Ansible needs real files: an installed package is a directory on disk.
    if not isinstance(root, Path) or not (root / "playbooks" / "setup.yml").is_file():
        raise InfraError(f"this installation of rfc2544 lacks its playbooks ({root}/playbooks/setup.yml): "
                         "reinstall it")
    return root


def playbooks_dir() -> Path:
    return data_dir() / "playbooks"


def find_tool(name):
    """Path of the Ansible script `name`: the one beside this interpreter
    first (the venv or pipx bin/ that installed ansible-core with us, even
    when that bin/ is not on PATH), else the first on PATH; None if neither.
    sys.executable is not resolved: a venv's python is a symlink to the
    system one, whose directory holds a different (or no) ansible."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def runs_through_mitogen(exe):
    """True if the Python that runs the ansible script `exe` (its #! line)
    imports Mitogen's strategy, so the shipped ansible.cfg's
    mitogen_or_linear keeps one Python per host; False if it does not
    (Ansible's linear strategy: slower plays); None if that cannot be told."""
    try:
        with open(exe, "rb") as f:
            first, second = (f.readline(4096).decode(errors="replace") for _ in range(2))
    except OSError:
        return None
    if not first.startswith("#!") or not first[2:].strip():
        return None
    interpreter = first[2:]
    # pip's form where the interpreter's path is too long for a #! line:
    # /bin/sh, then a line  '''exec' /path/to/python "$0" "$@"
    exec_line = "'''exec' "
    if second.startswith(exec_line):
        interpreter = second[len(exec_line):].split(' "$0"', 1)[0]
    try:
        run = subprocess.run([*shlex.split(interpreter), "-c", "import ansible_mitogen.strategy"],
                             capture_output=True, timeout=120)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return run.returncode == 0


def run_playbook(name, inventory_path, *args, what=None):
    """ansible-playbook PLAYBOOKS/name -i inventory_path *args, with the
    shipped ansible.cfg; InfraError unless it exits 0."""
    what = what or name
    exe = find_tool("ansible-playbook")
    if exe is None:
        raise InfraError(f"{what}: ansible-playbook not found beside {sys.executable} nor on PATH; {ANSIBLE_HINT}")
    playbooks = playbooks_dir()
    env = dict(os.environ, ANSIBLE_CONFIG=str(playbooks / "ansible.cfg"))
    print(f"rfc2544: {exe} {name} (ANSIBLE_CONFIG={env['ANSIBLE_CONFIG']})", file=sys.stderr, flush=True)
    try:
        status = subprocess.call([exe, str(playbooks / name), "-i", str(inventory_path), *args], env=env)
    except OSError as exc:
        raise InfraError(f"{what}: cannot run {exe}: {exc.strerror}")
    if status != 0:
        raise InfraError(f"{what}: ansible-playbook {name} failed with exit status {status}")
