"""What the tester needs from one host: batches, the start channel, commands.

`HostSession` wraps an `SSHHost` (one connection per host, shared) with a
persistent remote shell for batches; its start channels are shells of
their own for the blocking `pgctrl start`. Unit tests substitute a
simulated session with the same methods.
"""
import time

from rfc2544.errors import InfraError
from rfc2544.drivers.ssh import quote

from rfc2544.drivers import pktgen, validate
from rfc2544.drivers.script import START_DONE, Batch, parse_output
from rfc2544.drivers.shell import RemoteShell, _wait_readable


def checked_output(name, status, text):
    """A batch script's output, parsed; a refused write or a failed script
    is an InfraError naming the host."""
    out = parse_output(text)
    if out.errors:
        raise InfraError(f"{name}: {out.errors[0]}")
    if status != 0:
        detail = (out.other or ["(no output)"])[-1]
        raise InfraError(f"{name}: batch failed with status {status}: {detail}")
    return out


class StartChannel:
    """A single-use start channel (pktgen.start_command): one run per
    channel, its end is the shell's exit. Kept for comparison
    (bench/control_overhead.py's `before`); trials use StartShell."""

    loop = False
    folds = False

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
            _wait_readable(self._chan, min(0.05, max(deadline - time.monotonic(), 0.001)))
        return self._chan.recv_exit_status() if self._chan.exit_status_ready() else -1

    def reusable(self):
        return False

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


class StartShell:
    """The start channel: a persistent shell (RemoteShell) of its own that
    serves every trial of a session. A trigger sends one script: the
    blocking `start` write and its `PGDONE <status>` line the moment the
    module's wait returns (Batch.start_run), then, if asked, the residual
    wait and the trial's final read. The end of the traffic and the final
    counters come back on this channel without another round trip, and no
    process is spawned per trial. Closing the channel while the write
    blocks ends the shell; the suite also writes `stop` (stop_all)."""

    loop = True
    folds = True

    def __init__(self, shell):
        self.shell = shell
        self.host_name = shell.name
        shell.open()          # spawned now: a pre-opened start costs nothing later
        self._reset()

    def _reset(self):
        self.triggered = False
        self.folded = False       # the script also reads the final counters
        self._status = None       # the run's write status (PGDONE line)
        self._detail = ""         # what the shell printed before PGDONE (the write's error)
        self._collected = False

    def trigger(self, read=None, residual_s=0.0):
        """Start the run; `read`: a Batch of reads to run `residual_s` after its end."""
        script = Batch().start_run()
        if read is not None:
            if residual_s > 0:
                script.sleep(residual_s)
            script.extend(read)
        script.send_to(self.shell)
        self.triggered = True
        self.folded = read is not None

    def _alive(self):
        """Take the output that arrived; False once the shell is gone."""
        try:
            return self.shell.pump()
        except OSError:
            return False

    def done(self):
        alive = self._alive()
        if self.triggered and self._status is None:
            found = self.shell.find_line(START_DONE + " ")
            if found is not None:
                self._detail = found[0].strip()
                try:
                    self._status = int(found[1].strip() or "255")
                except ValueError:
                    self._status = 255
        return self._status is not None or not alive

    def wait_readable(self, seconds):
        self.shell.wait_readable(seconds)

    def wait(self, timeout):
        """Status of the start write (0: the run ended normally), None if
        still running, -1 if the shell went away without one."""
        deadline = time.monotonic() + timeout
        while not self.done():
            if time.monotonic() >= deadline:
                return None
            self.shell.wait_readable(min(0.05, max(deadline - time.monotonic(), 0.001)))
        return -1 if self._status is None else self._status

    def collect(self, timeout):
        """The folded final read (after `done()`): a BatchOutput."""
        self._collected = True
        return checked_output(self.host_name, *self.shell.receive(timeout))

    def reusable(self):
        """The last run ended (PGDONE seen) and the shell is still there."""
        return self.triggered and self._status is not None and self._alive()

    def rearm(self):
        """Ready for the next trigger (only after `reusable()`): the rest of
        the last script's output (an unused read) is taken first."""
        if not self._collected:
            self.shell.receive(35.0)
        self._reset()

    def stderr(self):
        return self._detail

    def close(self):
        self.shell.close()


class HostSession:
    def __init__(self, host, netns=None, timeout=30.0):
        self.host = host
        self.name = host.name
        self.netns = validate.netns(netns) if netns else None
        self.shell = RemoteShell(host, self.netns, timeout)
        self.timeout = timeout

    # batches -------------------------------------------------------------
    def send_batch(self, batch):
        batch.send_to(self.shell)

    def collect_batch(self, timeout=None):
        return checked_output(self.name, *self.shell.receive(timeout))

    def run_batch(self, batch, timeout=None):
        self.send_batch(batch)
        return self.collect_batch(timeout)

    # traffic -------------------------------------------------------------
    def open_start(self, loop=True):
        """A StartShell; `loop=False`: a single-use StartChannel."""
        if loop:
            return StartShell(RemoteShell(self.host, self.netns, self.timeout))
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
