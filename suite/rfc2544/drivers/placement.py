"""Which CPU each generator sends from, and which CPUs the host's own
packet path needs (pure: facts from drivers.probe).

A tester host that also receives (its rx ports), or forwards (a DUT in a
network namespace of the same machine, as in the single lab), runs that
packet path in softirqs on the CPUs that its receive queues' IRQs and RPS
masks name. Generators that keep those CPUs busy hold the path back: it
then delivers in bursts, and the receiver's, the NIC's or a policer's drops
read as the DUT's loss (issue 56: -21 % with two generators on a 2-vCPU
lab). So by default the generators take only the other CPUs, sharing them
when there are more generators than free CPUs. `every_cpu` (the run's
`--generator-cpus all`) takes them all, the path's last; the run declares
it as a deviation.
"""
from dataclasses import dataclass
from typing import Dict, List, Set

from rfc2544.drivers.streams import stream_groups, tx_queue_of

GENERATOR_CPUS = ("free", "all")        # --generator-cpus: the default first


def packet_path_cpus(host, plans, probe):
    """CPUs that carry `host`'s packet path: those that count its receiving
    ports (RX IRQs, RPS) and those of a DUT namespace on the same machine
    (probe.forwarding_cpus). Empty: none known (no probe, or a port with
    neither an RX IRQ nor an RPS mask: then its softirqs run on whichever
    CPU delivers the frame, veth's being the sender's)."""
    if probe is None:
        return set()
    receiving = {p.rx_port for p in plans if p.rx_host == host}
    cpus = set(probe.forwarding_cpus)
    for name, counted in probe.rx_cpus.items():
        if name in receiving:
            cpus |= counted
    return cpus


def add_forwarding(host_probe, dut, ports, dut_probe):
    """Record on `host_probe` (a tester's) that DUT namespace `dut`, on the
    same machine, forwards through `ports`, on the CPUs `dut_probe` (its
    queue facts, None: unread) says count them (packet_path_cpus)."""
    for port in sorted(ports):
        name = f"{dut}:{port}"
        if name not in host_probe.forwarding_ports:
            host_probe.forwarding_ports.append(name)
        host_probe.forwarding_cpus |= dut_probe.rx_cpus.get(port, set()) if dut_probe else set()


def assign_threads(host, plans, extra, threads, probe=None, every_cpu=False):
    """{device: kpktgend thread} for tester `host`: its plans' devices,
    then `extra` (modifiers' devices); `threads`: its thread numbers (one
    per CPU); `probe`: its drivers.probe.HostProbe (NUMA nodes, the CPUs
    of its packet path, of its TX queues' IRQs), or None.
    The CPUs a generator may take: those outside the packet path
    (packet_path_cpus), or every CPU with `every_cpu` or where the path
    takes them all. A stream's generators take distinct CPUs while there
    are, then share the least used. Generator g on TX queue g whose IRQ is
    on one CPU (the host tuning role pins queue q's to one CPU each) takes
    that CPU if it may, is as little used as any and is on the port's NUMA
    node: the queue's completions are then handled where its frames are
    built. Otherwise each takes the least used so far of, in this order:
    the port's NUMA node's CPUs outside the path, the others outside it,
    then (every_cpu) the path's. With one generator per stream and no NUMA
    or receive facts this is round robin."""
    threads = sorted(threads)
    path = packet_path_cpus(host, plans, probe)
    outside = [t for t in threads if t not in path]
    allowed = threads if every_cpu or not outside else outside
    used = {t: 0 for t in threads}
    out = {}
    for group in stream_groups([p for p in plans if p.tx_host == host]):
        node = probe.numa.get(group[0].tx_ifname) if probe else None
        local = probe.node_cpus.get(node, set(threads)) if node is not None else set(threads)
        order = sorted(allowed, key=lambda t: (t in path, t not in local, threads.index(t)))
        taken = []
        for g in group:
            free = [t for t in order if t not in taken] or order
            own = _tx_irq_cpu(g, probe)
            least = min(used[c] for c in free)
            # the queue's IRQ CPU where it is as free as any, local and off the path
            if own in free and used[own] == least and own not in path and own in local:
                t = own
            else:
                t = min(free, key=lambda c: (used[c], free.index(c)))
            taken.append(t)
            used[t] += 1
            out[g.device] = t
    for device in extra:
        t = min(allowed, key=lambda c: (used[c], allowed.index(c)))
        used[t] += 1
        out[device] = t
    return out


def _tx_irq_cpu(plan, probe):
    """The one CPU the IRQ of plan's TX queue is on, or None: no probe, no
    queue of its own (one generator: the driver picks), no IRQ of its own,
    or one on several CPUs."""
    if probe is None:
        return None
    queue = tx_queue_of(plan, {(plan.tx_host, plan.tx_ifname): probe.tx_queues.get(plan.tx_ifname, 1)})
    cpus = probe.tx_irq_cpus.get(plan.tx_ifname, {}).get(queue, set()) if queue is not None else set()
    return next(iter(cpus)) if len(cpus) == 1 else None


@dataclass
class HostCpus:
    """Where a tester host sends and where its packet path runs: for
    doctor, the run's notes and conditions."""
    host: str
    sending: Dict[int, List[str]]     # CPU -> the devices on it
    path: Set[int]                    # packet_path_cpus
    path_ports: List[str]             # what the path carries: the host's rx ports, a DUT namespace's
    every_cpu: bool = False

    @property
    def starved(self):
        """CPUs that both send and carry the path."""
        return sorted(set(self.sending) & self.path)

    def summary(self):
        send = "; ".join(f"CPU {c}: {', '.join(d)}" for c, d in sorted(self.sending.items()))
        path = (f"CPU {_cpus(self.path)} ({', '.join(self.path_ports)})" if self.path
                else f"no CPU of its own ({', '.join(self.path_ports)})" if self.path_ports else "none")
        return f"{self.host}: generators on {send or 'no CPU'}; receive path on {path}"

    def warning(self, generators_asked=None):
        """What a run or doctor must say about this placement, or None."""
        if not self.path_ports or not self.sending:
            return None
        if not self.path:
            return (f"{self.host} receives or forwards ({', '.join(self.path_ports)}), but no CPU is known to "
                    "carry that packet path (no RX IRQ, no RPS mask): its softirqs run on the sending CPUs, "
                    "so generators that take them all can starve it. An RPS mask on the receiving ports "
                    "(/sys/class/net/PORT/queues/rx-0/rps_cpus) gives it CPUs the generators then leave free")
        if not self.starved:
            return None
        how = ("--generator-cpus all takes them (a deviation)" if self.every_cpu
               else "every CPU carries it")
        return (f"{self.host}: generators on CPU(s) {_cpus(self.starved)}, which carry its receive path "
                f"({', '.join(self.path_ports)}): {how}, so none is left for receiving; a starved receive path "
                "delivers in bursts and its drops read as the DUT's loss")


def host_cpus(host, plans, placed, probe, every_cpu=False, forwarding_ports=()):
    """HostCpus of tester `host` from assign_threads' `placed` {device: CPU}."""
    sending: Dict[int, List[str]] = {}
    for device, cpu in placed.items():
        sending.setdefault(cpu, []).append(device)
    ports = sorted({p.rx_port for p in plans if p.rx_host == host}) + list(forwarding_ports)
    return HostCpus(host, sending, packet_path_cpus(host, plans, probe), ports, every_cpu)


def _cpus(cpus):
    return ",".join(str(c) for c in sorted(cpus))
