"""What a results file's conditions say about the tester's ports (pure:
read by the run when it writes them and by the report)."""


def stream_port_speeds(conditions):
    """(host:port, Mbit/s or None) of each stream end, as the gathered host
    facts reported them, each end once."""
    hosts = conditions.get("hosts") if isinstance(conditions.get("hosts"), dict) else {}
    out = []
    for stream in conditions.get("streams") or []:
        for end in (stream.get("tx"), stream.get("rx")):
            host, _, port = (end or "").partition(":")
            nics = (hosts.get(host) or {}).get("nics") or []
            out.append((end, next((n.get("speed_mbps") for n in nics if n.get("name") == port), None)))
    return list(dict.fromkeys(out))


def stream_port_speed(conditions):
    """The slowest link speed the tester's stream ports reported in the
    gathered facts (Mbit/s), or None when any of them reported none."""
    speeds = [speed for _, speed in stream_port_speeds(conditions)]
    return min(speeds) if speeds and all(isinstance(s, (int, float)) and s > 0 for s in speeds) else None
