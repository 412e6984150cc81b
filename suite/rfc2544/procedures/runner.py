"""Orchestration of a run: the plan, the trials, progress, interruptions.

Knows nothing of the CLI. `Runner(tester, profile, results, ...).run()`
walks the plan (throughput first, as the other tests need it), writes the
results file after every trial and, on Ctrl-C or an infrastructure failure,
stops every generator (tester.stop_all), records the interruption and
re-raises; `--resume` then skips finished steps and replays the finished
trials of the step that was cut short.
"""
import math
import time
from dataclasses import replace

from rfc2544 import catalog, wire
from rfc2544.engine import pacing
from rfc2544.engine.starved import starved_reason
from rfc2544.results.deviations import Deviation, text_of
from rfc2544.errors import BadInput, InfraError, Rfc2544Error
from rfc2544.procedures.measure import make_measure
from rfc2544.model import TrialSpec, theoretical_max_fps
from rfc2544.procedures import Skip, procedure
from rfc2544.config.profiles import IMIX
from rfc2544.results.file import unit_key, verdict
from rfc2544.y1564 import services as services_mod

try:
    from paramiko import SSHException as _SSHException
except ImportError:                                   # pragma: no cover - paramiko is a dependency
    _SSHException = EOFError
# What a dropped connection or a vanished host looks like when the traffic
# side lets it through unwrapped: infrastructure, not a bug.
CONNECTION_ERRORS = (EOFError, OSError, _SSHException)

PROBE_LINK_MBPS = 10000
PROBE_FRAMES = 30000     # probe rate when nothing else bounds the load: 10GbE line rate
DEFAULT_LATENCY_DEFINITION = (
    "software timestamps: generator header timestamp at transmit to the receiver's hook at "
    "arrival (bit-forwarding in the sense of RFC 1242, including tester stack time)")


def build_plan(profile, tags=0, services=()):
    """The run's steps; `tags`: the VLAN tags the frames carry (the
    inventory's streams, streams.frame_tags), which raise small sizes too;
    `services`: the Y.1564 services (y1564/services.py) of a run that has
    such a test, each a step of its own."""
    m = profile.model
    per_service = [t for t in m.tests if catalog.entry(t).frame_sizes == catalog.PER_SERVICE]
    if per_service and not services:
        raise BadInput(f"{per_service[0]}: a Y.1564 test needs the services: give --services FILE "
                       "(inventory/services-example.yml shows one)")
    plan = []
    for v in m.ip_versions:
        asked = sent_sizes([0 if s == IMIX else s for s in m.frame_sizes], v == 6, tags)
        for n, flows in enumerate(m.flows):
            # a service has its own traffic: its steps once, not per flow count
            plan += _steps(m, v, asked, flows, services if n == 0 else (), tags)
    return plan


def _service_steps(test, v, services, tags):
    """One step per service: its size sent (0: an EMIX), its name."""
    steps = []
    for service in services:
        # its own tag counts too (procedures/y1564_configuration.py sends the same)
        sent = [wire.wire_frame_size(s, v == 6, max(tags, int(service.vlan is not None))) for s in service.sizes]
        steps.append({"unit": f"{test}/ipv{v}/{service.name}", "test": test,
                      "frame_size": sent[0] if len(sent) == 1 else 0, "ip_version": v,
                      "service": service.name, "state": "pending"})
        if len(sent) == 1 and sent[0] != service.sizes[0]:
            steps[-1]["requested_frame_size"] = service.sizes[0]
    return steps


def _steps(m, v, asked, flows, services=(), tags=0):
    """The plan's steps of one IP version and flow count, tests in RFC order."""
    plan = []
    sizes = list(asked)
    numeric = [s for s in sizes if s]
    for test in m.tests:
        rule = catalog.entry(test).frame_sizes
        if rule == catalog.PER_SERVICE:
            plan += _service_steps(test, v, services, tags)
            continue
        if rule == catalog.SMALLEST_SIZE:
            chosen = [min(numeric)] if numeric else []
        elif rule == catalog.FIXED_SIZES:
            chosen = numeric
        else:
            chosen = sizes
        for size in chosen:
            for load in (m.latency.loads_pct if test == "latency" else [None]):
                plan.append({"unit": unit_key(test, v, size, flows), "test": test, "frame_size": size,
                             "ip_version": v, "state": "pending"})
                if asked[size] != size:
                    plan[-1]["requested_frame_size"] = asked[size]
                if flows != 1:
                    plan[-1]["flows"] = flows
                if load is not None and load != FULL_LOAD_PCT:
                    # a latency step at another load than the throughput's (26.2) is a unit of its own
                    plan[-1].update(unit=f"{plan[-1]['unit']}/{load:g}pct", throughput_pct=load)
    return plan


