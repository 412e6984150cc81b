"""The shipped ansible.cfg's strategy, mitogen_or_linear
(playbooks/strategy_plugins): with the project's dependencies installed it
is Mitogen's, so the plays keep one Python per host (a silent fall back to
linear would only show as slow setups); where Mitogen cannot be imported it
is Ansible's linear strategy and a play still runs. Plays run on localhost
with the local connection (no lab)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOKS = ROOT / "playbooks"
BIN = Path(sys.executable).parent

WHICH = """
from ansible.plugins.loader import strategy_loader
from ansible.plugins.strategy.linear import StrategyModule as Linear
cls = strategy_loader.get("mitogen_or_linear", class_only=True)
print(issubclass(cls, Linear), [c.__module__ for c in cls.__mro__ if c.__module__.startswith("ansible_mitogen")])
"""

PLAY = """- hosts: localhost
  gather_facts: false
  tasks:
    - name: Two tasks, so a persistent interpreter serves a second one
      ansible.builtin.command: "true"
      changed_when: false
    - name: Say what ran
      ansible.builtin.debug:
        msg: "{{ ansible_play_hosts | length }} host"
"""


def hide_mitogen(directory):
    """A directory to put first on PYTHONPATH: its ansible_mitogen package
    raises ImportError, shadowing the installed one."""
    fake = directory / "ansible_mitogen"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text("raise ImportError('Mitogen hidden by the test')\n")
    return directory


def env_with(tmp_path, block_mitogen):
    env = dict(os.environ, ANSIBLE_CONFIG=str(PLAYBOOKS / "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_STRATEGY", None)
    if block_mitogen:
        env["PYTHONPATH"] = str(hide_mitogen(tmp_path / "block"))
    return env


def strategy(tmp_path, block_mitogen):
    run = subprocess.run([sys.executable, "-c", WHICH], env=env_with(tmp_path, block_mitogen),
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.strip()


def play(tmp_path, block_mitogen):
    book = tmp_path / "play.yml"
    book.write_text(PLAY)
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(book),
                           "-e", f"ansible_python_interpreter={sys.executable}"],
                          env=env_with(tmp_path, block_mitogen), capture_output=True, text=True, timeout=300)


def test_the_shipped_strategy_is_mitogens_with_the_projects_dependencies(tmp_path):
    assert strategy(tmp_path, block_mitogen=False) == "True ['ansible_mitogen.strategy']"
    run = play(tmp_path, block_mitogen=False)
    assert run.returncode == 0 and "ok=2" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]


def test_without_mitogen_the_strategy_is_linear_and_plays_run(tmp_path):
    assert strategy(tmp_path, block_mitogen=True) == "True []"
    run = play(tmp_path, block_mitogen=True)
    assert run.returncode == 0 and "ok=2" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Traceback" not in run.stdout + run.stderr
