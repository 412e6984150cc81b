"""Watching one trial's traffic until it ends.

Live counters are polled for progress and the early abort; each later
segment of the rate schedule gets its rate written while the generators
send, aimed at the frame where the segment starts.
"""
from rfc2544.engine.detection import RECEIVER_PGRX
from rfc2544.drivers import pktgen
from rfc2544.drivers.readings import rx_totals
from rfc2544.drivers.script import Batch
from rfc2544.engine.schedule import RateChange


class TrafficWatch:
    """One trial's traffic, from the start trigger at `t0` to its end.
    `engine`: the TrialEngine (transport, reader, settings, clock);
    `base`: interface counter baselines; `progress(dict)` or None."""

    def __init__(self, engine, spec, schedule, starts, base, t0, progress):
        self.engine = engine
        self.transport, self.reader, self.plans = engine.transport, engine.reader, engine.plans
        self.clock, self.settings = engine.clock, engine.settings
        self.spec, self.schedule, self.starts, self.base, self.t0 = spec, schedule, starts, base, t0
        self.progress = progress
        planned = schedule.planned_s()
        if spec.burst_frames is not None and not any(schedule.first_rates()):
            planned = max(planned, spec.duration_s or 0.0)
        # in-tree pktgen: ~125 ms before threads run, <= 100 ms to notice the end
        self.expected_end = t0 + planned + 0.25
        self.deadline = t0 + max(planned * 2 + 5.0, planned + 10.0)
        self.intended = sum(schedule.totals())
        ratio = spec.abort_loss_ratio
        self.budget = int(ratio * self.intended) if ratio is not None else None
        self.polling = progress is not None or self.budget is not None or schedule.changes > 0
        # a rate change is timed from the first frames seen: poll fast until then
        first_poll = 0.02 if schedule.changes else min(self.settings.poll_interval_s, max(planned / 4, 0.05))
        self.next_poll = t0 + first_poll
        self.history = []               # (time, frames sent) of each poll
        self.offered_fps = spec.load_fps
        self.next_segment = 1           # the next segment whose rate is still to be written
        self.change_at = None           # when to write it, once aimed
        self.changes = {}               # segment index -> RateChange
        self.aborted = self.deadline_hit = False
        self.late_end = False           # the start write returned before the devices finished

    @property
    def change_pending(self):
        return self.next_segment < len(self.schedule.segments)

    def run(self):
        """Wait for the traffic to end. -> (aborted, deadline_hit, end time, changes)."""
        while not all(s.done() for s in self.starts.values()):
            now = self.clock.monotonic()
            if now >= self.deadline:
                self.transport.stop_generators()
                self.deadline_hit = True
                break
            if self.change_pending and self.change_at is not None and now >= self.change_at:
                self._change_rate(now)
                continue
            if self.polling and now >= self.next_poll and not self.aborted:
                step = self._poll(now)
                if step == "break":
                    break
                if step == "continue":
                    continue
            elif now >= self.expected_end:
                if self._all_sent():
                    break
                self.expected_end = self.clock.monotonic() + 0.02
            self._wait()
        self._confirm_early_end()
        return self.aborted, self.deadline_hit, self.clock.monotonic(), self.changes

    def _confirm_early_end(self):
        """A start write that returned well before the planned end is only
        believed once the device files say every device finished: the
        in-tree pktgen's start sleeps 125 ms and then waits only for the
        devices already running, so on a loaded host it can return while
        its threads have yet to start (seen in the TCG lab: 1446 of 2000
        frames read as the trial's)."""
        planned = self.expected_end - 0.25 - self.t0
        if self.aborted or self.deadline_hit or self.clock.monotonic() >= self.t0 + 0.9 * planned - 0.05:
            return
        self.late_end = True
        while not self._all_sent():
            if self.clock.monotonic() >= self.deadline:
                self.transport.stop_generators()
                self.deadline_hit = True
                return
            self.clock.sleep(0.05)

    def _wait(self):
        wake = [self.expected_end, self.deadline] + ([self.next_poll] if self.polling else [])
        if self.change_pending and self.change_at is not None:
            wake.append(self.change_at)
        wait_for = min(wake) - self.clock.monotonic()
        next(iter(self.starts.values())).wait_readable(max(min(wait_for, 0.05), 0.001))

    def _all_sent(self):
        """The start write may linger ~100 ms after the last frame: the
        device files say sooner that every device finished."""
        outs = self.transport.run_batches(self.reader.batches("end", with_rx=False))
        tx, _ = self.reader.parse(outs, "end")
        counts = self.schedule.totals()
        return all(st.finished or (st.pkts_sofar or 0) >= counts[i] for i, st in tx.items())

    def _poll(self, now):
        """Live counters: progress, aim the next rate change, early abort.
        -> "break" (traffic over), "continue" (stopped early) or None."""
        live = self._live()
        self.next_poll = now + self.settings.poll_interval_s
        if self.change_pending:
            self._aim_change(live, now)
            if self.change_at is not None:
                self.next_poll = min(self.next_poll, self.change_at)
        self.history.append((now, live["tx_frames"]))
        lost = self._loss_estimate(live, now)
        live["lost_estimate"] = lost
        if self.progress is not None:
            self.progress(live)
        if self.budget is not None and lost > self.budget:
            self.transport.stop_generators()
            self.aborted = True
            return "continue"
        if all(live["finished"]):
            return "break"
        return None

    def _aim_change(self, live, now):
        """Change on frames sent, not on time (a stalled generator must still
        send the segment's frames first): re-aim from every poll, poll faster
        as the change nears (the reading is ~half a round trip old and the
        write lands ~half a round trip late: aim at now + left)."""
        k = self.next_segment
        sofar = live["tx_frames"]
        left = (sum(self.schedule.boundary(k)) - sofar) / sum(self.schedule.rates[k - 1])
        if sofar > 0 and left <= 0.1:
            self.change_at = now + max(left, 0.0)
        elif sofar > 0:
            self.change_at = None
            self.next_poll = min(self.next_poll, now + left / 2)
        else:
            self.next_poll = now + 0.02

    def _change_rate(self, now):
        """Write segment k's rate to every running device (pktgen takes
        `ratep` while sending) and read back how many frames each had sent."""
        k = self.next_segment
        rates = self.schedule.rates[k]
        batches = {}
        for host in self.transport.tx_hosts:
            b = batches.setdefault(host, Batch())
            for p in self.plans:
                if p.tx_host == host:
                    b.write(pktgen.device_path(p.device), f"ratep {rates[p.index]}")
                    self.engine.note_write(p.device, f"ratep {rates[p.index]}")
        for host, b in self.reader.batches("switch", with_rx=False).items():
            batches[host].extend(b)
        tx, _ = self.reader.parse(self.transport.run_batches(batches), "switch")
        self.changes[k] = RateChange(k, [tx[p.index].pkts_sofar for p in self.plans], now - self.t0)
        self.offered_fps = self.schedule.segments[k].load_fps
        self.next_segment += 1
        self.change_at = None

    def _live(self):
        outs = self.transport.run_batches(self.reader.batches("live"))
        tx, rx = self.reader.parse(outs, "live")
        tx_frames = sum(st.pkts_sofar or 0 for st in tx.values())
        rx_frames, gap_lost = rx_totals(rx, self.base)
        pgrx = self.reader.detection["receiver"] == RECEIVER_PGRX
        spec = self.spec
        return {
            "phase": "traffic", "test": spec.test, "frame_size": spec.frame_size,
            "load_fps": self.offered_fps, "duration_s": spec.duration_s,
            "elapsed_s": self.clock.monotonic() - self.t0, "intended_frames": self.intended,
            "tx_frames": tx_frames, "rx_frames": rx_frames, "gap_lost": gap_lost,
            "lost_frames": gap_lost if pgrx else None,
            "seq_max": self._trial_seq_max(rx) if pgrx else None,
            "finished": [st.finished for st in tx.values()],
        }

    def _trial_seq_max(self, rx):
        """The highest sequence number received, in frames of the whole
        trial: each stream's (each generator's: its own sequence space)
        divided by its share of the trial's rate, so that the recovery
        procedure maps it to a send time with the trial's rate."""
        by_id = self.reader.detection.get("stream_ids", False)
        plan_of = {p.rx_key(self.spec.ipv6, by_id): p for p in self.plans}
        rates = self.schedule.first_rates()
        total = sum(r or 0 for r in rates)
        counts = self.schedule.totals()      # as fast as possible: the shares of the frames
        best = 0
        for state in rx.values():
            for st in state.streams:
                p = plan_of.get(st.src)
                if p is None:
                    continue
                share = rates[p.index] / total if total and rates[p.index] else counts[p.index] / sum(counts)
                best = max(best, round(st.seq_max / share))
        return best

    def _loss_estimate(self, live, now):
        """Frames that are certainly lost: sequence gaps (pgrx), or frames sent
        at least `abort_lag_s` ago that have not arrived (any receiver). The
        lag is at least the residual wait: a frame the DUT queues for less
        than that is not lost in the final counts, and under a steady
        overload a FIFO's delay only grows, so a frame that late means the
        trial's last frames miss the final read too (a buffering DUT's
        queued frames aborted trials wrongly before)."""
        lag = max(self.settings.abort_lag_s, self.settings.waits.residual_s)
        lagged_tx = 0
        for t, tx in self.history:
            if t <= now - lag:
                lagged_tx = tx
        return max(live["gap_lost"], lagged_tx - live["rx_frames"])
