"""Click command `calibrate`: the tester's own ceiling and pacing
(engine.calibrate), saved beside the inventory for the runs that follow."""
import json
import math
from datetime import datetime

import click

from rfc2544.cli import inventory_arg
from rfc2544.config.inventory import MAX_GENERATORS
from rfc2544.engine.assemble import calibration_path, generators_key
from rfc2544.errors import BadInput, InfraError
from rfc2544.interrupts import interruptible


def _finite(param, value):
    # click's FloatRange lets NaN through: it compares false with both ends
    if value != value:
        raise click.BadParameter("nan is not a number of seconds", param=param)
    return value


@click.command("calibrate")
@click.option("-i", "--inventory", "inventory_path", type=click.Path(dir_okay=False),
              help="Ansible inventory (default: the local lab's).")
@click.option("--frame-size", "frame_sizes", multiple=True, type=click.IntRange(64, 9216),
              help="Frame sizes to calibrate, 64 to 9216 B (repeatable) [default: 64 and 1518].")
@click.option("--duration", default=2.0, show_default=True, type=click.FloatRange(0.1, 3600),
              callback=lambda ctx, param, value: _finite(param, value), help="Seconds per measurement.")
@click.option("--pacing/--no-pacing", default=True, show_default=True,
              help="Also measure how evenly the generator paces below its ceiling (rfc2544_pktgen's "
                   "departure times, or arrivals on the inventory's calibration link).")
@click.option("--receive/--no-receive", default=True, show_default=True,
              help="Also measure the receiving side: each size's send ceiling offered on the inventory's "
                   "calibration link, counted by the receiver; a run judges tester-bound against the lower.")
@click.option("--compare-in-tree", is_flag=True,
              help="Also measure the in-tree pktgen's pacing at the same steps, on the inventory's calibration "
                   "link: unloads rfc2544_pktgen for it, then loads it again with its settings (it must be "
                   "installed, as the playbooks do).")
@click.option("--generators", "generator_counts", multiple=True, type=click.IntRange(1, MAX_GENERATORS),
              help="Generators per stream to measure the ceiling with (repeatable: a table of the scaling; "
                   "runs use the ceiling of their own count) [default: each tx port's inventory `generators`].")
@interruptible
def calibrate(inventory_path, frame_sizes, duration, pacing, receive, compare_in_tree, generator_counts):
    """Measure the tester's own ceiling (frames/s it can send) without a DUT,
    and how evenly it paces below it."""
    inventory = inventory_arg.resolve(inventory_path)
    if compare_in_tree and not pacing:
        raise BadInput("--compare-in-tree compares pacing: it cannot go with --no-pacing")
    try:
        from rfc2544.engine.calibrate import in_tree_pacing, pacing_fidelity
        from rfc2544.model import SOURCE_GENERATOR
        from rfc2544.engine.tester import SSHTester
    except ImportError as exc:
        raise InfraError(f"calibration is not available in this build ({exc})")
    sizes = list(frame_sizes) or [64, 1518]
    counts = list(dict.fromkeys(generator_counts)) or [None]
    measured = []       # [(generators key, {size: fps}, receive rows)], the first is also the pacing's
    for n in counts[1:]:
        scaling = SSHTester(inventory, waits={"learning_frames": 0}, generators=n)
        try:
            click.echo(f"generators per stream: {n}")
            measured.append(_ceilings(scaling, inventory, sizes, duration, receive))
        finally:
            scaling.close()
    tester = SSHTester(inventory, waits={"learning_frames": 0}, generators=counts[0])
    try:
        if len(counts) > 1:
            click.echo(f"generators per stream: {generators_key(tester.plans)}")
        measured.insert(0, _ceilings(tester, inventory, sizes, duration, receive))
        _, ceilings, received = measured[0]
        if len(measured) > 1:
            click.echo(scaling_table([(key, c) for key, c, _ in measured], sizes, inventory, tester.plans))
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
        path.write_text(json.dumps({"inventory": str(inventory.path), "fps": fps, "receive": received,
                                    "pacing": fidelity,
                                    "ceilings": [{"generators": key, "fps": {str(k): float(v) for k, v in c.items()},
                                                  "receive": rows}
                                                 for key, c, rows in measured],
                                    "measured": datetime.now().isoformat(timespec="seconds")}, indent=1))
    except OSError as exc:
        raise BadInput(f"{path}: cannot save the calibration: {exc.strerror}")
    click.echo(f"saved to {path}; runs on this inventory cap the load there and flag "
               "results within 5 % of it as tester-bound")


