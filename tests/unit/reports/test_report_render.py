"""Rendering: the HTML and PDF of the known results files (a simulated run,
tests/data/results/generate.py), and `rfc2544 report`."""
import html
import html as html_mod
import re
import shutil
import subprocess

import pytest

from rfc2544 import cli
from rfc2544.results.deviations import text_of
from rfc2544.results.load import load_results
from rfc2544.reports.render import parse_formats, render_html, write_reports

from known_results import DATA, gen, headline, key_figures, raw, row


def test_key_figures_are_the_simulated_dut_s():
    # the figures the report tests look for measure the simulated DUT, not just the file
    data = raw("complete.json")
    assert row(data, "throughput", 64)["fps"] == pytest.approx(gen.DUT_CAPACITY_FPS[64], rel=0.01)
    assert row(data, "throughput", 128)["fps"] == pytest.approx(gen.TESTER_CEILING_FPS)
    assert row(data, "reset", 64)["reset_time_s"] == pytest.approx(gen.SIM["reset_s"], rel=0.05)
    assert row(data, "system_recovery", 64)["recovery_time_s"] == pytest.approx(gen.SIM["recovery_s"], abs=0.2)
    assert row(data, "latency", 128)["median_ns"] == pytest.approx(gen.SIM["latency_ns"], rel=0.05)


