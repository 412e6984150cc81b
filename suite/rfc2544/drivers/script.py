"""Batch scripts: many /proc and /sys writes and reads in ONE remote shell run.

A `Batch` collects checked writes (`write`) and framed reads (`read`) and
renders a POSIX sh script. Every path must match an allow-list, every command
a strict character set, and both are shell-quoted as well. On the host each
write's exit status is checked; a failed write prints one `PGERR` line with
the file's own `Result:` line (pktgen and pgrx explain refusals there) and
the script stops. Reads come back as `path:line` lines; under bash (the
persistent shell) with the `mapfile` builtin, forking nothing, so counters of
several files are read within microseconds of each other; under another sh
with one `grep -H` for all files.

`parse_output` splits what the script printed into reads and errors.
"""
import re
import secrets
import shlex
from dataclasses import dataclass, field
from typing import Dict, List

from rfc2544.drivers import validate
from rfc2544.errors import BadInput, InfraError

PROC_PKTGEN = "/proc/net/pktgen"
START_DONE = "PGDONE"      # `PGDONE <status>`: the blocking start write returned
MAX_SLEEP_S = 5            # the longest pause a batch may hold (Batch.sleep)

# The device part is checked by the one interface-name rule (validate).
PATH_RE = re.compile(
    r"^(?:/proc/net/softnet_stat|/proc/net/pktgen/(?:pgctrl|pgrx|kpktgend_[0-9]{1,4}|(?P<pgdev>[^/]+))"
    r"|/sys/class/net/(?P<ifname>[^/]+)/(?:statistics/[a-z_]{1,32}|operstate|carrier|address|speed|mtu|"
    r"tx_queue_len))$"
)
COMMAND_RE = re.compile(r"^[A-Za-z0-9 _.:,!@/-]{1,1023}$")

# Defined at the top of every script: a checked write. On failure it reports
# the file's Result line and the write's error (pktgen leaves a stale Result
# for some refusals, e.g. clone_skb on veth: ENOTSUPP); the success path
# forks nothing (printf is a builtin; its stderr goes to a per-shell file).
PRELUDE = r"""__ef=${TMPDIR:-/tmp}/.rfc2544_pgerr.$$
trap 'rm -f "$__ef"' EXIT
trap 'rm -f "$__ef"; exit 129' HUP TERM
__w() {
  if printf '%s\n' "$2" 2>"$__ef" >"$1"; then return 0; fi
  __e=; read -r __e <"$__ef" 2>/dev/null
  __r=$(grep -m1 '^Result:' "$1" 2>/dev/null)
  printf 'PGERR\t%s\t%s\t%s\t%s\n' "$1" "$2" "${__r:-Result: (none)}" "${__e##*: }"
  return 1
}
__rd() {
  printf 'PGREAD %s\n' "$1"; shift
  __bad=
  if [ -n "$BASH_VERSION" ]; then
    for __f in "$@"; do
      if mapfile -t __a <"$__f" 2>/dev/null; then
        [ ${#__a[@]} -gt 0 ] && printf '%s\n' "${__a[@]/#/$__f:}"
      else
        printf 'grep: %s: cannot read\n' "$__f"; __bad=1
      fi
    done
  else
    grep -H '' "$@" 2>&1 || __bad=1
  fi
  [ -n "$__bad" ] && printf 'PGREADFAIL\n'
  printf 'PGREADEND\n'
}
"""


# Batch.forget_devices: a thread lists its devices after "Running: " and
# "Stopped: ". 500 looks 20 ms apart: 10 s for the slowest TCG guest.
FORGET_DEVICES = r"""__lists_devices() { grep -Eq '^(Running|Stopped): *[^ ]' "$1"; }
  for __t in /proc/net/pktgen/kpktgend_*; do
    [ -e "$__t" ] || continue
    __lists_devices "$__t" || continue
    __w "$__t" rem_device_all || return 3
    __n=0
    while __lists_devices "$__t"; do
      __n=$((__n + 1))
      if [ "$__n" -gt 500 ]; then
        printf 'PGERR\t%s\t%s\t%s\t%s\n' "$__t" rem_device_all "$(grep -m1 '^Result:' "$__t")" \
          'devices still listed 10 s after the write'
        return 3
      fi
      sleep 0.02
    done
  done"""


def check_path(path):
    path = str(path)
    match = PATH_RE.fullmatch(path)
    if not match or not _device_ok(match):
        raise BadInput(f"refusing to touch {path!r}: not a pktgen/pgrx file or interface counter")
    return path


def _device_ok(match):
    if match.group("ifname") is not None:
        return validate.ifname_problem(match.group("ifname")) is None
    if match.group("pgdev") is not None:
        try:
            validate.pgdev(match.group("pgdev"))
        except BadInput:
            return False
    return True


def check_command(command):
    command = str(command)
    if not COMMAND_RE.fullmatch(command):
        raise BadInput(f"refusing to write {command!r}: unexpected characters")
    return command


