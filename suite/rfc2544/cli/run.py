"""Click commands `run`, `calibrate` and `doctor`: parse options, build the
pieces (inventory, profile, tester, results) and hand over to the runner.
Everything here is wiring; the work happens in runner/procedures/search."""
import functools
import json
import logging
import sys
import threading
import time
import traceback
from datetime import datetime
from pathlib import Path

import click

from rfc2544.config import inventory as inventory_mod
from rfc2544.config import profiles as profiles_mod
from rfc2544.interrupts import interruptible
from rfc2544.errors import BadInput, InfraError, Rfc2544Error, ThresholdMissed
from rfc2544.reports.outputs import summary_document, write_outputs
from rfc2544.results.file import Results
from rfc2544.procedures.runner import Runner, build_plan

# paramiko logs a lost connection with a traceback on stderr (Python's
# last-resort handler); our errors already say it in one line.
logging.getLogger("paramiko").addHandler(logging.NullHandler())
REPORT_FORMATS = ("html", "pdf", "csv")


def resumed_inventory(results, given):
    """The inventory a resumed run uses: the one it started with (stored
    absolute, so resuming from another directory finds it); `-i` may only
    name that same file."""
    stored = results.data.get("conditions", {}).get("inventory")
    if given is None or stored is None:
        return stored or given
    if Path(given).resolve() != Path(stored).resolve():
        raise BadInput(f"--resume {results.dir}: the run started with inventory {stored}, not {given} "
                       "(drop -i to use it)")
    return stored


def calibration_path(inventory):
    return Path(str(inventory.path) + ".calibration.json")


def load_calibration(inventory):
    path = calibration_path(inventory)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        return {str(k): float(v) for k, v in data["fps"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise BadInput(f"{path}: not a calibration file (run 'rfc2544 calibrate' again)")


def link_speed(inventory, profile):
    if profile.model.link_mbps:
        return profile.model.link_mbps
    speeds = [inventory.hosts[s.tx_host].ports[s.tx_port].speed_mbps for s in inventory.streams]
    return min(speeds) if speeds and all(speeds) else None


def make_tester(inventory, profile):
    try:
        from rfc2544.engine.tester import SSHTester
    except ImportError as exc:
        raise InfraError(f"the traffic drivers are not available in this build ({exc})")
    w = profile.model.waits
    waits = {"learning_s": w.learning_s, "residual_s": w.residual_s, "settle_s": w.settle_s}
    return SSHTester(inventory, waits=waits)


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


def run_setup(inventory_path):
    from rfc2544.engine.playbooks import run_playbook
    run_playbook("setup.yml", inventory_path, what="--setup")


def conditions_for(tester, inventory, profile, link_mbps, calibration):
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
        "streams": [{"tx": f"{s.tx_host}:{s.tx_port}", "rx": f"{s.rx_host}:{s.rx_port}"} for s in inventory.streams],
        "hosts": hosts.get("hosts", hosts) if isinstance(hosts, dict) else hosts,
        "calibration": calibration,
    }
    # No speed from the profile or the inventory: the one the NICs reported
    # (the report's % of line rate then says where it came from).
    source = "profile" if profile.model.link_mbps else "inventory" if link_mbps else None
    if link_mbps is None:
        from rfc2544.drivers.facts import stream_port_speed
        conditions["link_speed_mbps"] = stream_port_speed(conditions)
        source = "NICs" if conditions["link_speed_mbps"] else None
    conditions["link_speed_source"] = source
    return conditions


def apply_overrides(profile, search, tests, frame_sizes, ip_versions, early_abort):
    raw = profile.model.to_dict()       # a copy, sections too: edited and validated again
    if search:
        raw["search"]["method"] = search
    if early_abort is not None:
        raw["search"]["early_abort"] = early_abort
    if tests:
        raw["tests"] = list(tests)
    if frame_sizes:
        sizes = []
        for s in frame_sizes:
            if s.lower() == profiles_mod.IMIX:
                sizes.append(profiles_mod.IMIX)
            elif s.isdigit():
                sizes.append(int(s))
            else:
                raise BadInput(f"--frame-size: '{s}' is not a frame size or 'imix'")
        raw["frame_sizes"] = sizes
    if ip_versions:
        raw["ip_versions"] = sorted({int(v) for v in ip_versions})
    return profiles_mod.validate(raw, "command line")


@click.command("run")
@click.option("-i", "--inventory", "inventory_path", type=click.Path(dir_okay=False),
              help="Ansible inventory (default: the local lab's).")
@click.option("-p", "--profile", "profile_name", default=None,
              help=f"Built-in profile ({', '.join(profiles_mod.builtin_names())}) or a YAML file [default: rfc2544].")
@click.option("--setup/--no-setup", default=False, help="Run the setup playbook on the inventory first (as `rfc2544 setup`).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Output directory [default: results/<time>].")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False),
              help="Continue the run in DIR without redoing finished trials.")
