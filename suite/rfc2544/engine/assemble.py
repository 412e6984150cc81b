"""The pieces a run needs, built from the inventory and the profile: the
tester, the DUT's reset, the run's conditions, the link speed and the saved
calibration. `rfc2544 run` wires them to the runner; tests and the results
generator build them the same way."""
import json
import threading
from pathlib import Path

from rfc2544.errors import BadInput, InfraError


def calibration_path(inventory):
    return Path(str(inventory.path) + ".calibration.json")


def generators_key(plans):
    """Which generators a ceiling was measured with: each stream's count,
    in stream order ("1", "2", "2,1"); None without plans."""
    from rfc2544.engine.schedule import shape_of
    return ",".join(str(n) for n in shape_of(plans)) or None


def calibration_key(plans, inventory):
    """The generators key a run's ceiling is looked up by: its forward
    streams' (the inventory's own). `calibrate` sends those only, so a
    `direction: bi` run, whose reverse streams come after them, takes the
    ceiling measured with the same generators per stream."""
    return generators_key([p for p in plans if p.stream < len(inventory.streams)])


def load_calibration(inventory, generators=None):
    """{frame size: fps} the tester's ceiling with these `generators`
    (generators_key; None: the file's first), lowered where the receive
    ceiling measured with the same generators says the receiver bounds it
    (a file from before those were per count: the one it has); or None:
    no calibration, or none measured with them (a file from before
    ceilings named their generators holds one generator per stream's)."""
    from rfc2544.engine.calibrate import bounded_ceilings
    path = calibration_path(inventory)
    if not path.exists():
        return None
    try:
        entry = _calibration_entry(json.loads(path.read_text()), generators)
        if entry is None:
            return None
        return bounded_ceilings({str(k): float(v) for k, v in entry["fps"].items()}, entry["receive"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise BadInput(f"{path}: not a calibration file (run 'rfc2544 calibrate' again)")


def _calibration_entry(data, generators):
    """{"fps", "receive"} of the file's ceiling with `generators` (None: its
    first), or None when it has none measured with them."""
    first = {"fps": data["fps"], "receive": data.get("receive")}
    if generators is None:
        return first
    ones = ",".join("1" for _ in generators.split(","))
    entries = data.get("ceilings") or [{"generators": ones, "fps": data["fps"]}]
    entry = next((e for e in entries if str(e["generators"]) == generators), None)
    if entry is None:
        return None
    # before receive ceilings per count, the file's one was measured with its first count
    return {"fps": entry["fps"], "receive": entry["receive"] if "receive" in entry else data.get("receive")}


def calibration_bounds(inventory, generators=None):
    """{frame size: "sender" or "receiver"}: which side bounds the tester
    at each size the saved calibration measured the receiver at with
    these `generators` (rfc2544 calibrate, with a calibration link), or None."""
    try:
        entry = _calibration_entry(json.loads(calibration_path(inventory).read_text()), generators)
        rows = (entry or {}).get("receive") or []
        return {str(r["frame_size"]): str(r["bound"]) for r in rows} or None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def calibrated_generators(inventory):
    """The generators keys the inventory's calibration has ceilings for."""
    try:
        data = json.loads(calibration_path(inventory).read_text())
        return [str(e["generators"]) for e in data.get("ceilings") or []] or ["one per stream"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


def link_speed(inventory, profile):
    if profile.model.link_mbps:
        return profile.model.link_mbps
    speeds = [inventory.hosts[s.tx_host].ports[s.tx_port].speed_mbps for s in inventory.streams]
    return min(speeds) if speeds and all(speeds) else None


def make_tester(inventory, profile, generators=None, generator_cpus="free"):
    """`generators`: generators per stream for every stream (None: each tx
    port's inventory `generators`); `generator_cpus`: "all" lets them take
    the CPUs of the tester's packet path too (drivers/placement.py)."""
    try:
        from rfc2544.engine.tester import SSHTester
    except ImportError as exc:
        raise InfraError(f"the traffic drivers are not available in this build ({exc})")
    from rfc2544.drivers import modifiers
    w = profile.model.waits
    waits = {"learning_s": w.learning_s, "residual_s": w.residual_s, "settle_s": w.settle_s}
    return SSHTester(inventory, waits=waits, bidirectional=profile.model.direction == "bi",
                     modifiers=profile.model.modifiers if modifiers.enabled(profile.model.modifiers) else None,
                     generators=generators, every_cpu=generator_cpus == "all")


def cpus_condition(tester):
    """conditions.cpus: where each tester host sends and where its receive
    path runs (drivers/placement.py); {} when the hosts cannot be read."""
    return {h: {"sending": {str(c): d for c, d in sorted(p.sending.items())}, "receive_path": sorted(p.path),
                "receive_ports": p.path_ports, "warning": p.warning()}
            for h, p in getattr(tester, "host_cpus", lambda: {})().items()}


def placement_deviations(tester, generator_cpus="free"):
    """The run's deviation records for generators that took a tester's
    receive path CPUs (--generator-cpus all, or no CPU left for it)."""
    from rfc2544.results.deviations import Deviation
    starved = [p.warning() for p in getattr(tester, "host_cpus", dict)().values() if p.starved]
    if not starved:
        return []
    return [Deviation("generator_cpus", None, "generators off the receive path's CPUs",
                      f"--generator-cpus {generator_cpus}", "; ".join(starved))]


def make_dut_reset(inventory):
    """A callable that fires the DUT's rfc2544_reset_cmd in the background
    (the trial keeps streaming), or None when the inventory gives none."""
    duts = [h for h in inventory.duts if h.reset_cmd]
    if not duts:
        return None
    host = duts[0]

    def fire():
        from rfc2544.drivers.ssh import SSHHost, quote
        cmd = host.reset_cmd
        if host.netns:
            cmd = f"ip netns exec {quote(host.netns)} sh -c {quote(cmd)}"
        try:
            conn = SSHHost.connect(host.name, host.address, host.port, host.user, host.key_file,
                                   host.known_hosts)
            conn.run(cmd, timeout=120, check=False)
            conn.close()
        except InfraError:
            pass        # a reset may well take the connection down with it

    return lambda: threading.Thread(target=fire, name="dut-reset", daemon=True).start()


def conditions_for(tester, inventory, profile, link_mbps, calibration, generators=None, generator_cpus="free"):
    try:
        hosts = tester.conditions()
    except Exception as exc:        # facts are for the report; a failure must not stop the run
        hosts = {"error": f"could not gather host facts: {exc}"}
    conditions = {
        "generator": getattr(tester, "generator_name", "unknown"),
        "receiver": getattr(tester, "receiver_name", "unknown"),
        "fidelity": "full" if getattr(tester, "full_fidelity", False) else "lower",
        "latency_definition": getattr(tester, "latency_definition", None)
        or "software timestamps, generator header at transmit to receiver hook at arrival (bit-forwarding, RFC 1242)",
        "link_speed_mbps": link_mbps,
        "ip_versions": list(profile.model.ip_versions),
        "inventory": str(Path(inventory.path).resolve()),     # absolute: --resume may start elsewhere
        "direction": profile.model.direction,
        # the streams sent (bidirectional: the reverse ones too)
        "streams": getattr(tester, "stream_labels", None)
        or [{"tx": f"{s.tx_host}:{s.tx_port}", "rx": f"{s.rx_host}:{s.rx_port}"} for s in inventory.streams],
        "hosts": hosts.get("hosts", hosts) if isinstance(hosts, dict) else hosts,
        "calibration": calibration,
    }
    bounds = (calibration_bounds(inventory, calibration_key(getattr(tester, "plans", ()), inventory))
              if calibration else None)
    if bounds:
        conditions["calibration_bound"] = bounds
    clock = getattr(tester, "latency_clock", None)
    if clock is not None:
        # one-way latency's clock error: re-read at the end of the run (Runner)
        try:
            conditions["latency_clock"] = clock()
        except Exception as exc:     # for the report: never stop the run
            conditions["latency_clock"] = {"shared": False, "error_ns": None,
                                           "text": f"unbounded: the clocks could not be read ({exc})"}
    if generators is not None:
        conditions["generators"] = generators     # the run's override, for --resume
    conditions["generator_cpus"] = generator_cpus
    placed = cpus_condition(tester)
    if placed:
        conditions["cpus"] = placed
    mods = getattr(tester, "modifiers", None)
    if mods:
        # RFC 2544 section 11's frames beside the streams, and the devices that sent them
        settings = profile.model.modifiers
        conditions["modifiers"] = {"broadcast_pct": settings.broadcast_pct,
                                   "management_fps": settings.management_fps,
                                   "devices": [{"kind": m.kind, "tx": f"{m.tx_host}:{m.tx_port}", "device": m.device}
                                               for m in mods]}
    # No speed from the profile or the inventory: the one the NICs reported
    # (the report's % of line rate then says where it came from).
    source = "profile" if profile.model.link_mbps else "inventory" if link_mbps else None
    if link_mbps is None:
        from rfc2544.results.conditions import stream_port_speed
        conditions["link_speed_mbps"] = stream_port_speed(conditions)
        source = "NICs" if conditions["link_speed_mbps"] else None
    conditions["link_speed_source"] = source
    return conditions