FULL_LOAD_PCT = 100.0       # latency at the throughput rate, as RFC 2544 26.2 asks


def sent_sizes(requested, ipv6, tags=0):
    """{size sent: size asked}, in the order asked: a size too small for the
    headers is sent at the smallest that holds them (wire.wire_frame_size);
    sizes that come out the same are one step, the one asked as sent kept."""
    sent = {}
    for size in requested:
        on_wire = wire.wire_frame_size(size, ipv6, tags)
        if on_wire == size or on_wire not in sent:
            sent[on_wire] = size
    return sent


def imix_mean_size(ipv6=False, tags=0):
    return wire.imix_mean_size(ipv6, tags)


class Context:
    """What a procedure may use (see rfc2544.procedures)."""

    def __init__(self, runner, unit, step=None):
        self._r = runner
        self.unit = unit
        self.step = step or {}            # the plan step: a procedure's options (latency's throughput_pct)
        self.ipv6 = "/ipv6/" in unit      # unit_key's form: test/ipv6/size
        self.flows = self.step.get("flows", 1)  # flows per stream: every trial of the step has them
        self.profile = runner.profile
        self._journal = runner.results.recorded_trials(unit)
        self._next = 0
        self.last_samples = []
        self.last_replayed = False

    def run_trial(self, spec, progress=None, keep_samples=False):
        r = self._r
        samples = []
        spread = self.profile.model.flow_spread if self.flows > 1 else "udp_ports"
        if spec.flows != self.flows or spec.flow_spread != spread:
            spec = replace(spec, flows=self.flows, flow_spread=spread)
        if self._next < len(self._journal):
            recorded = self._journal[self._next]
            if _same_spec(recorded.spec, spec):
                self._next += 1
                self.last_replayed = True
                self.last_samples = r.results.data["trials"][self._record_index(self._next - 1)].get("samples", [])
                r.display.trial(self.unit, recorded, replayed=True)
                return recorded
            # the recorded path diverges from what is asked now: stop replaying
            r.results.supersede_from(self.unit, self._next)
            self._journal = self._journal[:self._next]

        def on_sample(sample):
            if keep_samples:
                samples.append(dict(sample))
            r.display.sample(sample)
            if progress:
                progress(sample)

        r.display.trial_start(self.unit, spec)
        result = r.tester.run_trial(spec, progress=on_sample)
        if result.spacing is None and pacing.may_be_bursty(result) and hasattr(r.tester, "link_spacing"):
            # no departure data (the in-tree pktgen): the calibration link's estimate, if there is one
            try:
                result.spacing = r.tester.link_spacing(spec, result.tx_frames)
            except InfraError as exc:     # the trial stands; only the estimate is missing
                result.notes.append(f"no departure spacing estimate: {exc}")
        reason = pacing.bursty_reason(result, pacing.evidence_of(self._journal[:self._next]))
        previous = self._journal[self._next - 1] if self._next else None
        if reason and pacing.repeats_loss(previous, result):
            reason = None       # the DUT's loss: no more retries at this load
            result.notes.append(f"lost {result.lost_frames} frames, about as many as the tester-bursty attempt "
                                f"before at this load ({previous.lost_frames}): the DUT's loss, not the bursts'")
        if reason:      # the search retries it and never counts it as DUT loss
            result.tester_bursty = result.tester_limited = True
            result.notes.append(reason)
        starved = starved_reason(result, self._journal[:self._next])
        if starved:     # frames the tester's own path dropped: retried the same way
            result.tester_starved = result.tester_limited = True
            result.notes.append(starved)
        record = r.results.add_trial(self.unit, result, link_mbps=r.link_mbps)
        if keep_samples:
            record["samples"] = samples
            r.results.save()
        self._journal.append(result)
        self._next += 1
        self.last_samples, self.last_replayed = samples, False
        r.trials_run += 1
        r.display.trial(self.unit, result, replayed=False)
        return result

    def upper_bound_bursty(self, load_fps):
        """Whether the last failed trial of this unit at `load_fps`, the
        search's final word there, is tester-bursty when judged again with
        the whole unit's evidence, against all the unit's other trials
        (pacing.py): not by the order the search met them in."""
        trials = self._journal[:self._next]
        failed = [i for i, t in enumerate(trials) if t.spec.load_fps == load_fps and pacing.may_be_bursty(t)]
        if not failed:
            return False
        last = trials[failed[-1]]
        return bool(getattr(last, "tester_bursty", False) and pacing.bursty_reason(
            last, pacing.evidence_of(trials[:failed[-1]] + trials[failed[-1] + 1:])))

    def _record_index(self, n):
        rows = [i for i, t in enumerate(self._r.results.data["trials"])
                if t.get("unit") == self.unit and not t.get("superseded")]
        return rows[n]

    def measure(self, frame_size, ipv6, early_abort=False, test="throughput", frames_per_burst=1,
                latency=False):
        return make_measure(self.run_trial, frame_size, ipv6=ipv6, early_abort=early_abort, test=test,
                            tester_limited_retries=self.profile.model.search.tester_limited_retries,
                            frames_per_burst=frames_per_burst, latency=latency)

    # -- facts for procedures --------------------------------------------------
    def link_mbps(self):
        return self._r.link_mbps

    def imix_mean_size(self):
        return imix_mean_size(self.ipv6, self._r.frame_tags)

    def tx_ports(self):
        """Ports that send (2 bidirectional): loads are their sum."""
        return getattr(self._r.tester, "tx_port_count", 1)

    def line_fps(self, size):
        """Line rate of all sending ports together at `size` B, None without a link speed."""
        link = self._r.link_mbps
        return theoretical_max_fps(size, link) * self.tx_ports() if link and size else None

    def ceiling(self, frame_size, ipv6=False):
        """The tester's own ceiling: calibrated, else a probe's achieved rate."""
        return self._ceiling(frame_size, ipv6)[0]

    def _calibrated(self, frame_size):
        cal = self._r.calibration or {}
        value = cal.get(str(frame_size), cal.get(frame_size))
        return float(value) if value else None

    def _ceiling(self, frame_size, ipv6):
        calibrated = self._calibrated(frame_size)
        if calibrated:
            bounds = self._r.results.data.get("conditions", {}).get("calibration_bound") or {}
            if bounds.get(str(frame_size)) == "receiver":
                return calibrated, "calibrated receive ceiling"
            return calibrated, "calibrated tester ceiling"
        probed = self._r.results.data.get("probes", {}).get(f"ipv{6 if ipv6 else 4}/{frame_size}")
        if probed:
            return float(probed), "probe trial (tester's achieved rate)"
        return None, None

    def throughput(self, frame_size, ipv6):
        unit = unit_key("throughput", 6 if ipv6 else 4, frame_size, self.flows)
        return self._r.results.summary("throughput", unit)

    def max_load(self, frame_size, ipv6):
        """Highest load to offer: the profile's cap, else line rate from the
        link speed, lowered to the tester's ceiling (calibration, else a
        probe trial) when the tester cannot reach line rate."""
        s = self.profile.model.search
        if s.max_load_fps:
            return s.max_load_fps, "profile search.max_load_fps"
        size = frame_size or imix_mean_size(ipv6, self._r.frame_tags)
        line = self.line_fps(size)
        if self._calibrated(frame_size) is None:
            self._probe(frame_size, ipv6, line or theoretical_max_fps(size, PROBE_LINK_MBPS) * self.tx_ports())
        ceiling, source = self._ceiling(frame_size, ipv6)
        if line and line <= ceiling * 1.001:
            return line, f"line rate at {self._r.link_mbps:g} Mbit/s"
        self.note(f"the maximum load at {frame_size or 'IMIX'} B is the tester's ceiling "
                  f"({ceiling:.0f} fps, {source})" + (f", below line rate ({line:.0f} fps)" if line else
                                                       ": no link speed known"),
                  code="max_load_ceiling", asked="line rate", used=f"{ceiling:.0f} fps")
        return ceiling, source

    def _probe(self, frame_size, ipv6, rate):
        key = f"ipv{6 if ipv6 else 4}/{frame_size}"
        probes = self._r.results.data.setdefault("probes", {})
        # A probe this step sent before an interruption is replayed from the
        # journal, not taken from `probes`: the replay must walk every recorded
        # trial in order, or it diverges at the probe and sends them all again.
        if key not in probes or self._replays_probe(frame_size, ipv6):
            # a fixed number of frames at the highest rate asked: a slow tester
            # takes longer, it does not send for a fixed time at a rate it cannot reach
            frames = max(PROBE_FRAMES, round(rate * 0.01))
            probe = self.run_trial(TrialSpec(frame_size=frame_size, ipv6=ipv6, test="probe", load_fps=rate,
                                             duration_s=frames / rate))
            probes[key] = probe.achieved_fps
            self._r.results.save()
        return probes[key]

    def _replays_probe(self, frame_size, ipv6):
        """The next recorded trial of this step is its probe at this size."""
        if self._next >= len(self._journal):
            return False
        spec = self._journal[self._next].spec
        return spec.test == "probe" and spec.frame_size == frame_size and spec.ipv6 == ipv6

    def burst_rate(self, frame_size, ipv6):
        return self.max_load(frame_size, ipv6)

    def note(self, message, code="note", section=None, asked=None, used=None):
        """Record a deviation found while running (deviations.Deviation), once."""
        devs = self._r.results.data["deviations"]
        if message not in [text_of(d) for d in devs]:
            devs.append(Deviation(code, section, asked, used, message).to_dict())

    def full_fidelity(self):
        return bool(getattr(self._r.tester, "full_fidelity", False))

    def receiver_name(self):
        return getattr(self._r.tester, "receiver_name", "receiver")

    def latency_clock(self):
        """conditions.latency_clock (drivers/clock.py), or None when not known."""
        return self._r.results.data["conditions"].get("latency_clock")

    def latency_definition(self):
        return getattr(self._r.tester, "latency_definition", DEFAULT_LATENCY_DEFINITION)

    def supports_recovery(self):
        return bool(getattr(self._r.tester, "supports_recovery", False))

    def paced_bursts(self):
        """Whether the tester can send bursty traffic (TrialSpec.frames_per_burst)."""
        return bool(getattr(self._r.tester, "paced_bursts", False))

    def can_reset_dut(self):
        return self._r.dut_reset is not None

    # -- Y.1564 services ------------------------------------------------------
    def service(self):
        """The step's Y.1564 service (y1564/services.Service), as the run keeps it."""
        name = self.step.get("service")
        for record in self._r.results.data.get("services") or []:
            if record["name"] == name:
                return services_mod.from_record(record)
        raise InfraError(f"{self.unit}: the results file keeps no service {name!r}")

    def use_streams(self, streams):
        """Send `streams` (inventory.Stream records) in this step's trials;
        None: the inventory's again."""
        use = getattr(self._r.tester, "use_streams", None)
        if use is None:
            raise Skip("this tester sends the inventory's streams only: no service traffic of its own")
        use(streams)

    def counts_streams_apart(self):
        """Whether the receiver tells streams from one source apart (stream ids)."""
        return bool(getattr(self._r.tester, "counts_streams_apart", False))

    def inventory(self):
        """The tester's inventory (config/inventory.Inventory)."""
        return self._r.tester.inventory

    def reset_dut(self):
        self._r.dut_reset()


