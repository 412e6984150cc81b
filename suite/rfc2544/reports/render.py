"""results.json -> report.html (self-contained) and report.pdf (WeasyPrint),
both from the same Jinja2 template."""
import logging
import os
import tempfile
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

import jinja2

from rfc2544 import catalog
from rfc2544.results.deviations import text_of
from rfc2544 import __version__
from rfc2544.errors import BadInput, InfraError
from rfc2544.reports import checks, plots, summary
from rfc2544.reports.fmt import FILTERS
from rfc2544.results.load import load_results, resolve

FORMATS = ("html", "pdf")
TEMPLATES = Path(str(resources.files("rfc2544.reports") / "templates"))


def environment():
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
                             undefined=jinja2.ChainableUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(FILTERS)
    return env


def report_context(results):
    conditions = results["conditions"]
    tput = summary.throughput_rows(results)
    loss = summary.frame_loss_rows(results)
    cal = summary.calibration_rows(results)
    spacing = summary.spacing_rows(results)
    latency = summary.latency_rows(results)
    bursty = summary.bursty_rows(results)
    # each test's entries under its name; the tests with figures of their own replace theirs below
    rows = {t.name: summary.section_rows(results, t.name) for t in catalog.TESTS}
    return {
        **rows,
        "r": results,
        "conditions": conditions,
        "status": checks.completeness(results),
        "declared_deviations": [text_of(d) for d in results["deviations"]],
        "detected_deviations": checks.undeclared(checks.detected_deviations(results), results["deviations"]),
        "headline": summary.headline(results),
        "link": summary.link_text(conditions.get("link_speed_mbps")),
        "link_used": summary.link_used(results),
        "ip_versions": summary.ip_versions_text(results),
        "modifiers": summary.modifiers_text(results),
        "throughput": tput,
        "throughput_svg": plots.throughput_svg(tput, conditions.get("link_speed_mbps"), cal),
        "latency": latency,
        "latency_loads": summary.latency_loads(results),
        "latency_svg": plots.latency_loads_svg(latency, (results["profile"].get("search") or {}).get("latency_bound")),
        "latency_bound": next((t["latency_bound"] for t in tput if t.get("latency_bound")), None),
        "latency_def": summary.latency_definitions(results),
        "clock": conditions.get("latency_clock"),
        "frame_loss": loss,
        "frame_loss_svg": plots.frame_loss_svg(loss),
        "has_corrected": any(b.get("corrected_buffer_s") is not None for b in results["back_to_back"]),
        "bursty": bursty,
        "bursty_svg": plots.bursty_svg(bursty),
        "recovery_svg": plots.recovery_reset_svg(rows["system_recovery"], rows["reset"]),
        "service_svgs": [plots.service_steps_svg(e, i) for i, e in enumerate(rows["y1564_configuration"])],
        # a service's frame sizes as its services file gave them (several: an EMIX, drawn in equal shares)
        "service_sizes": {s.get("name"): " / ".join(str(n) for n in s.get("sizes") or []) + " B"
                          for s in results.get("services") or [] if isinstance(s, dict)},
        "planned_tests": {p.get("test") for p in results["plan"]},
        # tests the template has no block of its own for: their entries as they are
        "other_tests": [{"title": t.title, "standard": t.standard, "rows": rows[t.name]}
                        for t in catalog.TESTS if not t.report_block and results.get(t.name)],
        "trials": summary.trial_rows(results),
        "spacing": spacing,
        "spacing_svg": plots.gap_distribution_svg(spacing),
        "trial_totals": summary.trial_totals(results),
        "hosts": summary.hosts(results),
        "calibration": cal,
        "profile": summary.profile_rows(results),
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "version": __version__,
        "source_name": Path(results["source"]).name,
    }


def render_html(results):
    return environment().get_template("report.html.j2").render(report_context(results))


def html_to_pdf(html, target):
    try:
        import weasyprint
    except ImportError:
        raise InfraError("PDF reports need WeasyPrint: pip install 'rfc2544[pdf]' "
                         "(and the pango libraries: make apt-deps)") from None
    # WeasyPrint warns about CSS it ignores (screen-only rules); not the user's problem.
    logging.getLogger("weasyprint").setLevel(logging.ERROR)
    logging.getLogger("fontTools").setLevel(logging.ERROR)
    weasyprint.HTML(string=html).write_pdf(str(target))


def report_basename(results_path):
    stem = resolve(results_path).stem
    return "report" if stem in ("results", "report") else f"{stem}-report"


def parse_formats(text_or_list):
    items = text_or_list.split(",") if isinstance(text_or_list, str) else list(text_or_list)
    formats = [f.strip().lower() for f in items if f.strip()]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise BadInput(f"--format: unknown format {', '.join(unknown) or '(none)'}; choose from html, pdf")
    return tuple(dict.fromkeys(formats))


def _atomic_write(target, write):
    """Write through a temp file in the same directory, then rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=str(target.parent))
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_reports(results_path, out_dir=None, formats=FORMATS):
    """Render the reports for `results_path` into `out_dir` (default: beside the
    results file). Returns the paths written, HTML first."""
    formats = parse_formats(formats)
    results = load_results(results_path)
    out_dir = Path(out_dir) if out_dir else resolve(results_path).parent
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"{out_dir}: cannot create the output directory: {exc.strerror or exc}") from None
    html = render_html(results)
    base = report_basename(results_path)
    written = []
    try:
        if "html" in formats:
            target = out_dir / f"{base}.html"
            _atomic_write(target, lambda p: p.write_text(html, encoding="utf-8"))
            written.append(target)
        if "pdf" in formats:
            target = out_dir / f"{base}.pdf"
            _atomic_write(target, lambda p: html_to_pdf(html, p))
            written.append(target)
    except OSError as exc:
        raise BadInput(f"{out_dir}: cannot write the report: {exc.strerror or exc}") from None
    return written


def write_compare_html(result, old, new, target):
    """The comparison (table and plot) as one self-contained HTML file."""
    from rfc2544.reports.compare import format_value

    rows = [{**r, "old_text": format_value(r, r["old"]), "new_text": format_value(r, r["new"])}
            for r in result["rows"]]
    html = environment().get_template("compare.html.j2").render(
        rows=rows, failures=result["failures"], notes=result["notes"], threshold_pct=f"{result['threshold_pct']:g}",
        svg=plots.compare_svg([r for r in result["rows"] if r["gated"]], result["threshold_pct"]),
        old=old, new=new, old_path=old["source"], new_path=new["source"], version=__version__,
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    target = Path(target)
    try:
        if target.parent:
            target.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(target, lambda p: p.write_text(html, encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"--html {target}: cannot write: {exc.strerror or exc}") from None
    return target
