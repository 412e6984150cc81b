"""Departure spacing measured on a tester's calibration link, for a
generator that records no departures (the in-tree pktgen).

The inventory names two ports of a tester cabled to each other
(`rfc2544_calibration_link: {tx: cal0, rx: cal1}`). The tester's own
generator sends on `tx` at a given rate and frame size, frames addressed to
the sending port itself (nothing is forwarded or answered), while tcpdump
on `rx` records each arrival with the kernel's nanosecond receive
timestamp. Over a cable (or the lab's veth pair, where the timestamp is
taken in the sender's own transmit call) the arrival gaps are the
departure gaps, give or take the receiving NIC's own timing;
pacing.spacing_of_arrivals turns them into a Spacing.

The measurement shares the tester host's pktgen with the trials: it
replaces the generator's devices, so the trial engine sets its own up
again afterwards.
"""
import shlex

from rfc2544.config import inventory as inventory_mod
from rfc2544.drivers import pktgen, validate
from rfc2544.errors import InfraError
from rfc2544.engine.pacing import scaled_to, spacing_of_arrivals
from rfc2544.model import TrialSpec

# fixed addresses of the RFC 2544 test range: the frames never leave the link
LINK_ADDRESSES = {"ipv4": ("198.18.255.1/30", "198.18.255.2/30"),
                  "ipv6": ("2001:2:0:ff::1/64", "2001:2:0:ff::2/64")}
CAPTURE_DIR = "/run/rfc2544-calibration-link"
MAX_SECONDS = 10.0      # the longest measurement one estimate takes
SNAPLEN = 64            # bytes of each frame kept: the timestamp is the point
PCAP_HEADER, RECORD_HEADER = 24, 16     # pcap file header, per-frame record header
# After the last frame: wait until the capture holds every frame sent, or
# has not grown for SETTLE_S (frames lost on the link), at most WAIT_MAX_S.
SETTLE_S, WAIT_MAX_S = 3.0, 20.0
FULL_SHARE = 0.98       # of the frames asked: a capture with fewer was a run cut short


def link_host(inventory):
    """The first tester host with a calibration link, or None."""
    return next((h for h in inventory.testers if h.calibration_link), None)


