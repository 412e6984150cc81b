"""A trial's final readings -> TrialResult (receiver-specific readings, the
rate schedule's notes; outcome.judge decides the rest)."""
from rfc2544.engine.detection import RECEIVER_PGRX
from rfc2544.drivers.trial_outcome import ReceiverTotals, StreamReading, judge, latency_from_pgrx
from rfc2544.drivers.readings import pktgen_sent
from rfc2544.engine.pacing import spacing_of
from rfc2544.engine.schedule import actual_points, rate_change_notes


def build_result(spec, plans, detection, schedule, readings_in, changes, rate_tolerance, **kw):
    """`readings_in`: (tx states, rx readings, counter baselines) of the
    final read; `changes`: segment index -> RateChange as it happened;
    `kw`: started, wall_traffic_s, aborted, deadline_hit (for judge)."""
    tx, rx, base = readings_in
    notes = list(detection["notes"])
    change_notes, missed = rate_change_notes(schedule, changes)
    notes += change_notes
    expected = schedule.expected_s(actual_points(schedule, changes))
    counts, rates = schedule.totals(), schedule.first_rates()
    latency = None
    if detection["receiver"] == RECEIVER_PGRX:
        readings, rx_total = _pgrx_readings(spec, plans, counts, rates, expected, tx, rx, notes,
                                            by_id=detection.get("stream_ids", False))
        if spec.latency:
            latency = latency_from_pgrx(list(rx.values()))
            if latency is None:
                notes.append("no latency samples (timestamps missing or clocks not synchronised)")
    else:
        readings, rx_total = _counter_readings(plans, counts, rates, expected, tx, rx, base)
        notes.append("receiver: interface counters (lower fidelity: every frame on the port counts, "
                     "no reordering, duplicates or latency)")
        if spec.latency:
            notes.append("latency needs the rfc2544_pktgen receiver (pgrx); not measured")
    result = judge(spec, readings, ReceiverTotals(rx_total), latency=latency,
                   rate_tolerance=rate_tolerance, notes=notes, **kw)
    result.foreign_frames = sum(state.foreign for state in rx.values()) \
        if detection["receiver"] == RECEIVER_PGRX else 0
    if missed:
        result.tester_limited = True   # the planned rate profile was not offered
    result.spacing = spacing_of([tx.get(p.index) for p in plans], rates, [p.stream for p in plans])
    return result


def _pgrx_readings(spec, plans, counts, rates, expected, tx, rx, notes, by_id=False):
    """Per-stream readings from pgrx (unique, lost incl. the unsent tail,
    reordered, duplicated) and the test frames received; notes strangers.
    `by_id`: the streams' frames carry stream ids, and pgrx counts by them."""
    readings = []
    keys = [p.rx_key(spec.ipv6, by_id) for p in plans]
    for p, key, count, rate in zip(plans, keys, counts, rates):
        st = rx[p.rx_host].stream(key)
        sent = pktgen_sent(tx[p.index])
        if st is None:
            readings.append(StreamReading(p, count, rate, tx[p.index], 0, sent, 0, 0,
                                          expected_s=expected[p.index]))
        else:
            tail = max(sent - st.seq_max, 0)
            readings.append(StreamReading(p, count, rate, tx[p.index], st.unique,
                                          st.lost + tail, st.ooo, st.dup, expected_s=expected[p.index]))
    known = set(keys)
    rx_total = 0
    for host, state in rx.items():
        rx_total += sum(s.unique for s in state.streams if s.src in known)
        strangers = [s for s in state.streams if s.src not in known]
        if strangers:
            notes.append(f"{host}: pgrx saw test frames of unknown streams "
                         f"{', '.join(s.src for s in strangers)} (not counted)")
        if state.streams_dropped:
            notes.append(f"{host}: pgrx stream table full, {state.streams_dropped} packets unattributed")
        if state.foreign:
            notes.append(f"{host}: pgrx saw {state.foreign} test frames of streams the trial does not "
                         "declare (foreign: in no stream and no total, not loss)")
        note = _invalid_note(state)
        if note:
            notes.append(f"{host}: {note}")
    return readings, rx_total


def _invalid_note(state):
    """What pgrx did not believe or did not count (its `invalid` record), or None."""
    bad = state.invalid
    parts = [(bad.wrong_size, f"of another length than {state.pkt_size} B without FCS (not counted: "
                              f"RFC 2544 section 10)"),
             (bad.bad_len, "with a UDP length that does not hold the test header (not counted)"),
             (bad.bad_csum, "with a wrong UDP checksum (not counted)"),
             (bad.seq_jump, "with a sequence number far ahead of their stream's, never confirmed (not counted)"),
             (bad.bad_ts, "with a timestamp out of range (counted, no latency sample)")]
    said = [f"{n} {what}" for n, what in parts if n]
    return "pgrx test frames " + "; ".join(said) if said else None


def _counter_readings(plans, counts, rates, expected, tx, rx, base):
    """Per-stream readings from interface counter deltas: a port shared by
    several streams cannot attribute its frames (rx None)."""
    deltas = {}
    for host, snap in rx.items():
        for port, d in snap.delta(base[host]).items():
            deltas[(host, port)] = d
    per_rx = {}
    for p in plans:
        per_rx.setdefault((p.rx_host, p.rx_port), []).append(p)
    readings = []
    for p, count, rate in zip(plans, counts, rates):
        shared = len(per_rx[(p.rx_host, p.rx_port)]) > 1
        got = None if shared else deltas[(p.rx_host, p.rx_port)].get("rx_packets", 0)
        readings.append(StreamReading(p, count, rate, tx[p.index], got, expected_s=expected[p.index]))
    rx_total = sum(d.get("rx_packets", 0) for d in deltas.values())
    return readings, rx_total
