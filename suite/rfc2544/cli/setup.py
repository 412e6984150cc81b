"""Click commands `setup` and `init`: prepare the hosts with the shipped
playbooks (rfc2544.engine.playbooks), or write an inventory to edit."""
from pathlib import Path

import click

from rfc2544.cli import inventory_arg
from rfc2544.errors import BadInput
from rfc2544.engine.playbooks import data_dir, run_playbook


@click.command("setup")
@click.option("-i", "--inventory", "inventory_path", type=click.Path(dir_okay=False),
              help="Ansible inventory (default: the local lab's).")
@click.option("--teardown", is_flag=True,
              help="Undo the setup instead: restore every tuned value and unload the module.")
@click.option("-e", "--extra-vars", "extra_vars", multiple=True, metavar="VAR=VALUE",
              help="Passed to ansible-playbook (repeatable), e.g. rfc2544_kmod_teardown_state=absent.")
def setup(inventory_path, teardown, extra_vars):
    """Prepare the hosts: build and load the module on the testers, tune the hosts."""
    inventory = inventory_arg.resolve(inventory_path)
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
        from rfc2544.config import init_inventory
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