class Batch:
    """An ordered list of checked writes and framed reads for one host."""

    def __init__(self):
        self._steps: List[str] = []
        # ("write", path, cmd) | ("read", tag, paths) | ("sleep", s) | ("start",) | ("forget",)
        self.ops: List[tuple] = []

    def write(self, path, command):
        path, command = check_path(path), check_command(command)
        self._steps.append(f"__w {shlex.quote(path)} {shlex.quote(command)} || return 3")
        self.ops.append(("write", path, command))
        return self

    def read(self, tag, *paths):
        if not re.fullmatch(r"[a-z0-9_]{1,32}", tag):
            raise ValueError(f"bad read tag {tag!r}")
        if not paths:
            raise ValueError("read needs at least one path")
        paths = tuple(check_path(p) for p in paths)
        self._steps.append(f"__rd {tag} " + " ".join(shlex.quote(p) for p in paths))
        self.ops.append(("read", tag, paths))
        return self

    def forget_devices(self):
        """Remove every device from every pktgen thread, and wait until the
        thread files list none. The in-tree pktgen only flags a removal and
        its thread acts on the flag in its next loop (up to 100 ms later, much
        later in a stalled VM); `reset` and `rem_device_all` sleep 125 ms and
        hope. A device added while the flag is pending is removed with the
        rest, so only threads that list devices are told, and each is waited
        for. The module removes at once: the wait ends on the first look."""
        self._steps.append(FORGET_DEVICES)
        self.ops.append(("forget",))
        return self

    def start_run(self):
        """The blocking `start` write to pgctrl, then `PGDONE <status>` the
        moment it returns (the module's in-kernel wait for the end of the
        run); unlike `write`, a failure does not stop the script: the
        status is the run's outcome, and the error text precedes the line."""
        self._steps.append(f"printf 'start\\n' >{PROC_PKTGEN}/pgctrl; printf '{START_DONE} %d\\n' $?")
        self.ops.append(("start",))
        return self

    def sleep(self, seconds):
        # Only short, fixed pauses inside a batch (e.g. let a write take effect).
        seconds = float(seconds)
        if not 0 < seconds <= MAX_SLEEP_S:
            raise ValueError(f"batch sleeps must be within (0, {MAX_SLEEP_S}] s")
        self._steps.append(f"sleep {seconds:.3f}")
        self.ops.append(("sleep", seconds))
        return self

    def extend(self, other):
        self._steps.extend(other._steps)
        self.ops.extend(other.ops)
        return self

    def __len__(self):
        return len(self._steps)

    def body(self):
        """The script without the prelude (for a shell that has it: send_to)."""
        steps = "\n".join(f"  {s}" for s in self._steps) or "  :"
        return f"__main() {{\n{steps}\n}}\n__main"

    def text(self):
        return PRELUDE + self.body()

    def send_to(self, shell):
        """Send to a persistent RemoteShell; the prelude only with its
        first script (parsing it costs ~2-3 ms per batch in the TCG lab)."""
        return shell.send(self.body(), setup=PRELUDE)


@dataclass
class WriteError:
    path: str
    command: str
    result: str            # the file's Result line after the write
    error: str = ""        # the write's error (strerror), when the shell gave one

    def __str__(self):
        why = f"{self.error}; " if self.error else ""
        return f"writing '{self.command}' to {self.path} failed: {why}{self.result}"


@dataclass
class BatchOutput:
    reads: Dict[str, Dict[str, str]] = field(default_factory=dict)  # tag -> path -> text
    errors: List[WriteError] = field(default_factory=list)
    read_failures: Dict[str, str] = field(default_factory=dict)     # tag -> message
    other: List[str] = field(default_factory=list)                  # unexpected lines


def parse_output(text, paths_by_tag=None):
    """Split a batch script's output. Pure function.

    `paths_by_tag` (tag -> list of paths) restricts which paths a read may
    report; by default any allowed path is accepted.
    """
    out = BatchOutput()
    tag = None
    for line in text.splitlines():
        if line.startswith("PGERR\t"):
            parts = line.split("\t", 4)
            parts += [""] * (5 - len(parts))
            out.errors.append(WriteError(parts[1], parts[2], parts[3], parts[4].strip()))
        elif line.startswith("PGREAD "):
            tag = line[len("PGREAD "):].strip()
            out.reads.setdefault(tag, {})
        elif line == "PGREADEND":
            tag = None
        elif line == "PGREADFAIL" and tag is not None:
            out.read_failures.setdefault(tag, "a file could not be read")
        elif tag is not None:
            if line.startswith("grep: "):
                out.read_failures[tag] = line[len("grep: "):]
                continue
            path, content = _split_path(line, (paths_by_tag or {}).get(tag))
            if path is None:
                out.other.append(line)
                continue
            files = out.reads[tag]
            files[path] = files[path] + "\n" + content if path in files else content
        elif line.strip():
            out.other.append(line)
    return out


def _split_path(line, paths):
    # Allowed paths never contain ':' (PATH_RE), so grep -H's separator is
    # the first ':' of the line.
    if paths:
        for p in paths:
            if line.startswith(p + ":"):
                return p, line[len(p) + 1:]
        return None, None
    path, sep, content = line.partition(":")
    if not sep or not PATH_RE.fullmatch(path):
        return None, None
    return path, content


def raise_on_errors(host, output):
    if output.errors:
        raise InfraError(f"{host}: {output.errors[0]}")


def nonce():
    return secrets.token_hex(8)
