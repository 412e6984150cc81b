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
    """A shell waiting to run the blocking `echo start > pgctrl`, once per
    trigger (pktgen.start_command): the end of a run is its `PGDONE
    <status>` line, sent the moment the module's wait returns. After a
    finished run the same channel serves the next trial (`rearm`)."""

    def __init__(self, host_name, channel, loop=True):
        self.host_name = host_name
        self._chan = channel
        self.loop = loop             # False: pktgen.start_command(loop=False), one run, ends by exiting
        self.triggered = False
        self._out = bytearray()
        self._status = None          # the last run's write status (PGDONE line)

    def trigger(self):
        try:
            self._chan.sendall(b"start\n")
        except OSError as exc:
            raise InfraError(f"{self.host_name}: cannot start the generator: {exc}")
        self.triggered = True

    def _pump(self):
        try:
            while self._chan.recv_ready():
                data = self._chan.recv(65536)
                if not data:
                    break
                self._out += data
        except OSError:
            return
        done = (pktgen.START_DONE + " ").encode()
        while b"\n" in self._out:
            line, _, rest = bytes(self._out).partition(b"\n")
            self._out = bytearray(rest)
            if line.startswith(done):
                try:
                    self._status = int(line[len(done):].strip() or b"255")
                except ValueError:
                    self._status = 255

    def _exited(self):
        return self._chan.exit_status_ready() or self._chan.closed

    def done(self):
        if self.triggered:
            self._pump()
            if self._status is not None:
                return True
        return self._exited()

    def wait_readable(self, seconds):
        _wait_readable(self._chan, seconds)

    def wait(self, timeout):
        """Status of the start write (0: the run ended normally), or None if
        still running; -1 if the shell went away without one."""
        deadline = time.monotonic() + timeout
        while not self.done():
            if time.monotonic() >= deadline:
                return None
            _wait_readable(self._chan, min(0.05, max(deadline - time.monotonic(), 0.001)))
        if self._status is not None:
            return self._status
        if self._chan.exit_status_ready():
            status = self._chan.recv_exit_status()
            if self.loop and status == 0:
                return -1    # the loop exited without finishing a run: not a success
            return status
        return -1

    def reusable(self):
        """The last run ended (PGDONE seen) and the shell waits for the next."""
        return self.loop and self.triggered and self._status is not None and not self._exited()

    def rearm(self):
        """Ready for the next trigger (only after `reusable()`)."""
        self.triggered = False
        self._status = None

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
    def open_start(self, loop=True):
        command = pktgen.start_command(loop)
        if self.netns:
            command = f"ip netns exec {quote(self.netns)} sh -c {quote(command)}"
        return StartChannel(self.name, self.host.open_channel(command, self.timeout), loop)

    # plain commands ------------------------------------------------------
    def run(self, command, timeout=None, check=False):
        if self.netns:
            command = f"ip netns exec {quote(self.netns)} sh -c {quote(command)}"
        return self.host.run(command, timeout=timeout or self.timeout, check=check)

    def close(self):
        self.shell.close()
