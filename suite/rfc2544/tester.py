"""SSHTester: runs RFC 2544 section 23 trials on the inventory's tester hosts.

One SSH connection per host. Detects the traffic tools once: our module
(rfc2544_pktgen: /proc/net/pktgen/pgrx exists) as generator and receiver, or
else the in-tree pktgen (`modprobe pktgen`) with interface counters as a
lower-fidelity receiver. A trial is:

  learning frames (a few per stream, so the DUT learns addresses) + wait;
  configure the generators and reset the receivers in one batch per host,
  with every counter CHECKED ZERO in the same batch;
  traffic: `pgctrl start` on its own pre-opened channel per host, live
  counters polled for progress and early abort;
  residual wait, then one read of all final counters.
"""
import threading
import time
from dataclasses import dataclass, fields
from datetime import datetime, timezone

from rfc2544.errors import BadInput, InfraError
from rfc2544.model import TrialResult, TrialSpec
from rfc2544.ssh import SSHHost

from rfc2544.drivers import counters as counters_mod
from rfc2544.drivers import pgrx as pgrx_mod
from rfc2544.drivers import pktgen
from rfc2544.drivers.outcome import ReceiverTotals, StreamReading, judge, latency_from_pgrx
from rfc2544.drivers.plan import check_addresses, device_configs, plan_streams, split_evenly
from rfc2544.drivers.script import Batch
from rfc2544.drivers.session import HostSession
from rfc2544.drivers import probe

GENERATOR_MODULE = "rfc2544_pktgen"
GENERATOR_INTREE = "pktgen (in-tree)"
RECEIVER_PGRX = "pgrx"
RECEIVER_COUNTERS = "interface counters"
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


class _Stopwatch:
    """Records the seconds each phase of a trial took (SSHTester.last_phases)."""

    def __init__(self, phases):
        self.phases = phases
        self.t = time.monotonic()

    def __call__(self, name):
        now = time.monotonic()
        self.phases[name] = now - self.t
        self.t = now


