"""The tested kernel range (pktgen-kmod/kernel-range.yml) is what dkms.conf
and the pktgen_kmod role admit, and the role's answer to a kernel outside it:
one line naming release, range and fix; pktgen_kmod_allow_untested builds
anyway; pktgen_kmod_intree_fallback loads the in-tree pktgen instead.

The role runs against localhost aliases (no lab), one host per case, in
check mode (it reads this machine's /proc but changes nothing), with kernel
releases that have no headers here, a module name no host has and its state
directory under tmp_path."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fake_ko import fake_ko

ROOT = Path(__file__).resolve().parents[3]
KMOD = ROOT / "pktgen-kmod"
BIN = Path(sys.executable).parent
NAME = "rfc2544_unit_test"          # no host has a module of this name

# The issue's sample releases: distributions' naming schemes and both edges.
SAMPLES = ["5.9.0", "5.10.0-35-amd64", "5.15.0-91-generic", "5.14.0-427.el9.x86_64", "6.1.0-50-amd64",
           "6.12.57+deb13-amd64", "6.17.0-5-generic", "7.2.13-amd64", "7.3.0", "4.19.0", "8.0.0"]


def kernel_range():
    """(min, max) as written in kernel-range.yml: 'major.minor' strings."""
    data = yaml.safe_load((KMOD / "kernel-range.yml").read_text())
    for key in ("min", "max"):
        assert isinstance(data[key], str) and re.fullmatch(r"[0-9]+\.[0-9]+", data[key]), (key, data[key])
    return data["min"], data["max"]


def series(text):
    return tuple(int(n) for n in re.match(r"([0-9]+)\.([0-9]+)", text).groups())


def in_range(release):
    low, high = kernel_range()
    return series(low) <= series(release) <= series(high)


def dkms_admits(release):
    conf = (KMOD / "dkms.conf").read_text()
    m = re.search(r'^BUILD_EXCLUSIVE_KERNEL="([^"]+)"', conf, re.M)
    assert m, conf
    # DKMS matches with bash's =~ (POSIX ERE): keep to what ERE and re share.
    assert "\\d" not in m.group(1) and m.group(1).startswith("^"), m.group(1)
    return re.search(m.group(1), release) is not None


def test_dkms_admits_the_samples_in_the_range_only():
    verdicts = {release: dkms_admits(release) for release in SAMPLES}
    assert verdicts == {release: in_range(release) for release in SAMPLES}
    assert any(verdicts.values()) and not all(verdicts.values())


def test_dkms_admits_exactly_the_range():
    low, high = kernel_range()
    assert series(low) <= series(high)
    for major in range(3, 10):
        for minor in range(100):
            release = f"{major}.{minor}.0-1-amd64"
            assert dkms_admits(release) == in_range(release), release


# modinfo, which the role's read-only module runs, need not be installed here.
FAKE_MODINFO = """#!/bin/sh
echo "modinfo: ERROR: Module $3 not found." >&2
exit 1
"""

PLAYBOOK = """- name: The pktgen_kmod role in check mode
  hosts: all
  gather_facts: false
  environment:
    PATH: "{fake}:{path}"
  roles:
    - pktgen_kmod