def _same_spec(a, b):
    def close(x, y):
        return x == y or (x is not None and y is not None and math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9))
    return (a.frame_size == b.frame_size and a.ipv6 == b.ipv6 and a.test == b.test
            and close(a.load_fps, b.load_fps) and close(a.duration_s, b.duration_s)
            and a.burst_frames == b.burst_frames and a.latency == b.latency
            and close(a.abort_loss_ratio, b.abort_loss_ratio)
            and close(a.recovery_load_fps, b.recovery_load_fps) and a.flows == b.flows
            and a.frames_per_burst == b.frames_per_burst and a.flow_spread == b.flow_spread
            and tuple(a.shares or ()) == tuple(b.shares or ()))


class Runner:
    def __init__(self, tester, profile, results, display, link_mbps=None, calibration=None,
                 dut_reset=None):
        self.tester = tester
        self.profile = profile
        self.results = results
        self.display = display
        self.link_mbps = profile.model.link_mbps or link_mbps
        self.calibration = calibration
        self.dut_reset = dut_reset
        self.trials_run = 0
        # VLAN tags the frames carry (streams.frame_tags): sizes count them
        self.frame_tags = getattr(tester, "frame_tags", 0)

    def run(self):
        plan = self.results.data["plan"]
        self.display.start(plan, self.profile)
        try:
            for step in plan:
                if step.get("state") in ("done", "skipped"):
                    continue
                self._run_step(step)
        except KeyboardInterrupt:
            self._interrupted("interrupted by the user (Ctrl-C)")
            raise
        except Rfc2544Error as exc:
            self._interrupted(str(exc))
            raise
        except CONNECTION_ERRORS as exc:
            err = InfraError(f"connection to a host failed: {type(exc).__name__}: {exc}".rstrip(": "))
            self._interrupted(str(err))
            raise err from exc
        except Exception as exc:
            self._interrupted(f"internal error: {type(exc).__name__}: {exc}")
            raise
        self._reread_clocks()
        self.results.mark_complete()
        self.display.finished(self.results)
        return check_thresholds(self.results.data, self.profile)

    def _reread_clocks(self):
        """The clock error of one-way latency across two hosts, with the
        end of the run's clock reads beside the start's (the worse counts)."""
        conditions = self.results.data["conditions"]
        before, read = conditions.get("latency_clock"), getattr(self.tester, "latency_clock", None)
        if not before or before.get("shared") or read is None:
            return
        try:
            conditions["latency_clock"] = read(before=before)
        except Exception:       # the start's statement stands
            pass

    def _run_step(self, step):
        unit, test = step["unit"], step["test"]
        self.display.step(step)
        ctx = Context(self, unit, step)
        started = time.monotonic()
        try:
            entry = procedure(test)(ctx, step["frame_size"], step["ip_version"] == 6)
        except Skip as why:
            self.results.set_unit_state(unit, "skipped", str(why))
            self.display.skipped(step, str(why))
            return
        entry["ip_version"] = step["ip_version"]
        if step.get("requested_frame_size") is not None:
            entry["requested_frame_size"] = step["requested_frame_size"]
        if step.get("flows", 1) != 1:
            entry["flows"] = step["flows"]
        self.results.set_summary(test, unit, entry)
        self.results.set_unit_state(unit, "done")
        self.display.step_done(step, entry, time.monotonic() - started)

    def _interrupted(self, reason):
        try:
            self.tester.stop_all()
        except Exception as exc:         # stop_all must not raise; still keep the results
            reason += f"; stopping the generators failed too: {exc}"
        self.results.note_interruption(reason)
        self.display.interrupted(reason, self.results)


