"""Every results.json a unit test writes through Results.save is checked
against the published schema (docs/results.schema.json), so the writer and
the schema cannot drift apart unnoticed."""
import json
import sys
from pathlib import Path

import pytest

# The test folders mirror the package (tests/README.md); a test of one
# folder imports another's helpers by module name (test_tester_sim's
# make_tester), as when they shared one folder. The simulators and helpers
# sit here, on the path as this conftest's own folder.
_HERE = Path(__file__).resolve().parent
for _folder in sorted(p for p in _HERE.iterdir() if p.is_dir() and any(p.glob("test_*.py"))):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

from rfc2544.results.file import Results  # noqa: E402 (after the path)
from schema_check import assert_valid  # noqa: E402


@pytest.fixture(autouse=True)
def results_match_the_schema(monkeypatch):
    written = Results.save

    def save_and_validate(self):
        written(self)
        # read back what is on disk: that is what report and --resume see
        assert_valid(json.loads(self.path.read_text()), str(self.path))

    monkeypatch.setattr(Results, "save", save_and_validate)
