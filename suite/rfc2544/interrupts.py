"""Ctrl-C and SIGTERM as KeyboardInterrupt, raised only where that is safe.

Python raises KeyboardInterrupt wherever the main thread is. Inside paramiko
or the threading module that can leave a lock taken for good: a run
interrupted while paramiko was sending hung for ever (seen in the lab soak:
py-spy showed the main thread and paramiko's transport thread both blocked
on the lock of the transport's clear_to_send Event). So the handler looks
at where the main thread is: in our own code it raises at once; inside such
library code it retries every RETRY_S (SIGALRM) until the thread is back in
our code, which every wait of the trial engine reaches within ~50 ms.
"""
import functools
import os
import signal
import threading

RETRY_S = 0.02
SIGNALS = (signal.SIGINT, signal.SIGTERM)
_UNSAFE_FILES = ("threading.py", "queue.py", "socket.py", "ssl.py")
_UNSAFE_DIRS = tuple(os.sep + name + os.sep for name in ("paramiko", "cryptography", "nacl", "bcrypt"))

_pending = False


def in_library_code(frame):
    """True if `frame` or a caller of it runs in code that must not be
    interrupted (it may hold a lock it releases only on a normal return)."""
    while frame is not None:
        name = frame.f_code.co_filename
        if name.endswith(_UNSAFE_FILES) or any(d in name for d in _UNSAFE_DIRS):
            return True
        frame = frame.f_back
    return False


def _handler(signum, frame):
    global _pending
    if signum == signal.SIGALRM and not _pending:
        return                      # a retry timer that outlived its interrupt
    if in_library_code(frame):
        _pending = True
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)
        return
    _pending = False
    raise KeyboardInterrupt


class deferred_interrupts:
    """Context manager: SIGINT and SIGTERM raise KeyboardInterrupt (also when
    the process was started with SIGINT ignored), never inside library code.
    Main thread only; restores the previous handlers and timer on exit."""

    def __enter__(self):
        global _pending
        _pending = False
        self._previous = {s: signal.signal(s, _handler) for s in SIGNALS + (signal.SIGALRM,)}
        return self

    def __exit__(self, *exc):
        global _pending
        signal.setitimer(signal.ITIMER_REAL, 0)
        _pending = False
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        return False


def interruptible(command):
    """Make SIGINT and SIGTERM raise KeyboardInterrupt while `command` runs
    (never inside paramiko or threading code, as above). A shell
    starts the background jobs of a non-interactive script with SIGINT
    ignored, and Python then installs no handler of its own: without this,
    an interrupt sent to a run would be lost and the run would finish with
    exit 0."""
    @functools.wraps(command)
    def with_sigint(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            return command(*args, **kwargs)       # only the main thread may set handlers
        with deferred_interrupts():
            return command(*args, **kwargs)
    return with_sigint
