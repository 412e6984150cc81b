"""The package's layers, read from the source (every import, also those
inside functions): the click layer is on top, and nothing below imports it.
A core module that reached up into a command module is how commands.py,
host_setup.py and reports/cli.py came to import each other in a circle."""
import ast
from pathlib import Path

import rfc2544

PACKAGE = Path(rfc2544.__file__).resolve().parent

# The modules that define click commands. rfc2544.cli finds the others by
# name (COMMANDS), so no command module needs to import another.
CLI_LAYER = {"rfc2544.cli", "rfc2544.cli.run", "rfc2544.cli.setup", "rfc2544.cli.plan",
             "rfc2544.cli.report", "rfc2544.cli.lab", "rfc2544.cli.store"}
ENTRY = "rfc2544.__main__"      # `python -m rfc2544`: above everything


def module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path):
    """Every rfc2544 module `path` imports, at any depth of its code."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # `from rfc2544 import commands` imports the module rfc2544.cli.run
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return {name for name in found if name.split(".")[0] == "rfc2544"}


def graph():
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py") if "data" not in p.relative_to(PACKAGE).parts}
    return {name: imports_of(path) & set(modules) for name, path in modules.items()}


def test_the_entry_point_imports_only_the_cli():
    assert graph()[ENTRY] == {"rfc2544.cli"}


def test_the_cli_layer_is_what_the_command_table_names():
    from rfc2544.cli import COMMANDS
    named = {target.split(":")[0] for target in COMMANDS.values()}
    assert named | {"rfc2544.cli"} == CLI_LAYER


def test_nothing_below_the_cli_layer_imports_it():
    offenders = {name: sorted(deps & CLI_LAYER) for name, deps in graph().items()
                 if name not in CLI_LAYER | {ENTRY} and deps & CLI_LAYER}
    assert offenders == {}


def test_command_modules_do_not_import_each_other():
    offenders = {name: sorted(deps & CLI_LAYER - {name}) for name, deps in graph().items()
                 if name in CLI_LAYER and deps & CLI_LAYER - {name}}
    assert offenders == {}


def test_only_the_cli_layer_and_the_display_use_click():
    users = {module_name(p) for p in PACKAGE.rglob("*.py")
             if "data" not in p.relative_to(PACKAGE).parts and "click" in {
                 n.split(".")[0] for node in ast.walk(ast.parse(p.read_text()))
                 for n in ([a.name for a in node.names] if isinstance(node, ast.Import) else
                           [node.module or ""] if isinstance(node, ast.ImportFrom) else [])}}
    assert users - CLI_LAYER == {"rfc2544.cli.display"}