def _ceilings(tester, inventory, sizes, duration, receive):
    """(generators key, {size: send ceiling}, receive rows or None) with
    `tester`'s generators: the receive ceiling at the same count, as a run
    with that count receives (issue 56: two generators starve a receive
    path that one leaves alone)."""
    from rfc2544.engine.calibrate import calibrate as measure_ceiling
    ceilings = measure_ceiling(inventory, sizes, duration=duration, tester=tester,
                               progress=lambda size, fps: click.echo(f"{size:>6} B  {fps:14,.0f} fps"))
    return generators_key(tester.plans), ceilings, (measure_receive(tester, ceilings, duration) if receive else None)


def measure_receive(tester, ceilings, duration):
    """receive_ceiling's rows, printed as they come; None (and why) without
    a calibration link."""
    from rfc2544.engine.calibrate import receive_ceiling
    if not tester.has_calibration_link:
        click.echo("receive ceiling: not measured (the inventory names no calibration link, "
                   "rfc2544_calibration_link: two tester ports cabled to each other)")
        return None
    click.echo("receive ceiling (the send ceiling offered on the calibration link, counted by "
               f"{tester.receiver_name}):")
    return receive_ceiling(tester, ceilings, duration, progress=lambda row: click.echo(receive_line(row)))


def receive_line(row):
    bound = ("the sender bounds it" if row["bound"] == "sender"
             else f"the receiver bounds it at {row['received_fps']:,.0f} fps")
    return (f"{row['frame_size']:>6} B  sent {row['sent_fps']:>12,.0f} fps  received {row['received_fps']:>12,.0f} fps"
            f"  ({row['received_share'] * 100:.2f} %): {bound}")


def scaling_table(measured, sizes, inventory, plans):
    """The ceiling per generator count and frame size with each count's
    rate per generator, and how many generators at that rate line rate
    would take (where every tx port's `speed_mbps` is known)."""
    from rfc2544.model import theoretical_max_fps
    ports = {(p.tx_host, p.tx_port) for p in plans}
    speeds = [inventory.hosts[h].ports[port].speed_mbps for h, port in ports]
    lines = ["ceiling by generators per stream (fps, and per generator):"]
    for size in sizes:
        parts, best = [], 0.0
        for key, ceilings in measured:
            generators = sum(int(n) for n in key.split(","))
            parts.append(f"{key}: {ceilings[size]:,.0f} ({ceilings[size] / generators:,.0f} each)")
            best = max(best, ceilings[size] / generators)
        need = ""
        if all(speeds) and best > 0:
            line = sum(theoretical_max_fps(size, s) for s in speeds)
            need = f"; line rate ({line:,.0f} fps) would take {math.ceil(line / best)} generators at that rate"
        lines.append(f"{size:>6} B  " + "  ".join(parts) + need)
    return "\n".join(lines)


def pacing_line(row):
    ratio = "   -" if row["p999_over_nominal"] is None else f"{row['p999_over_nominal']:5.2f}"
    settings = " ".join(f"{k}={v}" for k, v in row["settings"].items())
    return (f"{row['frame_size']:>6} B {row['step'] * 100:>4.0f} %  {row['fps']:>10,} fps  "
            f"achieved {row['achieved_fps']:>10,.0f}  p99.9/nominal {ratio}  "
            f"longest micro-burst {row['longest_micro_burst'] if row['longest_micro_burst'] is not None else '-':>4}"
            f"  [{settings}]{'' if row['kept_rate'] else '  (rate not kept)'}")
