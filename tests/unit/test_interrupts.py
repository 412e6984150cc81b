"""rfc2544.interrupts: Ctrl-C is raised in our code, never inside library
code that may hold a lock (a real SIGINT and a real retry timer here; the
"library" is code compiled under a paramiko/ path)."""
import os
import signal
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from rfc2544 import interrupts

LIBRARY_SOURCE = '''
def send_holding_a_lock(lock, log):
    # paramiko's pattern: acquire, work, release on the normal path only
    lock.acquire()
    os.kill(os.getpid(), signal.SIGINT)
    deadline = time.monotonic() + 0.2
    while time.monotonic() < deadline:      # the interrupt arrives in here
        pass
    log.append("library returned")
    lock.release()
'''


def library_function():
    namespace = {"os": os, "signal": signal, "time": time}
    exec(compile(LIBRARY_SOURCE, os.path.join(os.sep, "site", "paramiko", "fake.py"), "exec"), namespace)
    return namespace["send_holding_a_lock"]


def frame_chain(*filenames):
    """Stand-ins for frames, innermost first."""
    frame = None
    for name in reversed(filenames):
        frame = SimpleNamespace(f_code=SimpleNamespace(co_filename=name), f_back=frame)
    return frame


def test_library_frames_are_recognised():
    assert interrupts.in_library_code(sys._getframe()) is False
    ours = "/x/rfc2544/drivers/shell.py"
    assert interrupts.in_library_code(frame_chain(ours, "/x/click/core.py")) is False
    assert interrupts.in_library_code(frame_chain("/usr/lib/python3.11/threading.py", ours)) is True
    assert interrupts.in_library_code(frame_chain("/v/site-packages/paramiko/channel.py", ours)) is True
    # our code called back from inside a library is still inside it
    assert interrupts.in_library_code(frame_chain(ours, "/v/site-packages/paramiko/transport.py")) is True


def test_sigint_inside_library_code_is_raised_after_it_returns():
    lock, log = threading.Lock(), []
    send = library_function()
    with interrupts.deferred_interrupts():
        with pytest.raises(KeyboardInterrupt):
            send(lock, log)
            time.sleep(1)               # our code: the retry timer raises here
    # the library finished its work and released its lock first
    assert log == ["library returned"]
    assert lock.acquire(timeout=0)


def test_sigint_and_sigterm_in_our_code_raise_at_once():
    for signum in (signal.SIGINT, signal.SIGTERM):
        with interrupts.deferred_interrupts():
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signum)
                time.sleep(1)


def test_handlers_and_timer_are_given_back():
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    with interrupts.deferred_interrupts():
        assert signal.getsignal(signal.SIGINT) is interrupts._handler
        signal.setitimer(signal.ITIMER_REAL, 5)
    assert {s: signal.getsignal(s) for s in before} == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_stale_retry_timer_does_nothing():
    with interrupts.deferred_interrupts():
        os.kill(os.getpid(), signal.SIGALRM)      # no interrupt pending
        time.sleep(0.05)
