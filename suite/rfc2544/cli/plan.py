"""`rfc2544 plan -p PROFILE`: the effective profile (defaults filled in),
its deviations from the RFCs and the plan a run would walk, without any
host. `--json` prints the same as one JSON object for scripts."""
import json

import click

from rfc2544.config import profiles
from rfc2544.procedures.runner import build_plan


def plan_document(profile):
    """What `plan --json` prints: the profile as run, the plan, the deviations."""
    return {"profile": dict(profile), "plan": build_plan(profile),
            "deviations": [d.to_dict() for d in profiles.deviation_records(profile)]}


def _flat(value, prefix=""):
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _flat(v, f"{prefix}{k}.")]
    return [(prefix.rstrip("."), value)]


def plan_text(document):
    """The human form: profile fields, then deviations, then the plan as a table."""
    pairs = _flat(document["profile"])
    width = max(len(k) for k, _ in pairs)
    lines = ["profile:"] + [f"  {k:<{width}}  {json.dumps(v)}" for k, v in pairs]
    lines.append(f"deviations from RFC 2544 ({len(document['deviations'])}):")
    lines += [f"  - {d['text']}" for d in document["deviations"]] or ["  none"]
    lines.append(f"plan ({len(document['plan'])} steps):")
    lines.append(f"  {'#':>3}  {'test':<16} {'frame size':>10}  ip")
    for n, step in enumerate(document["plan"], 1):
        size = step["frame_size"] or "IMIX"       # the size sent, with FCS
        asked, load = step.get("requested_frame_size"), step.get("throughput_pct")
        notes = [f"{asked} B asked: the headers need {size} B"] if asked else []
        if load is not None:
            notes.append(f"at {load:g} % of the throughput" if load else "at a minimal load")
        if step.get("flows"):
            notes.append(f"{step['flows']} flows per stream")
        lines.append(f"  {n:>3}  {step['test']:<16} {size:>10}  v{step['ip_version']}"
                     + (f"  ({'; '.join(notes)})" if notes else ""))
    return "\n".join(lines)


@click.command("plan")
@click.option("-p", "--profile", "profile_name", default="rfc2544", show_default=True,
              help="Built-in profile name or a YAML file.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (profile, plan, deviations).")
def plan(profile_name, as_json):
    """Show the effective profile and the plan a run would follow (no hosts needed)."""
    document = plan_document(profiles.load(profile_name))
    click.echo(json.dumps(document, indent=1, allow_nan=False) if as_json else plan_text(document))
