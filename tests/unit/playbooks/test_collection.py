"""The roles as the Ansible collection rfc2544.benchmark (collection/build.py):
the tarball holds the roles and the right metadata, installs, and its FQCN
role names resolve."""
import configparser
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def setup_cfg_version():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    return config["metadata"]["version"]


def test_collection_builds_installs_and_resolves_fqcn_roles(tmp_path):
    env = dict(os.environ, ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_HOME=str(tmp_path / "home"))
    built = subprocess.run([sys.executable, str(REPO / "collection" / "build.py"), str(tmp_path / "build"),
                            str(tmp_path / "dist")], capture_output=True, text=True, env=env, timeout=300)
    assert built.returncode == 0, built.stderr
    version = setup_cfg_version()
    tarball = Path(built.stdout.strip())
    assert tarball == tmp_path / "dist" / f"rfc2544-benchmark-{version}.tar.gz" and tarball.is_file()
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        manifest = json.load(tar.extractfile("MANIFEST.json"))["collection_info"]
        defaults = tar.extractfile("roles/pktgen_kmod/defaults/main.yml").read().decode()
    for name in ("roles/pktgen_kmod/tasks/main.yml", "roles/host_tuning/meta/argument_specs.yml",
                 "roles/facts/tasks/main.yml", "plugins/modules/pktgen_kmod_info.py",
                 "plugins/modules/host_tuning_values.py", "plugins/modules/facts_collect.py",
                 "pktgen-kmod/main.c", "pktgen-kmod/Makefile", "pktgen-kmod/dkms.conf"):
        assert name in names
    assert not [n for n in names if n.endswith((".o", ".ko", ".pyc"))]
    assert (manifest["namespace"], manifest["name"], manifest["version"]) == ("rfc2544", "benchmark", version)
    assert manifest["license"] == ["GPL-2.0-only", "MIT"]
    assert '"{{ role_path }}/../../pktgen-kmod"' in defaults
    # the repository's roles are untouched by the build
    assert "/../../../pktgen-kmod" in (REPO / "playbooks/roles/pktgen_kmod/defaults/main.yml").read_text()

    collections = tmp_path / "collections"
    installed = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "install", "-p", str(collections),
                                str(tarball)], capture_output=True, text=True, env=env, timeout=300)
    assert installed.returncode == 0, installed.stderr
    root = collections / "ansible_collections" / "rfc2544" / "benchmark"
    assert (root / "roles/pktgen_kmod/defaults/main.yml").is_file()
    # the role's default source path, resolved from the installed role, is the shipped source
    assert (root / "roles/pktgen_kmod" / "../../pktgen-kmod" / "main.c").resolve().is_file()
    playbook = tmp_path / "site.yml"
    playbook.write_text("- hosts: testers\n  roles:\n"
                        "    - rfc2544.benchmark.pktgen_kmod\n    - rfc2544.benchmark.host_tuning\n"
                        "    - rfc2544.benchmark.facts\n")
    env["ANSIBLE_COLLECTIONS_PATH"] = str(collections)
    env.pop("ANSIBLE_CONFIG", None)
    listed = subprocess.run([str(BIN / "ansible-doc"), "-t", "role", "-l", "rfc2544.benchmark"],
                            capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    for role in ("pktgen_kmod", "host_tuning", "facts"):
        assert f"rfc2544.benchmark.{role}" in listed.stdout
    checked = subprocess.run([str(BIN / "ansible-playbook"), "--syntax-check", "-i", "localhost,", str(playbook)],
                             capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
