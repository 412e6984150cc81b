"""One persistent, verified SSH connection per host (paramiko).

Host keys are checked against the inventory's known_hosts file and unknown
keys are rejected. TCP_NODELAY is set on the socket: without it each small
command pays for Nagle plus delayed ACK (~40 ms).
"""
import logging
import select
import shlex
import socket
import threading
import time

import paramiko

from rfc2544.errors import HostKeyError, InfraError

CONNECT_TIMEOUT = 10.0
COMMAND_TIMEOUT = 60.0
KEEPALIVE_S = 5
EOF_GRACE_S = 2.0
# paramiko logs a failed handshake with its traceback; with no handler of
# the application's, Python's last-resort handler printed it to stderr
# beside the one-line error this module raises
logging.getLogger("paramiko").addHandler(logging.NullHandler())


def _wait_for_banner(sock, timeout):
    """Until the server has sent something (its SSH banner, or closed),
    without consuming it, in this module's own short waits: paramiko's
    banner wait runs where interrupts are deferred (rfc2544.interrupts),
    so a host that accepts and never speaks held a Ctrl-C for the whole
    banner timeout. False if nothing came within `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        readable, _, _ = select.select([sock], [], [], min(0.1, left))
        if readable:
            return True


class CommandFailed(InfraError):
    def __init__(self, host, command, status, stderr):
        self.status = status
        self.stderr = stderr
        first = (stderr.strip().splitlines() or [""])[-1]
        super().__init__(f"{host}: '{command}' exited {status}: {first}")


class SSHHost:
    """A connected host. `name` is only used in messages."""

    def __init__(self, name, client):
        self.name = name
        self._client = client
        self._lock = threading.Lock()

    @classmethod
    def connect(cls, name, host, port, user, key_file, known_hosts,
                timeout=CONNECT_TIMEOUT):
        client = paramiko.SSHClient()
        try:
            client.load_host_keys(str(known_hosts))
        except OSError as exc:
            raise HostKeyError(f"{name}: cannot read known_hosts {known_hosts}: {exc.strerror}")
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            sock = socket.create_connection((host, int(port)), timeout=timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if not _wait_for_banner(sock, timeout):
                sock.close()
                raise InfraError(f"{name}: SSH to {host}:{port} failed: it accepted the connection but sent "
                                 f"no SSH banner within {timeout:g} s")
            client.connect(
                hostname=host, port=int(port), username=user,
                key_filename=str(key_file) if key_file else None,
                sock=sock, timeout=timeout, banner_timeout=timeout,
                auth_timeout=timeout, allow_agent=False,
                look_for_keys=key_file is None,
            )
        except paramiko.BadHostKeyException:
            raise HostKeyError(f"{name}: host key of {host}:{port} does not match {known_hosts}")
        except paramiko.SSHException as exc:
            if "not found in known_hosts" in str(exc):
                raise HostKeyError(f"{name}: {host}:{port} is not in {known_hosts}: host key not verified")
            raise InfraError(f"{name}: SSH to {host}:{port} failed: {exc}")
        except OSError as exc:
            raise InfraError(f"{name}: cannot reach {host}:{port}: {exc.strerror or exc}")
        client.get_transport().set_keepalive(KEEPALIVE_S)
        return cls(name, client)

    @property
    def alive(self):
        transport = self._client.get_transport()
        return transport is not None and transport.is_active()

    def run(self, command, timeout=COMMAND_TIMEOUT, check=True, stdin=None):
        """Run `command` (a shell string; quote values with `quote`).

        Returns (status, stdout, stderr). Raises InfraError on timeout or a
        lost connection, CommandFailed on a non-zero status when `check`.
        """
        channel = self.open_channel(command, timeout)
        if stdin is not None:
            channel.sendall(stdin.encode() if isinstance(stdin, str) else stdin)
            channel.shutdown_write()
        out, err = bytearray(), bytearray()
        deadline = time.monotonic() + timeout
        eof_deadline = None
        try:
            while True:
                if channel.recv_ready():
                    out += channel.recv(65536)
                elif channel.recv_stderr_ready():
                    err += channel.recv_stderr(65536)
                elif channel.exit_status_ready():
                    # sshd may send the exit status before the last output;
                    # the output is complete at EOF. A command that left a
                    # background process holding stdout never sends EOF:
                    # wait for it at most EOF_GRACE_S.
                    if eof_deadline is None:
                        eof_deadline = time.monotonic() + EOF_GRACE_S
                    if channel.eof_received or channel.closed or time.monotonic() > eof_deadline:
                        while channel.recv_ready():
                            out += channel.recv(65536)
                        while channel.recv_stderr_ready():
                            err += channel.recv_stderr(65536)
                        break
                    time.sleep(0.002)
                elif time.monotonic() > deadline:
                    raise InfraError(f"{self.name}: '{command}' timed out after {timeout:.0f} s")
                elif channel.closed:
                    # Closed between the polls above (the transport thread
                    # took the last output, the status and the close at
                    # once): the command finished. exit_status_ready() holds
                    # from now on, so the next pass reads what is left.
                    continue
                elif not self.alive:
                    raise InfraError(f"{self.name}: connection lost during '{command}'")
                else:
                    channel.status_event.wait(0.002)
            status = channel.recv_exit_status()
        finally:
            channel.close()
        stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
        if check and status != 0:
            raise CommandFailed(self.name, command, status, stderr)
        return status, stdout, stderr

    def open_channel(self, command, timeout=COMMAND_TIMEOUT):
        """Start `command` on its own channel and return it (for blocking
        commands such as pktgen's `start`)."""
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise InfraError(f"{self.name}: SSH connection is closed")
        try:
            channel = transport.open_session(timeout=timeout)
            channel.settimeout(timeout)
            channel.exec_command(command)
        except (paramiko.SSHException, OSError) as exc:
            raise InfraError(f"{self.name}: cannot start '{command}': {exc}")
        return channel

    def read_file(self, path, timeout=COMMAND_TIMEOUT):
        return self.run(f"cat {quote(path)}", timeout=timeout)[1]

    def close(self):
        self._client.close()


def quote(value):
    return shlex.quote(str(value))


def put_file(host, local_path, remote_path, mode=0o644):
    """Copy a local file to `host` over SFTP on the existing connection."""
    try:
        sftp = host._client.open_sftp()
        try:
            sftp.put(str(local_path), str(remote_path))
            sftp.chmod(str(remote_path), mode)
        finally:
            sftp.close()
    except (paramiko.SSHException, OSError) as exc:
        raise InfraError(f"{host.name}: cannot copy {local_path} to {remote_path}: {exc}")
