"""One long-lived `sh` per host (and namespace) on the existing SSH connection.

A batch sent here costs one round trip on an open channel: no new SSH
session and no new shell process per batch, which is what keeps the control
overhead of a trial in milliseconds. Each script runs with stdin from
/dev/null (so nothing it runs can eat the next script) and stderr merged
into stdout; a random end marker carries its exit status back.
"""
import secrets
import time

from rfc2544.errors import InfraError
from rfc2544.drivers.ssh import quote

from rfc2544.drivers import validate

POLL_S = 0.002      # _wait_readable's poll interval (as SSHHost.run's)


class RemoteShell:
    def __init__(self, host, netns=None, timeout=30.0):
        self.host = host
        self.netns = validate.netns(netns) if netns else None
        self.timeout = timeout
        self._chan = None
        self._pending = None
        self._setup = None          # the setup text this shell has run (send's `setup`)

    @property
    def name(self):
        return f"{self.host.name}" + (f" (netns {self.netns})" if self.netns else "")

    def open(self):
        """Spawn the remote shell now (it is otherwise spawned by the first send)."""
        if self._chan is None or self._chan.closed:
            self._open()

    def _open(self):
        # bash: its mapfile builtin reads /proc files without a fork (batch
        # reads); plain sh still works, with grep instead.
        shell = "$(command -v bash || echo /bin/sh) --noprofile --norc"
        command = f"exec {shell}" if not self.netns else f"exec ip netns exec {quote(self.netns)} {shell}"
        self._chan = self.host.open_channel(command, self.timeout)
        self._buf = bytearray()
        self._err = bytearray()
        self._setup = None

    def send(self, script, setup=None):
        """Start `script`; collect its output with `receive()`. `setup`:
        definitions the script needs, run first only if this shell has not
        run them yet (they persist in the shell: `{ }` is no subshell)."""
        if self._pending is not None:
            # an earlier script was abandoned (Ctrl-C, an error while
            # waiting): its output would be read as ours; start a new shell
            self.close()
        self.open()
        if setup is not None and self._setup != setup:
            script = setup + script
            self._setup = setup
        marker = "@@RFC2544_END_" + secrets.token_hex(6)
        framed = f"{{\n{script}\n}} </dev/null 2>&1; printf '\\n%s %d\\n' {marker} $?\n"
        try:
            self._chan.sendall(framed.encode())
        except OSError as exc:
            self._broken(f"cannot send to the remote shell: {exc}")
        self._pending = marker
        return marker

    def receive(self, timeout=None):
        """Wait for the script sent last; returns (status, output)."""
        marker, self._pending = self._pending, None
        if marker is None:
            raise RuntimeError("nothing sent")
        needle = ("\n" + marker + " ").encode()
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        chan = self._chan
        while True:
            at = self._buf.find(needle)
            if at >= 0:
                eol = self._buf.find(b"\n", at + len(needle))
                if eol >= 0:
                    output = self._buf[:at].decode(errors="replace")
                    status = int(self._buf[at + len(needle):eol] or b"255")
                    del self._buf[:eol + 1]
                    return status, output
            seen = len(self._buf), len(self._err)
            alive = self.pump()
            if (len(self._buf), len(self._err)) != seen:
                continue
            if not alive:
                err = self._err.decode(errors="replace").strip().splitlines()
                self._broken("remote shell exited" + (f": {err[-1]}" if err else ""))
            if time.monotonic() > deadline:
                self._broken(f"no answer within {timeout or self.timeout:.0f} s")
            _wait_readable(chan, min(0.05, max(deadline - time.monotonic(), 0.0)))

    def pump(self):
        """Take whatever output has arrived, without waiting. -> False once
        the shell is gone (an OSError of the channel propagates)."""
        chan = self._chan
        if chan is None:
            return False
        while chan.recv_ready():
            data = chan.recv(65536)
            if not data:
                break
            self._buf += data
        while chan.recv_stderr_ready():
            data = chan.recv_stderr(65536)
            if not data:
                break
            self._err += data
        return not (chan.exit_status_ready() or chan.closed)

    def find_line(self, prefix):
        """(text before it, the rest of the line) of the first complete
        output line that starts with `prefix`, or None; consumes nothing."""
        needle = prefix.encode()
        if self._buf.startswith(needle):
            at = 0
        else:
            at = self._buf.find(b"\n" + needle)
            if at < 0:
                return None
            at += 1
        eol = self._buf.find(b"\n", at)
        if eol < 0:
            return None
        return (self._buf[:at].decode(errors="replace"),
                self._buf[at + len(needle):eol].decode(errors="replace"))

    def wait_readable(self, seconds):
        if self._chan is not None:
            _wait_readable(self._chan, seconds)

    def run(self, script, timeout=None):
        self.send(script)
        return self.receive(timeout)

    def _broken(self, why):
        self.close()
        raise InfraError(f"{self.name}: {why}")

    def close(self):
        self._pending = None
        if self._chan is not None:
            try:
                self._chan.close()
            except Exception:  # closing a dead channel must not mask the real error
                pass
            self._chan = None


def _wait_readable(chan, seconds):
    """Sleep until the channel has stdout/stderr data or has ended (or
    `seconds` pass). It polls rather than select()s on chan.fileno():
    that makes paramiko give the channel a pipe, which Channel.close()
    closes without the lock its transport thread holds while feeding it,
    and a write into the closed pipe there kills the whole connection."""
    end = time.monotonic() + seconds
    while not (chan.recv_ready() or chan.recv_stderr_ready() or chan.exit_status_ready() or chan.closed):
        left = end - time.monotonic()
        if left <= 0:
            return
        # status_event is set on the exit status; otherwise a short sleep
        chan.status_event.wait(min(left, POLL_S))
