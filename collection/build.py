#!/usr/bin/env python3
"""Build the Ansible collection rfc2544.benchmark from the repository.

usage: build.py BUILD_DIR OUTPUT_DIR

Assembles BUILD_DIR (emptied first) from collection/galaxy.yml (its version
set to setup.cfg's), collection/README.md, copies of playbooks/roles/ (their
library/ modules moved to plugins/modules/) and of pktgen-kmod/'s source,
then runs `ansible-galaxy collection build` into OUTPUT_DIR and prints the
tarball's path. The roles stay in one place
(playbooks/roles): the collection only copies them at build time.
"""
import configparser
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# In the repository pktgen_kmod finds the module source three levels above
# the role; in the collection it sits at the collection's root.
SOURCE_DEFAULT = 'pktgen_kmod_source_dir: "{{ role_path }}/../../../pktgen-kmod"'
SOURCE_IN_COLLECTION = 'pktgen_kmod_source_dir: "{{ role_path }}/../../pktgen-kmod"'
BUILD_OUTPUTS = ("*.o", "*.ko", "*.mod", "*.mod.c", "*.cmd", ".*", "modules.order",
                 "Module.symvers", "__pycache__", "*.pyc")


def fail(message):
    print(f"build.py: {message}", file=sys.stderr)
    sys.exit(2)


def assemble(build_dir):
    version = configparser.ConfigParser()
    version.read(REPO / "setup.cfg")
    galaxy = (REPO / "collection" / "galaxy.yml").read_text()
    galaxy, count = re.subn(r"(?m)^version: .*$", f"version: {version['metadata']['version']}", galaxy)
    if count != 1:
        fail("collection/galaxy.yml has no 'version:' line to set")
    shutil.rmtree(build_dir, ignore_errors=True)
    build_dir.mkdir(parents=True)
    (build_dir / "galaxy.yml").write_text(galaxy)
    shutil.copy(REPO / "collection" / "README.md", build_dir / "README.md")
    (build_dir / "meta").mkdir()
    (build_dir / "meta" / "runtime.yml").write_text('---\nrequires_ansible: ">=2.18"\n')
    ignore = shutil.ignore_patterns(*BUILD_OUTPUTS)
    shutil.copytree(REPO / "playbooks" / "roles", build_dir / "roles", ignore=ignore)
    shutil.copytree(REPO / "pktgen-kmod", build_dir / "pktgen-kmod", ignore=ignore)
    move_role_modules(build_dir)
    defaults = build_dir / "roles" / "pktgen_kmod" / "defaults" / "main.yml"
    text = defaults.read_text()
    if SOURCE_DEFAULT not in text:
        fail(f"{defaults.relative_to(build_dir)}: the module source default changed; update build.py")
    defaults.write_text(text.replace(SOURCE_DEFAULT, SOURCE_IN_COLLECTION))


def move_role_modules(build_dir):
    """Ansible loads no plugins from a collection role's library/: the roles'
    own modules go to the collection's plugins/modules/, where the roles'
    unqualified module names find them (a role searches its collection first)."""
    modules = build_dir / "plugins" / "modules"
    modules.mkdir(parents=True)
    for library in sorted((build_dir / "roles").glob("*/library")):
        for module in sorted(library.glob("*.py")):
            if (modules / module.name).exists():
                fail(f"two roles ship a module named {module.stem}")
            shutil.move(str(module), modules / module.name)
        shutil.rmtree(library)


def galaxy_tool():
    beside = Path(sys.executable).parent / "ansible-galaxy"
    return str(beside) if os.access(beside, os.X_OK) else shutil.which("ansible-galaxy")


def main(argv):
    if len(argv) != 2:
        fail("usage: build.py BUILD_DIR OUTPUT_DIR")
    build_dir, output_dir = (Path(a).resolve() for a in argv)
    tool = galaxy_tool()
    if tool is None:
        fail("ansible-galaxy not found beside this Python nor on PATH (make venv installs ansible-core)")
    assemble(build_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([tool, "collection", "build", "--force", "--output-path", str(output_dir),
                           str(build_dir)], capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"ansible-galaxy collection build failed: {(done.stderr.strip().splitlines() or [''])[-1]}")
    tarballs = sorted(output_dir.glob("rfc2544-benchmark-*.tar.gz"), key=os.path.getmtime)
    print(tarballs[-1])


if __name__ == "__main__":
    main(sys.argv[1:])
