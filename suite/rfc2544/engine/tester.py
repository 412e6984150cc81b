"""SSHTester: runs RFC 2544 section 23 trials on the inventory's tester hosts.

A thin facade over three parts:

  transport.Transport   sessions and batches (one SSH connection per host,
                        start channels, stop_all with one reconnect);
  detection             which generator and receiver the hosts have;
  trial_engine          one trial: learning, configure-and-check-zero, the
                        rate schedule's segments (schedule.RateSchedule),
                        residual wait, final read, per-trial DUT hooks.
"""
import contextlib
import threading
import time
from dataclasses import dataclass, fields, replace

from rfc2544.drivers.pktgen import PGCTRL
from rfc2544.errors import BadInput, InfraError, Rfc2544Error
from rfc2544.model import TrialResult, TrialSpec

from rfc2544.engine.detection import (GENERATOR_INTREE, GENERATOR_MODULE, RECEIVER_COUNTERS,  # noqa: F401 (API)
                               RECEIVER_PGRX, detect_tools)
from rfc2544.drivers.hooks import hooks_of
from rfc2544.drivers.modifiers import plan_modifiers
from rfc2544.drivers.streams import frame_tags, plan_streams, stream_groups, tx_queue_of
from rfc2544.drivers.readings import pktgen_sent
from rfc2544.engine.schedule import RateSchedule, Segment, segments_of
from rfc2544.engine.transport import Transport
from rfc2544.engine.trial_engine import TrialEngine, TrialSettings

STOP_RACE_S = 0.5   # how long a just-sent start may take to reach pgctrl


