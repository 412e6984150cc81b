"""The kernel's own pktgen kselftest, tools/testing/selftests/net/
proc_net_pktgen.c from the newest kernel Debian has (sid's linux-source,
fetched and built static on the host by pktgen-kmod/scripts/fetch-selftest),
run unchanged in the lab guest: against rfc2544_pktgen, where every case
must pass, and against the guest kernel's in-tree pktgen, whose results are
recorded (KNOWN_INTREE_FAILURES).

The selftest's setup runs `modprobe pktgen` and fails every case if that
fails. While rfc2544_pktgen is loaded the in-tree module cannot load (both
want /proc/net/pktgen), so for that run a modprobe.d install line makes
`modprobe pktgen` succeed exactly when rfc2544_pktgen is the one loaded (the
README's `install pktgen ...` line does the same for an installed module).
For the in-tree run nothing is changed: the selftest loads pktgen itself.

The guest is restored whichever way a test ends: the install line and the
binary removed, rfc2544_pktgen unloaded, and the in-tree pktgen loaded again
exactly if it was loaded before.
"""
import re
import subprocess
from pathlib import Path

import pytest

from rfc2544.drivers.ssh import put_file, quote
from kmod_helpers import MODULE, kernel_problems, kmod_on

pytestmark = [pytest.mark.lab, pytest.mark.lab_background]     # not timing-sensitive

ROOT = Path(__file__).resolve().parents[2]
FETCH = ROOT / "pktgen-kmod" / "scripts" / "fetch-selftest"
REMOTE_BIN = "/root/proc_net_pktgen"
MODPROBE_CONF = "/etc/modprobe.d/rfc2544-selftest.conf"
# `modprobe pktgen` succeeds (and loads nothing) while rfc2544_pktgen is loaded
INSTALL_LINE = f"install pktgen grep -q '^{MODULE} ' /proc/modules"
EX_TEMPFAIL = 75            # fetch-selftest: archive unreachable, nothing cached

# The in-tree pktgen's failing cases per guest kernel (major.minor), with why.
# A kernel that is not listed and is at least as new as the selftest's
# source must pass every case (it is upstream's own test); an older one that
# is not listed is reported and skipped until its results are recorded here.
KNOWN_INTREE_FAILURES = {
    "6.1": {
        "ctrl_cmd": "6.1 strips the last byte of every pgctrl write: `stop`, "
                    "`start`, `reset` without a trailing NUL or newline lose "
                    "their last letter (-EINVAL)",
        "dev_cmd_min_pkt_size": "6.1 ends a keyword only at a blank, quote or "
                                "newline, not at `=`: `min_pkt_size=1001` and "
                                "`min_pkt_size= 3003` are unknown keywords (-EINVAL)",
        "dev_cmd_rate": "6.1 accepts `rate 0` (the write returns 1, nothing set); "
                        "newer kernels refuse it with -EINVAL",
        "dev_cmd_ratep": "6.1 accepts `ratep 0` (returns 1); newer kernels: -EINVAL",
        "dev_cmd_clone_skb": "6.1 refuses `clone_skb 1` on lo with the kernel-internal "
                             "ENOTSUPP (524) instead of EOPNOTSUPP (95)",
    },
}

RESULT = re.compile(r"^(not ok|ok) (\d+) (\S+)(?:\s+#\s*(\w+)\b\s*(.*))?$")


def parse_tap(text):
    """kselftest harness TAP -> (planned count or None, {case: {"n", "status",
    "reason", "output"}}); status is pass, fail, skip, xfail or xpass, case
    the name without the fixture prefix; output the lines the harness
    printed for that case (its failed expectations)."""
    plan, cases, lines = None, {}, []
    for line in text.splitlines():
        m = re.match(r"^1\.\.(\d+)$", line)
        if m:
            plan = int(m.group(1))
            continue
        m = RESULT.match(line)
        if not m:
            if line.startswith("#  RUN "):
                lines = []
            lines.append(line)
            continue
        ok, n, name, directive, reason = m.groups()
        directive = (directive or "").lower()
        status = {"skip": "skip", "xfail": "xfail", "xpass": "xpass"}.get(
            directive, "pass" if ok == "ok" else "fail")
        cases[name.split(".", 1)[-1]] = {"n": int(n), "status": status,
                                         "reason": reason or "", "output": lines}
        lines = []
    return plan, cases


def _summary(cases):
    counts = {}
    for c in cases.values():
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def _version(release):
    m = re.match(r"(\d+)\.(\d+)", release)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


@pytest.fixture(scope="module")
def selftest():
    """(host path of the static selftest binary, its linux-source version)."""
    try:
        res = subprocess.run(["bash", str(FETCH)], capture_output=True, text=True, timeout=3600)
    except subprocess.TimeoutExpired:
        pytest.fail("fetch-selftest did not finish within an hour")
    if res.returncode == EX_TEMPFAIL:
        pytest.skip(f"the Debian archive is unreachable (make deps): {res.stderr.strip()[-500:]}")
    assert res.returncode == 0, f"fetch-selftest exited {res.returncode}:\n{res.stderr[-3000:]}"
    path = Path(res.stdout.strip().splitlines()[-1])
    assert path.is_file(), res.stdout
    source = (path.parent / "source-version").read_text().split()
    return path, source[-1]


