"""The modifier devices of a trial (RFC 2544 section 11, drivers/modifiers.py):
TrialEngine's part that plans what they send in each run, writes them and
records what they sent.

A mixin of TrialEngine, whose state it uses: modifiers, modifier_settings,
control_counts, _generator_features()."""
from rfc2544.drivers import modifiers as modifiers_mod
from rfc2544.drivers import pktgen
from rfc2544.drivers.script import Batch


class ModifierDevices:
    """Broadcast and management devices beside a trial's streams."""

    def _trial_modifier_configs(self, spec, schedule, configs):
        """The modifier devices' configs for a trial of `schedule`
        (drivers/modifiers.planned_frames), sent with the streams' size."""
        if not self.modifiers:
            return []
        totals = schedule.totals()
        sending_s = schedule.planned_s()
        stream_ids = self._generator_features()["stream_ids"]
        out = []
        for m in self.modifiers:
            frames, rate = modifiers_mod.planned_frames(m, self.modifier_settings, totals, sending_s)
            out.append(modifiers_mod.device_config(m, spec, frames, rate, configs[0].pkt_size, configs[0].imix,
                                                   stream_ids))
        return out

    def _idle_modifier_configs(self, spec, configs):
        """One frame each: a run that is not a trial (learning, calibration)
        starts the modifier devices too, and a pktgen device cannot send none."""
        stream_ids = self._generator_features()["stream_ids"]
        return [modifiers_mod.device_config(m, spec, 1, None, configs[0].pkt_size, configs[0].imix, stream_ids)
                for m in self.modifiers]

    def _write_modifiers(self, batches, configs):
        """Every command of the modifier devices (a few devices: no diff writes)."""
        for cfg, m in zip(configs, self.modifiers):
            b = batches.setdefault(m.tx_host, Batch())
            for c in cfg.commands():
                b.write(pktgen.device_path(cfg.device), c)
                self.control_counts["writes"] += 1

    def _record_modifiers(self, result, states, planned):
        """The modifier frames each kind sent, and a note when a device sent
        fewer than planned (a generator that could not keep up)."""
        sent = {}
        for m, cfg in zip(self.modifiers, planned):
            st = states.get((m.tx_host, m.device))
            got = (st.pkts_sofar or 0) if st is not None else 0
            sent[m.kind] = sent.get(m.kind, 0) + got
            if got < cfg.count:
                result.notes.append(f"{m.kind} frames: {m.tx_host}:{m.device} sent {got} of {cfg.count}")
        result.modifier_frames = sent
        # a DUT that floods broadcasts (a bridge) passes them to the receiver:
        # say that the foreign frames can be those, not another stream's
        foreign = result.foreign_frames
        if foreign and foreign <= sum(sent.values()):
            result.notes.append(f"the {foreign} foreign frames can be modifier frames ({sum(sent.values())} sent): "
                                "a DUT that floods broadcasts passes them on")
