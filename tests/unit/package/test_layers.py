"""The package's layers are its folders, and the rules between them are read
from the source (every import, also those inside functions):

  cli/         the click commands, on top: nothing else imports it
  procedures/  the RFC 2544 tests and the runner that walks a plan
  search/      throughput searches (they see only measure(duration, load))
  engine/      the tester: transport, trial engine, schedule, pacing
  drivers/     what is written to and read from the hosts, over ssh
  config/      inventory and profiles        results/  the results model
  reports/     HTML/PDF/CSV, from results files only (never the tester's layers)
  lab/, sim/   the QEMU lab, a simulated DUT
  y1564/       ITU-T Y.1564's services, steps and rules: pure, below every layer but the facts
  errors, model, wire, rfc_minimums, catalog (top level): facts every layer may import; they import no layer

Each rule is checked on a synthetic package too, so a rule that could not
fail would show here."""
import ast
import textwrap
from pathlib import Path

import pytest

import rfc2544

PACKAGE = Path(rfc2544.__file__).resolve().parent
TOP_LEVEL = {"rfc2544", "rfc2544.__main__", "rfc2544.errors", "rfc2544.model", "rfc2544.wire", "rfc2544.interrupts",
             "rfc2544.input_files", "rfc2544.rfc_minimums", "rfc2544.catalog"}
ENTRY = "rfc2544.__main__"      # `python -m rfc2544`: above everything
# layer -> the layers it must never import (the cli is handled for all of them)
FORBIDDEN = {
    "results": {"engine", "procedures", "search", "reports"},
    "config": {"engine", "procedures", "search", "reports", "lab"},
    "drivers": {"engine", "procedures", "search", "config", "results", "reports"},
    "search": {"engine", "drivers", "procedures", "config", "results", "reports"},
    "engine": {"procedures", "reports"},
    # the report reads results files: what the tester or a search knows
    # reaches it through them (shared facts: model.py; conditions: results/)
    "reports": {"engine", "procedures", "search", "lab", "drivers"},
    # the rules a run applies and a report restates: facts, read by every layer that needs them
    "y1564": {"engine", "procedures", "search", "lab", "drivers", "config", "results", "reports", "sim"},
}


def module_name(path, package):
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path, modules):
    """Every module of `modules` that `path` imports, at any depth of its
    code. `from pkg import mod` imports pkg.mod, and pkg only where a name
    it imports is not a module: a submodule's import runs its package's
    __init__, but that is not a dependency on what the __init__ defines."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{a.name}" for a in node.names}
            found |= subs & modules
            if subs - modules:
                found.add(node.module)
    return found & modules


def graph(package=PACKAGE):
    paths = {module_name(p, package): p for p in package.rglob("*.py")
             if "data" not in p.relative_to(package).parts}
    return {name: imports_of(path, set(paths)) for name, path in paths.items()}


def layer(name):
    """The folder a module is in ("cli", "engine", ...); for a top-level
    module, its own name."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else None


def layer_violations(g):
    """(importer, imported, rule) for every import that breaks a layer rule."""
    bad = []
    for name, deps in g.items():
        own = layer(name)
        entry = layer(name) == "__main__"
        for dep in deps:
            theirs = layer(dep)
            if theirs == "cli" and own != "cli" and not entry:
                bad.append((name, dep, "only the entry point imports the cli"))
            elif own in FORBIDDEN and theirs in FORBIDDEN[own]:
                bad.append((name, dep, f"{own} never imports {theirs}"))
    return sorted(bad)