def _utc_now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class SSHTester:
    """model.Tester over an Inventory and SSH.

    Honours TrialSpec.recovery_load_fps (supports_recovery): the generator
    is told the new rate while it sends, timed from the first frames seen.

    SSHTester(inventory, waits=None, *, poll_interval_s=0.5, abort_lag_s=1.0,
              rate_tolerance=0.99, quiet_window_s=0.2, sessions=None)

    `waits`: a Waits or a dict of its fields. `poll_interval_s`: live
    counter reads while sending (progress, early abort). `abort_lag_s`: a
    frame not received this long after it was sent counts as lost for the
    early abort. `rate_tolerance`: below this fraction of the intended rate
    the trial is tester-limited. `quiet_window_s`: with interface counters,
    the rx counters must stay unchanged this long before a trial.
    `sessions`: host name -> session object (tests only; default: SSH to
    every host once).
    Use as a context manager or call close().
    """

    supports_recovery = True

    def __init__(self, inventory, waits=None, *, poll_interval_s=0.5, abort_lag_s=1.0,
                 rate_tolerance=0.99, quiet_window_s=0.2, sessions=None):
        self.inventory = inventory
        self.waits = Waits.of(waits)
        self.poll_interval_s = float(poll_interval_s)
        self.abort_lag_s = float(abort_lag_s)
        self.rate_tolerance = float(rate_tolerance)
        self.quiet_window_s = float(quiet_window_s)
        self.plans = plan_streams(inventory)
        self.tx_hosts = sorted({p.tx_host for p in self.plans})
        self.rx_hosts = sorted({p.rx_host for p in self.plans})
        self._sessions = dict(sessions) if sessions else {}
        self._can_reconnect = not sessions   # injected sessions are never replaced
        self._connections = {}
        self._lock = threading.Lock()
        self._detected = None
        self._ready = False
        self._rx_level = None
        self._last_end = None
        self._last_traffic_end = None
        self._running_starts = []
        self.last_phases = {}   # seconds per phase of the last trial (for bench/)
        self._imix_set = False
        self._spare_starts = {}

    # ------------------------------------------------------------ plumbing
    def session(self, name):
        """The HostSession of `name` (connects on first use; one SSH
        connection per distinct address/port/user, DUT netns honoured)."""
        if name not in self._sessions:
            h = self.inventory.hosts[name]
            key = (h.address, h.port, h.user)
            if key not in self._connections:
                self._connections[key] = SSHHost.connect(
                    name, h.address, h.port, h.user, h.key_file, h.known_hosts)
            self._sessions[name] = HostSession(self._connections[key], h.netns)
        return self._sessions[name]

    def close(self):
        self._drop_spares()
        for s in self._sessions.values():
            try:
                s.close()
            except Exception:  # closing must never mask what the caller is handling
                pass
        for c in self._connections.values():
            try:
                c.close()
            except Exception:
                pass
        self._sessions.clear()
        self._connections.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ detection
    def detect(self):
        """Find generator and receiver once; returns the detection dict."""
        if self._detected is not None:
            return self._detected
        found = {name: probe.probe_host(self.session(name), load_pktgen=name in self.tx_hosts)
                 for name in sorted(set(self.tx_hosts) | set(self.rx_hosts))}
        for name in self.tx_hosts:
            if found[name].pgctrl and not found[name].threads:
                time.sleep(0.5)  # thread files of a module still loading
                found[name] = probe.probe_host(self.session(name), load_pktgen=False)
        for name in self.tx_hosts:
            if not found[name].pgctrl:
                raise InfraError(f"{name}: no packet generator: /proc/net/pktgen/pgctrl missing "
                                 f"and 'modprobe pktgen' failed ({found[name].modprobe_error or 'no detail'})")
            if not found[name].threads:
                raise InfraError(f"{name}: /proc/net/pktgen has no kpktgend_N thread files")
        rx_ports = {}
        for p in self.plans:
            rx_ports.setdefault(p.rx_host, set()).add(p.rx_port)
        use_pgrx = all(found[h].pgrx for h in self.rx_hosts) and all(len(v) == 1 for v in rx_ports.values())
        notes = []
        if all(found[h].pgrx for h in self.rx_hosts) and not use_pgrx:
            notes.append("pgrx counts one device per namespace and a host has several rx ports: "
                         "interface counters used instead")
        module = all(found[h].pgrx for h in self.tx_hosts)
        self._detected = {
            "hosts": found,
            "generator": GENERATOR_MODULE if module else GENERATOR_INTREE,
            "receiver": RECEIVER_PGRX if use_pgrx else RECEIVER_COUNTERS,
            "rx_ports": {h: sorted(v) for h, v in rx_ports.items()},
            "notes": notes,
        }
        return self._detected

    @property
    def generator_name(self):
        return self.detect()["generator"]

    @property
    def receiver_name(self):
        return self.detect()["receiver"]

    @property
    def full_fidelity(self):
        return self.receiver_name == RECEIVER_PGRX

    def _threads_for_devices(self, host):
        threads = self.detect()["hosts"][host].threads
        devices = [p.device for p in self.plans if p.tx_host == host]
        return {d: threads[i % len(threads)] for i, d in enumerate(devices)}

    # ------------------------------------------------------------ setup
    def _setup(self):
        """Once per session (and after stop_all): devices added, receivers on."""
        if self._ready:
            return
        det = self.detect()
        batches = {}
        for host in self.tx_hosts:
            batches.setdefault(host, Batch()).extend(pktgen.setup_batch(self._threads_for_devices(host)))
        if det["receiver"] == RECEIVER_PGRX:
            for host in self.rx_hosts:
                pgrx_mod.enable_batch(det["rx_ports"][host][0], "basic", batches.setdefault(host, Batch()))
            self._rx_level = "basic"
        self._run_batches(batches, timeout=30)
        self._ready = True

    def _run_batches(self, batches, timeout=30):
        """Send one batch per host, then collect them all (hosts work in parallel)."""
        for host, batch in batches.items():
            self.session(host).send_batch(batch)
        return {host: self.session(host).collect_batch(timeout) for host in batches}

    # ------------------------------------------------------------ reading
    def _read_paths(self, host, with_tx=True, with_rx=True):
        det = self.detect()
        paths = []
        if with_tx and host in self.tx_hosts:
            paths += [pktgen.device_path(p.device) for p in self.plans if p.tx_host == host]
        if with_rx and host in self.rx_hosts:
            if det["receiver"] == RECEIVER_PGRX:
                paths.append(pgrx_mod.PGRX)
            else:
                paths += [p for port in det["rx_ports"][host] for p in counters_mod.counter_paths(port)]
        return paths

    def _read_batches(self, tag, with_tx=True, with_rx=True):
        """One read per host: a single grep over generator and receiver files,
        so tx and rx counters of a host are taken within microseconds."""
        batches = {}
        for host in sorted(set(self.tx_hosts) | set(self.rx_hosts)):
            paths = self._read_paths(host, with_tx, with_rx)
            if paths:
                batches[host] = Batch().read(tag, *paths)
        return batches

    def _parse_reads(self, outputs, tag):
        """-> (tx device states by stream index, rx readings by host)."""
        det = self.detect()
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
                if det["receiver"] == RECEIVER_PGRX:
                    if pgrx_mod.PGRX in files:
                        rx[host] = pgrx_mod.parse(files[pgrx_mod.PGRX])
                elif any(path.startswith("/sys/class/net/") for path in files):
                    rx[host] = counters_mod.parse_reads(files, det["rx_ports"][host])
        return tx, rx

    # ------------------------------------------------------------ trial
    def _check_spec(self, spec):
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

    def _counts_and_rates(self, spec):
        n = len(self.plans)
        if spec.burst_frames is not None:
            counts = split_evenly(spec.burst_frames, n)
        else:
            counts = split_evenly(max(round(spec.load_fps * spec.duration_s), n), n)
        if spec.load_fps and spec.load_fps > 0:
            rates = [max(int(round(spec.load_fps / n)), 1)] * n
        else:
            rates = [None] * n
        if any(c < 1 for c in counts):
            raise BadInput(f"{spec.burst_frames or 0} frames cannot be split over {n} streams")
        return counts, rates

    def _recovery_plan(self, spec, counts):
        """For a rate change: frames per stream before it, the second rate and
        the total counts. None for a plain trial."""
        if spec.recovery_load_fps is None:
            return None
        n = len(self.plans)
        second = split_evenly(max(round(spec.recovery_load_fps * spec.recovery_duration_s), n), n)
        rate2 = max(int(round(spec.recovery_load_fps / n)), 1)
        return {"first": list(counts), "rate": rate2, "second": second,
                "total": [a + b for a, b in zip(counts, second)]}

    def _learn(self, spec):
        w = self.waits
        if not spec.learning or w.learning_frames == 0:
            return
        n = len(self.plans)
        configs = device_configs(self.plans, spec, [w.learning_frames] * n, [w.learning_fps] * n)
        batches = {}
        for host in self.tx_hosts:
            b = batches.setdefault(host, Batch())
            pktgen.configure_batch([c for c, p in zip(configs, self.plans) if p.tx_host == host], b)
            b.write(pktgen.PGCTRL, "start")  # short: inline and blocking
        self._run_batches(batches, timeout=30 + w.learning_frames / w.learning_fps)
        if w.learning_s:
            time.sleep(w.learning_s)

    def _configure_and_zero(self, spec, configs, level):
        """One batch per host: reset receivers, configure generators, read all
        counters back. Returns (tx states, rx readings, counter baselines).

        Interface counters cannot be reset: their baseline is read first, in
        its own round trip, and they must be unchanged after
        `quiet_window_s` (stray traffic on the port would be counted)."""
        det = self.detect()
        counters = det["receiver"] != RECEIVER_PGRX
        base = {}
        if counters:
            outs = self._run_batches({h: Batch().read("base", *self._read_paths(h, with_tx=False))
                                      for h in self.rx_hosts})
            t_base = time.monotonic()
            base = {h: counters_mod.parse_reads(out.reads.get("base", {}), det["rx_ports"][h])
                    for h, out in outs.items()}
        batches = {}
        if not counters:
            for host in self.rx_hosts:
                pgrx_mod.reset_batch(level if level != self._rx_level else None, batches.setdefault(host, Batch()))
        for host in self.tx_hosts:
            pktgen.configure_batch([c for c, p in zip(configs, self.plans) if p.tx_host == host],
                                   batches.setdefault(host, Batch()))
        if counters:
            time.sleep(max(0.0, t_base + self.quiet_window_s - time.monotonic()))
        for host, b in self._read_batches("zero").items():
            batches.setdefault(host, Batch()).extend(b)
        outputs = self._run_batches(batches)
        self._rx_level = level
        tx, rx = self._parse_reads(outputs, "zero")
        return tx, rx, base

    def _zero_problems(self, configs, tx, rx, base):
        problems = []
        for p, cfg in zip(self.plans, configs):
            st = tx[p.index]
            if st.pkts_sofar not in (0, None):
                problems.append(f"{p.tx_host}:{p.device} pkts-sofar={st.pkts_sofar}")
            if st.params.get("count") != str(cfg.count):
                problems.append(f"{p.tx_host}:{p.device} count={st.params.get('count')} (wrote {cfg.count})")
            if st.params.get("dst_mac", "").lower() != cfg.dst_mac.lower():
                problems.append(f"{p.tx_host}:{p.device} dst_mac={st.params.get('dst_mac')} (wrote {cfg.dst_mac})")
        for host, reading in rx.items():
            if isinstance(reading, pgrx_mod.PgrxState):
                want = self.detect()["rx_ports"][host][0]
                if not reading.enabled or reading.dev != want:
                    problems.append(f"{host}: pgrx counts on {reading.dev} (enabled={int(reading.enabled)}), "
                                    f"not on {want}")
                    self._ready = False   # re-enable it on the next attempt
                if not reading.is_zero:
                    problems.append(f"{host}: pgrx counted {reading.total_packets} packets after reset")
            else:
                for port, d in reading.delta(base[host]).items():
                    if d.get("rx_packets", 0):
                        problems.append(f"{host}:{port} received {d['rx_packets']} frames while idle")
        return problems

    def run_trial(self, spec: TrialSpec, progress=None) -> TrialResult:
        """Run one RFC 2544 section 23 trial; `progress(dict)` gets live counters."""
        self._check_spec(spec)
        with self._lock:
            try:
                return self._run_trial(spec, progress)
            except BaseException:
                self.stop_all()
                raise

    def _run_trial(self, spec, progress):
        phases = self.last_phases = {}
        mark = _Stopwatch(phases)
        self.detect()
        if self._imix_set and spec.frame_size != 0:
            # pktgen keeps IMIX weights once set (pkt_size does not clear
            # them): fixed-size traffic needs freshly added devices
            self._ready = False
        self._setup()
        self._imix_set = spec.frame_size == 0
        mark("setup")
        counts, rates = self._counts_and_rates(spec)
        recovery = self._recovery_plan(spec, counts)
        if recovery:
            counts = recovery["total"]
        configs = device_configs(self.plans, spec, counts, rates)
        level = "time" if spec.latency else "basic"
        self._learn(spec)
        mark("learning")
        if self._last_end is not None and self.waits.settle_s:
            time.sleep(max(0.0, self._last_end + self.waits.settle_s - time.monotonic()))
        if self._last_traffic_end is not None and spec.idle_s:
            time.sleep(max(0.0, self._last_traffic_end + spec.idle_s - time.monotonic()))
        mark("settle")
        starts = {}
        try:
            for host in self.tx_hosts:
                starts[host] = self._take_start(host)
            for attempt in range(4):
                self._setup()   # again only if a check below found the receiver changed
                tx0, rx0, base = self._configure_and_zero(spec, configs, level)
                problems = self._zero_problems(configs, tx0, rx0, base)
                if not problems:
                    break
                if attempt == 3:
                    raise InfraError("counters not zero before the trial: " + "; ".join(problems))
                time.sleep(0.2)  # frames still in flight (learning): let them drain
            mark("configure")
            started = _utc_now()
            t0 = time.monotonic()
            for host in self.tx_hosts:
                starts[host].trigger()
            self._running_starts = list(starts.values())
            aborted, deadline_hit, t_end, info = self._watch(spec, starts, counts, rates, base, t0, progress,
                                                             recovery)
            mark("traffic")
        except BaseException:
            for s in starts.values():
                s.close()
            raise
        wall_traffic = t_end - t0
        self._last_traffic_end = t_end
        if self.waits.residual_s > 0:
            self._preopen_starts()   # hidden in the residual wait
        remaining = self.waits.residual_s - (time.monotonic() - t_end)
        if remaining > 0:
            time.sleep(remaining)
        mark("residual")
        outputs = self._run_batches(self._read_batches("final"))
        tx, rx = self._parse_reads(outputs, "final")
        mark("read")
        for host, s in starts.items():
            status = s.wait(5.0)
            if status is None:
                self._run_batches({h: pktgen.stop_batch() for h in self.tx_hosts})
                status = s.wait(5.0)
            err = s.stderr()
            s.close()
            if status is None:
                raise InfraError(f"{host}: the generator did not stop")
            if status != 0 and not aborted and not deadline_hit:
                raise InfraError(f"{host}: 'pgctrl start' failed (status {status}): {err or 'no detail'}")
        self._running_starts = []
        self._last_end = time.monotonic()
        mark("start_exit")
        return self._result(spec, configs, counts, rates, tx, rx, base, started=started,
                            wall_traffic_s=wall_traffic, aborted=aborted, deadline_hit=deadline_hit,
                            recovery=recovery, info=info)

    def _take_start(self, host):
        """The start channel for `host`: the one pre-opened after the last
        trial if it is still waiting, else a new one."""
        pre = self._spare_starts.pop(host, None)
        if pre is not None and not pre.done():
            return pre
        if pre is not None:
            pre.close()
        return self.session(host).open_start()

    def _preopen_starts(self):
        """Open the next trial's start channels now: the remote shell that
        waits for 'start' spawns while the caller does other work. An unused
        one exits harmlessly when closed (no 'start' line, no traffic)."""
        for host in self.tx_hosts:
            if host not in self._spare_starts:
                try:
                    self._spare_starts[host] = self.session(host).open_start()
                except InfraError:
                    break  # the next trial opens its own (and reports the failure)

    def _watch(self, spec, starts, counts, rates, base, t0, progress, recovery=None):
        """Wait for the traffic to end; poll live counters for progress,
        early abort and a planned rate change.
        Returns (aborted, deadline_hit, end time, info)."""
        if recovery:
            planned = max((a - 1) / r + b / recovery["rate"]
                          for a, b, r in zip(recovery["first"], recovery["second"], rates))
        else:
            planned = max((c - 1) / r if r else 0.0 for c, r in zip(counts, rates))
        if spec.burst_frames is not None and not any(rates):
            planned = max(planned, spec.duration_s or 0.0)
        # in-tree pktgen: ~125 ms before threads run, <= 100 ms to notice the end
        expected_end = t0 + planned + 0.25
        deadline = t0 + max(planned * 2 + 5.0, planned + 10.0)
        budget = int(spec.abort_loss_ratio * sum(counts)) if spec.abort_loss_ratio is not None else None
        polling = progress is not None or budget is not None or recovery is not None
        # a rate change is timed from the first frames seen: poll fast until then
        next_poll = t0 + (0.02 if recovery else min(self.poll_interval_s, max(planned / 4, 0.05)))
        history = []
        info = {"offered_fps": spec.load_fps}
        switch_at = None
        aborted = deadline_hit = False
        while not all(s.done() for s in starts.values()):
            now = time.monotonic()
            if now >= deadline:
                self._run_batches({h: pktgen.stop_batch() for h in self.tx_hosts})
                deadline_hit = True
                break
            if recovery and switch_at is not None and now >= switch_at and "switch_frames" not in info:
                info.update(self._change_rate(recovery["rate"]), switch_s=now - t0,
                            offered_fps=spec.recovery_load_fps)
                continue
            if polling and now >= next_poll and not aborted:
                live = self._live(spec, base, t0, sum(counts))
                live["load_fps"] = info["offered_fps"]
                next_poll = now + self.poll_interval_s
                if recovery and "switch_frames" not in info:
                    # switch on frames sent, not on time (a stalled generator
                    # must still send its overload frames first): re-aim from
                    # every poll, poll faster as the switch point nears
                    # (the reading is ~half a round trip old and the write
                    # lands ~half a round trip late: aim at now + left)
                    sofar = live["tx_frames"] / len(self.plans)
                    left = (recovery["first"][0] - sofar) / rates[0]
                    if sofar > 0 and left <= 0.1:
                        switch_at = now + max(left, 0.0)
                    elif sofar > 0:
                        switch_at = None
                        next_poll = min(next_poll, now + left / 2)
                    else:
                        next_poll = now + 0.02
                if switch_at is not None and "switch_frames" not in info:
                    next_poll = min(next_poll, switch_at)
                history.append((now, live["tx_frames"]))
                lost = self._loss_estimate(live, history, now)
                live["lost_estimate"] = lost
                if progress is not None:
                    progress(live)
                if budget is not None and lost > budget:
                    self._run_batches({h: pktgen.stop_batch() for h in self.tx_hosts})
                    aborted = True
                    continue
                if all(live["finished"]):
                    break
            elif now >= expected_end:
                # The start write may linger ~100 ms after the last frame:
                # the device files say sooner that every device finished.
                outs = self._run_batches(self._read_batches("end", with_rx=False))
                tx, _ = self._parse_reads(outs, "end")
                if all(st.finished or (st.pkts_sofar or 0) >= counts[i] for i, st in tx.items()):
                    break
                expected_end = time.monotonic() + 0.02
            wake = [expected_end, deadline] + ([next_poll] if polling else [])
            if switch_at is not None and "switch_frames" not in info:
                wake.append(switch_at)
            wait_for = min(wake) - time.monotonic()
            next(iter(starts.values())).wait_readable(max(min(wait_for, 0.05), 0.001))
        return aborted, deadline_hit, time.monotonic(), info

    def _change_rate(self, rate):
        """Write the new rate to every running device (pktgen takes `ratep`
        while sending) and read back how many frames each had sent."""
        batches = {}
        for host in self.tx_hosts:
            b = batches.setdefault(host, Batch())
            for p in self.plans:
                if p.tx_host == host:
                    b.write(pktgen.device_path(p.device), f"ratep {rate}")
        for host, b in self._read_batches("switch", with_rx=False).items():
            batches[host].extend(b)
        tx, _ = self._parse_reads(self._run_batches(batches), "switch")
        return {"switch_frames": [tx[p.index].pkts_sofar for p in self.plans]}

    def _live(self, spec, base, t0, intended):
        outs = self._run_batches(self._read_batches("live"))
        tx, rx = self._parse_reads(outs, "live")
        tx_frames = sum(st.pkts_sofar or 0 for st in tx.values())
        rx_frames, gap_lost = self._rx_totals(rx, base)
        pgrx = self.detect()["receiver"] == RECEIVER_PGRX
        return {
            "phase": "traffic", "test": spec.test, "frame_size": spec.frame_size,
            "load_fps": spec.load_fps, "duration_s": spec.duration_s,
            "elapsed_s": time.monotonic() - t0, "intended_frames": intended,
            "tx_frames": tx_frames, "rx_frames": rx_frames, "gap_lost": gap_lost,
            "lost_frames": gap_lost if pgrx else None,
            "seq_max": max((s.seq_max for r in rx.values() for s in r.streams), default=0) if pgrx else None,
            "finished": [st.finished for st in tx.values()],
        }

    def _rx_totals(self, rx, base):
        """(test frames received, frames known lost by sequence gaps)."""
        total, gaps = 0, 0
        for host, reading in rx.items():
            if isinstance(reading, pgrx_mod.PgrxState):
                total += sum(s.unique for s in reading.streams)
                gaps += sum(s.lost for s in reading.streams)
            else:
                total += sum(d.get("rx_packets", 0) for d in reading.delta(base[host]).values())
        return total, gaps

    def _loss_estimate(self, live, history, now):
        """Frames that are certainly lost: sequence gaps (pgrx), or frames sent
        at least `abort_lag_s` ago that have not arrived (any receiver)."""
        lagged_tx = 0
        for t, tx in history:
            if t <= now - self.abort_lag_s:
                lagged_tx = tx
        return max(live["gap_lost"], lagged_tx - live["rx_frames"])

    def _result(self, spec, configs, counts, rates, tx, rx, base, recovery=None, info=None, **kw):
        det = self.detect()
        notes = list(det["notes"])
        expected = [None] * len(self.plans)
        if recovery:
            first = recovery["first"]
            switched = (info or {}).get("switch_frames")    # frames sent when the rate changed
            if switched:
                # judge the sending time against the actual switch point
                first = [f if f is not None else a for f, a in zip(switched, first)]
            expected = [(a - 1) / r + (c - a) / recovery["rate"] for a, c, r in zip(first, counts, rates)]
            if switched and any((f or 0) >= c for f, c in zip(switched, counts)):
                notes.append("the rate change came after the last frame: the generator ran ahead of "
                             "the plan (no second rate was offered)")
                info["rate_change_missed"] = True
            elif switched and any(abs((f or 0) - a) > 0.05 * a for f, a in zip(switched, recovery["first"])):
                notes.append("the rate changed more than 5 % of the overload frames away from the plan "
                             "(the generator fell behind or ran ahead)")
                info["rate_change_missed"] = True
            if switched:
                notes.append(f"rate changed to {spec.recovery_load_fps:g} frames/s {info['switch_s']:.3f} s after "
                             f"the start, after {sum(f or 0 for f in switched)} frames "
                             f"(planned {sum(recovery['first'])})")
            else:
                notes.append("the planned rate change did not happen (traffic ended first)")
        readings = []
        latency = None
        if det["receiver"] == RECEIVER_PGRX:
            for p, count, rate in zip(self.plans, counts, rates):
                st = rx[p.rx_host].stream(p.src(spec.ipv6))
                sent = pktgen_sent(tx[p.index])
                if st is None:
                    readings.append(StreamReading(p, count, rate, tx[p.index], 0, sent, 0, 0,
                                                  expected_s=expected[p.index]))
                else:
                    tail = max(sent - st.seq_max, 0)
                    readings.append(StreamReading(p, count, rate, tx[p.index], st.unique,
                                                  st.lost + tail, st.ooo, st.dup, expected_s=expected[p.index]))
            known = {p.src(spec.ipv6) for p in self.plans}
            rx_total = 0
            for host, state in rx.items():
                rx_total += sum(s.unique for s in state.streams if s.src in known)
                strangers = [s for s in state.streams if s.src not in known]
                if strangers:
                    notes.append(f"{host}: pgrx saw test frames from unknown sources "
                                 f"{', '.join(s.src for s in strangers)} (not counted)")
                if state.streams_dropped:
                    notes.append(f"{host}: pgrx stream table full, {state.streams_dropped} packets unattributed")
            if spec.latency:
                latency = latency_from_pgrx(list(rx.values()))
                if latency is None:
                    notes.append("no latency samples (timestamps missing or clocks not synchronised)")
        else:
            deltas = {}
            for host, snap in rx.items():
                for port, d in snap.delta(base[host]).items():
                    deltas[(host, port)] = d
            per_rx = {}
            for p in self.plans:
                per_rx.setdefault((p.rx_host, p.rx_port), []).append(p)
            for p, count, rate in zip(self.plans, counts, rates):
                shared = len(per_rx[(p.rx_host, p.rx_port)]) > 1
                got = None if shared else deltas[(p.rx_host, p.rx_port)].get("rx_packets", 0)
                readings.append(StreamReading(p, count, rate, tx[p.index], got, expected_s=expected[p.index]))
            rx_total = sum(d.get("rx_packets", 0) for d in deltas.values())
            notes.append("receiver: interface counters (lower fidelity: every frame on the port counts, "
                         "no reordering, duplicates or latency)")
            if spec.latency:
                notes.append("latency needs the rfc2544_pktgen receiver (pgrx); not measured")
        result = judge(spec, readings, ReceiverTotals(rx_total), latency=latency,
                       rate_tolerance=self.rate_tolerance, notes=notes, **kw)
        if info and (info.get("rate_change_missed") or (recovery and "switch_frames" not in info)):
            result.tester_limited = True   # the planned rate profile was not offered
        return result

    def _drop_spares(self):
        for s in self._spare_starts.values():
            try:
                s.close()
            except Exception:  # a dead channel is already closed
                pass
        self._spare_starts = {}

    # ------------------------------------------------------------ calibration
    def send_at_max_rate(self, frame_size, duration_s, ipv6=False, to_self=True):
        """Every tx port sends as fast as it can for `duration_s`, then is
        stopped. With `to_self` frames go to the tx port's own MAC, so a DUT
        drops them at layer 2 (a switch filters frames back to their source
        port; a router ignores frames not for its MAC): the DUT forwards
        nothing and only the generator is measured.
        Returns (frames sent, sending time in s) summed/maxed over streams."""
        spec = TrialSpec(frame_size=frame_size, load_fps=1.0, duration_s=duration_s, ipv6=ipv6,
                         learning=False, test="calibrate")
        self._check_spec(spec)
        with self._lock:
            try:
                self._setup()
                n = len(self.plans)
                configs = device_configs(self.plans, spec, [10**12] * n, [None] * n,
                                         dst_mac_override=(lambda p: p.tx_mac) if to_self else None)
                starts = {h: self.session(h).open_start() for h in self.tx_hosts}
                self._run_batches({h: pktgen.configure_batch(
                    [c for c, p in zip(configs, self.plans) if p.tx_host == h]) for h in self.tx_hosts})
                for s in starts.values():
                    s.trigger()
                self._running_starts = list(starts.values())
                time.sleep(duration_s + 0.25)  # + the in-tree pktgen's start delay
                self._run_batches({h: pktgen.stop_batch() for h in self.tx_hosts})
                for host, s in starts.items():
                    if s.wait(10.0) is None:
                        raise InfraError(f"{host}: the generator did not stop")
                    s.close()
                self._running_starts = []
                tx, _ = self._parse_reads(self._run_batches(self._read_batches("cal", with_rx=False)), "cal")
            except BaseException:
                self.stop_all()
                raise
        frames = sum(pktgen_sent(st) for st in tx.values())
        elapsed = max((st.run.elapsed_s for st in tx.values() if st.run is not None), default=0.0)
        return frames, elapsed

    # ------------------------------------------------------------ stop
    def stop_all(self):
        """Stop the generators on every tester host. Never raises: a dead
        connection is reopened once; failures are swallowed (the in-tree
        pktgen also stops when its start writer dies with the session)."""
        for s in list(self._running_starts):
            try:
                s.close()
            except Exception:
                pass
        self._running_starts = []
        self._drop_spares()
        self._ready = False
        # Twice: a 'start' sent just before the interruption can reach
        # pgctrl after the first 'stop' (seen in the lab: Ctrl-C mid-run left
        # the generator sending); the second stop catches it.
        for round_ in range(2):
            if round_:
                time.sleep(STOP_RACE_S)
            for host in self.tx_hosts:
                self._stop_host(host)

    def _stop_host(self, host):
        for attempt in range(2):
            try:
                session = self._sessions.get(host)
                if attempt == 1 and not self._can_reconnect:
                    # the batch shell may be mid-batch: a plain command still works
                    if session is not None:
                        session.run(f"echo stop > {pktgen.PGCTRL}", timeout=10)
                    break
                if session is None or attempt == 1:
                    self._sessions.pop(host, None)
                    h = self.inventory.hosts[host]
                    self._connections.pop((h.address, h.port, h.user), None)
                    session = self.session(host)
                session.run_batch(pktgen.stop_batch(), timeout=10)
                break
            except Exception:
                continue

    # ------------------------------------------------------------ facts
    def conditions(self):
        """Facts for the report (results.json `conditions`)."""
        from rfc2544.drivers.facts import gather_conditions
        return gather_conditions(self)


def pktgen_sent(state):
    if state.run is not None:
        return state.run.packets
    return state.pkts_sofar or 0
