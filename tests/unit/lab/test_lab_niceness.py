"""rfc2544.lab.niceness on real processes of this host (no lab): a process in
a session of its own gets its autogroup's nice set, and a niced VM start
sets it. Skipped where the kernel has no autogroups."""
import os
import subprocess
import sys

import pytest

from rfc2544.lab import niceness, qemu

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"),
                                reason="this kernel has no autogroups (CONFIG_SCHED_AUTOGROUP)")


@pytest.fixture
def own_session():
    proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield proc.pid
    proc.kill()
    proc.wait()


def test_a_session_of_its_own_starts_at_nice_0_and_takes_the_nice_set(own_session):
    ours = niceness.session_nice(os.getpid())
    assert niceness.session_nice(own_session) == 0
    assert niceness.set_session_nice(own_session, 10)
    assert niceness.session_nice(own_session) == 10
    assert niceness.session_nice(os.getpid()) == ours       # another group: ours is untouched


def test_a_gone_process_is_reported_not_raised():
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert niceness.set_session_nice(proc.pid, 10) is False
    assert niceness.session_nice(proc.pid) is None


def test_a_niced_daemonized_start_nices_its_session(tmp_path):
    """qemu.start with a stand-in for QEMU that daemonizes as QEMU does
    (setsid, pid file) and sleeps."""
    fake = tmp_path / "fake-qemu"
    fake.write_text(f"#!{sys.executable}\n"
                    "import os, sys, time\n"
                    "if os.fork():\n"
                    "    while not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
                    "    sys.exit(0)\n"
                    "os.setsid()\n"
                    "open(sys.argv[1] + '.part', 'w').write(str(os.getpid()))\n"
                    "os.rename(sys.argv[1] + '.part', sys.argv[1])\n"
                    "time.sleep(60)\n")
    fake.chmod(0o755)
    pid = qemu.start([str(fake), str(tmp_path / "qemu.pid")], tmp_path, nice=7)
    try:
        assert niceness.session_nice(pid) == 7
        assert int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[16]) == 7   # the task's nice too
    finally:
        os.kill(pid, 9)