@click.option("--search", type=click.Choice(["bisection", "mlr"]), help="Override the profile's search.")
@click.option("--test", "tests", multiple=True, type=click.Choice(profiles_mod.TESTS),
              help="Run only this test (repeatable).")
@click.option("--frame-size", "frame_sizes", multiple=True, help="Frame size or 'imix' (repeatable).")
@click.option("--ip-version", "ip_versions", multiple=True, type=click.Choice(["4", "6"]), help="Repeatable.")
@click.option("--early-abort/--no-early-abort", default=None, help="Override search.early_abort.")
@click.option("--format", "formats", multiple=True, type=click.Choice(REPORT_FORMATS),
              help="Report formats to write at the end [default: html, csv].")
@click.option("--json", "as_json", is_flag=True,
              help="Print the run's summary as JSON on stdout (as `report --json`, plus results_dir, reports "
                   "and threshold_misses); progress goes to stderr.")
@click.option("--store", "store_dir", type=click.Path(file_okay=False),
              help="Add the finished run to this results store, for `rfc2544 trend` [default: $RFC2544_STORE].")
@interruptible
def run(inventory_path, profile_name, setup, out_dir, resume_dir, search, tests, frame_sizes,
        ip_versions, early_abort, formats, as_json, store_dir):
    """Run the RFC 2544 tests of a profile against the inventory's DUT."""
    say = functools.partial(click.echo, err=as_json)      # --json: stdout holds the document only
    if resume_dir:
        if out_dir or profile_name or search or tests or frame_sizes or ip_versions or early_abort is not None:
            raise BadInput("--resume continues a run as it was planned: drop -p/--out/--search/--test/"
                           "--frame-size/--ip-version/--early-abort")
        results = Results.load(resume_dir)
        profile = profiles_mod.validate(results.data["profile"], f"{results.path} profile")
        if results.complete:
            say(f"{results.path}: the run is already complete")
        inventory_path = resumed_inventory(results, inventory_path)
    else:
        profile = profiles_mod.load(profile_name or "rfc2544")
        profile = apply_overrides(profile, search, tests, frame_sizes, ip_versions, early_abort)
        results = None
    inventory = inventory_mod.resolve(inventory_path)
    if setup:
        run_setup(inventory.path)
    results, misses = _run_tests(inventory, profile, results, out_dir, _display(sys.stderr if as_json else None))
    if results.complete and not misses:
        from rfc2544.procedures.runner import check_thresholds
        misses = check_thresholds(results.data, profile)
    written = write_outputs(results.path, results.dir, formats or ("html", "csv"))
    for path in written:
        say(f"report: {path}")
    stored = add_to_store(results, store_dir, say)
    if as_json:
        click.echo(json.dumps({**run_document(results, written, misses), "stored": stored}, indent=1))
    if misses:
        raise ThresholdMissed("; ".join(misses))


