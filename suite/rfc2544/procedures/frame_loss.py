"""RFC 2544 26.3 Frame loss rate: from 100 % of the maximum rate down in
steps (10 % by default) until two successive trials lose nothing."""
from rfc2544.model import TrialSpec
from rfc2544.procedures import trial_overhead_s


def run(ctx, frame_size, ipv6):
    p = ctx.profile.model.frame_loss
    duration = p.duration_s or ctx.profile.model.trial_duration_s
    max_rate, source = ctx.max_load(frame_size, ipv6)
    points, clean_in_a_row, pct = [], 0, 100.0
    while pct > 0 and clean_in_a_row < 2:
        load = max_rate * pct / 100
        r = ctx.run_trial(TrialSpec(frame_size=frame_size, load_fps=load, duration_s=duration,
                                    ipv6=ipv6, test="frame_loss"))
        loss_pct = (r.tx_frames - r.rx_frames) * 100 / r.tx_frames if r.tx_frames else None
        points.append({"load_pct": pct, "load_fps": load, "loss_pct": max(loss_pct or 0.0, 0.0),
                       "tester_limited": r.tester_limited, "achieved_fps": r.achieved_fps})
        clean = r.lost_frames == 0 and not r.tester_limited
        clean_in_a_row = clean_in_a_row + 1 if clean else 0
        pct = round(pct - p.step_pct, 9)
    return {"frame_size": frame_size, "max_rate_fps": max_rate, "max_rate_source": source,
            "step_pct": p.step_pct, "duration_s": duration, "points": points,
            "two_clean_trials": clean_in_a_row >= 2}


def estimate_s(m):
    """Rough seconds of one step (the progress display's ETA)."""
    d = m.frame_loss.duration_s or m.trial_duration_s
    return min(100 / m.frame_loss.step_pct, 6) * (d + trial_overhead_s(m))
