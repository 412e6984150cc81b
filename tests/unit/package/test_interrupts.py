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


def test_sigint_while_run_waits_for_a_host_that_never_speaks_exits_130_at_once(tmp_path):
    """A local listener accepts and never sends an SSH banner (a hung sshd,
    a port forwarder with nothing behind it). `rfc2544 run` waited inside
    paramiko's banner wait, where interrupts are deferred, and ended 16-20 s
    later with exit 3; now it waits for the banner in its own code."""
    import socket
    import subprocess
    import textwrap
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted, held = threading.Event(), []

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)
            accepted.set()

    threading.Thread(target=accept, daemon=True).start()
    port = listener.getsockname()[1]
    (tmp_path / "known_hosts").write_text("")
    ssh = f"{{ansible_host: 127.0.0.1, ansible_port: {port}, rfc2544_known_hosts: {tmp_path / 'known_hosts'}"
    (tmp_path / "inv.yml").write_text(textwrap.dedent(f"""\
        all:
          vars: {{rfc2544_streams: [{{tx: "tester:tx0", rx: "tester:rx0"}}]}}
          children:
            testers: {{hosts: {{tester: {ssh}, rfc2544_ports: [
              {{name: tx0, role: tx, mac: "02:00:00:00:00:01", peer_mac: "02:00:00:00:00:02"}},
              {{name: rx0, role: rx, mac: "02:00:00:00:00:03", peer_mac: "02:00:00:00:00:04"}}]}}}}}}
            duts: {{hosts: {{dut: {ssh}, rfc2544_ports: [{{name: dut0, role: dut, mac: "02:00:00:00:00:02"}}]}}}}}}
        """))
    run = subprocess.Popen([sys.executable, "-m", "rfc2544", "run", "-i", str(tmp_path / "inv.yml"), "-p", "quick",
                            "--out", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=dict(os.environ, RFC2544_CACHE=str(tmp_path / "cache")))
    try:
        assert accepted.wait(30), "rfc2544 run never connected"
        time.sleep(0.5)                 # well inside the wait for a banner
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=2)
    finally:
        run.kill()
        listener.close()
        for conn in held:
            conn.close()
    assert run.returncode == 130, (run.returncode, out, err)
    assert err.strip().splitlines()[-1] == "rfc2544: interrupted", err
    assert "Traceback" not in err