def _run_tests(inventory, profile, results, out_dir, display):
    """Create the results (unless resuming) and run the plan: (results, threshold misses)."""
    link = link_speed(inventory, profile)
    calibration = load_calibration(inventory)
    tester = make_tester(inventory, profile)
    try:
        if results is None:
            out = Path(out_dir or Path("results") / datetime.now().strftime("%Y%m%d-%H%M%S"))
            conditions = conditions_for(tester, inventory, profile, link, calibration)
            link = conditions["link_speed_mbps"]
            results = Results.create(out, profile, build_plan(profile), profiles_mod.deviation_records(profile),
                                     conditions)
            if profile.model.waits.route_s:
                time.sleep(profile.model.waits.route_s)     # RFC 2544 23: after the routing setup
        elif link is None:      # resumed: the speed the run started with
            link = results.data.get("conditions", {}).get("link_speed_mbps")
        runner = Runner(tester, profile, results, display=display, link_mbps=link,
                        calibration=calibration, dut_reset=make_dut_reset(inventory))
        try:   # SIGTERM, like Ctrl-C, is a KeyboardInterrupt here (interrupts.interruptible)
            misses = [] if results.complete else runner.run()
        except (Rfc2544Error, KeyboardInterrupt):
            raise
        except Exception as exc:
            # a bug: one line for the user, the traceback kept for the report
            log = results.dir / "error.log"
            log.write_text(traceback.format_exc())
            raise InfraError(f"internal error ({type(exc).__name__}: {exc}); details in {log}")
    finally:
        close = getattr(tester, "close", None)
        if close:
            close()
    return results, misses or []


def add_to_store(results, store_dir, say):
    """Add a complete run to the results store (--store or $RFC2544_STORE);
    the run id, or None when there is no store or the run is incomplete.
    The run's own files are on disk before this: a store that refuses the
    run costs nothing but the entry."""
    from rfc2544.results import store as store_mod
    path = store_mod.store_path(store_dir)
    if path is None:
        return None
    if not results.complete:
        say(f"store: {path}: not added, the run is incomplete (resume it, then 'rfc2544 store add')")
        return None
    with store_mod.Store(path) as st:
        run_id, new = st.add(results.path)
    say(f"store: {path}: {'added' if new else 'already stored'} as {run_id}")
    return run_id


def run_document(results, written, misses):
    """What `run --json` prints: `report --json`'s summary of the results file,
    plus where the run's files are and the thresholds it missed."""
    return {**summary_document(results.path), "results_dir": str(results.dir),
            "reports": [str(p) for p in written], "threshold_misses": list(misses)}


def _display(stream=None):
    from rfc2544.cli.display import Display
    return Display(stream=stream)


@click.command("calibrate")
@click.option("-i", "--inventory", "inventory_path", type=click.Path(dir_okay=False),
              help="Ansible inventory (default: the local lab's).")
@click.option("--frame-size", "frame_sizes", multiple=True, type=int,
              help="Frame sizes to calibrate (repeatable) [default: 64 and 1518].")
@click.option("--duration", default=2.0, show_default=True, type=float, help="Seconds per measurement.")
@click.option("--pacing/--no-pacing", default=True, show_default=True,
              help="Also measure how evenly the generator paces below its ceiling (rfc2544_pktgen's "
                   "departure times, or arrivals on the inventory's calibration link).")
@click.option("--compare-in-tree", is_flag=True,
              help="Also measure the in-tree pktgen's pacing at the same steps, on the inventory's calibration "
                   "link: unloads rfc2544_pktgen for it, then loads it again with its settings (it must be "
                   "installed, as the playbooks do).")
