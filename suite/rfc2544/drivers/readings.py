"""Reading a trial's counters: which files per host, and what they say.

One read per host: a single grep over generator and receiver files, so tx
and rx counters of a host are taken within microseconds.
"""
from rfc2544.errors import InfraError

from rfc2544.drivers import counters as counters_mod
from rfc2544.drivers import host_path
from rfc2544.drivers import pgrx as pgrx_mod
from rfc2544.drivers import pktgen
from rfc2544.drivers.script import Batch

RECEIVER_PGRX = "pgrx"   # = detection.RECEIVER_PGRX (drivers do not import the package top)


class CounterReader:
    """Batches that read the counters of `plans`, and their parsing, for the
    receiver in `detection` (detection.detect_tools)."""

    def __init__(self, plans, detection, extra_devices=()):
        self.plans = plans
        self.detection = detection
        self.extra_devices = list(extra_devices)     # (host, pktgen device) read beside the streams
        self.tx_hosts = sorted({p.tx_host for p in plans})
        self.rx_hosts = sorted({p.rx_host for p in plans})
        self.pgrx = detection["receiver"] == RECEIVER_PGRX

    def paths(self, host, with_tx=True, with_rx=True):
        paths = []
        if with_tx and host in self.tx_hosts:
            paths += [pktgen.device_path(p.device) for p in self.plans if p.tx_host == host]
            paths += [pktgen.device_path(d) for h, d in self.extra_devices if h == host]
        if with_rx and host in self.rx_hosts:
            if self.pgrx:
                paths.append(pgrx_mod.PGRX)
            else:
                ports = self.detection["rx_ports"][host]
                paths += [p for port in ports for p in counters_mod.counter_paths(port)]
        return paths

    def batches(self, tag, with_tx=True, with_rx=True):
        """host -> a Batch reading its counters under `tag`; a whole read
        (tx and rx) also reads the host's packet path (host_path)."""
        batches = {}
        for host in sorted(set(self.tx_hosts) | set(self.rx_hosts)):
            paths = self.paths(host, with_tx, with_rx)
            if with_tx and with_rx:
                rx_ports = sorted({p.rx_port for p in self.plans if p.rx_host == host})
                paths += [f for f in host_path.path_files(rx_ports) if f not in paths]
            if paths:
                batches[host] = Batch().read(tag, *paths)
        return batches

    def parse(self, outputs, tag):
        """-> (tx device states by stream index, rx readings by host)."""
        tx, rx = {}, {}
        for host, out in outputs.items():
            if tag not in out.reads:
                continue
            if tag in out.read_failures:
                raise InfraError(f"{host}: reading counters failed: {out.read_failures[tag]}")
            files = out.reads[tag]
            for p in self.plans:
                if p.tx_host == host and pktgen.device_path(p.device) in files:
                    tx[p.index] = pktgen.parse_device(files[pktgen.device_path(p.device)])
            if host in self.rx_hosts:
                if self.pgrx:
                    if pgrx_mod.PGRX in files:
                        rx[host] = pgrx_mod.parse(files[pgrx_mod.PGRX])
                elif any(path.startswith("/sys/class/net/") for path in files):
                    rx[host] = counters_mod.parse_reads(files, self.detection["rx_ports"][host])
        return tx, rx

    def parse_path(self, outputs, tag):
        """-> {host: host_path.PathCounters} of the hosts read under `tag`."""
        out = {}
        for host, o in outputs.items():
            counters = host_path.parse(o.reads.get(tag, {}))
            if counters is not None:
                out[host] = counters
        return out

    def parse_extra(self, outputs, tag):
        """-> {(host, device): device state} of the extra devices read under `tag`."""
        out = {}
        for host, device in self.extra_devices:
            files = outputs.get(host).reads.get(tag, {}) if host in outputs else {}
            if pktgen.device_path(device) in files:
                out[(host, device)] = pktgen.parse_device(files[pktgen.device_path(device)])
        return out

    def parse_baselines(self, outputs, tag):
        """Interface counter baselines (they cannot be reset): host -> snapshot."""
        return {h: counters_mod.parse_reads(out.reads.get(tag, {}), self.detection["rx_ports"][h])
                for h, out in outputs.items()}


def rx_totals(rx, base):
    """(test frames received, frames known lost by sequence gaps)."""
    total, gaps = 0, 0
    for host, reading in rx.items():
        if isinstance(reading, pgrx_mod.PgrxState):
            total += sum(s.unique for s in reading.streams)
            gaps += sum(s.lost for s in reading.streams)
        else:
            total += sum(d.get("rx_packets", 0) for d in reading.delta(base[host]).values())
    return total, gaps


def pktgen_sent(state):
    """Frames a device sent: its run result, else its live count."""
    if state.run is not None:
        return state.run.packets
    return state.pkts_sofar or 0
