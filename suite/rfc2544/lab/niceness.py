"""Niceness that holds for a process in a session of its own.

With CONFIG_SCHED_AUTOGROUP (on in Debian's, Ubuntu's and Fedora's kernels)
the scheduler first shares the CPUs between sessions, each weighted by its
autogroup's own nice value, and a task's nice only ranks it within its
session. `qemu -daemonize` calls setsid(), so a VM started under nice(1)
still competed as an equal with every other VM: two CPU burners on one core,
one at nice 19 in a session of its own, split it 263:266 ticks; in the same
session, 492:7. A background VM is niced by setting its autogroup's nice too.
"""
import errno
import time
from pathlib import Path

# Without CAP_SYS_ADMIN the kernel takes one autogroup change per 0.1 s.
RATE_LIMIT_S = 0.11
ATTEMPTS = 10


def set_session_nice(pid: int, nice: int) -> bool:
    """Set the autogroup (session scheduling group) of `pid` to `nice`.
    False where that does not apply: no autogroups in this kernel, the
    process is gone, or not ours to change (its task nice still holds)."""
    path = Path(f"/proc/{int(pid)}/autogroup")
    for _ in range(ATTEMPTS):
        try:
            path.write_text(f"{int(nice)}\n")
            return True
        except OSError as exc:
            if exc.errno != errno.EAGAIN:
                return False
            time.sleep(RATE_LIMIT_S)
    return False


def session_nice(pid: int):
    """The nice value of `pid`'s autogroup, or None (no autogroups, no process)."""
    try:
        text = Path(f"/proc/{int(pid)}/autogroup").read_text()
    except OSError:
        return None
    # "/autogroup-27 nice 0"
    fields = text.split()
    return int(fields[2]) if len(fields) == 3 and fields[1] == "nice" else None
