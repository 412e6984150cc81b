"""Facts about the hosts for the report: kernel, CPU, NICs, module, tuning.

One command per host; `parse_facts` is pure. Tuning hints name settings
that commonly distort software packet rates (CPU frequency scaling,
irqbalance moving interrupts during a trial).
"""
from rfc2544.drivers.ssh import quote

from rfc2544.drivers import validate

LATENCY_DEFINITION = ("bit-forwarding (RFC 1242): first bit out of the tester to first bit back, "
                      "measured in software: generator timestamp to arrival at the receiver hook")


def facts_script(ifnames):
    names = " ".join(quote(validate.ifname(i)) for i in ifnames)
    return rf"""echo "kernel $(uname -r)"
echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "cpus $(nproc)"
echo "governor $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo none)"
echo "irqbalance $(systemctl is-active irqbalance 2>/dev/null || echo unknown)"
echo "ip_forward $(cat /proc/sys/net/ipv4/ip_forward 2>/dev/null)"
echo "clock_sync $(timedatectl show -p NTPSynchronized --value 2>/dev/null || echo unknown)"
[ -r /sys/module/rfc2544_pktgen/version ] && echo "module_version $(cat /sys/module/rfc2544_pktgen/version)"
[ -r /proc/net/pktgen/pgctrl ] && echo "pktgen_banner $(head -n1 /proc/net/pktgen/pgctrl)"
for i in {names}; do
  echo "@nic $i"
  if command -v ethtool >/dev/null 2>&1; then ethtool -i "$i" 2>/dev/null; fi
  d=$(readlink /sys/class/net/"$i"/device/driver 2>/dev/null) && echo "sysfs-driver: ${{d##*/}}"
  echo "speed: $(cat /sys/class/net/"$i"/speed 2>/dev/null)"
  echo "mtu: $(cat /sys/class/net/"$i"/mtu 2>/dev/null)"
  echo "txqueuelen: $(cat /sys/class/net/"$i"/tx_queue_len 2>/dev/null)"
done
true"""


def parse_facts(text):
    """Pure: the facts script's output -> dict."""
    facts = {"nics": [], "tuning": {}}
    nic = None
    for line in text.splitlines():
        if line.startswith("@nic "):
            nic = {"name": line[5:].strip(), "driver": "", "firmware": "", "speed_mbps": None}
            facts["nics"].append(nic)
            continue
        if nic is not None:
            key, sep, value = line.partition(":")
            if not sep:
                continue
            key, value = key.strip(), value.strip()
            if key == "driver" and value:
                nic["driver"] = value
            elif key == "sysfs-driver" and value and not nic["driver"]:
                nic["driver"] = value
            elif key == "firmware-version":
                nic["firmware"] = value
            elif key == "version" and value:
                nic["driver_version"] = value
            elif key == "bus-info" and value:
                nic["bus"] = value
            elif key == "speed":
                # -1 or empty: no link speed (veth reports 10000 fixed)
                nic["speed_mbps"] = int(value) if value.isdigit() and int(value) > 0 else None
            elif key in ("mtu", "txqueuelen") and value.isdigit():
                nic[key] = int(value)
            continue
        word, _, rest = line.partition(" ")
        rest = rest.strip()
        if word in ("kernel", "cpu", "module_version", "pktgen_banner"):
            facts[word] = rest
        elif word == "cpus" and rest.isdigit():
            facts["cpus"] = int(rest)
        elif word in ("governor", "irqbalance", "ip_forward", "clock_sync"):
            facts["tuning"][word] = rest
    facts["hints"] = tuning_hints(facts)
    return facts


def tuning_hints(facts):
    t = facts.get("tuning", {})
    hints = []
    if t.get("governor") not in (None, "", "none", "performance"):
        hints.append(f"CPU frequency governor is '{t['governor']}': 'performance' gives steadier rates")
    if t.get("irqbalance") == "active":
        hints.append("irqbalance is active: it may move NIC interrupts during a trial")
    for nic in facts.get("nics", []):
        if nic.get("txqueuelen") == 0 and nic.get("driver") not in ("veth", "loopback"):
            hints.append(f"{nic['name']}: tx_queue_len is 0")
    return hints


def gather_conditions(tester):
    """The `conditions` block of results.json for an SSHTester."""
    det = tester.detect()
    inv = tester.inventory
    hosts = {}
    for name, host in sorted(inv.hosts.items()):
        ports = sorted(host.ports)
        try:
            status, out, err = tester.session(name).run(facts_script(ports), timeout=30)
            facts = parse_facts(out)
        except Exception as exc:  # a DUT we cannot read must not stop the run
            facts = {"error": str(exc), "nics": [], "tuning": {}, "hints": []}
        facts["role"] = "tester" if host.group == "testers" else "dut"
        if host.netns:
            facts["netns"] = host.netns
        hosts[name] = facts
    speeds = [inv.hosts[p.tx_host].ports[p.tx_port].speed_mbps for p in tester.plans]
    return {
        "generator": det["generator"],
        "receiver": det["receiver"],
        "fidelity": "full" if det["receiver"] == "pgrx" else "lower",
        "latency_definition": LATENCY_DEFINITION if det["receiver"] == "pgrx" else None,
        "link_speed_mbps": min(speeds) if all(speeds) else None,
        "streams": [{"tx": f"{p.tx_host}:{p.tx_port}", "rx": f"{p.rx_host}:{p.rx_port}"}
                    for p in tester.plans if p.generator == 0],
        "hosts": hosts,
        "notes": list(det["notes"]),
    }