@pytest.fixture(scope="module")
def kmod(lab, selftest):
    """The tester VM (KmodVM, rfc2544_pktgen loaded by kmod_on) with the
    selftest binary; restores the guest afterwards (module docstring).
    (Named like kmod_helpers' fixture, which it replaces here, so that
    a failure carries the guest's kernel log: conftest.py.)"""
    host = lab.connect("tester")
    try:
        intree_was_loaded = host.run("lsmod | grep -q '^pktgen '", check=False)[0] == 0
        try:
            with kmod_on(lab) as vm:
                try:
                    put_file(vm.host, selftest[0], REMOTE_BIN, mode=0o755)
                    yield vm
                finally:
                    vm.sh(f"rm -f {MODPROBE_CONF} {REMOTE_BIN}; "
                          f"lsmod | grep -q '^pktgen ' && rmmod pktgen; true")
        finally:
            # kmod_on unloaded rfc2544_pktgen: the in-tree module as it was
            host.run(f"lsmod | grep -q '^{MODULE} ' && rmmod {MODULE}; " +
                     ("modprobe pktgen" if intree_was_loaded else
                      "lsmod | grep -q '^pktgen ' && rmmod pktgen; true"), timeout=120)
    finally:
        host.close()


def run_selftest(vm):
    """Run it in the guest; (guest kernel release, full output, plan, cases)."""
    release = vm.sh("uname -r").strip()
    status, out, _ = vm.run(f"cd /tmp && {REMOTE_BIN} 2>&1", timeout=900, check=False)
    plan, cases = parse_tap(out)
    assert plan and len(cases) == plan, \
        f"the selftest (exit {status}) planned {plan} cases, reported {len(cases)}:\n{out[-4000:]}"
    return release, out, plan, cases


def _failures(cases, names):
    return "\n".join(f"--- {n}: {cases[n]['status']} {cases[n]['reason']}\n" +
                     "\n".join(cases[n]["output"]) for n in sorted(names))


def test_selftest_passes_against_rfc2544_pktgen(kmod, selftest):
    vm = kmod
    vm.load()                           # fresh: no device files left from other tests
    vm.dmesg_mark("selftest-ours")
    vm.sh(f"echo {quote(INSTALL_LINE)} > {MODPROBE_CONF}")
    try:
        release, out, plan, cases = run_selftest(vm)
    finally:
        vm.sh(f"rm -f {MODPROBE_CONF}")
    # it ran against ours, not a module its modprobe loaded
    assert vm.run("lsmod | grep -q '^pktgen '", check=False)[0] != 0
    assert vm.run(f"lsmod | grep -q '^{MODULE} '", check=False)[0] == 0
    print(f"kselftest proc_net_pktgen (linux-source {selftest[1]}) against {MODULE} "
          f"on {release}: {_summary(cases)} of {plan}")
    bad = [n for n, c in cases.items() if c["status"] != "pass"]
    assert not bad, f"{len(bad)} of {plan} cases do not pass against {MODULE}:\n" + \
        _failures(cases, bad)
    assert kernel_problems(vm.dmesg_since("selftest-ours")) == []


def test_selftest_against_the_intree_pktgen(kmod, selftest, record_property):
    vm = kmod
    vm.unload()
    vm.sh(f"rm -f {MODPROBE_CONF}; lsmod | grep -q '^pktgen ' && rmmod pktgen; true")
    vm.dmesg_mark("selftest-intree")
    try:
        release, out, plan, cases = run_selftest(vm)      # its setup loads pktgen
        intree = vm.run("lsmod | grep -q '^pktgen '", check=False)[0] == 0
    finally:
        vm.sh("lsmod | grep -q '^pktgen ' && rmmod pktgen; true")
        vm.load()                       # the fixture's state: ours loaded
    assert intree, "the selftest's `modprobe pktgen` did not load the in-tree pktgen"
    passed = sum(c["status"] == "pass" for c in cases.values())
    failed = {n for n, c in cases.items() if c["status"] != "pass"}
    record_property("intree_pktgen_passed", f"{passed}/{plan} on {release}")
    print(f"kselftest proc_net_pktgen (linux-source {selftest[1]}) against the in-tree "
          f"pktgen of {release}: {passed} of {plan} pass ({_summary(cases)}); "
          f"not passing: {', '.join(sorted(failed)) or 'none'}")
    assert kernel_problems(vm.dmesg_since("selftest-intree")) == []
    major_minor = "%d.%d" % _version(release)
    known = KNOWN_INTREE_FAILURES.get(major_minor)
    if known is None:
        if _version(release) < _version(selftest[1]):
            pytest.skip(f"no recorded in-tree results for kernel {major_minor} (older than the "
                        f"selftest's {selftest[1]}): {passed} of {plan} pass; not passing: "
                        f"{sorted(failed)}; record them in KNOWN_INTREE_FAILURES")
        known = {}
    for name in sorted(set(known) & failed):
        print(f"  {name}: {known[name]}")
    assert failed == set(known), \
        (f"in-tree pktgen of {release}: expected exactly {sorted(known)} to fail, got "
         f"{sorted(failed)}\n" + _failures(cases, failed - set(known)))