def visible_text(html):
    html = re.sub(r"<style.*?</style>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture(scope="module")
def complete_html():
    return render_html(load_results(DATA / "complete.json"))


@pytest.fixture(scope="module")
def partial_html():
    return render_html(load_results(DATA / "partial.json"))


def test_html_has_the_key_figures(complete_html):
    text = visible_text(complete_html)
    for figure in key_figures():
        assert figure in text, figure
    assert headline() in text
    assert "with 64 B frames, IPv4 over 1 Gbit/s Ethernet" in text


def test_html_shows_every_section_and_condition(complete_html):
    text = visible_text(complete_html)
    for heading in ("Summary", "RFC 2544 26.1", "Latency (RFC 2544 26.2)", "Frame loss rate (RFC 2544 26.3)",
                    "Back-to-back frames (RFC 2544 26.4, RFC 9004)", "System recovery and reset", "Test conditions",
                    "Trial log"):
        assert heading in text, heading
    hosts = raw("complete.json")["conditions"]["hosts"]
    tester_nic = hosts["tester"]["nics"][0]
    for fact in (hosts["tester"]["kernel"], tester_nic["driver"], tester_nic["firmware"],
                 hosts["tester"]["module_version"], "cpu_governor=performance", raw("complete.json")["profile"]["name"],
                 hosts["dut"]["cpu"], raw("complete.json")["conditions"]["receiver"]):
        assert fact in text, fact
    # Every declared deviation is shown, in the banner near the top.
    data = load_results(DATA / "complete.json")
    banner = complete_html[complete_html.index('class="banner deviations"'):complete_html.index('id="summary"')]
    banner_text = html.unescape(visible_text(banner))
    for deviation in data["deviations"]:
        assert text_of(deviation) in banner_text
    assert "INCOMPLETE" not in text


def test_trial_log_has_every_trial(complete_html):
    log = complete_html[complete_html.index('<table class="log">'):]
    rows = re.findall(r"<tr[^>]*><td class=\"n\">(\d+)</td>", log)
    trials = raw("complete.json")["trials"]
    assert [int(n) for n in rows] == [t["id"] for t in trials] == list(range(1, len(trials) + 1))
    for verdict in ("pass", "fail"):
        assert log.count(f"badge v-{verdict}") == sum(t["verdict"] == verdict for t in trials) > 0


def test_html_is_self_contained(complete_html):
    # No external resources: no src/href to another document, no url(), no script.
    assert not re.search(r"\b(src|href)\s*=\s*\"(?!#)", complete_html)
    assert "url(http" not in complete_html and "@import" not in complete_html
    assert "<script" not in complete_html and "<link" not in complete_html
    assert complete_html.count("<svg") == 3       # throughput, frame loss, recovery and reset
    # Each figure's ids are prefixed, so the SVGs do not collide.
    ids = re.findall(r'\bid="([^"]+)"', complete_html)
    assert len(ids) == len(set(ids))
    for ref in re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', complete_html):
        assert (ref[0] or ref[1]) in ids


def test_svg_plots_keep_text_and_axes(complete_html):
    svg = complete_html[complete_html.index('<svg class="plot"'):]
    first, second = svg.split('<svg class="plot"')[1:3]
    assert "theoretical maximum (1000 Mbit/s)" in first and "frame size (bytes)" in first
    assert "offered load (% of the maximum rate)" in second
    assert ">100<" in second and ">0<" in second          # both axes 0-100 %


def test_partial_report_has_the_incomplete_banner(partial_html):
    text = visible_text(partial_html)
    data = raw("partial.json")
    done = [p for p in data["plan"] if p["state"] == "done"]
    assert "INCOMPLETE RUN" in text
    assert f"{len(done)} of {len(data['plan'])} planned tests have a result" in text
    assert "Throughput (26.1): 1518 B" in text
    assert "interrupted by the user (Ctrl-C)" in text
    for figure in key_figures("partial.json"):       # what was measured is still reported
        assert figure in text, figure
    assert "Planned, but no result" in text
    assert "<title>" in partial_html and "[INCOMPLETE]" in partial_html


def test_results_from_html_are_escaped(tmp_path):
    data = (DATA / "complete.json").read_text().replace(
        '"receiver": "simulated receiver"', '"receiver": "<script>alert(1)</script> receiver"')
    path = tmp_path / "results.json"
    path.write_text(data)
    html = render_html(load_results(path))
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html


def test_write_reports_names_and_formats(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(DATA / "partial.json", run_dir / "results.json")
    written = write_reports(run_dir / "results.json", None, ("html",))
    assert written == [run_dir / "report.html"]
    assert written[0].stat().st_size > 10_000
    assert not list(run_dir.glob(".report*"))            # no temp file left behind
    assert parse_formats("pdf, html") == ("pdf", "html")
    with pytest.raises(Exception, match="unknown format svg"):
        parse_formats("html,svg")


def run_cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        cli.main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.mark.parametrize("name, message", [
    ("corrupt.json", "corrupt results file: invalid JSON at line"),
    ("unknown-version.json", "results schema version 99 is not supported"),
    ("missing.json", "no such results file"),
])
def test_report_cli_bad_input_is_one_line_exit_2(capsys, tmp_path, name, message):
    code, out, err = run_cli(capsys, "report", str(DATA / name), "--out", str(tmp_path))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("rfc2544: ") and message in err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_report_cli_rejects_unknown_format(capsys, tmp_path):
    code, _, err = run_cli(capsys, "report", str(DATA / "complete.json"), "--format", "docx", "--out", str(tmp_path))
    assert code == 2 and "unknown format docx" in err


def test_report_cli_writes_html(capsys, tmp_path):
    code, out, err = run_cli(capsys, "report", str(DATA / "complete.json"), "--format", "html", "--out",
                             str(tmp_path / "out"))
    assert code == 0, err
    assert out.strip() == str(tmp_path / "out" / "complete-report.html")


# -- PDF: WeasyPrint, then poppler's pdftotext / pdftoppm as a reader would see it --

@pytest.fixture(scope="module")
def complete_pdf(tmp_path_factory):
    out = tmp_path_factory.mktemp("pdf")
    written = write_reports(DATA / "complete.json", out, ("pdf",))
    assert written == [out / "complete-report.pdf"]
    return written[0]


def test_pdf_contains_the_key_figures(complete_pdf):
    text = subprocess.run(["pdftotext", "-layout", str(complete_pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    flat = re.sub(r"\s+", " ", text)
    for figure in key_figures():
        assert figure in flat, figure
    assert headline() in flat
    assert "page 1 of" in flat                      # print CSS: page numbers in the margin
    assert "INCOMPLETE" not in flat


def test_pdf_pages_render_to_png(complete_pdf, tmp_path):
    info = subprocess.run(["pdfinfo", str(complete_pdf)], capture_output=True, text=True, check=True).stdout
    pages = int(re.search(r"Pages:\s+(\d+)", info).group(1))
    assert 3 <= pages <= 20
    assert "A4" in info or "595.28 x 841.89" in info
    subprocess.run(["pdftoppm", "-png", "-r", "40", "-f", "1", "-l", "2", str(complete_pdf), str(tmp_path / "page")],
                   check=True)
    pngs = sorted(tmp_path.glob("page-*.png"))
    assert len(pngs) == 2
    from matplotlib.image import imread
    for png in pngs:
        pixels = imread(str(png))
        assert pixels.shape[0] > pixels.shape[1] > 200         # portrait page
        assert pixels.std() > 0.05                             # not a blank page


def test_report_of_a_results_file_written_by_the_suite(tmp_path):
    """The contract both ways: a run of the real runner against the simulated
    DUT (rfc2544.sim.dut, no network), cut short by Ctrl-C, then reported."""
    from rfc2544.config import profiles
    from rfc2544.sim import dut as simdut
    from rfc2544.cli.display import Display
    from rfc2544.results.file import Results
    from rfc2544.procedures.runner import Runner, build_plan

    raw = dict(profiles.load("quick"))
    raw.update(tests=["throughput", "latency", "frame_loss", "back_to_back"], frame_sizes=[64, 1518])
    raw["search"] = {**raw["search"], "max_load_fps": 100_000.0}
    prof = profiles.validate(raw, "test")
    results = Results.create(tmp_path / "run", prof, build_plan(prof), profiles.deviation_records(prof), {})
    sim = simdut.SimDUT(capacity_fps=40_000, buffer_frames=500, fail_at={12: KeyboardInterrupt()})
    with pytest.raises(KeyboardInterrupt):
        Runner(sim, prof, results, Display(quiet=True)).run()
    [html_path] = write_reports(results.path, None, ("html",))
    text = visible_text(html_path.read_text())
    data = load_results(results.path)
    assert "INCOMPLETE RUN" in text and "interrupted by the user" in text
    assert data["throughput"], "the first throughput search finished before the interruption"
    fps = data["throughput"][0]["fps"]
    assert 30_000 < fps < 44_000                  # the simulated capacity (plus its buffer)
    assert f"{fps:,.0f}" in text
    from rfc2544.results.deviations import text_of
    assert any(isinstance(d, dict) for d in data["deviations"]), "records, not sentences"
    for deviation in data["deviations"]:
        assert text_of(deviation) in text
    assert text.count("INCOMPLETE") >= 2          # banner and footer


def test_unusual_but_valid_results_render(tmp_path):
    """IMIX, mixed IPv4/IPv6, no link speed, lower fidelity, sparse fields."""
    import json
    data = json.loads((DATA / "complete.json").read_text())
    data["conditions"].update(link_speed_mbps=None, calibration=None, fidelity="lower",
                              receiver="interface counters", hosts={"dut": {"kernel": "6.1.0-50-amd64"}})
    imix = {"frame_size": 0, "fps": 150000.0, "ip_version": 4}
    v6 = dict(data["throughput"][0], ip_version=6, fps=700000.0, theoretical_max_fps=None, pct_of_max=None)
    data["throughput"] = [imix, data["throughput"][0], v6]
    data["latency"] = [{"frame_size": 64, "ip_version": 6}]
    data["trials"] = data["trials"][:3] + [{"id": 4, "frame_size": 0}]
    data["frame_loss"] = []
    data["profile"] = {}
    data.pop("schema_minor", None)      # written as before sizes were stated as sent
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(data))
    html = render_html(load_results(path))
    text = visible_text(html)
    # a file without schema_minor said 64 B for IPv6 frames sent as 82 B: shown as sent (test_frame_on_wire.py)
    assert "IMIX IPv4" in text and "82 B (64 B asked) IPv6" in text and "700,000" in text
    assert "unknown link speed" in text
    assert "lower-fidelity measurement: the receiver is interface counters" in text
    assert "the theoretical maximum cannot be drawn" in text
    assert "Not run in this profile" not in text.split("Frame loss rate (RFC 2544 26.3)")[0]
    assert html.count("<svg") == 2                          # throughput, recovery/reset: no frame-loss data
    assert "measured throughput (0 % loss), IPv6" in html    # one curve per IP version


def test_a_run_on_the_intree_pktgen_names_generator_and_receiver(tmp_path, monkeypatch):
    """A tester with only the in-tree pktgen (the pktgen_kmod role's
    pktgen_kmod_intree_fallback on a kernel outside the tested range):
    results.json's conditions and the report say which generator and which
    receiver ran, in the conditions table and in the deviations banner."""
    from pktgen_sim import SimKernel
    from test_tester_sim import make_tester
    from rfc2544.engine import assemble
    from rfc2544.config import profiles
    from rfc2544.results.file import Results
    from rfc2544.procedures.runner import build_plan
    tester, _, _ = make_tester(tmp_path, SimKernel(pgrx=False))
    monkeypatch.setattr(tester, "conditions", lambda: {"hosts": {}})      # host facts: not this test's
    profile = profiles.load("quick")
    conditions = assemble.conditions_for(tester, tester.inventory, profile, None, None)
    assert (conditions["generator"], conditions["receiver"], conditions["fidelity"]) == \
        ("pktgen (in-tree)", "interface counters", "lower")
    # written as a run writes it (and checked against the schema on save)
    results = Results.create(tmp_path / "run", profile, build_plan(profile), profiles.deviations(profile), conditions)
    text = visible_text(render_html(load_results(results.path)))
    assert "Generator pktgen (in-tree) Receiver interface counters Fidelity lower" in text
    assert ("lower-fidelity measurement: the receiver is interface counters, the generator pktgen (in-tree); "
            "loss is counted per interface rather than per test stream") in text


def run_conditions(tmp_path, monkeypatch, tx_speed, rx_speed, link=None):
    """conditions_for on a simulated tester whose ports tx0 and rx0 report these speeds."""
    from test_tester_sim import make_tester
    from rfc2544.engine import assemble
    from rfc2544.config import profiles
    tester, _, _ = make_tester(tmp_path)
    nics = [{"name": "tx0", "speed_mbps": tx_speed}, {"name": "rx0", "speed_mbps": rx_speed}]
    monkeypatch.setattr(tester, "conditions", lambda: {"hosts": {"tester": {"role": "tester", "nics": nics}}})
    return assemble.conditions_for(tester, tester.inventory, profiles.load("quick"), link, None)


def test_the_link_speed_falls_back_to_what_the_ports_reported(tmp_path, monkeypatch):
    """Neither the profile nor the inventory gives a speed: the slowest
    stream port's; none when a port reports none."""
    pick = lambda c: (c["link_speed_mbps"], c["link_speed_source"])
    assert pick(run_conditions(tmp_path, monkeypatch, 25000, 10000)) == (10000, "NICs")
    assert pick(run_conditions(tmp_path, monkeypatch, 25000, None)) == (None, None)
    assert pick(run_conditions(tmp_path, monkeypatch, 25000, 10000, link=40000)) == (40000, "inventory")


def test_conditions_show_the_ip_versions_and_link_speeds_used(tmp_path, monkeypatch):
    """The report's conditions say IPv4, the speed used, where it came from
    and what each port reported; the profile's unset link_mbps says what
    was used instead. (Before: "IP version —" and "link_mbps —".)"""
    from rfc2544.config import profiles
    from rfc2544.results.file import Results
    from rfc2544.procedures.runner import build_plan
    conditions = run_conditions(tmp_path, monkeypatch, 25000, 10000)
    profile = profiles.load("quick")
    results = Results.create(tmp_path / "run", profile, build_plan(profile), profiles.deviations(profile), conditions)
    text = html_mod.unescape(visible_text(render_html(load_results(results.path))))
    assert "IP versions IPv4" in text
    assert ("Link speed 10 Gbit/s Ethernet (from the speed the tester's ports reported); "
            "ports reported: tester:tx0 25 Gbit/s, tester:rx0 10 Gbit/s") in text
    assert "link_mbps not set: 10 Gbit/s Ethernet from the speed the tester's ports reported was used" in text
    conditions_table = text.split("Test conditions")[1].split("Hosts")[0]
    assert "—" not in conditions_table.split("Latency")[0]


def test_report_cli_unwritable_output_is_bad_input(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run_cli(capsys, "report", str(DATA / "complete.json"), "--format", "html",
                           "--out", str(blocker / "sub"))
    assert code == 2 and "cannot create the output directory" in err and err.count("\n") == 1


def test_pdf_without_weasyprint_is_one_clear_line(monkeypatch, tmp_path):
    import builtins
    from rfc2544.errors import InfraError
    real_import = builtins.__import__

    def no_weasyprint(name, *args, **kwargs):
        if name == "weasyprint":
            raise ImportError("No module named 'weasyprint'")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_weasyprint)
    with pytest.raises(InfraError, match=r"PDF reports need WeasyPrint: pip install 'rfc2544\[pdf\]'"):
        write_reports(DATA / "partial.json", tmp_path, ("html", "pdf"))
    assert [p.name for p in tmp_path.iterdir()] == ["partial-report.html"]   # the HTML is still written
