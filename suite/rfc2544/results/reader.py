"""The one reader of results.json files: resume (results.Results.load),
report and compare (reports.load.load_results) all start here, so a file is
accepted or refused the same way, with the same one-line message naming it.

What each caller checks afterwards differs: --resume needs the plan and the
trials to replay; the report checks the types of the fields it shows and
tolerates missing ones (a partial file still renders).
"""
import json
from pathlib import Path

from rfc2544.errors import BadInput
from rfc2544.results.records import SCHEMA, SCHEMA_VERSION

FILENAME = "results.json"
SUPPORTED_VERSIONS = (1, SCHEMA_VERSION)   # 1: deviations as sentences, no trial hooks


def resolve(path):
    """A results file, or a run directory holding results.json."""
    path = Path(path)
    return path / FILENAME if path.is_dir() else path


def read_results(path):
    """(resolved path, the parsed document) of an rfc2544 results file of a
    supported version; anything else is one BadInput line naming the file."""
    path = resolve(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such results file") from None
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not a results file (not UTF-8 text)") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{path}: corrupt results file: invalid JSON at line {exc.lineno} "
                       f"column {exc.colno} ({exc.msg})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise BadInput(f"{path}: not an rfc2544 results file (no \"schema\": \"{SCHEMA}\")")
    version = data.get("schema_version")
    if version not in SUPPORTED_VERSIONS or isinstance(version, bool):
        raise BadInput(f"{path}: results schema version {json.dumps(version)} is not supported "
                       f"(this rfc2544 reads versions {', '.join(map(str, SUPPORTED_VERSIONS))})")
    return path, data
