"""Progress on screen: one line per trial (step, load, loss, verdict, ETA),
a live line during a trial on a terminal, and the end-of-run summary."""
import sys
import time

import click

from rfc2544 import catalog
from rfc2544.results.file import verdict


def estimate_step_s(test, profile):
    """Rough seconds a plan step takes (for the ETA): its test's own
    estimate (catalog.py names it)."""
    try:
        estimate = catalog.resolve(catalog.entry(test).estimate)
    except KeyError:
        return 0.0
    return estimate(profile.model)


def _eta(seconds):
    seconds = max(0, int(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


class Display:
    def __init__(self, stream=None, live=None, quiet=False):
        self.stream = stream or sys.stdout
        self.live = self.stream.isatty() if live is None else live
        self.quiet = quiet
        self.trial_no = 0
        self._remaining = []
        self._step_started = time.monotonic()
        self._step_estimate = 0.0
        self._profile = None
        self._live_shown = False
        self._estimated_done = 0.0      # estimates and actual times of finished steps:
        self._actual_done = 0.0         # their ratio corrects the ETA of the rest

    def _out(self, text):
        if self.quiet:
            return
        if self._live_shown:
            click.echo("\r\033[K", nl=False, file=self.stream)
            self._live_shown = False
        click.echo(text, file=self.stream)

    def eta_s(self):
        scale = 1.0
        if self._estimated_done > 0:
            scale = min(max(self._actual_done / self._estimated_done, 0.3), 5.0)
        in_step = max(self._step_estimate * scale - (time.monotonic() - self._step_started), 0.0)
        return in_step + scale * sum(estimate_step_s(s["test"], self._profile) for s in self._remaining)

    def start(self, plan, profile):
        self._profile = profile
        self._remaining = [s for s in plan if s.get("state") not in ("done", "skipped")]
        done = len(plan) - len(self._remaining)
        self._out(f"plan: {len(plan)} steps ({done} already done), profile '{profile.model.name}', "
                  f"ETA ~{_eta(self.eta_s())}")

    def step(self, step):
        if self._remaining and self._remaining[0] is step:
            self._remaining.pop(0)
        self._step_started = time.monotonic()
        self._step_estimate = estimate_step_s(step["test"], self._profile)
        size = step["frame_size"] or "IMIX"
        # a size the headers do not fit in is sent larger (rfc2544/wire.py): say both
        asked = f" ({step['requested_frame_size']} B asked)" if step.get("requested_frame_size") else ""
        spread = {"dst_networks": "destination networks",
                  "src_addresses": "source addresses"}.get(self._profile.model.flow_spread, "flows")
        flows = f", {step['flows']} {spread} per stream" if step.get("flows", 1) != 1 else ""
        self._out(f"== {step['test']} {size} B{asked} IPv{step['ip_version']}{flows}")

    def trial_start(self, unit, spec):
        pass

    def sample(self, sample):
        if not self.live or self.quiet:
            return
        lost = sample.get("lost_frames", sample.get("gap_lost"))
        if lost is None:
            lost = max(sample.get("tx_frames", 0) - sample.get("rx_frames", 0), 0)
        click.echo(f"\r\033[K   ... {sample['elapsed_s']:6.1f} s  sent {sample.get('tx_frames', 0):>12,}  "
                   f"lost {lost:>10,}", nl=False, file=self.stream)
        self._live_shown = True

    def trial(self, unit, result, replayed):
        self.trial_no += 1
        spec = result.spec
        what = "replayed" if replayed else verdict(result)
        if spec.burst_frames:
            load = f"burst {spec.burst_frames:,} frames"
        else:
            load = f"{spec.load_fps:>12,.0f} fps"
        self._out(f"  trial {self.trial_no:>4}  {spec.test:<15} {load}  {spec.duration_s:6.2f} s  "
                  f"loss {result.loss_ratio * 100:8.4f} %  {what:<14} ETA ~{_eta(self.eta_s())}")

    def skipped(self, step, why):
        self._out(f"   skipped: {why}")

    def step_done(self, step, entry, seconds):
        self._estimated_done += self._step_estimate
        self._actual_done += seconds
        if step["test"] == "throughput":
            ndr, pdr = entry.get("ndr_fps"), entry.get("pdr_fps")
            text = f"NDR {ndr:,.0f} fps" if ndr else "no NDR (the minimum load lost frames)"
            if pdr:
                text += f", PDR {pdr:,.0f} fps"
            if entry.get("tester_bound"):
                text += " (tester-bound)"
            if entry.get("tester_bursty"):
                text += " (set by the tester's bursts: a lower bound)"
            self._out(f"   {text}  [{entry['trials']} trials, {entry['traffic_s']:.1f} s of traffic, "
                      f"{entry['saved_traffic_s']:.1f} s saved by early abort]")
        else:
            self._out(f"   done in {seconds:.0f} s")

    def interrupted(self, reason, results):
        self._out(f"run stopped: {reason}")
        self._out(f"generators stopped; {len(results.data['trials'])} finished trials kept in {results.path}; "
                  f"continue with: rfc2544 run --resume {results.dir}")

    def finished(self, results):
        self._out(f"run complete: {len(results.data['trials'])} trials, results in {results.path}")