def cycles(g):
    """The import circles of `g` (each as a list of modules), by Tarjan's
    strongly connected components."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v, counter=[0]):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def test_the_entry_point_imports_only_the_cli():
    assert graph()[ENTRY] == {"rfc2544.cli"}


def test_the_top_level_holds_only_what_belongs_to_no_layer():
    top = {name for name in graph() if "." not in name.removeprefix("rfc2544.")
           and not (PACKAGE / name.removeprefix("rfc2544.")).is_dir()} | {"rfc2544"}
    assert top == TOP_LEVEL


def test_the_top_level_modules_import_no_layer():
    """errors, model, wire, ...: facts every layer may import, so none of
    them may import a layer back."""
    g = graph()
    for name in TOP_LEVEL - {"rfc2544", ENTRY}:
        assert g[name] <= TOP_LEVEL, (name, sorted(g[name] - TOP_LEVEL))


def test_the_cli_folder_is_what_the_command_table_names():
    from rfc2544.cli import COMMANDS
    named = {target.split(":")[0] for target in COMMANDS.values()}
    in_folder = {name for name in graph() if layer(name) == "cli"}
    assert named | {"rfc2544.cli", "rfc2544.cli.display", "rfc2544.cli.inventory_arg"} == in_folder


def test_no_import_breaks_a_layer_rule():
    assert layer_violations(graph()) == []


def test_no_import_circle_in_the_package():
    assert cycles(graph()) == []


def test_only_the_cli_uses_click():
    users = {module_name(p, PACKAGE) for p in PACKAGE.rglob("*.py")
             if "data" not in p.relative_to(PACKAGE).parts and "click" in {
                 n.split(".")[0] for node in ast.walk(ast.parse(p.read_text()))
                 for n in ([a.name for a in node.names] if isinstance(node, ast.Import) else
                           [node.module or ""] if isinstance(node, ast.ImportFrom) else [])}}
    assert users and {layer(u) for u in users} == {"cli"}


@pytest.fixture
def synthetic(tmp_path):
    """A package `fake` with the real folders and a few modules of each."""
    root = tmp_path / "fake"

    def write(rel, body=""):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in [path.parent, *path.parent.parents]:
            if parent == tmp_path:
                break
            (parent / "__init__.py").touch()
        path.write_text(textwrap.dedent(body))
    write("__main__.py", "from fake.cli import main\n")
    write("errors.py")
    write("cli/run.py", "from fake.engine import tester\nfrom fake.results.file import Results\n")
    write("engine/tester.py", "from fake.drivers import ssh\nfrom fake.errors import BadInput\n")
    write("drivers/ssh.py", "from fake.errors import InfraError\n")
    write("results/file.py", "from fake.errors import BadInput\n")
    write("reports/load.py", "from fake.results.file import Results\n")
    write("lab/__init__.py", "Lab = object\n")
    write("procedures/throughput.py", "TESTER_BOUND_MARGIN = 0.05\n")
    write("search/mlr.py")
    return root, write


def test_the_rules_hold_on_a_clean_synthetic_package(synthetic):
    root, _ = synthetic
    g = graph(root)
    assert g["fake.cli.run"] == {"fake.engine.tester", "fake.results.file"}
    assert layer_violations(g) == [] and cycles(g) == []


@pytest.mark.parametrize("rel, body, rule", [
    ("results/store.py", "def f():\n    from fake.cli import run\n", "only the entry point imports the cli"),
    ("engine/doctor.py", "import fake.cli.run\n", "only the entry point imports the cli"),
    ("results/store.py", "from fake.engine import tester\n", "results never imports engine"),
    ("drivers/pgrx.py", "from fake.engine.tester import SSHTester\n", "drivers never imports engine"),
    # the two that ran up the layers (issue 47): the store read results
    # files through reports, and the inventory fell back to the lab's
    ("results/store.py", "from fake.reports.load import load_results\n", "results never imports reports"),
    ("config/inventory.py", "def resolve():\n    from fake.lab import Lab\n", "config never imports lab"),
    # issue 57: the report's checks loaded the search (and MLRsearch) for three constants
    ("reports/checks.py", "from fake.procedures.throughput import TESTER_BOUND_MARGIN\n",
     "reports never imports procedures"),
    ("reports/checks.py", "from fake.engine.tester import GENERATOR_INTREE\n", "reports never imports engine"),
    ("reports/summary.py", "from fake.drivers.ssh import stream_port_speeds\n", "reports never imports drivers"),
    ("reports/render.py", "def f():\n    from fake.search import mlr\n", "reports never imports search"),
    ("reports/render.py", "from fake.lab import Lab\n", "reports never imports lab"),
])
def test_an_import_that_breaks_a_rule_is_found(synthetic, rel, body, rule):
    root, write = synthetic
    write(rel, body)
    assert {r for _, _, r in layer_violations(graph(root))} == {rule}


def test_an_import_circle_is_found_also_inside_a_function(synthetic):
    root, write = synthetic
    write("engine/calibration_link.py", "def link():\n    from fake.engine.tester import SSHTester\n")
    write("engine/tester.py", "from fake.engine.calibration_link import link\n")
    assert cycles(graph(root)) == [["fake.engine.calibration_link", "fake.engine.tester"]]


MAX_LINES = 500


def test_no_module_of_the_package_is_over_its_size():
    sizes = {module_name(p, PACKAGE): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")
             if "data" not in p.relative_to(PACKAGE).parts}
    assert sizes and {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
