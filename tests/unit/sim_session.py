"""The SSH side of the simulated tester host (SIMULATED, no SSH): `SimSession`
has the HostSession methods the SSHTester uses and answers each batch with the
text the real batch script prints, so the real output parser runs on it;
`SimStart` stands in for the channel that writes `start`. Both act on a
`pktgen_sim.SimKernel`.
"""
from rfc2544.drivers.probe import QUEUE_SCRIPT
from rfc2544.drivers.script import parse_output
from rfc2544.errors import InfraError


def run_ops(name, kernel, batch):
    """Interpret a Batch's ops against `kernel` and parse what the real
    script would print (PGERR / PGREAD / grep -H)."""
    lines, status = [], 0
    for op in batch.ops:
        if op[0] == "write":
            ok, result = kernel.write(op[1], op[2])
            if not ok:
                lines.append(f"PGERR\t{op[1]}\t{op[2]}\t{result}")
                status = 3
                break
        elif op[0] == "read":
            lines.append(f"PGREAD {op[1]}")
            failed = False
            for path in op[2]:
                text = kernel.read(path)
                if text is None:
                    lines.append(f"grep: {path}: No such file or directory")
                    failed = True
                    continue
                lines += [f"{path}:{l}" for l in text.splitlines()]
            if failed:
                lines.append("PGREADFAIL")
            lines.append("PGREADEND")
        elif op[0] == "sleep":
            kernel.clock.sleep(op[1])
        elif op[0] == "forget":
            kernel.forget_devices()
    out = parse_output("\n".join(lines))
    if out.errors:
        raise InfraError(f"{name}: {out.errors[0]}")
    if status:
        raise InfraError(f"{name}: batch failed with status {status}")
    return out


class SimStart:
    """StartShell / StartChannel stand-in (simulated)."""

    def __init__(self, kernel, loop=True):
        self.kernel = kernel
        self.loop = loop
        self.folds = loop
        self.triggered = False
        self.closed = False
        self.folded = None          # (read Batch, residual s) of the last trigger
        kernel.start_channels.append(self)

    def trigger(self, read=None, residual_s=0.0):
        self.triggered = True
        self.triggers = getattr(self, "triggers", 0) + 1
        self.folded = (read, residual_s) if read is not None else None
        self.kernel.start()

    def collect(self, timeout):
        """The folded read, after the residual wait in simulated time."""
        read, residual_s = self.folded
        self.folded = None
        if residual_s > 0:
            self.kernel.clock.sleep(residual_s)
        return run_ops("start", self.kernel, read)

    def done(self):
        if not self.triggered:
            return self.closed
        with self.kernel.lock:
            self.kernel._update()
            return not self.kernel.running

    def wait_readable(self, seconds):
        # the real channel returns when output arrives or after `seconds`;
        # the simulated one has no output, so simulated time moves on
        self.kernel.clock.sleep(seconds)

    def wait(self, timeout):
        clock = self.kernel.clock
        deadline = clock.monotonic() + timeout
        while not self.done():
            if clock.monotonic() > deadline:
                return None
            clock.sleep(0.002)
        return 0

    def stderr(self):
        return ""

    def reusable(self):
        return self.loop and self.triggered and not self.closed and self.done()

    def rearm(self):
        self.triggered = False
        self.folded = None

    def close(self):
        self.closed = True


class SimSession:
    """HostSession stand-in: interprets Batch ops against a SimKernel and
    prints what the real batch script prints (PGERR / PGREAD / grep -H)."""

    def __init__(self, name, kernel):
        self.name = name
        self.kernel = kernel
        self._pending = None
        self.batches = []
        self.dead = False
        self.commands = []          # every plain command run(), in order
        self.replies = {}           # command -> (status, stdout, stderr), or an exception to raise

    def send_batch(self, batch):
        if self.dead:
            raise InfraError(f"{self.name}: connection lost")
        self.batches.append(batch)
        self._pending = batch

    def collect_batch(self, timeout=None):
        batch, self._pending = self._pending, None
        return run_ops(self.name, self.kernel, batch)

    def run_batch(self, batch, timeout=None):
        self.send_batch(batch)
        return self.collect_batch(timeout)

    def open_start(self, loop=True):
        if self.dead:
            raise InfraError(f"{self.name}: connection lost")
        return SimStart(self.kernel, loop)

    def run(self, command, timeout=None, check=False):
        self.commands.append(command)
        # in the kernel's log too, so tests can order commands against /proc writes
        self.kernel.log.append((f"run@{self.name}", command))
        if command in self.replies:
            reply = self.replies[command]
            if isinstance(reply, BaseException):
                raise reply
            return reply
        if "/proc/net/pktgen" in command and "kpktgend_" in command:
            return 0, self.kernel.probe_text(), ""
        if command == QUEUE_SCRIPT:     # a DUT namespace's ports, as the lab sets them (RPS on the last CPU)
            return 0, self.kernel.dut_queue_text, ""
        return 0, "kernel 6.1.0-sim\ncpus 2\n@nic tx0\ndriver: veth\nspeed: 10000\n", ""

    def close(self):
        pass
