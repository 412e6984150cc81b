"""Errors the CLI turns into one line and an exit code.

Exit codes: 0 ok, 1 a threshold missed, 2 bad input, 3 infrastructure failure.
"""


class Rfc2544Error(Exception):
    """Base: anything the user should see as one clear line."""

    exit_code = 3


class BadInput(Rfc2544Error):
    """The user's input (arguments, profile, inventory, results file) is wrong."""

    exit_code = 2


class InfraError(Rfc2544Error):
    """A host, the lab, SSH or a tool failed."""

    exit_code = 3


class HostKeyError(InfraError):
    """A host's SSH key could not be verified (unknown, changed, or the
    known_hosts file unreadable): final, never worth another attempt."""


class ThresholdMissed(Rfc2544Error):
    """A result is worse than the threshold the user set."""

    exit_code = 1


def missing_dependency(exc, needed_for):
    """An InfraError for an ImportError: names the missing module and how to
    install it (one line, no traceback)."""
    name = getattr(exc, "name", None) or str(exc)
    top = name.split(".")[0]
    if top == "rfc2544":
        fix = "reinstall rfc2544 (pip install -e . in the source tree)"
    else:
        fix = f"pip install {top}"
    return InfraError(f"{needed_for} needs the Python module '{name}', which is not installed: {fix}")
