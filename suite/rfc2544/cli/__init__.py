"""The `rfc2544` command: a thin click layer.

Each subcommand lives with the code it drives and is imported only when used,
so `rfc2544 lab up` does not pay for matplotlib.
"""
import importlib
import os
import sys

import click

from rfc2544 import __version__
from rfc2544.errors import BadInput, Rfc2544Error, missing_dependency

# name -> "module:attribute" of a click command or group
COMMANDS = {
    "lab": "rfc2544.cli.lab:lab",
    "run": "rfc2544.cli.run:run",
    "plan": "rfc2544.cli.plan:plan",
    "calibrate": "rfc2544.cli.calibrate:calibrate",
    "doctor": "rfc2544.cli.doctor:doctor",
    "setup": "rfc2544.cli.setup:setup",
    "init": "rfc2544.cli.setup:init",
    "report": "rfc2544.cli.report:report",
    "compare": "rfc2544.cli.report:compare",
    "store": "rfc2544.cli.store:store",
    "trend": "rfc2544.cli.store:trend",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            # A part of the product that has not landed yet: say so plainly.
            missing = getattr(exc, "name", "") or ""
            if missing and module_name.startswith(missing):
                return _unavailable(name, module_name)
            raise
        return getattr(module, attr)


def _unavailable(name, module_name):
    @click.command(name, context_settings={"ignore_unknown_options": True})
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def unavailable(args):
        raise click.ClickException(f"'{name}' is not available in this build ({module_name} missing)")

    return unavailable


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="rfc2544")
def cli():
    """RFC 2544 benchmarks for network devices, driven over SSH."""


def main(argv=None):
    try:
        cli.main(args=argv, prog_name="rfc2544", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("rfc2544: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if exc.exit_code == 1 else exc.exit_code)
    except BadInput as exc:
        # one line, whatever the bad value held: a raw newline in it would
        # make the error look like two
        line = str(exc).replace("\r", "\\r").replace("\n", "\\n")
        click.echo(f"rfc2544: {line}", err=True)
        sys.exit(exc.exit_code)
    except Rfc2544Error as exc:
        click.echo(f"rfc2544: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("rfc2544: interrupted", err=True)
        sys.exit(130)
    except ImportError as exc:        # a dependency missing from this install: no traceback
        click.echo(f"rfc2544: {missing_dependency(exc, 'this command')}", err=True)
        sys.exit(3)
    except Exception as exc:        # a bug: one line and where its traceback went, exit 3 (not 1,
        click.echo(f"rfc2544: {_internal_error(exc)}", err=True)    # "threshold missed")
        sys.exit(3)
    sys.exit(0)


def _internal_error(exc):
    """One line for an unexpected exception; its traceback goes to a log."""
    import tempfile
    import traceback
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    summary = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    try:
        fd, path = tempfile.mkstemp(prefix="rfc2544-error-", suffix=".log")
        with os.fdopen(fd, "w") as log:
            log.write(text)
    except OSError:
        return f"internal error: {summary} (the traceback could not be saved)"
    return f"internal error: {summary}; traceback in {path} (please report it)"
