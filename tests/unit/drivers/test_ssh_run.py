"""SSHHost.run's read loop against a scripted channel (a simulation: no SSH).

paramiko's transport thread fills a channel's buffers, its exit status and
its closed flag while `run` polls them. The fake channel below plays the
transport thread at exact points of that polling, so the interleavings that a
loaded machine produces only rarely are tested every time.
"""
import threading

import pytest

from rfc2544.errors import InfraError
from rfc2544.drivers.ssh import SSHHost


class ScriptedChannel:
    """A paramiko Channel stand-in with paramiko's semantics: a close sets
    the status event (exit_status_ready() is `closed or status received`) and
    a close without an exit status leaves recv_exit_status() at -1. `arrive`
    is called once, right after the first exit_status_ready() poll has
    computed its answer, as the transport thread would deliver whatever
    arrives at that moment."""

    def __init__(self, arrive=None):
        self.out = bytearray()
        self.status = None
        self.closed = False
        self.eof_received = False
        self.status_event = threading.Event()
        self._arrive = arrive

    def deliver(self, out=b"", status=None, close=False):
        self.out += out
        if status is not None:
            self.status = status
            self.status_event.set()
        if close:
            self.eof_received = self.closed = True
            self.status_event.set()

    def recv_ready(self):
        return bool(self.out)

    def recv(self, n):
        data, self.out = bytes(self.out[:n]), self.out[n:]
        return data

    def recv_stderr_ready(self):
        return False

    def exit_status_ready(self):
        ready = self.closed or self.status_event.is_set()
        if self._arrive is not None:
            arrive, self._arrive = self._arrive, None
            arrive(self)        # too late for this poll's answer
        return ready

    def recv_exit_status(self):
        return -1 if self.status is None else self.status

    def close(self):
        self.closed = True


class ScriptedHost(SSHHost):
    def __init__(self, channel, alive=True):
        super().__init__("tester", client=None)
        self.channel, self._alive = channel, alive

    @property
    def alive(self):
        return self._alive

    def open_channel(self, command, timeout=60.0):
        return self.channel


def test_output_status_and_close_arriving_between_two_polls_is_a_finished_command():
    """The output, the exit status and the close land right after the
    status poll said "not yet": run returns them (it used to report a lost
    connection, failing a CI run on a healthy `cat`)."""
    chan = ScriptedChannel(arrive=lambda c: c.deliver(b"pgrx version=1\nend\n", status=0, close=True))
    assert ScriptedHost(chan).run("cat /proc/net/pktgen/pgrx") == (0, "pgrx version=1\nend\n", "")


def test_a_non_zero_status_arriving_with_the_close_is_still_checked():
    chan = ScriptedChannel(arrive=lambda c: c.deliver(b"", status=3, close=True))
    with pytest.raises(InfraError, match="exited 3"):
        ScriptedHost(chan).run("false")


@pytest.mark.parametrize("when", ["between the polls", "before the first poll"])
def test_a_close_without_a_status_reads_as_status_minus_one_either_way(when):
    """sshd closes without a status when the command died of a signal;
    paramiko then reports -1. The race must not turn that into a lost
    connection either."""
    killed = dict(out=b"partial", close=True)
    chan = ScriptedChannel(arrive=lambda c: c.deliver(**killed)) if when == "between the polls" else ScriptedChannel()
    if when == "before the first poll":
        chan.deliver(**killed)
    assert ScriptedHost(chan).run("cat x", check=False) == (-1, "partial", "")


def test_a_dead_transport_under_an_open_channel_is_a_lost_connection():
    chan = ScriptedChannel()
    with pytest.raises(InfraError, match="connection lost during 'cat x'"):
        ScriptedHost(chan, alive=False).run("cat x")
