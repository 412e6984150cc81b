"""What the tester needs from one host: batches, the start channel, commands.

`HostSession` wraps an `SSHHost` (one connection per host, shared) with a
persistent remote shell for batches and a pre-opened channel for the
blocking `pgctrl start`. Unit tests substitute a simulated session with the
same methods.
"""
import time

from rfc2544.errors import InfraError
from rfc2544.ssh import quote

from rfc2544.drivers import pktgen, validate
from rfc2544.drivers.script import parse_output
from rfc2544.drivers.shell import RemoteShell, _wait_readable


class StartChannel:
    """A channel waiting to run the blocking `echo start > pgctrl`."""

    def __init__(self, host_name, channel):
        self.host_name = host_name
        self._chan = channel
        self.triggered = False

    def trigger(self):
        try:
            self._chan.sendall(b"start\n")
        except OSError as exc:
            raise InfraError(f"{self.host_name}: cannot start the generator: {exc}")
        self.triggered = True

    def done(self):
        return self._chan.exit_status_ready() or self._chan.closed

    def wait_readable(self, seconds):
        _wait_readable(self._chan, seconds)

    def wait(self, timeout):
        """Exit status of the start command, or None if still running."""
        deadline = time.monotonic() + timeout
        while not self.done():
            if time.monotonic() >= deadline:
                return None
            self._chan.status_event.wait(min(0.05, max(deadline - time.monotonic(), 0.001)))
        if self._chan.exit_status_ready():
            return self._chan.recv_exit_status()
        return -1

    def stderr(self):
        chunks = bytearray()
        while self._chan.recv_stderr_ready():
            chunks += self._chan.recv_stderr(65536)
        return chunks.decode(errors="replace").strip()

    def close(self):
        try:
            self._chan.close()
        except Exception:  # already gone: nothing left to close
            pass


class HostSession:
    def __init__(self, host, netns=None, timeout=30.0):
        self.host = host
        self.name = host.name
        self.netns = validate.netns(netns) if netns else None
        self.shell = RemoteShell(host, self.netns, timeout)
        self.timeout = timeout

    # batches -------------------------------------------------------------
    def send_batch(self, batch):
        self.shell.send(batch.text())

    def collect_batch(self, timeout=None):
        status, text = self.shell.receive(timeout)
        out = parse_output(text)
        if out.errors:
            raise InfraError(f"{self.name}: {out.errors[0]}")
        if status != 0:
            detail = (out.other or ["(no output)"])[-1]
            raise InfraError(f"{self.name}: batch failed with status {status}: {detail}")
        return out

    def run_batch(self, batch, timeout=None):
        self.send_batch(batch)
        return self.collect_batch(timeout)

    # traffic -------------------------------------------------------------
    def open_start(self):
        command = pktgen.start_command()
        if self.netns:
            command = f"ip netns exec {quote(self.netns)} sh -c {quote(command)}"
        return StartChannel(self.name, self.host.open_channel(command, self.timeout))

    # plain commands ------------------------------------------------------
    def run(self, command, timeout=None, check=False):
        if self.netns:
            command = f"ip netns exec {quote(self.netns)} sh -c {quote(command)}"
        return self.host.run(command, timeout=timeout or self.timeout, check=check)

    def close(self):
        self.shell.close()
