"""The commit message check (.ci/hooks/commit-msg, issue 57 item 7): one
area vocabulary (the tree's folders and files), subjects of at most 72
characters, a body with a `Tested:` line. Samples, no git needed."""
import importlib.machinery
import importlib.util
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[3] / ".ci" / "hooks" / "commit-msg"


@pytest.fixture(scope="module")
def hook():
    loader = importlib.machinery.SourceFileLoader("commit_msg", str(HOOK))
    spec = importlib.util.spec_from_loader("commit_msg", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


TREE = ["suite/rfc2544/engine/pacing.py", "pktgen-kmod/departures.c", "README.md", ".ci/run"]
GOOD = "pacing: judge a stream's generators as one merged stream\n\nWhy, wrapped.\n\nTested: pytest tests/unit\n"


def test_the_areas_are_the_tree_s_folders_and_files(hook):
    known = hook.areas(TREE)
    assert {"engine", "pacing", "pktgen-kmod", "departures", "README", "ci", "package"} <= known
    assert "layers" not in known


@pytest.mark.parametrize("message, problem", [
    (GOOD, None),
    ("engine/pacing: merge streams\n\nBody.\n\nTested: unit\n", None),
    ("# a git comment\n" + GOOD, None),
    ("pacing: " + "x" * 70 + "\n\nBody.\nTested: unit\n", "subject is 78 characters"),
    ("judge a stream's generators\n\nBody.\nTested: unit\n", "not `area: imperative subject`"),
    ("layers: move constants\n\nBody.\nTested: unit\n", "area 'layers' is not a folder or file"),
    ("pacing: merge\nBody at once.\nTested: unit\n", "no blank line"),
    ("pacing: merge\n\nBody without a test line.\n", "no `Tested:` line"),
    ("pacing: merge\n\n" + "word " * 30 + "\n\nTested: unit\n", "body line 3 is longer than 80"),
    ("", "empty message"),
])
def test_a_message_is_judged(hook, message, problem):
    found = hook.problems(message, hook.areas(TREE))
    if problem is None:
        assert found == []
    else:
        assert any(problem in p for p in found), found


def test_six_messages_on_one_line_are_refused(hook):
    """The history this check was written for: whole messages joined on one line."""
    joined = " ".join(GOOD.replace("\n", " ") for _ in range(6))
    assert any("subject is" in p for p in hook.problems(joined, hook.areas(TREE)))
