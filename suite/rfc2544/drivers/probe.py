"""Which traffic tools a host has (one command, parsed by a pure function)."""
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set

from rfc2544.drivers import pktgen

# Per interface: its TX and RX queues and NUMA node, each RX queue's RPS
# mask, the IRQs named after it in /proc/interrupts ("eth0-TxRx-3",
# "ice-eth0-TxRx-3", "eth0-tx-0") with the CPUs they are on in effect (the
# smp_affinity_list is every CPU until pinned) and their names (a
# virtio-net device's "virtio2-input.0" and "virtio2-output.0", named after
# its virtio device, as "IF-rx-0" and "IF-tx-0"); each NUMA node's CPUs.
# doctor runs it too.
QUEUE_SCRIPT = r"""for d in /sys/class/net/*; do
  [ -d "$d/queues" ] || continue
  n=${d##*/}
  echo "queues $n $(ls -d "$d"/queues/tx-* 2>/dev/null | wc -l) $(ls -d "$d"/queues/rx-* 2>/dev/null | wc -l) \
$(cat "$d"/device/numa_node 2>/dev/null || echo -1)"
  for r in "$d"/queues/rx-*; do [ -e "$r/rps_cpus" ] && echo "rps $n ${r##*/} $(cat "$r/rps_cpus")"; done
  e=$(printf '%s' "$n" | sed 's/[.]/\\./g')
  grep -E "(^|[[:space:]-])$e([^[:alnum:]]|\$)" /proc/interrupts 2>/dev/null | while read -r i rest; do
    i=${i%:}
    a=$(cat /proc/irq/$i/effective_affinity_list 2>/dev/null)
    [ -n "$a" ] || a=$(cat /proc/irq/$i/smp_affinity_list 2>/dev/null)
    echo "irq $n $i ${a:--} ${rest##* }"
  done
  v=$(readlink "$d/device" 2>/dev/null); v=${v##*/}
  case "$v" in virtio*)
    grep -E "[[:space:]]$v-(input|output)[.][0-9]+\$" /proc/interrupts 2>/dev/null | while read -r i rest; do
      i=${i%:}; q=${rest##* }
      a=$(cat /proc/irq/$i/effective_affinity_list 2>/dev/null)
      [ -n "$a" ] || a=$(cat /proc/irq/$i/smp_affinity_list 2>/dev/null)
      case "$q" in *-input.*) k=rx ;; *) k=tx ;; esac
      echo "irq $n $i ${a:--} $n-$k-${q##*.}"
    done ;;
  esac
done
for n in /sys/devices/system/node/node*; do [ -e "$n/cpulist" ] && echo "node ${n##*node} $(cat "$n/cpulist")"; done
true"""

PROBE_SCRIPT = r"""p=/proc/net/pktgen
err=
if [ ! -e $p/pgctrl ] && [ "$LOAD" = 1 ]; then err=$(modprobe pktgen 2>&1) || true; fi
[ -e $p/pgctrl ] && echo "pgctrl $(head -n1 $p/pgctrl)"
[ -e $p/pgrx ] && echo pgrx
for f in $p/kpktgend_*; do [ -e "$f" ] && echo "thread ${f##*_}"; done
[ -r /sys/module/rfc2544_pktgen/version ] && echo "modver $(cat /sys/module/rfc2544_pktgen/version)"
[ -n "$err" ] && echo "modprobe_error $(echo "$err" | head -n1)"
""" + QUEUE_SCRIPT


@dataclass
class HostProbe:
    pgctrl: bool = False
    pgrx: bool = False
    banner: str = ""
    version: Optional[str] = None
    module_version: Optional[str] = None
    threads: List[int] = field(default_factory=list)
    modprobe_error: Optional[str] = None
    tx_queues: Dict[str, int] = field(default_factory=dict)   # interface -> TX queues (sysfs)
    rx_queues: Dict[str, int] = field(default_factory=dict)   # interface -> RX queues (sysfs)
    numa: Dict[str, int] = field(default_factory=dict)        # interface -> its device's NUMA node
    rx_cpus: Dict[str, Set[int]] = field(default_factory=dict)  # interface -> CPUs its RPS and RX IRQs use
    node_cpus: Dict[int, Set[int]] = field(default_factory=dict)  # NUMA node -> its CPUs
    irq_cpus: Dict[str, Set[int]] = field(default_factory=dict)   # interface -> CPUs of all its named IRQs
    rps_cpus: Dict[str, Set[int]] = field(default_factory=dict)   # interface -> CPUs of its RPS masks
    # interface -> TX queue -> CPUs of that queue's own IRQ ("eth0-tx-0", "eth0-TxRx-0")
    tx_irq_cpus: Dict[str, Dict[int, Set[int]]] = field(default_factory=dict)
    # a DUT in a network namespace of this machine: the CPUs its ports'
    # RX IRQs and RPS masks name, and the ports (filled by the detection)
    forwarding_cpus: Set[int] = field(default_factory=set)
    forwarding_ports: List[str] = field(default_factory=list)


