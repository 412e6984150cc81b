"""The trend's outputs: trend.html (self-contained, a plot per series),
trend.json (the analysis as data) and JUnit XML for pipelines."""
import json
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

from rfc2544 import __version__
from rfc2544.errors import BadInput
from rfc2544.reports import plots
from rfc2544.reports.junit import write_tree
from rfc2544.reports.render import _atomic_write, environment


def render_html(document, store_path):
    series = [{**s, "svg": plots.trend_svg(s, i)} for i, s in enumerate(document["series"])]
    return environment().get_template("trend.html.j2").render(
        series=series, regressions=document["regressions"], runs=document["runs"], store=str(store_path),
        version=__version__, generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def write_trend(document, store_path, out_dir):
    """trend.html and trend.json into out_dir; the paths written."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        html_path, json_path = out / "trend.html", out / "trend.json"
        html = render_html(document, store_path)
        _atomic_write(html_path, lambda p: p.write_text(html, encoding="utf-8"))
        _atomic_write(json_path, lambda p: p.write_text(json.dumps(document, indent=1), encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"{out}: cannot write the trend: {exc.strerror or exc}") from None
    return [html_path, json_path]


def junit_tree(document):
    """A test case per series; a failure where the newest group is a regression."""
    suite = ET.Element("testsuite", name="rfc2544.results.trend")
    failures = 0
    for s in document["series"]:
        case = ET.SubElement(suite, "testcase", classname=f"rfc2544.results.trend.{s['test']}.{s['metric']}",
                             name=s["title"], time="0")
        g = s["last_group"]
        detail = (f"newest group: {g['runs']} run(s) from {g['first_run']}, average {g['avg']:.1f} "
                  f"(stdev {g['stdev']:.1f})"
                  + ("" if g["change_pct"] is None else f", {g['change_pct']:+.2f} % against the group before"))
        if s["status"] == "regression":
            failures += 1
            ET.SubElement(case, "failure", message=f"regression: {detail}", type="regression").text = detail
        else:
            ET.SubElement(case, "system-out").text = f"{s['status']}: {detail}"
    n = len(document["series"])
    suite.set("tests", str(n))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    root = ET.Element("testsuites", tests=str(n), failures=str(failures), errors="0")
    root.append(suite)
    return ET.ElementTree(root)


def write_junit(document, target):
    return write_tree(junit_tree(document), target)
