"""The trial engine: one RFC 2544 section 23 trial over a Transport.

  pre hooks (DUT hosts, if the inventory has any);
  learning frames (a few per stream, so the DUT learns addresses) + wait;
  configure the generators and reset the receivers in one batch per host,
  with every counter CHECKED ZERO in the same batch; only the device
  commands that changed since the last trial are written, and the whole
  device state read back in that batch is VERIFIED against the intended
  one (any difference: devices re-added, everything rewritten, counted);
  traffic: `pgctrl start` on its own pre-opened channel per host, the rate
  schedule's segments sent without stopping (TrafficWatch);
  residual wait, then one read of all final counters (with one tester
  host, done by its start script right after the end: no round trip of its
  own); post hooks.
The configure phase's device writes and checks are trial_configure.py's;
the modifier devices beside the streams are trial_modifiers.py's.
"""
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from rfc2544.errors import BadInput, InfraError
from rfc2544.model import TrialSpec

from rfc2544.engine.detection import RECEIVER_PGRX
from rfc2544.drivers import pgrx as pgrx_mod
from rfc2544.drivers import host_path, pktgen, vlan
from rfc2544.drivers.hooks import hook_notes, run_hooks
from rfc2544.drivers.streams import (check_addresses, check_generators, device_configs,
                                  generator_share, shared_queue_notes)
from rfc2544.drivers.placement import assign_threads, host_cpus
from rfc2544.drivers.readings import CounterReader
from rfc2544.drivers.script import MAX_SLEEP_S, Batch
from rfc2544.engine.pacing import may_be_bursty_spec
from rfc2544.engine.schedule import RateSchedule
from rfc2544.engine.traffic_watch import TrafficWatch
from rfc2544.engine.trial_configure import ConfigurePhase
from rfc2544.engine.trial_modifiers import ModifierDevices
from rfc2544.engine.trial_result import build_result

PACED_GRACE_S = 2.0     # a paced run's time beyond twice its length (start delays)


@dataclass
class TrialSettings:
    """How trials run (SSHTester's constructor arguments)."""

    waits: object                 # tester.Waits
    poll_interval_s: float = 0.5
    abort_lag_s: float = 1.0
    rate_tolerance: float = 0.99
    quiet_window_s: float = 0.2
    diff_writes: bool = True      # write only changed device commands (verified on read-back)
    fold_read: bool = True        # one tester host: the final read rides on its start script


@dataclass
class TrafficRun:
    """What the traffic phase leaves for the final read and the result."""

    starts: dict
    base: dict
    started: str
    t0: float
    t_end: float
    aborted: bool
    deadline_hit: bool
    changes: dict
    folded: str = None            # the host whose start script also does the final read
    final_reads: dict = None      # host -> the Batch of its final read (with `folded`)
    late_end: bool = False        # the start write returned before the run ended (in-tree pktgen)


class Stopwatch:
    """Records the seconds each phase of a trial took (SSHTester.last_phases)."""

    def __init__(self, phases, clock):
        self.phases = phases
        self.clock = clock
        self.t = clock.monotonic()

    def __call__(self, name):
        now = self.clock.monotonic()
        self.phases[name] = now - self.t
        self.t = now


