"""`rfc2544 lab demo`: a fixed count through the lab's DUT with the kernel's
own pktgen, counted at the RX port. It states counts only: it is not an
RFC 2544 measurement (no throughput search, no latency)."""
import json
import time
from pathlib import Path

from rfc2544.config import inventory
from rfc2544.errors import InfraError
from rfc2544.lab import flow_counter, kernel_pktgen
from rfc2544.lab.topology import addr

FRAME_SIZE = 60     # bytes without FCS: the 64-byte RFC 2544 frame


def run(lab, out_dir, count, echo=print):
    st = lab.status()
    if not st["up"]:
        raise InfraError(f"lab '{lab.name}' is not up: run `rfc2544 lab up --name {lab.name}` first")
    inv = inventory.load(lab.inventory_path)
    stream = inv.streams[0]
    tx = inv.hosts[stream.tx_host].ports[stream.tx_port]
    rx = inv.hosts[stream.rx_host].ports[stream.rx_port]
    dut_host = inv.duts[0]
    dut_in = next(p for p in dut_host.ports.values() if p.mac == tx.peer_mac)
    dut_out = next(p for p in dut_host.ports.values() if p.mac == rx.peer_mac)
    src, dst = addr(tx.ipv4), addr(rx.ipv4)
    tester, dut = lab.connect(stream.tx_host), lab.connect("dut")
    dut_prefix = lab.dut_cmd("") if dut_host.netns else ""
    try:
        def dut_counter(port, which):
            return int(dut.run(dut_prefix + f"cat /sys/class/net/{port}/statistics/{which}")[1])
        before = (dut_counter(dut_in.name, "rx_packets"), dut_counter(dut_out.name, "tx_packets"))
        try:
            with flow_counter.FlowCounter(tester, rx.name, src, dst) as counter:
                result = kernel_pktgen.send(tester, tx.name, count, src, dst, tx.peer_mac, FRAME_SIZE)
                time.sleep(0.5)     # frames still in the DUT's queues
                received = counter.count()
        finally:
            kernel_pktgen.unload(tester)
        after = (dut_counter(dut_in.name, "rx_packets"), dut_counter(dut_out.name, "tx_packets"))
    finally:
        tester.close()
        dut.close()
    report = {
        "lab": lab.name, "topology": st["topology"], "accel": st["accel"],
        "kernel_release": st["kernel_release"], "frame_size": FRAME_SIZE,
        "requested": count, "sent": result.sent, "pktgen_errors": result.errors,
        "pktgen_usec": result.usec, "offered_pps": round(result.pps),
        "dut_in_packets": after[0] - before[0], "dut_out_packets": after[1] - before[1],
        "received": received, "lost": result.sent - received,
        "note": "count check through the lab DUT with the kernel's pktgen; not an RFC 2544 measurement",
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lab-demo.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        f"lab demo: lab '{lab.name}', {st['topology']} topology, {st['accel'].upper()}, kernel {st['kernel_release']}",
        f"  sent     {result.sent} frames of {FRAME_SIZE} bytes from {stream.tx_host}:{tx.name} "
        f"(kernel pktgen: {result.errors} errors, {result.usec / 1e6:.2f} s, {result.pps:.0f} frames/s offered)",
        f"  DUT      {report['dut_in_packets']} packets in on {dut_in.name}, "
        f"{report['dut_out_packets']} out on {dut_out.name} (interface counters, all traffic)",
        f"  received {received} test frames on {stream.rx_host}:{rx.name} (tc flower counter)",
        f"  lost     {report['lost']} ({100.0 * report['lost'] / result.sent if result.sent else 0:.3f} %)",
        "  This is a count check through the DUT, not an RFC 2544 measurement:",
        "  no throughput search, latency or frame-loss-rate sweep was run.",
        f"  written: {out / 'lab-demo.json'}",
    ]
    (out / "lab-demo.txt").write_text("\n".join(lines) + "\n")
    for line in lines:
        echo(line)
    return report
