"""No function of the receiver's sources is longer than 80 lines (issue 33
item 3: a function reads in one screen). Counted from the line that opens
the definition to its closing brace, in kernel style: the body opens with
`{` and closes with `}` at column 0.

The receiver's files only (rx.c, seqwin.c, stats.c); the generator's files
are split in their own change.
"""
import re
from pathlib import Path

import pytest

KMOD = Path(__file__).resolve().parents[2] / "pktgen-kmod"
FILES = ("rx.c", "seqwin.c", "stats.c")
LIMIT = 80


def functions(text):
    """[(name, first line, lines)] of the top-level function definitions."""
    lines = text.splitlines()
    out, start, name = [], None, None
    for i, line in enumerate(lines):
        if start is None and re.match(r"[A-Za-z_].*\b(\w+)\(", line) and not line.rstrip().endswith(";"):
            m = re.search(r"\b(\w+)\(", line)
            start, name = i, m.group(1)
        elif start is not None and line.startswith("{"):
            pass
        elif start is not None and line.startswith("}"):
            out.append((name, start + 1, i - start + 1))
            start = None
        elif start is not None and line.rstrip().endswith(";") and not line.startswith(("\t", " ")):
            start = None            # a prototype or a declaration over several lines
    return out


def test_the_counter_finds_functions():
    text = "static int f(int a,\n\t     int b)\n{\n\treturn a;\n}\n\nint g(void);\nvoid h(void)\n{\n}\n"
    assert functions(text) == [("f", 1, 5), ("h", 8, 3)]


@pytest.mark.parametrize("name", FILES)
def test_no_function_over_80_lines(name):
    found = functions((KMOD / name).read_text())
    assert found, f"no function found in {name}"
    long = [(f, line, n) for f, line, n in found if n > LIMIT]
    assert long == [], f"{name}: functions over {LIMIT} lines: {long}"
