"""`rfc2544 report` and `rfc2544 compare`.

Errors are raised as rfc2544.errors exceptions; rfc2544.cli.main prints them
as one line and exits with their code (1 regression, 2 bad input).
"""
from pathlib import Path

import click

from rfc2544.errors import BadInput, ThresholdMissed
from rfc2544.reports.outputs import summary_document, write_outputs

FORMATS = ("html", "pdf", "csv")


@click.command("report")
@click.argument("results", type=click.Path(path_type=Path))
@click.option("--format", "formats", default="html,pdf", show_default=True,
              help="Comma-separated: html, pdf, csv (trials.csv, as `run` writes it).")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="Directory for the reports (default: beside RESULTS).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary (status, deviations, per-test results) as JSON; write no files.")
def report(results, formats, out_dir, as_json):
    """Write the HTML, PDF and/or CSV of a results.json (or a run directory)."""
    if as_json:
        import json
        click.echo(json.dumps(summary_document(results), indent=1))
        return

    for path in write_outputs(results, out_dir, parse_formats(formats)):
        click.echo(str(path))


def parse_formats(text):
    formats = tuple(dict.fromkeys(f.strip().lower() for f in text.split(",") if f.strip()))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise BadInput(f"--format: unknown format {', '.join(unknown) or '(none)'}; "
                       f"choose from {', '.join(FORMATS)}")
    return formats


@click.command("compare")
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option("--max-regression", default="5%", show_default=True,
              help="Allowed loss of throughput or rise of latency, NEW against OLD.")
@click.option("--junit", type=click.Path(path_type=Path), default=None, help="Also write JUnit XML here.")
@click.option("--html", "html_path", type=click.Path(path_type=Path), default=None,
              help="Also write the table and plot of the differences as HTML here.")
def compare(old, new, max_regression, junit, html_path):
    """Compare two runs per frame size; exit 1 when NEW regressed past the threshold."""
    from rfc2544.reports import compare as cmp
    from rfc2544.results.load import load_results

    threshold = cmp.parse_threshold(max_regression)
    old_results, new_results = load_results(old), load_results(new)
    result = cmp.compare(old_results, new_results, threshold)
    for note in result["notes"]:
        click.echo(f"note: {note}")
    click.echo(cmp.text_table(result))
    if junit:
        from rfc2544.reports.junit import write_junit
        write_junit(result, old_results["source"], new_results["source"], junit)
    if html_path:
        from rfc2544.reports.render import write_compare_html
        write_compare_html(result, old_results, new_results, html_path)
    if result["failures"]:
        raise ThresholdMissed(cmp.failure_message(result, old_results["source"], new_results["source"]))
    click.echo(f"no regression past {threshold:g} %")