class TrialEngine(ConfigurePhase, ModifierDevices):
    """Runs trials of `plans` over `transport`. `detect()`: the tools found
    (detection.detect_tools, cached by the caller). `hooks`: DUT host ->
    {pre: [...], post: [...]} (drivers.hooks.hooks_of). `modifiers`: (the
    profile's Modifiers, [ModifierPlan]) (drivers/modifiers.py) or None."""

    def __init__(self, transport, plans, settings, detect, clock, hooks=None, modifiers=None, every_cpu=False):
        self.transport = transport
        self.plans = plans
        self.every_cpu = every_cpu      # --generator-cpus all (drivers/placement.py)
        self._path_zero = {}            # host_path counters of the last zero read (trial_configure)
        self.settings = settings
        self.detect = detect
        self.clock = clock
        self.hooks = hooks or {}
        self.modifier_settings, self.modifiers = modifiers or (None, [])
        self._modifier_configs = []   # what the next configure writes to the modifier devices
        self.tx_hosts = sorted({p.tx_host for p in plans})
        self.rx_hosts = sorted({p.rx_host for p in plans})
        self.ready = False            # devices added and receivers on (reset by stop_all)
        self._rx_level = None
        self._rx_format = {}          # rx host -> pgrx's format version (learnt at setup)
        self._rx_pkt_size = {}        # rx host -> the pkt_size last written to its pgrx (counted_length)
        self._rx_declared = {}        # rx host -> the streams (sid:N or sources) last declared to its pgrx
        self._reader = None
        self._last_end = None
        self._last_traffic_end = None
        self._imix_set = False
        self._vlan_stacks = {}        # rx host -> [(port, vlan, svlan)] whose VLAN devices we made
        self.last_phases = {}
        # Verified diff writes: device -> {command key: command} last written
        # (pktgen.command_key), device -> the view read back after the last
        # verified configure (pktgen.device_view). Cleared whenever devices
        # are (re-)added or a write batch fails.
        self._written = {}
        self._reference = {}
        self._verifiable = True       # False: the generator's read-out is not what we model
        self.mismatch_detail = None   # what the last mismatch was
        self.control_counts = {"configures": 0, "writes": 0, "full_writes": 0,
                               "mismatches": 0, "unverifiable": 0}

    def follow(self, other):
        """The next trial follows `other`'s last (Tester.use_streams): the waits run from its end."""
        self._last_end, self._last_traffic_end = other._last_end, other._last_traffic_end

    def generator_changed(self):
        """Another generator module was loaded: read with a new reader, set
        the devices up again (detection is the caller's)."""
        self._reader = None
        self._verifiable = True
        self.ready = False

    @property
    def reader(self):
        if self._reader is None:
            self._reader = CounterReader(self.plans, self.detect(),
                                         extra_devices=[(m.tx_host, m.device) for m in self.modifiers])
        return self._reader

    # ------------------------------------------------------------ checks
    def check_spec(self, spec):
        if not isinstance(spec, TrialSpec):
            raise BadInput("run_trial needs a TrialSpec")
        if spec.frame_size != 0:
            pktgen.pkt_size_for_frame(spec.frame_size)
        if not spec.load_fps or spec.load_fps < 0:
            if spec.burst_frames is None:
                raise BadInput(f"load_fps must be positive, not {spec.load_fps}")
        if spec.duration_s is None or spec.duration_s <= 0:
            if spec.burst_frames is None:
                raise BadInput(f"duration_s must be positive, not {spec.duration_s}")
        if spec.recovery_load_fps is not None:
            if spec.burst_frames is not None:
                raise BadInput("a rate change (recovery_load_fps) cannot follow a burst")
            if not spec.recovery_load_fps > 0 or not spec.recovery_duration_s > 0:
                raise BadInput("recovery_load_fps and recovery_duration_s must be positive")
        if spec.abort_loss_ratio is not None and not 0 <= spec.abort_loss_ratio < 1:
            raise BadInput(f"abort_loss_ratio must be within [0, 1), not {spec.abort_loss_ratio}")
        check_addresses(self.plans, spec.ipv6)

    # ------------------------------------------------------------ setup
    def setup(self):
        """Once per session (and after stop_all): devices added, receivers on."""
        if self.ready:
            return
        det = self.detect()
        if self.modifiers and not (det["receiver"] == RECEIVER_PGRX and det.get("stream_ids")):
            raise BadInput("broadcast and management frames (the profile's modifiers) need the rfc2544_pktgen "
                           "module 1.3 or later on every tester host: its stream ids keep them apart from "
                           "the test streams at the receiver. Run 'rfc2544 setup', or set the modifiers to 0")
        check_generators(self.plans, {h: det["hosts"][h].threads for h in self.tx_hosts})
        notes = shared_queue_notes(self.plans, self._generator_features()["tx_queues"])
        if any(p.generators > 1 for p in self.plans) and not det.get("start_offsets"):
            notes.append("a stream's generators start together, not staggered by a share of the gap (the "
                         "rfc2544_pktgen module 1.7 staggers them: run 'rfc2544 setup')")
        notes += [w for w in (c.warning() for c in self.host_cpus().values()) if w]
        for note in notes:
            if note not in det["notes"]:
                det["notes"].append(note)
        batches = {}
        for host, by_device in self.placement().items():
            batches.setdefault(host, Batch()).extend(pktgen.setup_batch(by_device))
        pgrx = det["receiver"] == RECEIVER_PGRX
        if pgrx:
            self._add_vlan_devices()
            for host in self.rx_hosts:
                # read back at once: its format version says what it takes (pkt_size: v3)
                pgrx_mod.enable_batch(det["rx_ports"][host], "basic",
                                      batches.setdefault(host, Batch())).read("rxon", pgrx_mod.PGRX)
            self._rx_level = "basic"
        outputs = self.transport.run_batches(batches, timeout=30)
        if pgrx:
            self._rx_format = {h: self.reader.parse(outputs, "rxon")[1][h].version for h in self.rx_hosts}
            self._rx_pkt_size = {}
            self._rx_declared = {}
            for host in self.rx_hosts:      # before any traffic: refused here, not at the first trial
                self._declarable(host, ipv6=False)
                self._declarable(host, ipv6=True)
        self._forget()   # fresh devices: every command is written again
        self.ready = True

    def placement(self):
        """tx host -> {device: kpktgend thread} for its generators and
        modifier devices (placement.assign_threads over the detection)."""
        det = self.detect()
        return {host: assign_threads(host, self.plans, [m.device for m in self.modifiers if m.tx_host == host],
                                     det["hosts"][host].threads, det["hosts"][host], self.every_cpu)
                for host in self.tx_hosts}

    def _holds(self, spec, schedule, rx):
        """(rx states, {host: frames/s it receives}) of the receiving hosts
        that carry a DUT's forwarding, when the trial timed its arrivals."""
        if not self.times_arrivals(spec):
            return {}, {}
        hosts = self.detect()["hosts"]
        carrying = {h: state for h, state in rx.items() if getattr(hosts.get(h), "forwarding_ports", None)}
        rates = {}
        for p, rate in zip(self.plans, schedule.first_rates()):
            rates[p.rx_host] = rates.get(p.rx_host, 0) + (rate or 0)
        return carrying, rates

    def times_arrivals(self, spec):
        """Whether `spec`'s trial times its arrivals at the receiver (pgrx
        level time) to see how long the path held frames back: a steady
        rate's trial where a DUT's forwarding runs on a receiving tester
        host (a namespace on the same machine), the path that starves when
        the generators share its CPUs (engine/starved.py)."""
        if not may_be_bursty_spec(spec) or self.detect()["receiver"] != RECEIVER_PGRX:
            return False
        hosts = self.detect()["hosts"]
        return any(getattr(hosts.get(h), "forwarding_ports", None) for h in self.rx_hosts)

    def host_cpus(self):
        """tx host -> placement.HostCpus: where it sends, where it receives."""
        det = self.detect()
        return {host: host_cpus(host, self.plans, placed, det["hosts"][host], self.every_cpu,
                                det["hosts"][host].forwarding_ports)
                for host, placed in self.placement().items()}

    def _add_vlan_devices(self):
        """pgrx sees a tagged stream only through VLAN devices on its port
        (drivers/vlan.py): made once per session, removed by close()."""
        for host, stacks in vlan.receiving_stacks(self.plans).items():
            made = self._vlan_stacks.setdefault(host, [])
            for stack in stacks:
                if stack in made:
                    continue
                status, _, err = self.transport.session(host).run(vlan.add_command(*stack), check=False)
                if status != 0:
                    port, vid, svid = stack
                    raise InfraError(f"{host}: cannot add the VLAN device for {port} "
                                     f"({f'QinQ {svid}/{vid}' if svid else f'VLAN {vid}'}) that pgrx counts "
                                     f"the tagged stream through: {err.strip() or f'exit {status}'}")
                made.append(stack)

    def remove_vlan_devices(self):
        """Remove the VLAN devices setup() made; never raises (closing)."""
        for host, stacks in self._vlan_stacks.items():
            for stack in stacks:
                try:
                    self.transport.session(host).run(vlan.remove_command(*stack), check=False)
                except Exception:       # a host gone: its devices go with the next setup's reuse
                    pass
        self._vlan_stacks = {}

    def _generator_features(self):
        """device_configs' switches for what every tester's module has."""
        d = self.detect()
        return {"extended": d.get("paced_bursts", False), "stream_ids": d.get("stream_ids", False),
                "ipv6_networks": d.get("ipv6_networks", False), "ipv6_sources": d.get("ipv6_sources", False),
                "start_offsets": d.get("start_offsets", False),
                "tx_queues": {(h, name): n for h in self.tx_hosts
                              for name, n in d["hosts"][h].tx_queues.items()}}

    def _learn(self, spec):
        w = self.settings.waits
        if not spec.learning or w.learning_frames == 0:
            return
        # per stream: a stream's generators share its learning frames and rate
        counts = [max(generator_share(p, w.learning_frames), 1) for p in self.plans]
        rates = [max(round(w.learning_fps / p.generators), 1) for p in self.plans]
        configs = device_configs(self.plans, replace(spec, frames_per_burst=1), counts, rates,
                                 **self._generator_features())
        batches = {}
        self._write_configs(configs, batches)
        self._write_modifiers(batches, self._idle_modifier_configs(spec, configs))
        for host in self.tx_hosts:
            batches.setdefault(host, Batch()).write(pktgen.PGCTRL, "start")  # short: inline and blocking
        self._run_writes(batches, timeout=30 + w.learning_frames / w.learning_fps)
        if w.learning_s:
            self.clock.sleep(w.learning_s)

    def _settle(self, spec):
        """The profile's gap after the last trial, and the spec's idle time
        after the last traffic (RFC 9004: a burst must find buffers empty)."""
        now = self.clock.monotonic
        if self._last_end is not None and self.settings.waits.settle_s:
            self.clock.sleep(max(0.0, self._last_end + self.settings.waits.settle_s - now()))
        if self._last_traffic_end is not None and spec.idle_s:
            self.clock.sleep(max(0.0, self._last_traffic_end + spec.idle_s - now()))

    # ------------------------------------------------------------ calibration
    def send_calibration_run(self, spec, to_self, rates=None):
        """A run without a DUT trial (no learning, no receiver). Every tx
        port sends as fast as it can for `spec.duration_s`, then is stopped
        (see SSHTester.send_at_max_rate); or, with `rates`
        (frames/s per stream), sends `spec.duration_s` worth of frames at
        them and ends by itself, as a trial does: however late a loaded
        tester starts or falls behind, the run holds the frames asked for
        (a run stopped on the host's clock may hold half). -> final tx states."""
        self.setup()
        n = len(self.plans)
        counts = [max(int(round(r * spec.duration_s)), 1) for r in rates] if rates else [10**12] * n
        configs = device_configs(self.plans, spec, counts, rates or [None] * n,
                                 dst_mac_override=(lambda p: p.tx_mac) if to_self else None,
                                 **self._generator_features())
        starts = {h: self.transport.session(h).open_start() for h in self.tx_hosts}
        batches = {}
        self._write_configs(configs, batches)
        self._write_modifiers(batches, self._idle_modifier_configs(spec, configs))
        self._run_writes(batches)
        for s in starts.values():
            s.trigger()
        self.transport.running_starts = list(starts.values())
        if rates:
            # a generator that cannot keep the rate takes longer: given up to
            # twice the time (then stopped; its frames/elapsed say the rate)
            deadline = self.clock.monotonic() + 2 * spec.duration_s + PACED_GRACE_S
            for s in starts.values():
                s.wait(max(deadline - self.clock.monotonic(), 0.0))
        else:
            self.clock.sleep(spec.duration_s + 0.25)  # + the in-tree pktgen's start delay
        self._stop_until_ended(starts)
        for s in starts.values():
            s.close()
        self.transport.running_starts = []
        outs = self.transport.run_batches(self.reader.batches("cal", with_rx=False))
        tx, _ = self.reader.parse(outs, "cal")
        return tx

    def _stop_until_ended(self, starts, rounds=3, wait_s=10.0):
        """`stop` until every start write has returned. A start that reached
        pgctrl after the stop (a loaded tester: its trigger took longer than
        the run) would send on: the stop is written again (CI: one ceiling
        run outlived a single stop)."""
        running = dict(starts)
        for _ in range(rounds):
            self.transport.stop_generators()
            running = {h: s for h, s in running.items() if s.wait(wait_s) is None}
            if not running:
                return
        raise InfraError(f"{', '.join(running)}: the generator did not stop "
                         f"({rounds} stops, {wait_s:.0f} s apart)")

    # ------------------------------------------------------------ trial
    def run_trial(self, spec, progress, schedule=None):
        """One trial of `spec`; `schedule`: a RateSchedule to send instead of
        the spec's own segments (its frames and rates; the spec says the rest)."""
        phases = self.last_phases = {}
        mark = Stopwatch(phases, self.clock)
        self.detect()
        if self._imix_set and spec.frame_size != 0:
            # pktgen keeps IMIX weights once set (pkt_size does not clear
            # them): fixed-size traffic needs freshly added devices
            self.ready = False
        self.setup()
        self._imix_set = spec.frame_size == 0
        mark("setup")
        schedule = schedule or RateSchedule.of_spec(spec, self.plans)
        configs = device_configs(self.plans, spec, schedule.totals(), schedule.first_rates(),
                                 **self._generator_features())
        planned_modifiers = self._trial_modifier_configs(spec, schedule, configs)
        hook_runs = self._hooks("pre", mark)
        self._learn(spec)
        mark("learning")
        self._settle(spec)
        mark("settle")
        self._modifier_configs = planned_modifiers
        run = self._traffic(spec, schedule, configs, progress, mark)
        self._last_traffic_end = run.t_end
        outputs = self._folded_read(run, mark)
        if outputs is None:
            if self.settings.waits.residual_s > 0:
                self.transport.preopen_starts()   # hidden in the residual wait
            remaining = self.settings.waits.residual_s - (self.clock.monotonic() - run.t_end)
            if remaining > 0:
                self.clock.sleep(remaining)
            mark("residual")
            outputs = self.transport.run_batches(self.reader.batches("final"))
        tx, rx = self.reader.parse(outputs, "final")
        mark("read")
        self._finish_starts(run.starts, run.aborted or run.deadline_hit)
        self._last_end = self.clock.monotonic()
        mark("start_exit")
        hook_runs += self._hooks("post", mark)
        result = build_result(spec, self.plans, self.detect(), schedule, (tx, rx, run.base), run.changes,
                              self.settings.rate_tolerance, started=run.started,
                              wall_traffic_s=run.t_end - run.t0, aborted=run.aborted,
                              deadline_hit=run.deadline_hit)
        result.hooks = hook_runs
        result.notes += hook_notes(hook_runs)
        during = host_path.deltas(self._path_zero, self.reader.parse_path(outputs, "final"))
        result.host_path = host_path.with_holds({h: c.to_dict() for h, c in during.items()},
                                                *self._holds(spec, schedule, rx)) or None
        if self.modifiers:
            self._record_modifiers(result, self.reader.parse_extra(outputs, "final"), planned_modifiers)
        return result

    def _fold_host(self, starts):
        """The tester host whose start script does the final read: only
        with one tester host (its end is the end of all traffic) and a
        residual wait a script may sleep."""
        if not self.settings.fold_read or len(self.tx_hosts) != 1:
            return None
        host = self.tx_hosts[0]
        if not 0 <= self.settings.waits.residual_s <= MAX_SLEEP_S or not getattr(starts[host], "folds", False):
            return None
        return host

    def _folded_read(self, run, mark):
        """The final read done by the start script (None: read apart). Not
        used when the start write returned before the devices finished
        (its read came too early) or the run has not ended."""
        if run.folded is None or run.late_end:
            return None
        start = run.starts[run.folded]
        if start.wait(5.0) is None:
            return None       # still running: _finish_starts stops it and reports
        mark("residual")      # waited on the tester host, inside the script
        outputs = {run.folded: start.collect(self.settings.waits.residual_s + 30)}
        rest = {h: b for h, b in run.final_reads.items() if h != run.folded}
        if rest:
            outputs.update(self.transport.run_batches(rest))
        return outputs

    def _hooks(self, phase, mark):
        """Run the DUT hooks of `phase`; timed as its own phase only when
        there are any (last_phases keys stay the same without hooks)."""
        if not any(h.get(phase) for h in self.hooks.values()):
            return []
        runs = run_hooks(self.transport, self.hooks, phase)
        mark(f"{phase}_hooks")
        return runs

    def _traffic(self, spec, schedule, configs, progress, mark):
        """Configure and check zero, start, watch the traffic to its end."""
        starts = {}
        try:
            for host in self.tx_hosts:
                starts[host] = self.transport.take_start(host)
            base = self._configure_checked(spec, configs)
            mark("configure")
            folded = self._fold_host(starts)
            final_reads = self.reader.batches("final") if folded else None
            started = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            t0 = self.clock.monotonic()
            for host in self.tx_hosts:
                if host == folded:
                    starts[host].trigger(final_reads[host], self.settings.waits.residual_s)
                else:
                    starts[host].trigger()
            self.transport.running_starts = list(starts.values())
            watch = TrafficWatch(self, spec, schedule, starts, base, t0, progress)
            aborted, deadline_hit, t_end, changes = watch.run()
            mark("traffic")
        except BaseException:
            for s in starts.values():
                s.close()
            raise
        return TrafficRun(starts, base, started, t0, t_end, aborted, deadline_hit, changes,
                          folded, final_reads, watch.late_end)

    def _finish_starts(self, starts, stopped):
        """Collect each start command's exit; a failure counts unless the
        generators were stopped on purpose (abort, deadline)."""
        for host, s in starts.items():
            status = s.wait(5.0)
            if status is None:
                self.transport.stop_generators()
                status = s.wait(5.0)
            err = s.stderr()
            if status is None:
                s.close()
                raise InfraError(f"{host}: the generator did not stop")
            if status != 0:
                s.close()
                if not stopped:
                    raise InfraError(f"{host}: 'pgctrl start' failed (status {status}): {err or 'no detail'}")
                continue
            self.transport.keep_start(host, s)   # its shell waits for the next trial's trigger
        self.transport.running_starts = []

