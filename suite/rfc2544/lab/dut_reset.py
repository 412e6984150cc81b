"""The lab DUT's reset command (inventory rfc2544_reset_cmd, RFC 2544 26.6).

The reset stops the DUT's IPv4 forwarding on its ingress port (dut0) for
OUTAGE_S seconds and turns it back on. One python3 process does both writes
to /proc/sys (a process spawn costs ~0.5 s under TCG, so `sysctl; sleep;
sysctl` would make an outage of unknown length) and appends the outage it
made, read from CLOCK_MONOTONIC right around the two writes, to
OUTAGE_LOG inside the tester VM: "<down_s> <up_s>" per reset. That line is
the ground truth a lab test compares the suite's reset time with.

Clearing forwarding on one device keeps every route and static neighbour
entry (a link down would flush the permanent neighbours) and flushes the
route cache, so the first frame after the write is dropped and forwarding
resumes exactly at the second write.
"""
import shlex

from rfc2544.errors import BadInput
from rfc2544.lab.topology import DUT_PORTS

OUTAGE_S = 0.5
OUTAGE_LOG = "/run/rfc2544-reset-outages"
RESET_PORT = DUT_PORTS[0]       # the DUT's ingress (from tester:tx0)

_SCRIPT = '''\
import os, sys, time
port, hold, log = sys.argv[1], float(sys.argv[2]), sys.argv[3]
fd = os.open("/proc/sys/net/ipv4/conf/%s/forwarding" % port, os.O_WRONLY)
os.write(fd, b"0"); down = time.monotonic()
time.sleep(hold)
os.pwrite(fd, b"1", 0); up = time.monotonic()
os.close(fd)
with open(log, "a") as f: f.write("%.6f %.6f\\n" % (down, up))
'''


def command(outage_s=OUTAGE_S, port=RESET_PORT, log=OUTAGE_LOG):
    """The shell command (run in the DUT's namespace) that makes one outage."""
    if not isinstance(outage_s, (int, float)) or isinstance(outage_s, bool) or not 0 < outage_s <= 60:
        raise BadInput(f"reset outage must be 0 < s <= 60, not {outage_s!r}")
    if port not in DUT_PORTS:
        raise BadInput(f"reset port must be one of {DUT_PORTS}, not {port!r}")
    return " ".join(["python3", "-c", shlex.quote(_SCRIPT), shlex.quote(port),
                     shlex.quote(f"{outage_s:g}"), shlex.quote(log)])


def parse_outages(text):
    """[(down_s, up_s), ...] from the outage log; the outage is up - down."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2:
            raise ValueError(f"outage log line {line!r}: expected '<down_s> <up_s>'")
        down, up = float(fields[0]), float(fields[1])
        if up < down:
            raise ValueError(f"outage log line {line!r}: up before down")
        out.append((down, up))
    return out
