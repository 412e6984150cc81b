"""The simulated DUT's Y.1564 side: per-class policers over the streams a
service sends (model.Tester.use_streams). Each stream sends its share of
the trial's rate (TrialSpec.shares); streams of one class share one
policer of `limit` Mbit/s at layer 2, which forwards the class's first
stream (green) before the others (yellow), as a colour-aware DUT does.
A class without a policer forwards everything; `blackout(second)` drops
the frames of the classes it names in that second of the trial."""
from rfc2544.model import LatencyStats, StreamCounts, TrialResult

SIM_LATENCY_NS = 50_000.0


def stream_class(stream):
    """The DUT's class of a stream: its VLAN and PCP, else its DSCP."""
    if stream.tags.vlan is not None:
        return ("vlan", stream.tags.vlan, stream.tags.vlan_pcp or 0)
    return ("dscp", stream.dscp or 0)


def mean_bytes(stream, spec):
    return sum(stream.sizes) / len(stream.sizes) if stream.sizes else (spec.frame_size or 64)


def services_trial(streams, spec, policers, started="", tester_ceiling_fps=float("inf")):
    """The TrialResult of `spec` sent over `streams` through a DUT whose
    classes (stream_class) are held to `policers[class]` Mbit/s."""
    n = len(streams)
    shares = spec.shares or (1,) * n
    offered = [spec.load_fps * s / sum(shares) for s in shares]
    scale = min(1.0, tester_ceiling_fps / spec.load_fps) if spec.load_fps else 1.0
    tx = [round(fps * scale * spec.duration_s) for fps in offered]
    rx = list(tx)
    room = {}
    for i, stream in enumerate(streams):
        key = stream_class(stream)
        if key not in policers:
            continue
        bits = mean_bytes(stream, spec) * 8
        room.setdefault(key, policers[key] * 1e6 * spec.duration_s / bits)
        rx[i] = min(tx[i], int(room[key]))
        room[key] = max(room[key] - rx[i], 0.0)
    counts = [StreamCounts(f"{s.tx_host}:{s.tx_port}", f"{s.rx_host}:{s.rx_port}", t, r, lost=t - r,
                           out_of_order=0, duplicates=0) for s, t, r in zip(streams, tx, rx)]
    received = sum(rx)
    latency = LatencyStats(samples=received, min_ns=SIM_LATENCY_NS, mean_ns=SIM_LATENCY_NS * 1.1,
                           max_ns=SIM_LATENCY_NS * 2, median_ns=SIM_LATENCY_NS * 1.05,
                           p999_ns=SIM_LATENCY_NS * 1.5, p99_ns=SIM_LATENCY_NS * 1.3) if received else None
    sent = sum(tx)
    return TrialResult(spec=spec, tx_frames=sent, rx_frames=received, intended_frames=round(spec.load_fps *
                       spec.duration_s), achieved_fps=sent / spec.duration_s, traffic_s=spec.duration_s,
                       tester_limited=scale < 0.99, started=started, latency=latency, streams=counts)
