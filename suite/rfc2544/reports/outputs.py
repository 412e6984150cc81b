"""What a finished (or stopped) run leaves beside its results.json:
trials.csv, the HTML/PDF reports, and the summary document that
`report --json` and `run --json` print."""
from pathlib import Path

from rfc2544.errors import BadInput, missing_dependency
from rfc2544.results.file import Results


def write_reports(results_path, out_dir, formats):
    """Hand the finished results to the reports package. A missing report
    dependency (jinja2, matplotlib, ...) is an infrastructure failure."""
    try:
        from rfc2544.reports.render import write_reports as render
        return render(results_path, out_dir, formats)
    except ImportError as exc:
        raise missing_dependency(exc, "the report") from None


def write_outputs(results_path, out_dir, formats):
    """trials.csv and the reports of a results file, for `run` and `report`
    alike; the paths written. results.json is on disk whatever fails here."""
    written = write_csv(results_path, out_dir) if "csv" in formats else []
    report_formats = tuple(f for f in formats if f != "csv")
    if report_formats:
        written += write_reports(results_path, out_dir, report_formats)
    return written


def write_csv(results_path, out_dir):
    results = Results.load(results_path)
    out = Path(out_dir) if out_dir else results.dir
    try:
        out.mkdir(parents=True, exist_ok=True)
        return results.to_csv(out / "trials.csv")
    except ImportError as exc:
        raise missing_dependency(exc, "the CSV export") from None
    except OSError as exc:
        raise BadInput(f"{out}: cannot write the CSV: {exc.strerror or exc}") from None


def summary_document(path):
    """What `report --json` prints: the results without the trials, plus
    what the report works out (completeness, deviations found in the data)."""
    from rfc2544.reports import checks
    from rfc2544.results.load import lists, load_results

    results = load_results(path)
    status = dict(checks.completeness(results))
    status.pop("last_trial")        # a whole trial record: in results.json already
    return {"source": results["source"], "complete": results["complete"], "status": status,
            "deviations": results["deviations"],
            "detected_deviations": checks.undeclared(checks.detected_deviations(results), results["deviations"]),
            "conditions": results["conditions"], "profile": results["profile"],
            **{s: results[s] for s in lists() if s != "trials"}}
