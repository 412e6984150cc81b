"""CLI plumbing: errors become one line and the documented exit codes."""
import subprocess
import sys

import pytest

from rfc2544 import cli
from rfc2544.errors import BadInput


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "rfc2544", *args], capture_output=True, text=True)


def test_version():
    r = run_cli("--version")
    assert r.returncode == 0
    assert "rfc2544" in r.stdout


def test_unknown_command_is_bad_input():
    r = run_cli("no-such-command")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr


def test_rfc2544_error_becomes_one_line(monkeypatch, capsys):
    def boom(**kwargs):
        raise BadInput("profile.yml: trial_duration: must be positive")

    monkeypatch.setattr(cli.cli, "main", boom)
    with pytest.raises(SystemExit) as exc:
        cli.main([])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.strip() == "rfc2544: profile.yml: trial_duration: must be positive"
