"""`rfc2544 plan -p PROFILE`: the effective profile (defaults filled in),
its deviations from the RFCs and the plan a run would walk, without any
host. `--json` prints the same as one JSON object for scripts."""
import json

import click

from rfc2544.config import profiles
from rfc2544.procedures.runner import build_plan


def plan_document(profile, services=None):
    """What `plan --json` prints: the profile as run, the plan, the
    deviations; with Y.1564 services, each one's steps and their time."""
    document = {"profile": dict(profile), "plan": build_plan(profile, services=services or ()),
                "deviations": [d.to_dict() for d in profiles.deviation_records(profile)]}
    if services:
        document["services"] = service_plan(profile, services)
    return document


def service_plan(profile, services):
    """Per service: its configuration test's steps (label, offered Mbit/s,
    seconds) and their time with the profile's waits (y1564/steps.py)."""
    from rfc2544.procedures import trial_overhead_s
    from rfc2544.y1564.steps import configuration_steps
    s = profile.model.y1564_configuration
    out = []
    for service in services:
        steps = configuration_steps(service, cir_steps_pct=s.cir_steps_pct, step_s=s.step_s, eir_step=s.eir_step,
                                    policing_step=s.policing_step, burst_steps=s.burst_steps)
        out.append({"service": service.name, "steps": [{"label": st.label, "offered_mbps": st.offered_mbps,
                                                        "duration_s": st.duration_s} for st in steps],
                    "seconds": sum(st.duration_s + trial_overhead_s(profile.model) for st in steps)})
    return out


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
    width = max([16] + [len(step["test"]) for step in document["plan"]])
    lines.append(f"  {'#':>3}  {'test':<{width}} {'frame size':>10}  ip")
    for n, step in enumerate(document["plan"], 1):
        # the size sent, with FCS; a service's several sizes are its EMIX
        size = step["frame_size"] or ("EMIX" if step.get("service") else "IMIX")
        asked, load = step.get("requested_frame_size"), step.get("throughput_pct")
        notes = [f"{asked} B asked: the headers need {size} B"] if asked else []
        if load is not None:
            notes.append(f"at {load:g} % of the throughput" if load else "at a minimal load")
        if step.get("flows"):
            notes.append(f"{step['flows']} flows per stream")
        if step.get("service"):
            notes.insert(0, f"service {step['service']}")
        lines.append(f"  {n:>3}  {step['test']:<{width}} {size:>10}  v{step['ip_version']}"
                     + (f"  ({'; '.join(notes)})" if notes else ""))
    services = document.get("services") or []
    if services:
        lines.append(f"Y.1564 service configuration: {sum(len(s['steps']) for s in services)} steps, "
                     f"~{sum(s['seconds'] for s in services) / 60:.1f} min")
    for service in services:
        lines.append(f"service {service['service']}: {len(service['steps'])} steps, "
                     f"~{service['seconds'] / 60:.1f} min")
        lines += [f"  {st['label']:<10} {st['offered_mbps']:>10.3f} Mbit/s  {st['duration_s']:g} s"
                  for st in service["steps"]]
    return "\n".join(lines)


@click.command("plan")
@click.option("-p", "--profile", "profile_name", default="rfc2544", show_default=True,
              help="Built-in profile name or a YAML file.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (profile, plan, deviations).")
@click.option("--services", "services_path", type=click.Path(dir_okay=False),
              help="ITU-T Y.1564 services file: each service's steps and their time.")
def plan(profile_name, as_json, services_path):
    """Show the effective profile and the plan a run would follow (no hosts needed)."""
    from rfc2544.cli.run import load_services
    profile = profiles.load(profile_name)
    document = plan_document(profile, load_services(services_path, profile))
    click.echo(json.dumps(document, indent=1, allow_nan=False) if as_json else plan_text(document))
