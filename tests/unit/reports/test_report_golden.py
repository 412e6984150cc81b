"""The report of the shipped fixture results is the same HTML from one
change to the next unless the change means it (issue 57: a refactor of
where the tests and the RFC's minimums are written must not move a byte
of the report). What changes by itself is left out of the comparison: the
time each figure's SVG was drawn, and the footer's generation time and
tool version. To accept an intended change, run
with RFC2544_WRITE_GOLDEN=1 and review the diff of tests/data/reports/."""
import os
import re
from pathlib import Path

import pytest

from rfc2544.reports.render import render_html
from rfc2544.results.load import load_results

DATA = Path(__file__).resolve().parents[2] / "data"
DRAWN_AT = re.compile(r"<dc:date>[^<]*</dc:date>")
GENERATED = re.compile(r"Generated [^<]*? by rfc2544 \S+ from")


def normalised(html):
    return GENERATED.sub("Generated (when) by rfc2544 (version) from", DRAWN_AT.sub("<dc:date/>", html))


@pytest.mark.parametrize("name", ["complete", "partial"])
def test_the_fixture_reports_are_unchanged(name):
    html = normalised(render_html(load_results(DATA / "results" / f"{name}.json")))
    golden = DATA / "reports" / f"{name}.html"
    if os.environ.get("RFC2544_WRITE_GOLDEN"):
        golden.write_text(html)
    assert html == golden.read_text(), f"{golden} differs: RFC2544_WRITE_GOLDEN=1 to accept, then review its diff"


def test_the_comparison_sees_a_changed_byte():
    html = normalised(render_html(load_results(DATA / "results" / "partial.json")))
    assert normalised(html.replace("Throughput", "Throughput ", 1)) != (DATA / "reports" / "partial.html").read_text()
