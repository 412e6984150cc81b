"""Interface counters (/sys/class/net/IF/statistics): the fallback receiver.

Lower fidelity than pgrx: the counters cannot be reset, so a trial uses the
difference between two readings; they count every frame on the port (ARP,
neighbour discovery ...), not only test frames; and they give neither
per-stream loss when streams share a port, nor reordering, nor latency.
"""
from dataclasses import dataclass
from typing import Dict, Iterable

from rfc2544.errors import InfraError

from rfc2544.drivers import validate

RX_COUNTERS = ("rx_packets", "rx_bytes", "rx_dropped", "rx_errors", "rx_missed_errors")
TX_COUNTERS = ("tx_packets", "tx_bytes", "tx_dropped", "tx_errors")


def counter_paths(ifname, names=RX_COUNTERS):
    ifname = validate.ifname(ifname)
    return [f"/sys/class/net/{ifname}/statistics/{n}" for n in names]


@dataclass(frozen=True)
class Snapshot:
    values: Dict[str, Dict[str, int]]   # ifname -> counter -> value

    def delta(self, earlier: "Snapshot") -> Dict[str, Dict[str, int]]:
        out = {}
        for ifname, counters in self.values.items():
            before = earlier.values.get(ifname, {})
            out[ifname] = {k: v - before.get(k, 0) for k, v in counters.items()}
        return out


def parse_reads(files: Dict[str, str], ifnames: Iterable[str]) -> Snapshot:
    """{path: text} from a batch read -> Snapshot. Pure.

    Every requested interface must have its rx_packets; other counters are
    optional (not every driver has rx_missed_errors)."""
    values = {}
    for ifname in ifnames:
        counters = {}
        prefix = f"/sys/class/net/{ifname}/statistics/"
        for path, text in files.items():
            if path.startswith(prefix):
                name = path[len(prefix):]
                text = text.strip()
                if not text.isdigit():
                    raise InfraError(f"{path}: '{text}' is not a counter value")
                counters[name] = int(text)
        if "rx_packets" not in counters and "tx_packets" not in counters:
            raise InfraError(f"interface counters of {ifname} could not be read")
        values[ifname] = counters
    return Snapshot(values)
