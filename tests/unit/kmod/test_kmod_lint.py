"""Host-only gate on the kernel module's sources: checkpatch.pl reports no
error. Sparse on every file against every kernel of kernels.list is
`make -C pktgen-kmod check-kernels` (test_kernel_matrix.py).

checkpatch.pl comes from Debian's linux-source-6.1 (a tarball in /usr/src;
the three files checkpatch needs are unpacked once into
~/.cache/rfc2544/checkpatch/); sparse from the sparse package. Both are in
the Makefile's APT_PACKAGES (`make deps`).
"""
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
KMOD = ROOT / "pktgen-kmod"
TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
CACHE = Path.home() / ".cache" / "rfc2544" / "checkpatch"
NEEDED = ("checkpatch.pl", "spelling.txt", "const_structs.checkpatch")


def _checkpatch():
    script = CACHE / "scripts" / "checkpatch.pl"
    if script.is_file():
        return script
    if not TARBALL.is_file():
        pytest.skip(f"{TARBALL} missing: install linux-source-6.1 (make deps)")
    tmp = CACHE.with_name("checkpatch.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "scripts").mkdir(parents=True)
    with tarfile.open(TARBALL) as tar:          # one pass over the stream
        for member in tar:
            name = member.name.split("/", 1)[-1]
            if name in (f"scripts/{n}" for n in NEEDED):
                (tmp / name).write_bytes(tar.extractfile(member).read())
                if all((tmp / "scripts" / n).is_file() for n in NEEDED):
                    break
    shutil.rmtree(CACHE, ignore_errors=True)
    tmp.rename(CACHE)
    return script


def _sources():
    return sorted(p for p in KMOD.iterdir() if p.suffix in (".c", ".h"))


def _checked():
    """Module sources and the in-guest fuzzer (kernel style too)."""
    return _sources() + [KMOD / "tools" / "pgfuzz.c"]


def test_checkpatch_no_errors():
    if shutil.which("perl") is None:
        pytest.skip("perl missing (make deps)")
    script = _checkpatch()
    out = subprocess.run(["perl", str(script), "--no-tree", "--terse", "--show-types", "-f",
                          *map(str, _checked())], capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr[-2000:]     # 1: warnings only
    errors = [line for line in out.stdout.splitlines() if "ERROR:" in line]
    assert errors == [], "\n".join(errors)
    # it really checks: a known error in a copy is reported
    bad = CACHE / "bad.c"
    bad.write_text("// SPDX-License-Identifier: GPL-2.0\nint f(void)\n{\n\treturn (1);;\n}\n"
                   "int g(int a){ if (a) return 1; return 0; }\n")
    out = subprocess.run(["perl", str(script), "--no-tree", "--terse", "-f", str(bad)],
                         capture_output=True, text=True, timeout=60)
    assert "ERROR:" in out.stdout, out.stdout


# ---- function length (issue 33 item 3) ----

MAX_FUNCTION_LINES = 80
_NAME = re.compile(r"([A-Za-z_]\w*)\s*\(")


def function_lengths(text):
    """[(name, first line, lines)] of each function definition in C source
    written in kernel style: a `{` alone at column 0 after the signature, to
    the next `}` at column 0. Lines counted from `{` to `}`, both included.
    The name is the first identifier followed by `(` in the signature (the
    lines above the `{`, back to a blank line, `}`, `;`, a comment's end or
    a preprocessor line)."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i].rstrip() != "{":
            i += 1
            continue
        j = i
        while j > 0 and lines[j - 1].strip() and not lines[j - 1].startswith(("}", "#")) \
                and not lines[j - 1].rstrip().endswith((";", "*/")):
            j -= 1
        found = _NAME.search(" ".join(lines[j:i]))
        k = i + 1
        while k < len(lines) and not lines[k].startswith("}"):
            k += 1
        assert k < len(lines), f"no closing brace at column 0 for the function at line {i + 1}"
        out.append((found.group(1) if found else f"<line {i + 1}>", i + 1, k - i + 1))
        i = k + 1
    return out


def over_limit(files):
    return {(p.name, name): (line, n) for p in files
            for name, line, n in function_lengths(p.read_text()) if n > MAX_FUNCTION_LINES}


def test_function_length_parser_finds_an_overlong_function(tmp_path):
    """The check proves itself: an 81-line function is reported by name, an
    80-line one and a long initializer are not."""
    def fn(name, body_lines):
        body = "".join(f"\tx += {i};\n" for i in range(body_lines))
        return f"static int {name}(int a,\n\t\tint b)\n{{\n\tint x = 0;\n\n{body}\treturn x;\n}}\n"
    # {, declaration, blank, body, return, } = body + 5 lines
    src = ("// SPDX-License-Identifier: GPL-2.0\n#include <x.h>\n\n" + fn("short_one", 75) + "\n"
           + "static const int table[] = {\n" + "".join(f"\t{i},\n" for i in range(200)) + "};\n\n"
           + "/* a comment */\n" + fn("long_one", 76) + "\n" + fn("tiny", 1))
    f = tmp_path / "synthetic.c"
    f.write_text(src)
    lengths = {name: n for name, _, n in function_lengths(src)}
    assert lengths == {"short_one": 80, "long_one": 81, "tiny": 6}
    assert set(over_limit([f])) == {("synthetic.c", "long_one")}


def test_no_kernel_function_over_80_lines():
    found = over_limit(p for p in _sources() if p.suffix == ".c")
    # the parser really saw the module's functions
    assert sum(len(function_lengths(p.read_text())) for p in _sources() if p.suffix == ".c") > 150
    assert not found, "over %d lines: %s" % (MAX_FUNCTION_LINES, ", ".join(
        f"{f}:{line} {name} ({n})" for (f, name), (line, n) in sorted(found.items())))