class LinkPacing:
    """Spacing estimates on the calibration link of `tester`'s inventory
    (an SSHTester whose sessions it borrows). One measurement per frame
    size, IP version and rate, cached for the run."""

    def __init__(self, tester, host):
        self.tester = tester
        self.host = host
        self.tx, self.rx = host.calibration_link
        self._link_testers = {}     # by generators on the link's tx port
        self._cache = {}

    def estimate(self, spec, frames):
        """The spacing the generator shows on the link at `spec`'s rate and
        frame size, close frames scaled to a trial of `frames` frames."""
        key = (spec.frame_size, spec.ipv6, round(spec.load_fps))
        if key not in self._cache:
            self._cache[key] = self.measure(spec.frame_size, spec.load_fps, min(spec.duration_s, MAX_SECONDS),
                                            spec.ipv6)[2]
        return scaled_to(self._cache[key], frames)

    def measure(self, frame_size, fps, duration_s, ipv6=False, attempts=2):
        """Send `duration_s` worth of frames on the link at `fps` while
        capturing:
        (frames sent, sending time in s, the arrivals' Spacing or None when
        fewer than two frames arrived). A run whose capture holds less than
        FULL_SHARE of the frames asked is measured again: it was cut short
        (CI: a loaded tester's in-tree pktgen started 2 s late and sent 134
        of 6000 before its deadline), and its spacing would be of a fragment."""
        asked = round(fps * duration_s)
        for attempt in range(attempts):
            got = self._measure_once(frame_size, fps, duration_s, ipv6)
            if got[2] is not None and got[2].frames >= FULL_SHARE * asked:
                break
        return got

    def _measure_once(self, frame_size, fps, duration_s, ipv6):
        link = self._link()
        link.engine.ready = False       # the trials' set-up replaced the link's devices
        session = self.tester.session(self.host.name)
        tx_mac = link.plans[0].tx_mac
        d = CAPTURE_DIR
        # --immediate-mode: each frame to tcpdump as it arrives, not a ring
        # block at a time; -U: each written at once. The file's size then
        # says how many frames tcpdump has taken (SIGINT drops the rest).
        session.run(
            f"rm -rf {d} && mkdir -m 700 {d} && "
            f"{{ nohup tcpdump -i {shlex.quote(self.rx)} -nn -s {SNAPLEN} -B 16384 --immediate-mode -U "
            f"--time-stamp-precision=nano -w {d}/cap.pcap ether src {tx_mac} "
            f"</dev/null >/dev/null 2>{d}/err & echo $! > {d}/pid; }} && "
            f"for i in $(seq 300); do grep -q 'listening on' {d}/err && exit 0; sleep 0.1; done; "
            f"cat {d}/err >&2; kill $(cat {d}/pid) 2>/dev/null; exit 1",
            timeout=30, check=True)
        try:
            frames, elapsed, _ = link.send_paced(frame_size, fps, duration_s, ipv6=ipv6)
            self._wait_for_capture(session, frames, frame_size)
        finally:
            self.tester.engine.ready = False     # and the link's replace the trials' devices
            session.run(f"kill -INT $(cat {d}/pid) 2>/dev/null; "
                        f"for i in $(seq 50); do kill -0 $(cat {d}/pid) 2>/dev/null || break; sleep 0.1; done",
                        timeout=30)
        status, out, err = session.run(
            f"tcpdump -r {d}/cap.pcap -nn -tt --time-stamp-precision=nano 2>/dev/null | cut -d' ' -f1; "
            f"rm -rf {d}", timeout=60)
        if status != 0:
            raise InfraError(f"{self.host.name}: reading the calibration link's capture failed: {err.strip()}")
        return frames, elapsed, spacing_of_arrivals(parse_times(out), fps)

    def count(self, frame_size, fps, duration_s, ipv6=False, generators=1):
        """A trial on the link at `fps` for `duration_s` from `generators`
        generators (placed as a run's are: off the link's receive CPUs
        where the host has others), the link's rx port counting with the
        host's receiver as a run's rx ports do: the TrialResult (sent,
        counted, sending time). No capture: only the receiver's own cost is
        on the receiving side."""
        link = self._link(generators)
        link.engine.ready = False
        try:
            return link.run_trial(TrialSpec(frame_size=frame_size, load_fps=float(fps), duration_s=duration_s,
                                            ipv6=ipv6, learning=False, test="calibrate"))
        finally:
            self.tester.engine.ready = False

    @staticmethod
    def _wait_for_capture(session, frames, frame_size):
        """Until the capture file holds `frames` frames of `frame_size`, or
        stopped growing: a loaded tester's tcpdump may be seconds behind
        (CI: the last 0.28 s of a 1 s run missing after a fixed 1.2 s wait)."""
        want = PCAP_HEADER + frames * (RECORD_HEADER + min(SNAPLEN, pktgen.pkt_size_for_frame(frame_size)))
        polls, settle = int(WAIT_MAX_S / 0.1), int(SETTLE_S / 0.1)
        session.run(
            f"last=-1; same=0; for i in $(seq {polls}); do "
            f"s=$(stat -c %s {CAPTURE_DIR}/cap.pcap 2>/dev/null || echo 0); [ \"$s\" -ge {want} ] && break; "
            f"if [ \"$s\" = \"$last\" ]; then same=$((same + 1)); [ $same -ge {settle} ] && break; "
            f"else same=0; last=$s; fi; sleep 0.1; done",
            timeout=WAIT_MAX_S + 30)

    def _link(self, generators=1):
        """An SSHTester whose one stream is the calibration link (tx to rx)
        sent by `generators` generators, over the borrowed sessions, of the
        tester's own class (so this module and the tester's do not import
        each other)."""
        if generators not in self._link_testers:
            session = self.tester.session(self.host.name)
            status, out, err = session.run(
                f"cat /sys/class/net/{shlex.quote(self.tx)}/address /sys/class/net/{shlex.quote(self.rx)}/address")
            macs = out.split()
            if status != 0 or len(macs) != 2:
                raise InfraError(f"{self.host.name}: calibration link {self.tx} -> {self.rx}: cannot read the "
                                 f"ports' MAC addresses ({err.strip() or out.strip()}); is the link there?")
            tx_mac, rx_mac = (validate.mac(m) for m in macs)
            (tx4, rx4), (tx6, rx6) = LINK_ADDRESSES["ipv4"], LINK_ADDRESSES["ipv6"]
            ports = {self.tx: inventory_mod.Port(self.tx, "tx", tx_mac, tx4, tx6, peer_mac=rx_mac),
                     self.rx: inventory_mod.Port(self.rx, "rx", rx_mac, rx4, rx6, peer_mac=tx_mac)}
            host = inventory_mod.Host(self.host.name, "testers", self.host.address, self.host.port,
                                      self.host.user, ports=ports)
            inv = inventory_mod.Inventory(self.tester.inventory.path, {host.name: host},
                                          [inventory_mod.Stream(host.name, self.tx, host.name, self.rx)], {})
            self._link_testers[generators] = type(self.tester)(
                inv, waits={"learning_frames": 0}, sessions={host.name: session},
                generators=generators if generators > 1 else None,
                every_cpu=getattr(getattr(self.tester, "engine", None), "every_cpu", False))
        return self._link_testers[generators]


def parse_times(text):
    """Nanosecond timestamps from `tcpdump -tt --time-stamp-precision=nano`
    first fields ("SECONDS.NANOSECONDS"); other lines are skipped."""
    times = []
    for line in text.split():
        sec, dot, frac = line.partition(".")
        if dot and sec.isdigit() and frac.isdigit() and len(frac) == 9:
            times.append(int(sec) * 1_000_000_000 + int(frac))
    return times
