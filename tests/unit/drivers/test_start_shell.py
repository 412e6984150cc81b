"""StartShell: the start channel's script run by a real local bash.

A simulation of the SSH side: the "channel" is a local `bash` process whose
/proc/net/pktgen paths are mapped into a temporary directory on the way in
and back on the way out. The files are FIFOs, so the blocking `start` write
and a slow read stay blocked until the test lets them go: every ordering
below is forced, none depends on how fast this machine runs.
"""
import os
import subprocess
import threading

import pytest

from rfc2544.drivers.pktgen import PGCTRL, device_path
from rfc2544.drivers.script import PROC_PKTGEN, Batch
from rfc2544.drivers.session import StartShell
from rfc2544.drivers.shell import RemoteShell


class LocalChannel:
    """The paramiko Channel methods RemoteShell uses, over a local bash.
    As in paramiko, threads fill the buffers: `recv_ready()` means data is
    buffered (not "EOF"), and `status_event` is set when the shell exited.
    No fileno: the shells must never select() on a channel (paramiko's
    pipe for it races Channel.close(), see drivers/shell.py)."""

    def __init__(self, root):
        self.root = str(root)
        self.proc = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.closed = False
        self.out, self.err = bytearray(), bytearray()
        self.lock = threading.Lock()
        self.status_event = threading.Event()
        for pipe, buf in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._fill, args=(pipe, buf), daemon=True).start()
        threading.Thread(target=lambda: (self.proc.wait(), self.status_event.set()), daemon=True).start()

    def _fill(self, pipe, buf):
        while True:
            data = os.read(pipe.fileno(), 65536)
            if not data:
                return
            with self.lock:
                buf += data.replace(self.root.encode(), PROC_PKTGEN.encode())

    def fileno(self):
        raise AssertionError("select() on a channel: paramiko would make it a pipe that close() races")

    def sendall(self, data):
        self.proc.stdin.write(data.replace(PROC_PKTGEN.encode(), self.root.encode()))
        self.proc.stdin.flush()

    def _take(self, buf, n):
        with self.lock:
            data = bytes(buf[:n])
            del buf[:n]
        return data

    def recv_ready(self):
        return bool(self.out)

    def recv(self, n):
        return self._take(self.out, n)

    def recv_stderr_ready(self):
        return bool(self.err)

    def recv_stderr(self, n):
        return self._take(self.err, n)

    def exit_status_ready(self):
        return self.proc.poll() is not None

    def close(self):
        if not self.closed:
            self.closed = True
            self.proc.kill()
            self.proc.wait()


class LocalHost:
    name = "tester"

    def __init__(self, root):
        self.root = root
        self.channels = []

    def open_channel(self, command, timeout):
        self.channels.append(LocalChannel(self.root))
        return self.channels[-1]


@pytest.fixture
def pktgen_dir(tmp_path):
    os.mkfifo(tmp_path / "pgctrl")
    os.mkfifo(tmp_path / "tx0")
    return tmp_path


@pytest.fixture
def start(pktgen_dir):
    s = StartShell(RemoteShell(LocalHost(pktgen_dir)))
    yield s
    s.close()


def release(fifo, data=b""):
    """Open the other end of `fifo` (a reader takes the start write, a
    writer feeds a read) in a thread, as the module would."""
    def run():
        if data:
            with open(fifo, "wb") as f:
                f.write(data)
        else:
            with open(fifo, "rb") as f:
                f.read()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_the_end_of_the_run_is_seen_before_the_folded_read_arrives(start, pktgen_dir):
    """PGDONE is the end of the traffic; the read follows on the same
    channel without another request."""
    start.trigger(Batch().read("final", device_path("tx0")))
    assert not start.done()                      # the start write blocks until pgctrl is read
    got = release(pktgen_dir / "pgctrl")
    assert start.wait(30) == 0
    got.join(30)
    assert start.folded and start.reusable()
    assert "PGREADEND" not in start.shell._buf.decode()   # the read blocks on tx0 until it is fed
    release(pktgen_dir / "tx0", b"Params: count 10\nResult: OK: 10\n")
    out = start.collect(30)
    assert out.reads["final"][device_path("tx0")] == "Params: count 10\nResult: OK: 10"


def test_the_shell_serves_the_next_trial_and_an_uncollected_read_is_drained(start, pktgen_dir):
    chan = start.shell._chan
    start.trigger(Batch().read("final", device_path("tx0")))
    release(pktgen_dir / "pgctrl")
    assert start.wait(30) == 0
    release(pktgen_dir / "tx0", b"stale\n")
    start.rearm()                                # not collected: taken and dropped
    assert not start.triggered and not start.done()
    start.trigger()                              # no read this time
    release(pktgen_dir / "pgctrl")
    assert start.wait(30) == 0
    assert not start.folded and start.reusable()
    start.rearm()
    assert start.shell._chan is chan             # one shell for both runs
    assert b"stale" not in start.shell._buf


def test_a_failed_start_write_reports_its_status_and_error(start, pktgen_dir):
    os.unlink(pktgen_dir / "pgctrl")
    os.mkdir(pktgen_dir / "pgctrl")              # writing to a directory fails
    start.trigger()
    status = start.wait(30)
    assert status not in (None, 0, -1)
    assert "directory" in start.stderr().lower()
    assert start.reusable()


def test_a_shell_that_dies_mid_run_is_not_a_success(start, pktgen_dir):
    start.trigger()
    start.shell._chan.proc.kill()
    assert start.wait(30) == -1
    assert not start.reusable()


def test_the_script_writes_start_to_pgctrl_once(start, pktgen_dir):
    os.unlink(pktgen_dir / "pgctrl")
    (pktgen_dir / "pgctrl").write_text("")
    start.trigger()
    assert start.wait(30) == 0
    assert (pktgen_dir / "pgctrl").read_text() == "start\n"
    assert PGCTRL == f"{PROC_PKTGEN}/pgctrl"


def test_the_wait_for_output_wakes_on_data_and_never_selects_the_channel(tmp_path):
    """_wait_readable polls the channel (LocalChannel.fileno fails the test):
    it returns once output is buffered, and after its timeout without any."""
    from rfc2544.drivers.shell import _wait_readable
    chan = LocalChannel(tmp_path)
    try:
        _wait_readable(chan, 0.05)
        assert not chan.recv_ready()
        chan.sendall(b"sleep 0.1; echo hello\n")
        _wait_readable(chan, 30)
        assert chan.recv_ready() and not chan.exit_status_ready()
        assert chan.recv(100) == b"hello\n"
        chan.sendall(b"exit 3\n")
        _wait_readable(chan, 30)
        assert chan.exit_status_ready()
    finally:
        chan.close()
