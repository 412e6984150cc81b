"""Click command `run`: parse options, build the pieces (inventory, profile,
tester, results: engine.assemble) and hand over to the runner. Everything
here is wiring; the work happens in runner/procedures/search."""
import functools
import json
import logging
import sys
import time
import traceback
from datetime import datetime
from pathlib import Path

import click

from rfc2544.cli import inventory_arg
from rfc2544.config import profiles as profiles_mod
from rfc2544.config.inventory import MAX_GENERATORS
from rfc2544.drivers.placement import GENERATOR_CPUS
from rfc2544.engine import assemble
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


def run_setup(inventory_path):
    from rfc2544.engine.playbooks import run_playbook
    run_playbook("setup.yml", inventory_path, what="--setup")


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
@click.option("--generators", type=click.IntRange(1, MAX_GENERATORS), default=None,
              help="Generators per stream, each on its own CPU and TX queue [default: each tx port's "
                   "inventory `generators`, else 1].")
@click.option("--generator-cpus", type=click.Choice(GENERATOR_CPUS), default=None,
              help="free: the generators leave the CPUs of a tester's receive path (its receiving ports' "
                   "IRQ and RPS CPUs, a DUT namespace's) to it; all: they may take every CPU, declared as a "
                   "deviation [default: free].")
@click.option("--store", "store_dir", type=click.Path(file_okay=False),
              help="Add the finished run to this results store, for `rfc2544 trend` [default: $RFC2544_STORE].")
@click.option("--services", "services_path", type=click.Path(dir_okay=False),
              help="ITU-T Y.1564 services file, for a profile with a Y.1564 test (-p y1564; "
                   "inventory/services-example.yml shows one).")
@interruptible
def run(inventory_path, profile_name, setup, out_dir, resume_dir, search, tests, frame_sizes,
        ip_versions, early_abort, formats, as_json, generators, generator_cpus, store_dir, services_path):
    """Run the RFC 2544 tests of a profile against the inventory's DUT."""
    say = functools.partial(click.echo, err=as_json)      # --json: stdout holds the document only
    if resume_dir:
        if out_dir or profile_name or search or tests or frame_sizes or ip_versions or early_abort is not None \
                or generators is not None or generator_cpus is not None or services_path:
            raise BadInput("--resume continues a run as it was planned: drop -p/--out/--search/--test/"
                           "--frame-size/--ip-version/--early-abort/--generators/--generator-cpus/--services")
        results = Results.load(resume_dir)
        generators = (results.data.get("conditions") or {}).get("generators")
        generator_cpus = (results.data.get("conditions") or {}).get("generator_cpus")
        profile = profiles_mod.validate(results.data["profile"], f"{results.path} profile")
        if results.complete:
            say(f"{results.path}: the run is already complete")
        inventory_path = resumed_inventory(results, inventory_path)
    else:
        profile = profiles_mod.load(profile_name or "rfc2544")
        profile = apply_overrides(profile, search, tests, frame_sizes, ip_versions, early_abort)
        results = None
    inventory = inventory_arg.resolve(inventory_path)
    services = None if resume_dir else load_services(services_path, profile, inventory, generators)
    if setup:
        run_setup(inventory.path)
    results, misses = _run_tests(inventory, profile, results, out_dir, _display(sys.stderr if as_json else None),
                                 generators, generator_cpus or GENERATOR_CPUS[0], services)
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


def load_services(path, profile, inventory=None, generators=None):
    """The Y.1564 services of `--services` (None without it), checked against
    the profile's tests and the inventory before any host is touched
    (`generators`: the run's per stream, else each port's)."""
    from rfc2544 import catalog
    from rfc2544.procedures import service_streams
    from rfc2544.y1564 import services as services_mod
    wanted = [t for t in profile.model.tests if catalog.entry(t).frame_sizes == catalog.PER_SERVICE]
    if path is None:
        if wanted:
            raise BadInput(f"{wanted[0]}: a Y.1564 test needs the services: give --services FILE "
                           "(inventory/services-example.yml shows one)")
        return None
    if not wanted:
        raise BadInput(f"--services {path}: the profile runs no Y.1564 test (use -p y1564, or --test "
                       "y1564_configuration)")
    services = services_mod.load(path)
    s = profile.model.y1564_configuration
    if not (s.cir_steps_pct or s.eir_step or s.policing_step or s.burst_steps):
        raise BadInput("y1564_configuration: no step to run (cir_steps_pct is empty and the EIR, policing and "
                       "burst steps are off)")
    if inventory is not None:
        service_streams.check(services, inventory, profile.model.link_mbps, str(path), generators)
        several = generators is not None and generators > 1 or any(
            p.generators > 1 for h in inventory.hosts.values() for p in h.ports.values())
        if s.burst_steps and several and any(x.cbs_bytes or x.ebs_bytes for x in services):
            raise BadInput("y1564_configuration.burst_steps: a burst is sent by one generator per stream: "
                           "run with --generators 1")
    return services


def _run_tests(inventory, profile, results, out_dir, display, generators=None, generator_cpus="free",
               services=None):
    """Create the results (unless resuming) and run the plan: (results, threshold misses)."""
    link = assemble.link_speed(inventory, profile)
    tester = assemble.make_tester(inventory, profile, generators, generator_cpus)
    key = assemble.calibration_key(getattr(tester, "plans", ()), inventory)
    calibration = assemble.load_calibration(inventory, key)
    if calibration is None and assemble.calibration_path(inventory).exists():
        click.echo(f"calibration: {assemble.calibration_path(inventory)} has no ceiling measured with {key} "
                   f"generator(s) per stream (it has {', '.join(assemble.calibrated_generators(inventory))}): "
                   f"the load is not capped at the tester's ceiling (rfc2544 calibrate --generators ...)", err=True)
    try:
        if results is None:
            out = Path(out_dir or Path("results") / datetime.now().strftime("%Y%m%d-%H%M%S"))
            conditions = assemble.conditions_for(tester, inventory, profile, link, calibration, generators,
                                                 generator_cpus)
            link = conditions["link_speed_mbps"]
            tags = getattr(tester, "frame_tags", 0)
            deviations = profiles_mod.deviation_records(profile, tags, getattr(tester, "plans", ()))
            from rfc2544.y1564.services import to_record
            results = Results.create(out, profile, build_plan(profile, tags, services or ()),
                                     deviations + assemble.placement_deviations(tester, generator_cpus), conditions,
                                     services=[to_record(s) for s in services] if services else None)
            if profile.model.waits.route_s:
                time.sleep(profile.model.waits.route_s)     # RFC 2544 23: after the routing setup
        else:
            check_same_generators(results, tester)
            if link is None:      # resumed: the speed the run started with
                link = results.data.get("conditions", {}).get("link_speed_mbps")
        runner = Runner(tester, profile, results, display=display, link_mbps=link,
                        calibration=calibration, dut_reset=assemble.make_dut_reset(inventory))
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


def check_same_generators(results, tester):
    """A resumed run sends each stream with the generators it started with:
    an inventory whose `generators` changed since is refused."""
    started = [s.get("generators", 1) for s in (results.data.get("conditions") or {}).get("streams") or []]
    now = [s.get("generators", 1) for s in getattr(tester, "stream_labels", None) or []]
    if started and now and started != now:
        raise BadInput(f"{results.path}: the run started with {started} generators per stream and the inventory "
                       f"now gives {now}: resume with the inventory it started with, or start a new run")


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
