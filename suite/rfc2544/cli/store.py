"""Click commands `store` (add, rebuild, check, list) and `trend`: the results
store (rfc2544.results.store) and its trend (rfc2544.results.trend, rfc2544.reports.trend_page)."""
from pathlib import Path

import click

from rfc2544.results import store as store_mod
from rfc2544.errors import BadInput, ThresholdMissed

STORE_OPTION = click.option("--store", "store_dir", type=click.Path(file_okay=False, path_type=Path),
                            help=f"The results store [default: ${store_mod.ENV}].")


def open_store(store_dir, must_exist=False):
    path = store_mod.store_path(store_dir)
    if path is None:
        raise BadInput(f"no store given: pass --store DIR or set {store_mod.ENV}")
    if must_exist and not (path / store_mod.INDEX).is_file():
        raise BadInput(f"{path}: not a results store (no {store_mod.INDEX}); add runs with 'rfc2544 store add'")
    return store_mod.Store(path)


@click.group("store")
def store():
    """The results store: every finished run, kept for `rfc2544 trend`."""


@store.command("add")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@STORE_OPTION
def add(runs, store_dir):
    """Add finished runs: run directories, results.json files, or trees of them.

    Each run is checked first; an incomplete or corrupt one is refused with
    the reason and the others are still added (exit 2 if any was refused)."""
    found = store_mod.find_runs(runs)
    if not found:
        raise BadInput(f"no results.json under {', '.join(map(str, runs))}")
    refused = added = known = 0
    with open_store(store_dir) as st:
        for i, path in enumerate(found, 1):
            try:
                run_id, new = st.add(path)
            except BadInput as exc:
                refused += 1
                click.echo(f"[{i}/{len(found)}] refused: {exc}", err=True)
                continue
            added, known = added + new, known + (not new)
            click.echo(f"[{i}/{len(found)}] {'added' if new else 'already stored'}: {run_id} ({path})")
        click.echo(f"{st.path}: {added} added, {known} already stored, {refused} refused")
    if refused:
        raise BadInput(f"{refused} of {len(found)} runs refused (see above)")


@store.command("rebuild")
@STORE_OPTION
def rebuild(store_dir):
    """Index stored runs the index lacks (after a crash or a lost index)."""
    with open_store(store_dir) as st:
        done = st.rebuild()
        click.echo(f"{st.path}: indexed {len(done)} run(s)" + "".join(f"\n  {i}" for i in done))


@store.command("check")
@STORE_OPTION
def check(store_dir):
    """Check the index and the stored runs agree (exit 2 if not)."""
    with open_store(store_dir, must_exist=True) as st:
        problems = st.check()
        for p in problems:
            click.echo(f"problem: {p}")
        if problems:
            raise BadInput(f"{st.path}: {len(problems)} problem(s)")
        click.echo(f"{st.path}: consistent, {len(st.runs())} runs")


@store.command("list")
@STORE_OPTION
def list_runs(store_dir):
    """The stored runs, oldest first."""
    with open_store(store_dir, must_exist=True) as st:
        for r in st.runs():
            click.echo(f"{r['run_id']}  {r['dut']:<12} {r['profile']:<14} DUT kernel {r['dut_kernel'] or '?'}")


@click.command("trend")
@STORE_OPTION
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Directory for trend.html and trend.json [default: STORE/trend].")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Also write JUnit XML here.")
@click.option("--dut", help="Only this DUT's series.")
@click.option("--profile", "profile_name", help="Only this profile's series.")
def trend(store_dir, out_dir, junit, dut, profile_name):
    """Every figure over the stored runs, grouped by jumpavg; exit 1 when a
    series' newest group is a regression."""
    from rfc2544.results import trend as trend_mod
    from rfc2544.reports import trend_page

    with open_store(store_dir, must_exist=True) as st:
        figures = [f for f in st.figures() if (dut is None or f["dut"] == dut)
                   and (profile_name is None or f["profile"] == profile_name)]
        if not figures and (dut or profile_name):
            raise BadInput(f"{st.path}: no runs of DUT {dut or '*'} with profile {profile_name or '*'}")
        document = trend_mod.analyse(figures)
        for path in trend_page.write_trend(document, st.path, out_dir or st.path / "trend"):
            click.echo(f"trend: {path}")
    click.echo(trend_mod.text_table(document))
    if junit:
        trend_page.write_junit(document, junit)
    if document["regressions"]:
        raise ThresholdMissed(f"regression in {len(document['regressions'])} series: "
                              + "; ".join(document["regressions"]))
    click.echo(f"no series ends in a regression ({document['runs']} runs)")