"""

# Hosts besides one per sample release: (release, extra host variables).
SWITCHES = {
    "untested": ("8.0.0", {"pktgen_kmod_allow_untested": True, "pktgen_kmod_dkms": True}),
    "fallback": ("7.3.0", {"pktgen_kmod_intree_fallback": True}),
    "both": ("5.9.0", {"pktgen_kmod_allow_untested": True, "pktgen_kmod_intree_fallback": True}),
    "in_range_fallback": ("6.1.0-50-amd64", {"pktgen_kmod_intree_fallback": True}),
}
# pktgen_kmod_prebuilt (a stand-in .ko, fake_ko.py): host -> (release, the file's name and vermagic release)
PREBUILT = {
    "prebuilt": ("6.1.0-50-amd64", NAME, "6.1.0-50-amd64"),
    "prebuilt_other_kernel": ("6.1.0-50-amd64", NAME, "6.12.57+deb13-amd64"),
    "prebuilt_other_module": ("6.1.0-50-amd64", "pktgen", "6.1.0-50-amd64"),
}
TASK_RE = re.compile(r"^TASK \[pktgen_kmod : (.*?)\] \*+$", re.M)
RESULT_RE = re.compile(r"^(ok|changed|skipping|fatal): \[([^\]\s]+)(?: -> [^\]]+)?\](?:: FAILED!)? => (\{.*\})$",
                       re.M)
DEBUG_RE = re.compile(r"^ok: \[([^\]]+)\] => (\{\n.*?\n\})$", re.M | re.S)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One `ansible-playbook --check -v` run; per host: its fatal messages,
    its debug messages and the tasks that would have acted (changed, or a
    command that check mode skipped)."""
    tmp = tmp_path_factory.mktemp("kernel_range")
    (tmp / "bin").mkdir()
    (tmp / "bin" / "modinfo").write_text(FAKE_MODINFO)
    (tmp / "bin" / "modinfo").chmod(0o755)
    hosts = {f"sample{i}": {"pktgen_kmod_kernel_release": r} for i, r in enumerate(SAMPLES)}
    hosts.update({h: {"pktgen_kmod_kernel_release": r, **extra} for h, (r, extra) in SWITCHES.items()})
    for h, (release, name, built_for) in PREBUILT.items():
        ko = fake_ko(tmp / f"{h}.ko", name=name, vermagic=f"{built_for} SMP mod_unload ")
        hosts[h] = {"pktgen_kmod_kernel_release": release, "pktgen_kmod_prebuilt": str(ko)}
    inventory = {"all": {"hosts": hosts, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "pktgen_kmod_name": NAME, "pktgen_kmod_state_dir": str(tmp / "state"), "pktgen_kmod_os_family": "Debian",
        "pktgen_kmod_check_signing": False, "pktgen_kmod_install_headers": False,
        "pktgen_kmod_install_build_tools": False}}}
    (tmp / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp / "play.yml").write_text(PLAYBOOK.format(fake=tmp / "bin", path=os.environ["PATH"]))
    env = dict(os.environ, ANSIBLE_ROLES_PATH=str(ROOT / "playbooks/roles"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_FORKS="20", ANSIBLE_LOCAL_TEMP=str(tmp / "tmp"),
               ANSIBLE_HOME=str(tmp / "home"))
    env.pop("ANSIBLE_CONFIG", None)
    p = subprocess.run([str(BIN / "ansible-playbook"), "--check", "-v", "-i", str(tmp / "inventory.yml"),
                        str(tmp / "play.yml")], cwd=tmp, env=env, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert "Traceback" not in out and "ERROR!" not in out, out[-3000:]
    result = {h: {"fatal": [], "debug": [], "acted": []} for h in hosts}
    sections = TASK_RE.split(out)
    for task, body in zip(sections[1::2], sections[2::2]):
        for status, host, data in RESULT_RE.findall(body):
            data = json.loads(data)
            if status == "fatal":
                result[host]["fatal"].append(data["msg"])
            elif status == "changed" or "check mode" in str(data.get("msg", "")):
                result[host]["acted"].append(task)
        for host, data in DEBUG_RE.findall(body):
            result[host]["debug"].append(json.loads(data)["msg"])
    result["output"] = out
    return result


def range_text():
    return "{} to {}".format(*kernel_range())


def range_failure(release, host):
    return (f"pktgen_kmod: kernel {release} on {host} is outside the range {NAME} is tested on ({range_text()}). "
            f"Fix: boot a kernel in that range, or set pktgen_kmod_allow_untested=true to try building anyway, "
            f"or pktgen_kmod_intree_fallback=true to use the in-tree pktgen without the pgrx receiver "
            f"(interface counters, no latency).")


def warning(release, host):
    return f"pktgen_kmod: WARNING: kernel {release} on {host} is outside the range {NAME} is tested on ({range_text()}); "


def intree_present():
    """This machine's kernel has the in-tree pktgen loaded or built in (then
    the fallback has nothing to load)."""
    modules = Path("/proc/modules").read_text() if Path("/proc/modules").exists() else ""
    return re.search(r"^pktgen ", modules, re.M) is not None or Path("/proc/net/pktgen").exists()


def test_the_role_admits_exactly_what_dkms_admits(run):
    for i, release in enumerate(SAMPLES):
        host = run[f"sample{i}"]
        refused = range_failure(release, f"sample{i}") in host["fatal"]
        assert refused == (not dkms_admits(release)) == (not in_range(release)), (release, host["fatal"])


def test_a_kernel_outside_the_range_fails_in_one_line_before_anything_else(run):
    for i, release in enumerate(SAMPLES):
        if in_range(release):
            continue
        host = run[f"sample{i}"]
        assert host["fatal"] == [range_failure(release, f"sample{i}")], host["fatal"]
        assert "\n" not in host["fatal"][0]
        assert host["acted"] == [] and host["debug"] == []


def test_a_kernel_in_the_range_passes_without_a_warning(run):
    for i, release in enumerate(SAMPLES):
        if not in_range(release):
            continue
        host = run[f"sample{i}"]
        # on to the next check (no headers for these made-up kernels)
        assert host["debug"] == [] and len(host["fatal"]) == 1, host
        assert "outside the range" not in host["fatal"][0] and "Fix:" in host["fatal"][0]
    # the fallback is for kernels outside the range only
    host = run["in_range_fallback"]
    assert host["debug"] == [] and "no kernel headers for kernel 6.1.0-50-amd64" in host["fatal"][0]


def test_allow_untested_builds_anyway_with_make(run):
    host = run["untested"]
    assert host["debug"] == [warning("8.0.0", "untested") + f"pktgen_kmod_allow_untested: building {NAME} anyway "
                                                            f"with make (DKMS builds only for the tested range)."]
    # past the range check to the build's own checks: here, the missing headers
    assert len(host["fatal"]) == 1 and "no kernel headers for kernel 8.0.0" in host["fatal"][0], host["fatal"]
    # allow_untested wins over the fallback
    both = run["both"]
    assert both["debug"] == [warning("5.9.0", "both") + f"pktgen_kmod_allow_untested: building {NAME} anyway."]
    assert len(both["fatal"]) == 1 and "no kernel headers for kernel 5.9.0" in both["fatal"][0], both["fatal"]


def test_intree_fallback_loads_the_intree_pktgen_and_not_the_module(run):
    host = run["fallback"]
    assert host["fatal"] == [], run["output"][-3000:]
    assert host["debug"] == [warning("7.3.0", "fallback") + (
        f"pktgen_kmod_intree_fallback: {NAME} is not built or loaded, the in-tree pktgen is, and the suite runs "
        f"with generator \"pktgen (in-tree)\" and receiver \"interface counters\" (lower fidelity: no per-stream "
        f"loss, no latency).")]
    # nothing of ours built, installed or loaded: the one action is loading
    # the in-tree module (modprobe -i: a modprobe.d redirect to ours does not apply)
    assert host["acted"] == ([] if intree_present() else ["Load the in-tree pktgen for the suite"]), host["acted"]
    tasks = yaml.safe_load((ROOT / "playbooks/roles/pktgen_kmod/tasks/intree_fallback.yml").read_text())
    load, = [t for t in tasks if t["name"] == "Load the in-tree pktgen for the suite"]
    assert load["ansible.builtin.command"]["argv"] == ["modprobe", "--ignore-install", "pktgen"]


def test_a_prebuilt_module_for_this_kernel_is_installed_without_headers_or_a_build(run):
    host = run["prebuilt"]
    assert host["fatal"] == [], run["output"][-3000:]
    acted = " | ".join(host["acted"])
    assert "Install the prebuilt module under updates/" in host["acted"], acted
    assert not any(t.startswith(("Build the module", "Install the headers", "Install the build tools",
                                 "Copy the module source", "Install DKMS")) for t in host["acted"]), acted


def test_a_prebuilt_module_for_another_kernel_or_module_fails_in_one_line_before_anything(run):
    for host, words in (("prebuilt_other_kernel", "built for kernel 6.12.57+deb13-amd64 (vermagic "
                                                  "'6.12.57+deb13-amd64 SMP mod_unload '), not for 6.1.0-50-amd64, "
                                                  "the kernel of prebuilt_other_kernel"),
                        ("prebuilt_other_module", f"is module 'pktgen', not {NAME}")):
        result = run[host]
        assert len(result["fatal"]) == 1 and "\n" not in result["fatal"][0], result["fatal"]
        text = result["fatal"][0]
        assert text.startswith(f"pktgen_kmod: the prebuilt module ") and words in text, text
        assert "it was not installed or loaded. Fix: build it against that kernel's headers" in text, text
        assert "its path may name the release, from ansible_facts.kernel" in text, text
        assert result["acted"] == [], result["acted"]