@dataclass
class Waits:
    """RFC 2544 section 23 waits and learning traffic (the profile sets them)."""

    learning_s: float = 2.0       # after the learning frames
    residual_s: float = 2.0       # after the traffic, before reading counters
    settle_s: float = 0.0         # minimum gap between the end of one trial and the next
    learning_frames: int = 4      # per stream
    learning_fps: int = 1000      # per stream

    @classmethod
    def of(cls, value):
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise BadInput(f"waits must be a mapping, not {type(value).__name__}")
        known = {f.name for f in fields(cls)}
        for key in value:
            if key not in known:
                raise BadInput(f"waits.{key}: unknown (known: {', '.join(sorted(known))})")
        w = cls(**value)
        for key in ("learning_s", "residual_s", "settle_s"):
            v = getattr(w, key)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0 or v > 600:
                raise BadInput(f"waits.{key}: must be a number of seconds within 0..600")
        for key, high in (("learning_frames", 10**6), ("learning_fps", 10**7)):
            v = getattr(w, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < (0 if key == "learning_frames" else 1) or v > high:
                raise BadInput(f"waits.{key}: must be a whole number within 0..{high}")
        return w


class SSHTester:
    """model.Tester over an Inventory and SSH.

    Honours TrialSpec.recovery_load_fps (supports_recovery): the generator
    is told the new rate while it sends, timed from the first frames seen.

    SSHTester(inventory, waits=None, *, poll_interval_s=0.5, abort_lag_s=1.0,
              rate_tolerance=0.99, quiet_window_s=0.2, sessions=None, clock=time,
              bidirectional=False, modifiers=None)

    `waits`: a Waits or a dict of its fields. `poll_interval_s`: live
    counter reads while sending (progress, early abort). `abort_lag_s`: a
    frame not received this long after it was sent (and never less than the
    residual wait) counts as lost for the early abort. `rate_tolerance`: below this fraction of the intended rate
    the trial is tester-limited. `quiet_window_s`: with interface counters,
    the rx counters must stay unchanged this long before a trial.
    `sessions`: host name -> session object (tests only; default: SSH to
    every host once). `clock`: an object with monotonic() and sleep() (the
    time module; tests pass a simulated clock so no bound depends on how
    fast the machine runs). `bidirectional`: every inventory stream is also
    sent back at the same rate (drivers/streams.py). `modifiers`: the
    profile's modifiers section (profile_model.Modifiers; None: none), the
    broadcast and management frames beside every trial (drivers/modifiers.py).
    Use as a context manager or call close().
    """

    supports_recovery = True

    def __init__(self, inventory, waits=None, *, poll_interval_s=0.5, abort_lag_s=1.0,
                 rate_tolerance=0.99, quiet_window_s=0.2, sessions=None, clock=time,
                 bidirectional=False, modifiers=None, generators=None, every_cpu=False):
        self.inventory = inventory
        self._clock = clock
        self.settings = TrialSettings(Waits.of(waits), float(poll_interval_s), float(abort_lag_s),
                                      float(rate_tolerance), float(quiet_window_s))
        self.plans = plan_streams(inventory, bidirectional, generators)
        self.tx_hosts = sorted({p.tx_host for p in self.plans})
        self.rx_hosts = sorted({p.rx_host for p in self.plans})
        self.transport = Transport(inventory, self.tx_hosts, sessions, clock)
        self.modifiers = plan_modifiers(inventory, self.plans, modifiers) if modifiers else []
        self.engine = TrialEngine(self.transport, self.plans, self.settings, self.detect, clock,
                                  hooks=hooks_of(inventory), modifiers=(modifiers, self.modifiers),
                                  every_cpu=every_cpu)
        self._lock = threading.Lock()
        self._detected = None
        self._link_pacing = None
        # streams sent (use_streams) -> [plans, tx hosts, rx hosts, engine, detection]; None: the inventory's
        self._engines = {None: [self.plans, self.tx_hosts, self.rx_hosts, self.engine, None]}
        self._streams_key = None
        self._every_cpu, self._generators = every_cpu, generators

    # the constructor's settings, readable as before
    waits = property(lambda self: self.settings.waits)
    poll_interval_s = property(lambda self: self.settings.poll_interval_s)
    abort_lag_s = property(lambda self: self.settings.abort_lag_s)
    rate_tolerance = property(lambda self: self.settings.rate_tolerance)
    quiet_window_s = property(lambda self: self.settings.quiet_window_s)

    @property
    def tx_port_count(self):
        """Ports that send: line rate is theirs together."""
        return len({(p.tx_host, p.tx_port) for p in self.plans})

    @property
    def stream_labels(self):
        """conditions.streams: one per stream; where several generators
        send it, their count and the CPU (kpktgend thread) and TX queue of
        each (None: the driver's pick), as the run assigns them."""
        out = []
        placed = self._placement() if any(p.generators > 1 for p in self.plans) else {}
        for group in stream_groups(self.plans):
            p = group[0]
            label = {"tx": f"{p.tx_host}:{p.tx_port}", "rx": f"{p.rx_host}:{p.rx_port}",
                     **p.tags.as_entry()}
            if p.generators > 1:
                label["generators"] = p.generators
                if placed:
                    label["cpus"] = [placed["threads"][(g.tx_host, g.device)] for g in group]
                    label["tx_queues"] = [tx_queue_of(g, placed["queues"]) for g in group]
            out.append(label)
        return out

    def host_cpus(self):
        """tx host -> placement.HostCpus (where it sends and receives); {}
        when the hosts cannot be read."""
        try:
            return self.engine.host_cpus()
        except Rfc2544Error:
            return {}

    def _placement(self):
        """Where the generators go: {"threads": (host, device) -> thread,
        "queues": (host, interface) -> TX queues}, from the detection; {}
        when the hosts cannot be read."""
        try:
            det = self.detect()
            placed = self.engine.placement()
        except Rfc2544Error:
            return {}
        threads = {(host, d): t for host, by_device in placed.items() for d, t in by_device.items()}
        queues = {(h, name): n for h in self.tx_hosts for name, n in det["hosts"][h].tx_queues.items()}
        return {"threads": threads, "queues": queues}

    @property
    def frame_tags(self):
        """VLAN tags the frame sizes count (streams.frame_tags)."""
        return frame_tags(self.plans)

    @property
    def last_phases(self):
        """Seconds per phase of the last trial (for bench/)."""
        return self.engine.last_phases

    @property
    def _connections(self):   # the integration tests cut these to test reconnecting
        return self.transport.connections

    # ------------------------------------------------------------ plumbing
    def session(self, name):
        """The HostSession of `name` (connects on first use; one SSH
        connection per distinct address/port/user, DUT netns honoured)."""
        return self.transport.session(name)

    def use_streams(self, streams=None):
        """Send `streams` (inventory.Stream records of the inventory's tester
        ports: a Y.1564 service's, with their own sizes, DSCP and tags) in
        the trials that follow, one way, without modifiers; None: the
        inventory's streams again. The generators' devices are set up anew
        and the tools detected again for the streams' ports."""
        key = None if streams is None else repr(list(streams))
        if key == self._streams_key:
            return
        if key not in self._engines:
            plans = plan_streams(replace(self.inventory, streams=list(streams)), False, self._generators)
            engine = TrialEngine(self.transport, plans, self.settings, self.detect, self._clock,
                                 hooks=hooks_of(self.inventory), every_cpu=self._every_cpu)
            self._engines[key] = [plans, sorted({p.tx_host for p in plans}), sorted({p.rx_host for p in plans}),
                                  engine, None]
        self.stop_all()
        old = self.engine
        self._engines[self._streams_key][4] = self._detected       # each set of streams detected once
        plans, tx_hosts, rx_hosts, engine, self._detected = self._engines[key]
        self.plans, self.tx_hosts, self.rx_hosts, self.engine = plans, tx_hosts, rx_hosts, engine
        self._streams_key = key
        self.engine.ready = False       # another engine's devices are on the threads
        self.engine.follow(old)
        # a stop reaches every host that may be sending
        self.transport.tx_hosts = sorted(set(self.transport.tx_hosts) | set(tx_hosts))

    def close(self):
        for _plans, _tx, _rx, engine, _detected in self._engines.values():
            engine.remove_vlan_devices()
        self.transport.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ detection
    def detect(self):
        """Find generator and receiver once; returns the detection dict."""
        if self._detected is None:
            self._detected = detect_tools(self.transport, self.plans, self.tx_hosts, self.rx_hosts,
                                          self._clock)
        return self._detected

    @property
    def generator_name(self):
        return self.detect()["generator"]

    @property
    def receiver_name(self):
        return self.detect()["receiver"]

    @property
    def counts_streams_apart(self):
        """Streams from one port are counted apart (every tester's module
        has stream ids, which pgrx counts by)."""
        return self.full_fidelity and bool(self.detect().get("stream_ids"))

    @property
    def full_fidelity(self):
        return self.receiver_name == RECEIVER_PGRX

    @property
    def paced_bursts(self):
        """Every generator has burst_frames: TrialSpec.frames_per_burst works."""
        return bool(self.detect().get("paced_bursts"))

    # ------------------------------------------------------------ trials
    def _counts_and_rates(self, spec):
        """Frames and frames/s per stream of the spec's first segment (bench/)."""
        schedule = RateSchedule(segments_of(spec)[:1], self.plans)
        return schedule.totals(), schedule.first_rates()

    def run_trial(self, spec: TrialSpec, progress=None) -> TrialResult:
        """Run one RFC 2544 section 23 trial; `progress(dict)` gets live counters."""
        self.engine.check_spec(spec)
        with self._lock:
            try:
                return self.engine.run_trial(spec, progress)
            except BaseException:
                self.stop_all()
                raise

    def send_at_max_rate(self, frame_size, duration_s, ipv6=False, to_self=True):
        """Every tx port sends as fast as it can for `duration_s`, then is
        stopped. With `to_self` frames go to the tx port's own MAC, so a DUT
        drops them at layer 2 (a switch filters frames back to their source
        port; a router ignores frames not for its MAC): the DUT forwards
        nothing and only the generator is measured.
        Returns (frames sent, sending time in s) summed/maxed over streams."""
        tx = self._send_calibration_run(frame_size, 1.0, duration_s, ipv6, to_self=to_self)
        return _sent_and_elapsed(tx.values())

    def send_paced(self, frame_size, fps, duration_s, ipv6=False):
        """`duration_s` worth of frames at `fps` frames/s (split over the
        streams), the run ended by the generator as a trial's is: (frames
        sent, sending time in s, the run's Spacing or None when the
        generator records no departures)."""
        from rfc2544.engine.pacing import spacing_of
        rates = RateSchedule([Segment(fps, duration_s=duration_s)], self.plans).first_rates()
        tx = self._send_calibration_run(frame_size, float(fps), duration_s, ipv6, to_self=True, rates=rates)
        states = [tx.get(p.index) for p in self.plans]
        return (*_sent_and_elapsed(tx.values()), spacing_of(states, rates, [p.stream for p in self.plans]))

    def _send_calibration_run(self, frame_size, load_fps, duration_s, ipv6, to_self, rates=None):
        """Every tx port sends `duration_s` worth of frames at `rates`, or as
        fast as it can for `duration_s`: the final tx states. No DUT trial:
        no learning frames, no receiver."""
        spec = TrialSpec(frame_size=frame_size, load_fps=load_fps, duration_s=duration_s, ipv6=ipv6,
                         learning=False, test="calibrate")
        self.engine.check_spec(spec)
        with self._lock:
            try:
                return self.engine.send_calibration_run(spec, to_self, rates=rates)
            except BaseException:
                self.stop_all()
                raise

    @property
    def has_calibration_link(self):
        from rfc2544.engine.calibration_link import link_host
        return link_host(self.inventory) is not None

    def link_spacing(self, spec, frames):
        """The departure spacing estimated on the inventory's calibration
        link at `spec`'s rate and frame size, close frames scaled to
        `frames` (calibration_link.py); None without a calibration link."""
        return self._on_link(lambda link: link.estimate(spec, frames))

    def send_on_link(self, frame_size, fps, duration_s, ipv6=False):
        """As send_paced, on the calibration link, the spacing from its
        arrivals; None without a calibration link."""
        return self._on_link(lambda link: link.measure(frame_size, fps, duration_s, ipv6))

    def count_on_link(self, frame_size, fps, duration_s, ipv6=False):
        """A trial on the calibration link, counted by its rx port's
        receiver (LinkPacing.count), sent by as many generators as this
        tester's streams have (the most of any): the TrialResult; None
        without a calibration link."""
        generators = max((p.generators for p in self.plans), default=1)
        return self._on_link(lambda link: link.count(frame_size, fps, duration_s, ipv6, generators))

    def _on_link(self, use):
        if self._link_pacing is None:
            from rfc2544.engine.calibration_link import LinkPacing, link_host
            host = link_host(self.inventory)
            if host is None:
                return None
            self._link_pacing = LinkPacing(self, host)
        with self._lock:
            try:
                return use(self._link_pacing)
            except BaseException:
                self.stop_all()
                raise

    @contextlib.contextmanager
    def in_tree_generator(self):
        """Our module swapped for the in-tree pktgen on every tester host
        for the block, then back with its pacing parameters (calibrate's
        side-by-side). Refused (InfraError, nothing changed on that host)
        where rfc2544_pktgen is not installed under /lib/modules, where
        modprobe could not load it again afterwards."""
        params = self.module_parameters()
        if not params:
            raise InfraError("rfc2544_pktgen is not loaded: there is nothing to compare the in-tree pktgen with")
        args = " ".join(f"{k}={int(v)}" for k, v in sorted(params.items()))
        swapped = []
        try:
            for host in self.tx_hosts:
                self.transport.session(host).run(
                    'f=$(modinfo -n rfc2544_pktgen 2>/dev/null); case "$f" in /lib/modules/*) ;; *) '
                    'echo "rfc2544_pktgen is not installed under /lib/modules (${f:-not found by modinfo}): it '
                    'could not be loaded again after the comparison; install it (the playbooks do)" >&2; exit 3;; esac; '
                    f"echo stop > {PGCTRL}; rmmod rfc2544_pktgen && modprobe -i pktgen", check=True, timeout=60)
                swapped.append(host)
            self._forget_tools()
            yield
        finally:
            self.stop_all()
            for host in swapped:
                self.transport.session(host).run(
                    f"echo stop > {PGCTRL}; modprobe -r -i pktgen; modprobe -i rfc2544_pktgen {args}",
                    check=True, timeout=60)
            self._forget_tools()

    def _forget_tools(self):
        """The generator changed under us: detect it again, set devices up again."""
        self._detected = None
        self._link_pacing = None
        self.engine.generator_changed()

    def module_parameters(self, names=("spin_ns", "catchup_pct", "max_lag_ns")):
        """rfc2544_pktgen's pacing parameters on the first tester host
        ({} when the module is not what sends)."""
        host = self.tx_hosts[0]
        paths = " ".join(f"/sys/module/rfc2544_pktgen/parameters/{n}" for n in names)
        status, out, _ = self.transport.session(host).run(f"cat {paths}", check=False)
        values = out.split()
        return dict(zip(names, map(int, values))) if status == 0 and len(values) == len(names) else {}

    def set_module_parameter(self, name, value):
        """Set one of rfc2544_pktgen's pacing parameters on every tester host."""
        if name not in ("spin_ns", "catchup_pct") or not isinstance(value, int) or value < 0:
            raise ValueError(f"not a pacing parameter setting: {name}={value!r}")
        for host in self.tx_hosts:
            self.transport.session(host).run(
                f"echo {value} > /sys/module/rfc2544_pktgen/parameters/{name}", check=True)

    def stop_all(self):
        """Stop the generators on every tester host. Never raises: a dead
        connection is reopened once; failures are swallowed (the in-tree
        pktgen also stops when its start writer dies with the session)."""
        self.engine.ready = False
        self.transport.stop_all(STOP_RACE_S)

    # ------------------------------------------------------------ facts
    def conditions(self):
        """Facts for the report (results.json `conditions`)."""
        from rfc2544.drivers.facts import gather_conditions
        return gather_conditions(self)

    def latency_clock(self, before=None):
        """How far one-way latency may be off (drivers/clock.py): read the
        sending and receiving hosts' clock daemons now; `before`: the
        `conditions.latency_clock` of the run's start, whose reads count too."""
        from rfc2544.drivers.clock import latency_clock, read_clocks, start_reads
        pairs = [(p.tx_host, p.rx_host) for p in self.plans]
        if all(tx == rx for tx, rx in pairs):
            return latency_clock(pairs, {})
        now = read_clocks(self.session, sorted({h for pair in pairs for h in pair}))
        if before is None:
            return latency_clock(pairs, now)
        return latency_clock(pairs, start_reads(before), now)


def _sent_and_elapsed(states):
    """(frames sent, sending time in s) of generator states: summed, longest."""
    states = list(states)
    frames = sum(pktgen_sent(st) for st in states)
    elapsed = max((st.run.elapsed_s for st in states if st.run is not None), default=0.0)
    return frames, elapsed
