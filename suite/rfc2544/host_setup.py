"""Preparing the hosts with the shipped Ansible playbooks: `rfc2544 setup`,
and `rfc2544 run --setup` through run_playbook().

The playbooks, roles, module source and example inventory travel inside the
package (rfc2544/data/, symlinks to the repository's folders in a checkout,
copies in a wheel), so this works from any working directory and from a
wheel or pipx install as from a checkout.
"""
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import click

from rfc2544.errors import BadInput, InfraError

ANSIBLE_HINT = "install rfc2544 with its dependencies (pip install rfc2544 pulls ansible-core)"


def data_dir() -> Path:
    """rfc2544/data: playbooks/, pktgen-kmod/, inventory/."""
    root = resources.files("rfc2544") / "data"
    # Ansible needs real files: an installed package is a directory on disk.
    if not isinstance(root, Path) or not (root / "playbooks" / "setup.yml").is_file():
        raise InfraError(f"this installation of rfc2544 lacks its playbooks ({root}/playbooks/setup.yml): "
                         "reinstall it")
    return root


def playbooks_dir() -> Path:
    return data_dir() / "playbooks"


def find_tool(name):
    """Path of the Ansible script `name`: the one beside this interpreter
    first (the venv or pipx bin/ that installed ansible-core with us, even
    when that bin/ is not on PATH), else the first on PATH; None if neither.
    sys.executable is not resolved: a venv's python is a symlink to the
    system one, whose directory holds a different (or no) ansible."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def run_playbook(name, inventory_path, *args, what=None):
    """ansible-playbook PLAYBOOKS/name -i inventory_path *args, with the
    shipped ansible.cfg; InfraError unless it exits 0."""
    what = what or name
    exe = find_tool("ansible-playbook")
    if exe is None:
        raise InfraError(f"{what}: ansible-playbook not found beside {sys.executable} nor on PATH; {ANSIBLE_HINT}")
    playbooks = playbooks_dir()
    env = dict(os.environ, ANSIBLE_CONFIG=str(playbooks / "ansible.cfg"))
    click.echo(f"rfc2544: {exe} {name} (ANSIBLE_CONFIG={env['ANSIBLE_CONFIG']})", err=True)
    try:
        status = subprocess.call([exe, str(playbooks / name), "-i", str(inventory_path), *args], env=env)
    except OSError as exc:
        raise InfraError(f"{what}: cannot run {exe}: {exc.strerror}")
    if status != 0:
        raise InfraError(f"{what}: ansible-playbook {name} failed with exit status {status}")


@click.command("setup")
@click.option("-i", "--inventory", "inventory_path", type=click.Path(dir_okay=False),
              help="Ansible inventory (default: the local lab's).")
@click.option("--teardown", is_flag=True,
              help="Undo the setup instead: restore every tuned value and unload the module.")
@click.option("-e", "--extra-vars", "extra_vars", multiple=True, metavar="VAR=VALUE",
              help="Passed to ansible-playbook (repeatable), e.g. rfc2544_kmod_teardown_state=absent.")
def setup(inventory_path, teardown, extra_vars):
    """Prepare the hosts: build and load the module on the testers, tune the hosts."""
    from rfc2544.commands import resolve_inventory
    inventory = resolve_inventory(inventory_path)
    name = "teardown.yml" if teardown else "setup.yml"
    args = [arg for var in extra_vars for arg in ("-e", var)]
    run_playbook(name, inventory.path, *args, what="setup --teardown" if teardown else "setup")
    click.echo(f"{'teardown' if teardown else 'setup'} done on {inventory.path}")


@click.command("init")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--tester", metavar="[USER@]HOST[:PORT]", help="Discover the tester's ports over SSH.")
@click.option("--dut", metavar="[USER@]HOST[:PORT]", help="Discover the DUT's ports over SSH.")
@click.option("--dut-netns", metavar="NS", help="The DUT is this network namespace of its host.")
@click.option("--key", "key_file", type=click.Path(dir_okay=False), help="SSH private key for both hosts.")
@click.option("--known-hosts", "known_hosts", type=click.Path(dir_okay=False),
              help="known_hosts file to verify host keys against (default ~/.ssh/known_hosts).")
@click.option("--force", is_flag=True, help="Overwrite PATH if it exists.")
def init(path, tester, dut, dut_netns, key_file, known_hosts, force):
    """Write a commented inventory to PATH, to edit.

    With --tester and --dut, their ports (MACs, addresses, peers from the
    neighbour tables) are read over SSH; without, PATH is the shipped
    example-two-box.yml, whose comments say what to change."""
    target = Path(path)
    if target.exists() and not force:
        raise BadInput(f"{target}: exists; not overwritten (pass --force, choose another path or remove it)")
    if tester or dut or dut_netns:
        from rfc2544 import init_inventory
        if not (tester and dut):
            raise BadInput("init: --tester and --dut go together (and --dut-netns needs them)")
        init_inventory.write_discovered(
            target, init_inventory.parse_target(tester, "--tester"), init_inventory.parse_target(dut, "--dut"),
            netns=dut_netns, key_file=key_file, known_hosts=known_hosts, force=force)
        click.echo(f"wrote {target}: choose the tester ports' roles and the streams (marked CHOOSE), "
                   f"then 'rfc2544 doctor -i {target}'")
        return
    example = data_dir() / "inventory" / "example-two-box.yml"
    try:
        target.write_text(example.read_text())
    except OSError as exc:
        raise BadInput(f"{target}: cannot write: {exc.strerror}")
    click.echo(f"wrote {target}: set the hosts' addresses, ports and MACs, then 'rfc2544 doctor -i {target}'")
