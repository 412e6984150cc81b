"""Every results.json a unit test writes through Results.save is checked
against the published schema (docs/results.schema.json), so the writer and
the schema cannot drift apart unnoticed."""
import json

import pytest

from rfc2544.results.file import Results
from schema_check import assert_valid


@pytest.fixture(autouse=True)
def results_match_the_schema(monkeypatch):
    written = Results.save

    def save_and_validate(self):
        written(self)
        # read back what is on disk: that is what report and --resume see
        assert_valid(json.loads(self.path.read_text()), str(self.path))

    monkeypatch.setattr(Results, "save", save_and_validate)
