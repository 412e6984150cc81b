"""playbooks/ passes ansible-lint's production profile, and every role
variable is prefixed with its role's name and documented in
meta/argument_specs.yml (no lab needed)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOKS = ROOT / "playbooks"
ROLES = sorted(p for p in (PLAYBOOKS / "roles").iterdir() if p.is_dir())
BIN = Path(sys.executable).parent


def tool(name):
    exe = BIN / name
    if not exe.exists():
        pytest.fail(f"{name} is not installed next to {sys.executable}: run `make deps` (setup.cfg test extras)")
    return str(exe)


def test_ansible_lint_production_profile_is_clean(tmp_path):
    env = dict(os.environ, HOME=os.environ.get("HOME", str(tmp_path)), NO_COLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    env.pop("ANSIBLE_CONFIG", None)
    run = subprocess.run([tool("ansible-lint"), "--profile", "production", "--offline", "--nocolor", "playbooks/"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    report = (run.stdout + run.stderr)[-4000:]
    assert run.returncode == 0, report
    assert "Profile 'production' was required, and it passed" in report, report
    assert "Ignored exception" not in report, report


@pytest.mark.parametrize("playbook", ["setup.yml", "teardown.yml", "facts.yml", "rfc2544.yml"])
def test_playbook_syntax(playbook, tmp_path):
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {
        "testers": {"hosts": {"tester": {"ansible_host": "127.0.0.1", "rfc2544_ports": [
            {"name": "tx0", "role": "tx", "mac": "02:00:00:00:00:01"}]}}},
        "duts": {"hosts": {"dut": {"ansible_host": "127.0.0.1", "rfc2544_netns": "dut"}}}}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(PLAYBOOKS / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
    run = subprocess.run([tool("ansible-playbook"), "--syntax-check", "-i", str(inventory), str(PLAYBOOKS / playbook)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def _vars_of(role, rel):
    path = role / rel
    return yaml.safe_load(path.read_text()) or {} if path.exists() else {}


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.name)
def test_role_variables_are_prefixed_and_documented(role):
    defaults = _vars_of(role, "defaults/main.yml")
    options = _vars_of(role, "meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert defaults, f"{role.name} has no defaults"
    for name in list(defaults) + list(options):
        assert name.startswith(role.name + "_"), f"{role.name}: variable {name} lacks the role prefix"
    undocumented = set(defaults) - set(options)
    assert not undocumented, f"{role.name}: not in meta/argument_specs.yml: {sorted(undocumented)}"
    for name, spec in options.items():
        assert spec.get("description"), f"{role.name}: {name} has no description"
        assert name in defaults, f"{role.name}: {name} documented but has no default in defaults/main.yml"
    for vars_file in (role / "vars").glob("*.yml"):
        for name in _vars_of(role, f"vars/{vars_file.name}"):
            assert name.startswith("__" + role.name + "_"), f"{vars_file}: internal variable {name} lacks __{role.name}_"


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r.name)
def test_every_concern_is_tagged(role):
    main = yaml.safe_load((role / "tasks/main.yml").read_text())

    def imports(tasks):
        for task in tasks:
            if "block" in task:
                yield from imports(task["block"])
            elif "ansible.builtin.import_tasks" in task:
                yield task

    found = list(imports(main))
    assert found, f"{role.name}: tasks/main.yml imports no task files"
    for task in found:
        tags = task.get("tags") or []
        assert role.name in tags, f"{role.name}: '{task['name']}' is not tagged {role.name}"
        assert any(t.startswith(role.name + "_") for t in tags), f"{role.name}: '{task['name']}' has no concern tag"
        assert (role / "tasks" / task["ansible.builtin.import_tasks"]).exists()