def check_thresholds(data, profile):
    """Messages for every threshold of the profile a result misses."""
    t, misses = profile.model.thresholds, []
    for row in data["throughput"]:
        size = row["frame_size"] or "IMIX"
        fps = row.get("ndr_fps") or 0.0
        if t.throughput_min_fps and fps < t.throughput_min_fps:
            misses.append(f"throughput at {size} B is {fps:.0f} fps, below {t.throughput_min_fps:.0f}")
        if t.throughput_min_pct and row.get("pct_of_max") is not None \
                and row["pct_of_max"] < t.throughput_min_pct:
            misses.append(f"throughput at {size} B is {row['pct_of_max']:.1f} % of line rate, "
                          f"below {t.throughput_min_pct:g} %")
    for row in data["latency"]:
        size = row["frame_size"] or "IMIX"
        for key, limit in (("p999_ns", t.latency_p999_max_us), ("median_ns", t.latency_median_max_us)):
            if limit and row.get(key) is not None and row[key] / 1000 > limit:
                misses.append(f"latency {key[:-3]} at {size} B is {row[key] / 1000:.1f} us, above {limit:g} us")
    for row in data.get("y1564_configuration") or []:
        # a service that fails its acceptance criteria fails the run, as a threshold does
        failed = [s for s in row.get("steps") or [] if s.get("verdict") == "fail"]
        if failed:
            first = failed[0]
            misses.append(f"Y.1564 service {row['service']} failed its configuration test: "
                          f"{', '.join(row.get('failed_rules') or [])} (step {first['label']})")
    return misses


__all__ = ["Runner", "Context", "build_plan", "check_thresholds", "verdict"]
