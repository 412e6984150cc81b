"""Validation of results.json documents against the published JSON Schema
(docs/results.schema.json), shared by conftest.py and test_results_schema.py."""
import functools
import json
from pathlib import Path

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "results.schema.json"


@functools.lru_cache(maxsize=None)
def validator():
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(document):
    """Every violation, as 'path.to.field: message' lines (empty: valid)."""
    found = sorted(validator().iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:200]}" for e in found]


def assert_valid(document, origin="results.json"):
    errors = schema_errors(document)
    assert not errors, f"{origin} does not match {SCHEMA_PATH.name}:\n  " + "\n  ".join(errors[:20])
