"""How far a host's clock may be from its reference, read from the daemon
that synchronises it (issue 46 item 4): one-way latency across two hosts is
the receiver's clock minus the sender's, so its error is the sum of both.

`CLOCK_SCRIPT` prints one section per daemon; `parse_clock` is pure and
gives a ClockState. The bound per daemon:
- chrony (`chronyc -c tracking`): |system time offset| + root dispersion +
  root delay / 2, the bound chronyc's manual gives; "Not synchronised" leap
  status: unbounded.
- ntpd (`ntpq -c rv`): the same from its offset, rootdisp and rootdelay
  (milliseconds); leap 11 (alarm): unbounded.
- ptp4l (`pmc ... TIME_STATUS_NP`): |master_offset| of the PTP hardware
  clock, with a grandmaster present; the system clock's own offset to it
  (phc2sys) is not read, so the state says so, and it counts only where
  neither chrony nor ntpd answers.
No daemon answering: unbounded.
"""
from dataclasses import asdict, dataclass
from typing import Optional

CLOCK_SCRIPT = r"""echo "@chrony"; chronyc -c tracking 2>/dev/null
echo "@ntpd"; ntpq -c 'rv 0 leap,offset,rootdisp,rootdelay' 2>/dev/null
echo "@ptp4l"; pmc -u -b 0 'GET TIME_STATUS_NP' 2>/dev/null
true"""

UNSYNCED_CHRONY = "Not synchronised"


@dataclass
class ClockState:
    source: str                     # chrony | ntpd | ptp4l | none
    error_ns: Optional[float]       # bound on |clock - reference|; None: unbounded
    offset_ns: Optional[float] = None
    note: str = ""

    def to_dict(self):
        return asdict(self)

    @property
    def text(self):
        if self.error_ns is None:
            return f"unbounded ({self.note or 'no synchronisation daemon answered'})"
        return f"± {format_error(self.error_ns)} ({self.source})"


def format_error(ns):
    """'0.8 ms', '350 ns', '12 µs'."""
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.3g} µs"
    return f"{ns:.0f} ns"


def parse_clock(text):
    """The script's output -> the tightest bound of the system clock's
    daemons (chrony, ntpd), else ptp4l's (the NIC clock's only), else an
    unbounded state naming why."""
    sections, current = {}, None
    for line in text.splitlines():
        if line.startswith("@"):
            current = line[1:].strip()
            sections[current] = []
        elif current is not None and line.strip():
            sections[current].append(line.strip())
    system = [s for s in (_chrony(sections.get("chrony", [])), _ntpd(sections.get("ntpd", []))) if s is not None]
    ptp = _ptp4l(sections.get("ptp4l", []))
    bounded = [s for s in system if s.error_ns is not None]
    if bounded:
        # the receiver's timestamps are the system clock's, which chrony or
        # ntpd bounds; ptp4l's offset is the NIC's own clock's
        return min(bounded, key=lambda s: s.error_ns)
    if ptp is not None and ptp.error_ns is not None:
        return ptp
    states = system + ([ptp] if ptp is not None else [])
    if states:
        return states[0]
    return ClockState("none", None, note="no synchronisation daemon answered (chrony, ntpd, ptp4l)")


def _number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value == value and abs(value) != float("inf") else None


def _chrony(lines):
    rows = [line.split(",") for line in lines if line.count(",") >= 13]
    if not rows:
        return None
    f = rows[-1]
    if f[13].strip() == UNSYNCED_CHRONY:
        return ClockState("chrony", None, note="chrony: not synchronised")
    offset, delay, dispersion = _number(f[4]), _number(f[10]), _number(f[11])
    if None in (offset, delay, dispersion):
        return ClockState("chrony", None, note="chrony: tracking unreadable")
    return ClockState("chrony", (abs(offset) + dispersion + delay / 2) * 1e9, offset * 1e9)


def _ntpd(lines):
    values = {}
    for part in ",".join(lines).split(","):
        key, sep, value = part.strip().partition("=")
        if sep:
            values[key.strip()] = value.strip()
    if "offset" not in values:
        return None
    if values.get("leap") == "11":
        return ClockState("ntpd", None, note="ntpd: not synchronised (leap 11)")
    offset, disp, delay = (_number(values.get(k)) for k in ("offset", "rootdisp", "rootdelay"))
    if None in (offset, disp, delay):
        return ClockState("ntpd", None, note="ntpd: variables unreadable")
    return ClockState("ntpd", (abs(offset) + disp + delay / 2) * 1e6, offset * 1e6)


def _ptp4l(lines):
    values = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 2:
            values[parts[0]] = parts[1]
    if "master_offset" not in values:
        return None
    offset = _number(values["master_offset"])
    if values.get("gmPresent") != "true" or offset is None:
        return ClockState("ptp4l", None, note="ptp4l: no grandmaster")
    return ClockState("ptp4l", abs(offset), offset,
                      note="the PTP hardware clock's offset; the system clock's (phc2sys) is not read")


def pair_error(states):
    """The error bound of a latency measured across hosts with these clock
    states (each host's bound to the common reference, summed; None when
    any is unbounded)."""
    errors = [s.error_ns for s in states]
    return None if not errors or any(e is None for e in errors) else sum(errors)


def read_clocks(session_of, hosts):
    """{host: ClockState} read over `session_of(host)`; never raises (a host
    that cannot be read is unbounded, with the reason)."""
    out = {}
    for host in hosts:
        try:
            _, text, _ = session_of(host).run(CLOCK_SCRIPT, timeout=20)
            out[host] = parse_clock(text)
        except Exception as exc:        # facts for the report: never stop a run
            out[host] = ClockState("none", None, note=f"could not read: {exc}")
    return out


def start_reads(block):
    """{host: ClockState} of a `conditions.latency_clock` block's start reads."""
    return {h: ClockState(**v["before"]) for h, v in ((block or {}).get("hosts") or {}).items() if v.get("before")}


def latency_clock(pairs, before, after=None):
    """The `conditions.latency_clock` block: `pairs` the (tx host, rx host)
    of each stream; `before`/`after`: {host: ClockState} read at the start
    and the end of the run (the worse of the two counts)."""
    pairs = sorted(set(pairs))
    if all(tx == rx for tx, rx in pairs):
        return {"shared": True, "error_ns": 0.0,
                "text": "one host clock: the sending and receiving ports share the tester's clock"}
    hosts = sorted({h for pair in pairs for h in pair})
    reads = [r for r in (before, after) if r]
    per_host = {h: {"before": before[h].to_dict() if before and h in before else None,
                    "after": after[h].to_dict() if after and h in after else None} for h in hosts}
    errors = []
    for tx, rx in pairs:
        if tx == rx:
            continue
        # a read that missed a host (none at the start) says nothing of the pair
        per_read = [pair_error([r[tx], r[rx]]) for r in reads if tx in r and rx in r]
        errors.append(None if not per_read or None in per_read else max(per_read))
    error = None if not errors or None in errors else max(errors)
    if error is None:
        why = sorted({s.note or s.source for r in reads for h, s in r.items() if h in hosts and s.error_ns is None})
        text = "unbounded: clocks not synchronised" + (f" ({'; '.join(why)})" if why else "")
    else:
        sources = sorted({s.source for r in reads for h, s in r.items() if h in hosts})
        text = f"± {format_error(error)} ({', '.join(sources)})"
    return {"shared": False, "error_ns": error, "text": text, "hosts": per_host}
