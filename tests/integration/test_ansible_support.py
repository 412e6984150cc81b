"""Helpers for the Ansible lab tests: run a playbook, read its recap, and
read back from a lab host every value the playbooks may touch (independently
of the roles' own modules). No tests here."""
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = ROOT / "playbooks"
BIN = Path(sys.executable).parent
RECAP_RE = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
KMOD_BUILD_OUTPUTS = (".o", ".ko", ".mod", ".mod.c", ".cmd", ".order", ".symvers")


@dataclass
class PlaybookRun:
    rc: int
    output: str
    seconds: float

    @property
    def recap(self):
        return {m.group(1): {"ok": int(m.group(2)), "changed": int(m.group(3)),
                             "unreachable": int(m.group(4)), "failed": int(m.group(5))}
                for m in RECAP_RE.finditer(self.output)}

    @property
    def changed(self):
        return sum(h["changed"] for h in self.recap.values())

    @property
    def fatal_messages(self):
        """The msg of every failed task (callback_result_format = yaml)."""
        return re.findall(r"^fatal: \[[^\]]+\]: FAILED! =>.*?^\s+msg: (.*?)(?=^\S|^\s*$)", self.output, re.M | re.S)


def playbook(inventory, name, *args, timeout=1800, nice=0):
    # ANSIBLE_TIMEOUT: the connection wait. The shipped 60 s ran out once
    # in CI against the niced background lab, starved while both cores
    # were busy ("Connection timed out" before the first task): how long a
    # starved guest takes to answer is not what these tests check.
    env = dict(os.environ, ANSIBLE_CONFIG=str(PLAYBOOKS / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_CALLBACK_RESULT_FORMAT="yaml", ANSIBLE_TIMEOUT="300")
    t0 = time.monotonic()
    run = subprocess.run((["nice", "-n", str(nice)] if nice else []) +
                         [str(BIN / "ansible-playbook"), "-i", str(inventory), str(PLAYBOOKS / name), *args],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return PlaybookRun(run.returncode, run.stdout + run.stderr, round(time.monotonic() - t0, 1))


def frozen_source(dest: Path) -> Path:
    """A copy of pktgen-kmod/ without build outputs, so edits made while the
    tests run cannot look like a source change between two playbook runs."""
    src = ROOT / "pktgen-kmod"
    for path in src.rglob("*"):
        rel = path.relative_to(src)
        if path.is_file() and not path.name.startswith(".") and not path.name.endswith(KMOD_BUILD_OUTPUTS):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_bytes(path.read_bytes())
    return dest


def _ethtool_lines(ports, netns):
    prefix = f"ip netns exec {shlex.quote(netns)} " if netns else ""
    return [f"echo '== {netns or ''} ethtool {opt} {p}'; {prefix}ethtool {opt} {shlex.quote(p)} 2>&1"
            for p in ports for opt in ("-a", "-c", "-g")]


def state_script(ports, netns_ports=None, netns=None):
    """Shell that prints every value setup.yml may touch, section by section."""
    lines = [
        "echo '== cpu_dma_latency'; python3 -c 'import struct; "
        "print(struct.unpack(\"=i\", open(\"/dev/cpu_dma_latency\", \"rb\").read(4))[0])'",
        "echo '== governors'; cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor 2>/dev/null",
        "echo '== irqbalance'; systemctl is-active irqbalance 2>&1",
        "echo '== irq affinity'; grep -H . /proc/irq/*/smp_affinity_list",
        *_ethtool_lines(ports, None),
        *(_ethtool_lines(netns_ports, netns) if netns else []),
        "echo '== units'; ls /etc/systemd/system | grep '^rfc2544-' | grep -v seed; "
        "systemctl list-units --all --no-legend --plain 'rfc2544-cpu*' 2>&1",
        "echo '== modules'; grep -E '^(pktgen|rfc2544_pktgen) ' /proc/modules | cut -d' ' -f1",
        "echo '== files'; ls /var/lib/rfc2544 /etc/modules-load.d /etc/modprobe.d 2>&1; ls -d /usr/src/rfc2544* 2>&1; "
        "find /lib/modules -name 'rfc2544*'",
    ]
    return "\n".join(lines)


def host_state(ssh, script):
    status, out, err = ssh.run(script, timeout=180, check=False)
    sections, name = {}, None
    for line in out.splitlines():
        if line.startswith("== "):
            name = line[3:]
            sections[name] = []
        elif name:
            sections[name].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


def wheel_venv(tmp):
    """A fresh virtualenv with the wheel and its dependencies (pip's cache
    makes this quick): tests/unit/wheel_build.py, loaded by path (a second
    test directory on sys.path would shadow this one's modules)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("rfc2544_tests_wheel_build", ROOT / "tests" / "unit" / "wheel_build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    wheel, _ = build.build_wheel(tmp)
    return build.install_in_new_venv(tmp, wheel, with_dependencies=True)