def irq_tx_queue(action, ifname):
    """(queue, tx_only) of an IRQ named `action` in /proc/interrupts when
    it is one TX queue's of `ifname` ("eth0-tx-3": 3, True; "eth0-TxRx-3",
    "ice-eth0-TxRx-3": 3, False), else None (an RX queue's, a link IRQ, a
    name without a queue). The host tuning role reads names the same way."""
    m = re.search(rf"(?:^|-){re.escape(ifname)}-(tx|txrx|rxtx|combined)-(\d+)$", action, re.I)
    return (int(m.group(2)), m.group(1).lower() == "tx") if m else None


def parse_probe(text) -> HostProbe:
    pr = HostProbe()
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "pgctrl":
            pr.pgctrl = True
            pr.banner, pr.version = pktgen.parse_banner(rest)
        elif word == "pgrx":
            pr.pgrx = True
        elif word == "thread" and rest.strip().isdigit():
            pr.threads.append(int(rest))
        elif word == "modver":
            pr.module_version = rest.strip() or None
        elif word == "modprobe_error":
            pr.modprobe_error = rest.strip() or None
        elif word == "queues":
            parts = rest.split()
            if len(parts) == 4 and all(x.lstrip("-").isdigit() for x in parts[1:]):
                pr.tx_queues[parts[0]], pr.rx_queues[parts[0]] = int(parts[1]), int(parts[2])
                if int(parts[3]) >= 0:      # -1: no node
                    pr.numa[parts[0]] = int(parts[3])
        elif word == "rps":
            parts = rest.split()
            if len(parts) == 3:
                cpus = cpu_mask(parts[2])
                pr.rps_cpus.setdefault(parts[0], set()).update(cpus)
                pr.rx_cpus.setdefault(parts[0], set()).update(cpus)
        elif word == "irq":
            _irq_fact(pr, rest.split())
        elif word == "node":
            node, _, value = rest.strip().partition(" ")
            if node.isdigit():
                pr.node_cpus[int(node)] = cpu_list(value)
    pr.threads.sort()
    return pr


def _irq_fact(pr, parts):
    """`irq IFNAME IRQ CPUS NAME`: every IRQ counts in irq_cpus; one of a
    TX queue in tx_irq_cpus; all but a TX-only one in rx_cpus (the CPUs
    that count what the interface receives)."""
    if len(parts) < 3 or not parts[1].isdigit():
        return
    name, cpus = parts[0], cpu_list(parts[2])
    pr.irq_cpus.setdefault(name, set()).update(cpus)
    queue = irq_tx_queue(parts[3], name) if len(parts) > 3 else None
    if queue is not None:
        pr.tx_irq_cpus.setdefault(name, {}).setdefault(queue[0], set()).update(cpus)
    if queue is None or not queue[1]:
        pr.rx_cpus.setdefault(name, set()).update(cpus)


def cpu_list(text):
    """CPUs of a CPU list ("0-3,8"; sysfs cpulist, smp_affinity_list)."""
    cpus = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def cpu_mask(text):
    """CPUs of a hex CPU mask ("00000003", words separated by commas)."""
    try:
        bits = int(text.strip().replace(",", ""), 16)
    except ValueError:
        return set()
    return {i for i in range(bits.bit_length()) if bits >> i & 1}


def probe_host(session, load_pktgen=True) -> HostProbe:
    script = f"LOAD={'1' if load_pktgen else '0'}\n{PROBE_SCRIPT}"
    status, out, err = session.run(script, timeout=30)
    return parse_probe(out)
