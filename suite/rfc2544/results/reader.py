"""The one reader of results.json files: resume (results.Results.load),
report and compare (results.load.load_results) all start here, so a file is
accepted or refused the same way, with the same one-line message naming it.

What each caller checks afterwards differs: --resume needs the plan and the
trials to replay; the report checks the types of the fields it shows and
tolerates missing ones (a partial file still renders).
"""
import json
import math
import sys
from pathlib import Path

from rfc2544 import input_files
from rfc2544.errors import BadInput
from rfc2544.results.records import SCHEMA, SCHEMA_VERSION

FILENAME = "results.json"
SUPPORTED_VERSIONS = (1, SCHEMA_VERSION)   # 1: deviations as sentences, no trial hooks


def resolve(path):
    """A results file, or a run directory holding results.json."""
    path = Path(path)
    return path / FILENAME if path.is_dir() else path


def _refuse_constant(name):
    # Python's json takes NaN and Infinity, which are not JSON: a rate of
    # NaN compares false with every threshold and would pass a gate
    raise ValueError(f"{name} is not a number (strict JSON has no NaN or Infinity)")


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):        # 1e999 parses as inf
        raise ValueError(f"{text[:40]} is out of range for a number")
    return value


def _float_range_int(text):
    value = int(text)
    if abs(value) > sys.float_info.max:     # every figure is shown, compared and plotted as a float
        raise ValueError(f"{text[:40]}... is out of range for a number")
    return value


def read_results(path):
    """(resolved path, the parsed document) of an rfc2544 results file of a
    supported version; anything else is one BadInput line naming the file."""
    path = resolve(path)
    text = input_files.read_text(path, "results file")
    try:
        data = json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float,
                          parse_int=_float_range_int)
    except ValueError as exc:
        if not isinstance(exc, json.JSONDecodeError):
            raise BadInput(f"{path}: corrupt results file: {exc}") from None
        raise BadInput(f"{path}: corrupt results file: invalid JSON at line {exc.lineno} "
                       f"column {exc.colno} ({exc.msg})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise BadInput(f"{path}: not an rfc2544 results file (no \"schema\": \"{SCHEMA}\")")
    version = data.get("schema_version")
    if version not in SUPPORTED_VERSIONS or isinstance(version, bool):
        raise BadInput(f"{path}: results schema version {json.dumps(version)} is not supported "
                       f"(this rfc2544 reads versions {', '.join(map(str, SUPPORTED_VERSIONS))})")
    return path, data
