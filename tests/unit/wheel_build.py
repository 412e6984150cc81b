"""Build the product's wheel from a copy of the checkout and install it into
a fresh virtualenv outside it: the one builder of the unit wheel tests and
of the lab session's wheel (tests/integration loads this file by path).
No tests here."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The checkout as a source tree for `pip wheel` (no build outputs, no tests).
# The checkout's own folders are left out at its top only: the package has
# a results/ folder of its own.
TOP_ONLY = {".git", ".venv", "build", "dist", "results", ".pytest_cache", "tests"}
# (probes.h: the module build's probe results, an output like the .o files)
ANYWHERE = shutil.ignore_patterns("*.egg-info", "__pycache__", "*.o", "*.ko", "*.mod", "*.mod.c", ".*.cmd",
                                  "*.order", "*.symvers", "probes.h")


def NOT_SOURCE(folder, names):
    top = TOP_ONLY & set(names) if Path(folder) == ROOT else set()
    return top | ANYWHERE(folder, names)


def build_wheel(tmp: Path, verbose=False):
    """-> (wheel path, pip's output). Built from a copy, so the build leaves no
    build/ in the checkout and stale build outputs there cannot end up in it."""
    src = tmp / "src"
    shutil.copytree(ROOT, src, symlinks=True, ignore=NOT_SOURCE)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v" if verbose else "-q", "--no-deps",
                            "--no-build-isolation", "-w", str(tmp / "dist"), str(src)],
                           check=True, capture_output=True, text=True)
    wheel, = (tmp / "dist").glob("rfc2544-*.whl")
    return wheel, build.stdout + build.stderr


def install_in_new_venv(tmp: Path, wheel: Path, with_dependencies: bool) -> Path:
    """A fresh virtualenv tmp/venv holding the wheel: with its dependencies as
    a user gets them, or the wheel alone (--no-deps, offline)."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    only_the_wheel = [] if with_dependencies else ["--no-deps", "--no-index"]
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    *only_the_wheel, str(wheel)], check=True, capture_output=True, text=True, timeout=900)
    return venv