@interruptible
def calibrate(inventory_path, frame_sizes, duration, pacing, compare_in_tree):
    """Measure the tester's own ceiling (frames/s it can send) without a DUT,
    and how evenly it paces below it."""
    inventory = inventory_mod.resolve(inventory_path)
    if compare_in_tree and not pacing:
        raise BadInput("--compare-in-tree compares pacing: it cannot go with --no-pacing")
    try:
        from rfc2544.engine.calibrate import calibrate as measure_ceiling, in_tree_pacing, pacing_fidelity
        from rfc2544.engine.pacing import SOURCE_GENERATOR
        from rfc2544.engine.tester import SSHTester
    except ImportError as exc:
        raise InfraError(f"calibration is not available in this build ({exc})")
    sizes = list(frame_sizes) or [64, 1518]
    tester = SSHTester(inventory, waits={"learning_frames": 0})
    try:
        ceilings = measure_ceiling(inventory, sizes, duration=duration, tester=tester,
                                   progress=lambda size, fps: click.echo(f"{size:>6} B  {fps:14,.0f} fps"))
        fidelity = None
        if pacing:
            click.echo("pacing below the ceiling (gap p99.9 / nominal gap; micro-burst: frames each sent less "
                       "than half the nominal gap after the one before):")
            fidelity = pacing_fidelity(tester, ceilings, duration, progress=lambda row: click.echo(pacing_line(row)))
            if fidelity is None:
                click.echo(f"  {tester.generator_name}: records no departure times and the inventory names no "
                           "calibration link (rfc2544_calibration_link), pacing not measured (rfc2544_pktgen "
                           "records them)")
            elif fidelity["source"] != SOURCE_GENERATOR:
                click.echo(f"  {tester.generator_name}: measured on the calibration link (arrival times)")
            else:
                best = next(s for s in fidelity["settings"] if s["best"])
                click.echo("  most even: " + ", ".join(f"{k} {v}" for k, v in best["settings"].items()))
            if compare_in_tree:
                if fidelity is None or fidelity["source"] != SOURCE_GENERATOR:
                    raise BadInput("--compare-in-tree compares the in-tree pktgen with rfc2544_pktgen, "
                                   "which is not the generator here")
                click.echo("the in-tree pktgen at the same steps, on the calibration link "
                           "(rfc2544_pktgen unloaded meanwhile):")
                fidelity["in_tree"] = in_tree_pacing(tester, ceilings, duration,
                                                     progress=lambda row: click.echo(pacing_line(row)))
                click.echo(f"  rfc2544_pktgen loaded again: {tester.generator_name}")
    finally:
        tester.close()
    fps = {str(k): float(v) for k, v in dict(ceilings).items()}
    path = calibration_path(inventory)
    try:
        path.write_text(json.dumps({"inventory": str(inventory.path), "fps": fps, "pacing": fidelity,
                                    "measured": datetime.now().isoformat(timespec="seconds")}, indent=1))
    except OSError as exc:
        raise BadInput(f"{path}: cannot save the calibration: {exc.strerror}")
    click.echo(f"saved to {path}; runs on this inventory cap the load there and flag "
               "results within 5 % of it as tester-bound")


def pacing_line(row):
    ratio = "   -" if row["p999_over_nominal"] is None else f"{row['p999_over_nominal']:5.2f}"
    settings = " ".join(f"{k}={v}" for k, v in row["settings"].items())
    return (f"{row['frame_size']:>6} B {row['step'] * 100:>4.0f} %  {row['fps']:>10,} fps  "
            f"achieved {row['achieved_fps']:>10,.0f}  p99.9/nominal {ratio}  "
            f"longest micro-burst {row['longest_micro_burst'] if row['longest_micro_burst'] is not None else '-':>4}"
            f"  [{settings}]{'' if row['kept_rate'] else '  (rate not kept)'}")


@click.command("doctor")
@click.option("-i", "--inventory", "inventory_path", type=click.Path(dir_okay=False),
              help="Ansible inventory (default: the local lab's).")
def doctor(inventory_path):
    """Check the hosts: SSH, module, links, MACs, clock sync."""
    inventory = inventory_mod.resolve(inventory_path)
    try:
        from rfc2544.engine.doctor import doctor as check_hosts
    except ImportError as exc:
        raise InfraError(f"doctor is not available in this build ({exc})")
    from rfc2544.engine.playbooks import find_tool
    click.echo(f"ansible-playbook (setup, run --setup): {find_tool('ansible-playbook') or 'not found'}")
    checks = check_hosts(inventory)
    for name, ok, detail in checks:
        click.echo(f"{'ok  ' if ok else 'FAIL'}  {name}: {detail}")
    failed = [name for name, ok, _ in checks if not ok]
    if failed:
        raise InfraError(f"doctor: {len(failed)} of {len(checks)} checks failed: {', '.join(failed)}")
    click.echo(f"all {len(checks)} checks passed")
