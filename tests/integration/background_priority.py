"""The niced background work stops yielding once this session's own lab tests are done.

The early steps (session_prep.py) run niced sessions: the background and the
newest kernel's child pytests, check-kernels, and the QEMUs of the labs they
use. Niced as a whole (rfc2544.lab.niceness), they leave the session lab's
timing tests a CPU, but they starved to the end: in the official CI run of
b519568 (52 min) they still ran niced while this session only waited for
their outcomes. So their niceness follows the running test: BACKGROUND_NICE
from the start (the unit tests, then the session lab's tests), 0 while an
integration test that is not one of this session's own lab tests runs (the
waits for the children's outcomes, at the end).
(Not niced during the unit tests too: tried, a CI run took 69 min: the five
VMs booting at full weight beside the unit tests stretched those from 5 to
18 min, and the session lab's tests started as late.)

A thread re-applies the level every POLL_S to every niced session of ours,
found in /proc: a child of session_prep.py (the session leader of a child
pytest or of check-kernels), or a QEMU of this session's labs other than the
single lab this session's tests use (`-name rfc2544-pytest<PID>-<lab>-<vm>`).
A QEMU started meanwhile (a lab booted or rebooted) is taken at the next
look.
"""
import os
import threading
from pathlib import Path

POLL_S = 3.0


class BackgroundPriority:
    def __init__(self, nice, foreground_labs=("single",)):
        self.nice = nice
        self.level = nice
        self.prep_pid = None
        self._prefix = f"rfc2544-pytest{os.getpid()}-".encode()
        self._foreground = tuple(self._prefix + f"{lab}-".encode() for lab in foreground_labs)
        self._wake = threading.Event()
        self._thread = None

    def start(self, prep_pid):
        self.prep_pid = prep_pid
        self._thread = threading.Thread(target=self._loop, name="background-priority", daemon=True)
        self._thread.start()

    def set(self, level):
        """BACKGROUND_NICE or 0; applied now (well, within a scan)."""
        if level != self.level:
            self.level = level
            self._wake.set()

    def _loop(self):
        applied = None
        while True:
            # At BACKGROUND_NICE a new QEMU is niced by qemu.start itself: no
            # scan then, nothing in this process beside the session's timing tests.
            if self.level != applied or self.level != self.nice:
                applied = self.level
                self.apply()
            self._wake.wait(POLL_S)
            self._wake.clear()

    def apply(self):
        from rfc2544.lab import niceness
        for pid in self.ours():
            if niceness.session_nice(pid) not in (None, self.level):
                niceness.set_session_nice(pid, self.level)

    def ours(self):
        """The pids whose sessions are this session's niced background work."""
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if self.prep_pid is not None and _ppid(entry) == self.prep_pid:
                    yield int(entry.name)
                    continue
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except (OSError, ValueError):
                continue
            names = [a for a in argv if a.startswith(self._prefix)]
            if names and not names[0].startswith(self._foreground) and b"qemu-system" in os.path.basename(argv[0]):
                yield int(entry.name)


def _ppid(proc_dir):
    stat = (proc_dir / "stat").read_text()
    return int(stat.rsplit(")", 1)[-1].split()[1])
