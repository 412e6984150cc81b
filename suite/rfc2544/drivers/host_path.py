"""What a tester host's own counters say about its packet path during a
trial (pure: parsing and deltas; the reads ride in the trial's counter
batches, drivers/readings.py).

- /proc/net/softnet_stat, per CPU: `dropped`, frames the input backlog
  had no room for; `time_squeeze`, the times the receive softirq ran out
  of budget or time with work left (the path fell behind).
- The receiving ports' NIC drops: rx_dropped, rx_missed_errors,
  rx_fifo_errors, rx_over_errors.
A tester that sends on the CPUs of its own receive path (or of a DUT
namespace on the same machine) starves it: frames dropped there are lost
on the tester, not by the DUT (engine/starved.py names such trials).
"""
import math
from dataclasses import asdict, dataclass

from rfc2544.drivers import counters

SOFTNET = "/proc/net/softnet_stat"
NIC_DROPS = ("rx_dropped", "rx_missed_errors", "rx_fifo_errors", "rx_over_errors")


@dataclass(frozen=True)
class PathCounters:
    dropped: int = 0        # softnet backlog drops, all CPUs
    squeezed: int = 0       # softnet time_squeeze, all CPUs
    nic_drops: int = 0      # the receiving ports' NIC drops

    def since(self, before):
        return PathCounters(*(max(a - b, 0) for a, b in zip(asdict(self).values(), asdict(before).values())))

    def to_dict(self):
        return asdict(self)


def path_files(rx_ports):
    """The files to read on a tester host receiving on `rx_ports`."""
    return [SOFTNET] + [p for port in rx_ports for p in counters.counter_paths(port, NIC_DROPS)]


def parse(files):
    """PathCounters of one read ({path: text}); None without softnet_stat
    (an old read, or a host that cannot show it)."""
    text = files.get(SOFTNET)
    if text is None:
        return None
    dropped = squeezed = 0
    for line in text.splitlines():
        cols = line.split()
        try:
            dropped += int(cols[1], 16)
            squeezed += int(cols[2], 16)
        except (IndexError, ValueError):
            continue
    nic = 0
    for path, value in files.items():
        if path.startswith("/sys/class/net/") and path.rsplit("/", 1)[-1] in NIC_DROPS:
            try:
                nic += int(value.strip() or 0)
            except ValueError:
                continue
    return PathCounters(dropped, squeezed, nic)


def dropped_here(counts):
    """Frames a host's own path dropped, from a trial's recorded
    `host_path` entry (PathCounters.to_dict)."""
    return counts.get("dropped", 0) + counts.get("nic_drops", 0)


def with_holds(counts, rx, rates):
    """`counts` ({host: PathCounters.to_dict()}) with `held_ns` and
    `held_frames` on each host whose receiver timed its arrivals (`rx`:
    {host: pgrx state} read at level time, the hosts that carry a DUT's
    forwarding only): the longest a frame arrived later after the frame
    before it than it left (its delay variation max, pgrx `jitter`), how
    long the path held frames back, and the frames due meanwhile at
    `rates[host]`, the frames/s that host receives."""
    out = {h: dict(c) for h, c in counts.items()}
    for host, state in rx.items():
        jitter = getattr(state, "stats", {}).get("jitter")
        if jitter is not None and jitter.n > 0 and host in out:
            out[host]["held_ns"] = int(jitter.max)
            out[host]["held_frames"] = math.ceil(jitter.max * rates.get(host, 0) / 1e9)
    return out


def deltas(before, after):
    """{host: PathCounters during the trial} of the hosts read both times."""
    return {h: after[h].since(before[h]) for h in sorted(after) if h in before}
