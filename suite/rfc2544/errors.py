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


class ThresholdMissed(Rfc2544Error):
    """A result is worse than the threshold the user set."""

    exit_code = 1
