"""A simulated DUT and tester (model.Tester) for unit tests and benches.

Nothing here touches a network: a trial is a time-stepped fluid model of a
device with a forwarding capacity and a buffer, fed by a tester that may
have a ceiling of its own. Simulated time never sleeps unless `time_scale`
asks for it. Kinds (see KINDS): deterministic capacity, random loss, loss
only above a rate, and a tester ceiling below the DUT's capacity.
"""
import math
import random
import statistics
import time
from dataclasses import replace
from datetime import datetime, timezone

from rfc2544 import wire
from rfc2544.model import LatencyStats, StreamCounts, TrialResult, theoretical_max_fps
from rfc2544.sim.services import services_trial


class SimDUT:
    generator_name = "simulated generator"
    receiver_name = "simulated receiver"
    full_fidelity = True
    counts_streams_apart = True
    supports_recovery = True
    paced_bursts = True

    def __init__(self, capacity_fps=math.inf, buffer_frames=0.0,
                 loss_above_fps=None, loss_above_ratio=0.0,
                 random_loss_ratio=0.0, tester_ceiling_fps=math.inf,
                 recovery_s=0.0, reset_s=0.0, latency_ns=20000.0,
                 sample_interval_s=0.1, seed=1, time_scale=0.0, fail_at=None, clock=None,
                 capacity_mbps=None, cores=1, reverse_capacity_fps=None, bucket_frames=None,
                 inventory=None, policers=None):
        self.capacity_fps = capacity_fps
        # Y.1564 services (sim/services.py): the inventory their streams
        # ride on, the DUT's policer of each class in Mbit/s, and the
        # streams use_streams asked for (None: the plain model above)
        self.inventory = inventory
        self.policers = dict(policers or {})
        self.streams = None
        # Bidirectional (RFC 2544 section 14): half the load goes each way;
        # the reverse direction forwards at most this (the forward one at
        # capacity_fps), each direction its own stream. None: one direction.
        self.reverse_capacity_fps = reverse_capacity_fps
        # An RSS/RPS DUT: `capacity_fps` is all its `cores` together, and a
        # flow is forwarded by one core, so a stream of F flows gets
        # min(F, cores) of them (its flows spread evenly).
        self.cores = cores
        # A policer's bucket, in frames: of each burst of bursty traffic
        # (TrialSpec.frames_per_burst) the frames beyond it are lost.
        self.bucket_frames = bucket_frames
        # A DUT that forwards at most this many Mbit/s on the wire (frames,
        # preamble and gap): its capacity in frames/s then depends on the
        # size of the frames sent, as a line-rate-bound port's does.
        self.capacity_mbps = capacity_mbps
        self.frames_sent = []                 # (frame size, ipv6) of every trial, as the tester sent them
        self.buffer_frames = buffer_frames
        self.loss_above_fps = loss_above_fps
        self.loss_above_ratio = loss_above_ratio
        self.random_loss_ratio = random_loss_ratio
        self.tester_ceiling_fps = tester_ceiling_fps
        self.recovery_s = recovery_s          # keeps losing this long after an overload ends
        self.reset_s = reset_s                # forwards nothing this long after reset_dut()
        self.latency_ns = latency_ns
        self.sample_interval_s = sample_interval_s
        self.time_scale = time_scale          # >0: sleep traffic_s * time_scale per trial
        self.fail_at = dict(fail_at or {})    # trial number -> exception raised mid-trial
        self.clock = clock or (lambda: datetime.now(timezone.utc))   # a trial's `started`: pinnable
        self.rng = random.Random(seed)
        self.trials_run = 0
        self.running = False                  # a "generator" is sending
        self.stop_all_calls = 0
        self._sim_now = 0.0
        self._reset_until = -1.0
        self._capacity = capacity_fps

    # -- model.Tester -------------------------------------------------------
    def conditions(self):
        return {"tester": {"role": "tester", "kernel": "simulated", "nics": []}}

    def stop_all(self):
        self.stop_all_calls += 1
        self.running = False

    def reset_dut(self):
        """Called during a trial (from its progress callback): the DUT stops
        forwarding for `reset_s` of simulated time."""
        self._reset_until = self._sim_now + self.reset_s

    @property
    def tx_port_count(self):
        return 1 if self.reverse_capacity_fps is None else 2

    def use_streams(self, streams=None):
        self.streams = None if streams is None else list(streams)

    def run_trial(self, spec, progress=None):
        if self.streams is not None:
            self.trials_run += 1
            if self.trials_run in self.fail_at:
                raise self.fail_at.pop(self.trials_run)
            return services_trial(self.streams, spec, self.policers, self.clock().isoformat(),
                                  self.tester_ceiling_fps)
        if self.reverse_capacity_fps is None:
            return self._run_one(spec, progress)
        half = replace(spec, load_fps=spec.load_fps / 2,
                       recovery_load_fps=None if spec.recovery_load_fps is None else spec.recovery_load_fps / 2)
        forward = self._run_one(half, progress)
        forward_capacity, self.capacity_fps = self.capacity_fps, self.reverse_capacity_fps
        try:
            reverse = self._run_one(half, None, ends=("sim:rx0", "sim:tx0"))
        finally:
            self.capacity_fps = forward_capacity
        self.trials_run -= 1            # one trial, both directions
        self.frames_sent.pop()
        forward.spec = spec
        forward.tx_frames += reverse.tx_frames
        forward.rx_frames += reverse.rx_frames
        forward.intended_frames += reverse.intended_frames
        forward.achieved_fps += reverse.achieved_fps
        forward.tester_limited |= reverse.tester_limited
        forward.aborted_early |= reverse.aborted_early
        forward.streams += reverse.streams
        return forward

    def _run_one(self, spec, progress=None, ends=("sim:tx0", "sim:rx0")):
        self.trials_run += 1
        self.running = True
        self.frames_sent.append((spec.frame_size, spec.ipv6))
        self._capacity = self._capacity_for(spec)
        self._reset_until = -1.0            # a reset lasts within the trial that fired it
        phases = [(spec.load_fps, spec.duration_s)]
        if spec.burst_frames:
            phases = [(spec.load_fps, spec.burst_frames / spec.load_fps)]
        elif spec.recovery_load_fps is not None:
            phases.append((spec.recovery_load_fps, spec.recovery_duration_s))
        intended = round(sum(rate * dur for rate, dur in phases))
        abort_after = None
        if spec.abort_loss_ratio is not None:
            abort_after = spec.abort_loss_ratio * intended
        tx = rx = lost = 0.0
        queue = 0.0
        delays = []                     # (frames forwarded, their queueing delay in s) per step
        elapsed = 0.0
        recovering_until = -1.0
        aborted = False
        exc = self.fail_at.pop(self.trials_run, None)
        planned = sum(d for _, d in phases)
        for rate, duration in phases:
            sent_rate = min(rate, self.tester_ceiling_fps)
            t = 0.0
            while t < duration - 1e-12 and not aborted:
                dt = min(self.sample_interval_s, duration - t)
                self._sim_now = elapsed + dt
                sent = sent_rate * dt
                dropped, queue = self._drop(sent, sent_rate, dt, queue, elapsed, recovering_until)
                if sent_rate > self._capacity:
                    recovering_until = elapsed + dt + self.recovery_s
                tx += sent
                lost += dropped
                rx += sent - dropped
                delays.append((sent - dropped, queue / self._capacity if self._capacity else 0.0))
                t += dt
                elapsed += dt
                if progress:
                    progress({"elapsed_s": elapsed, "load_fps": rate, "tx_frames": round(tx),
                              "rx_frames": round(rx), "lost_frames": round(lost),
                              "seq_max": round(tx)})
                if exc is not None and elapsed >= planned / 2:
                    raise exc           # the generator stays "running" until stop_all()
                if abort_after is not None and lost > abort_after:
                    aborted = True
            if aborted:
                break
        if exc is not None:
            raise exc                   # the trial stopped early, before the fault point
        if self.time_scale:
            time.sleep(elapsed * self.time_scale)
        # frames still queued at the end are forwarded during the residual wait
        # (rx already counts them)
        self.running = False
        b = spec.frames_per_burst
        if self.bucket_frames is not None and b > self.bucket_frames and tx:
            over = min(tx / b * (b - self.bucket_frames), rx)
            rx -= over
            lost += over
        tx_i, rx_i = round(tx), round(rx)
        ceiling_limited = min(r for r, _ in phases) > self.tester_ceiling_fps * 1.001
        result = TrialResult(
            spec=spec, tx_frames=tx_i, rx_frames=rx_i, intended_frames=intended,
            achieved_fps=tx / elapsed if elapsed else 0.0, traffic_s=elapsed,
            tester_limited=ceiling_limited, aborted_early=aborted,
            saved_traffic_s=max(planned - elapsed, 0.0) if aborted else 0.0,
            started=self.clock().strftime("%Y-%m-%dT%H:%M:%SZ"),
            streams=[StreamCounts(*ends, tx_i, rx_i, lost=tx_i - rx_i)],
        )
        if spec.latency and rx_i:
            result.latency = self._latency(spec.load_fps, rx_i, delays)
        return result

    # -- the model ----------------------------------------------------------
    def _capacity_for(self, spec):
        capacity = self.capacity_fps * min(spec.flows, self.cores) / self.cores
        if not self.capacity_mbps:
            return capacity
        size = spec.frame_size or wire.imix_mean_size(spec.ipv6)
        return min(capacity, theoretical_max_fps(size, self.capacity_mbps))

    def _drop(self, sent, rate, dt, queue, now, recovering_until):
        """Frames lost in one step, and the queue after it."""
        if now < self._reset_until - 1e-9:
            return sent, 0.0
        if now < recovering_until - 1e-9 and rate <= self._capacity:
            # still recovering from an overload: loses a tenth of what arrives
            return sent * 0.1, queue
        capacity = self._capacity * dt
        queue += sent - capacity
        dropped = 0.0
        if queue > self.buffer_frames:
            dropped = queue - self.buffer_frames
            queue = self.buffer_frames
        queue = max(queue, 0.0)
        if self.loss_above_fps is not None and rate > self.loss_above_fps:
            dropped += (sent - dropped) * self.loss_above_ratio
        if self.random_loss_ratio:
            dropped += self._binomial(sent - dropped, self.random_loss_ratio)
        return dropped, queue

    def _binomial(self, n, p):
        mean = n * p
        if mean <= 0:
            return 0.0
        if mean < 30:                       # Poisson by inversion for small means
            k, prob = 0, math.exp(-mean)
            cum, u = prob, self.rng.random()
            while u > cum and k < 10 * mean + 50:
                k += 1
                prob *= mean / k
                cum += prob
            return float(k)
        return max(0.0, round(self.rng.gauss(mean, math.sqrt(mean * (1 - p)))))

    def _latency(self, load, n, delays=()):
        # queueing delay grows as the load approaches capacity; above it, a
        # buffer's queue adds its own delay (`delays`: per step, frames and s)
        rho = min(load / self.capacity_fps, 0.99) if self.capacity_fps != math.inf else 0.0
        base = self.latency_ns * (1 + rho / (1 - rho) * 0.1)
        count = min(n, 5000)
        queued = _spread(delays, count)
        xs = sorted(base * (1 + 0.05 * self.rng.random()) + (self.rng.expovariate(1 / base) if i % 997 == 0 else 0)
                    + queued[i] * 1e9 for i in range(count))

        def pct(q):
            return xs[min(len(xs) - 1, math.ceil(q * len(xs)) - 1)]
        return LatencyStats(samples=n, min_ns=xs[0], mean_ns=statistics.fmean(xs), max_ns=xs[-1],
                            median_ns=xs[len(xs) // 2], p999_ns=pct(0.999), p99_ns=pct(0.99),
                            stddev_ns=statistics.pstdev(xs), pdv_mean_ns=base * 0.02, pdv_max_ns=base * 0.5)


def _spread(delays, count):
    """`count` samples of the queueing delay, each step's delay taken in
    proportion to the frames it forwarded (zeros without steps)."""
    total = sum(frames for frames, _ in delays)
    if not total:
        return [0.0] * count
    out, cum, steps = [], 0.0, iter(delays)
    frames, delay = next(steps)
    for i in range(count):
        target = (i + 0.5) * total / count
        while cum + frames < target:
            cum += frames
            frames, delay = next(steps, (math.inf, delay))
        out.append(delay)
    return out


# name -> (constructor arguments, true NDR fps, true PDR fps at 0.5 % loss)
CAPACITY = 1_000_000.0
KINDS = {
    "deterministic": (dict(capacity_fps=CAPACITY), CAPACITY, CAPACITY / (1 - 0.005)),
    "random-loss": (dict(capacity_fps=CAPACITY, random_loss_ratio=0.001, seed=7),
                    None, CAPACITY * (1 - 0.001) / (1 - 0.005)),
    "loss-above-rate": (dict(loss_above_fps=CAPACITY, loss_above_ratio=0.02), CAPACITY, CAPACITY),
    "tester-ceiling": (dict(capacity_fps=CAPACITY, tester_ceiling_fps=0.6 * CAPACITY),
                       0.6 * CAPACITY, 0.6 * CAPACITY),
}


def make(kind, **overrides):
    kwargs, _, _ = KINDS[kind]
    return SimDUT(**{**kwargs, **overrides})
