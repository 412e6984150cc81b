"""Click command `doctor`: are the inventory's hosts ready (engine.doctor)?"""
import click

from rfc2544.cli import inventory_arg
from rfc2544.config import profiles as profiles_mod
from rfc2544.config.inventory import MAX_GENERATORS
from rfc2544.drivers.placement import GENERATOR_CPUS
from rfc2544.errors import InfraError


def profile_needs(profile):
    """(networks, ipv6, sources, bidirectional) that a run of `profile`
    needs checked: its largest flow count as destination networks or
    source addresses, IPv6 networks or sources when it sends IPv6, its
    direction."""
    m = profile.model
    flows = max(m.flows)
    networks = flows if m.flow_spread == "dst_networks" else 1
    sources = flows if m.flow_spread == "src_addresses" else 1
    return networks, max(networks, sources) > 1 and 6 in m.ip_versions, sources, m.direction == "bi"


@click.command("doctor")
@click.option("-i", "--inventory", "inventory_path", type=click.Path(dir_okay=False),
              help="Ansible inventory (default: the local lab's).")
@click.option("-p", "--profile", "profile_name", default=None,
              help="Check what a run of this profile needs (its destination networks or source addresses, "
                   "IPv6 networks, both directions), besides the options below.")
@click.option("--networks", type=click.IntRange(1, 65536), default=1, show_default=True,
              help="Also check that the DUT routes this many destination /24 networks per stream "
                   "(profile flow_spread: dst_networks; RFC 2544 section 12: 256).")
@click.option("--ipv6", is_flag=True,
              help="With --networks or --sources: check the IPv6 destination /64 networks or sources too.")
@click.option("--sources", type=click.IntRange(1, 65535), default=1, show_default=True,
              help="Also check that the DUT routes this many source addresses per stream back toward "
                   "the tester (profile flow_spread: src_addresses).")
@click.option("--bidirectional", is_flag=True,
              help="Check the reverse streams too (profile direction: bi): their rx ports send.")
@click.option("--generators", type=click.IntRange(1, MAX_GENERATORS), default=None,
              help="Show where this many generators per stream would send [default: the inventory's].")
@click.option("--generator-cpus", type=click.Choice(GENERATOR_CPUS), default=GENERATOR_CPUS[0], show_default=True,
              help="As run's: all lets the generators take the CPUs of the receive path too.")
def doctor(inventory_path, profile_name, networks, ipv6, sources, bidirectional, generators, generator_cpus):
    """Check the hosts: SSH, module, links, MACs, clock sync (and DUT routes)."""
    if ipv6 and networks == 1 and sources == 1:
        raise click.UsageError("--ipv6 checks destination networks or sources: give --networks N or "
                               "--sources N (N > 1) with it")
    if profile_name:
        p_networks, p_ipv6, p_sources, p_bi = profile_needs(profiles_mod.load(profile_name))
        networks, sources = max(networks, p_networks), max(sources, p_sources)
        ipv6, bidirectional = ipv6 or p_ipv6, bidirectional or p_bi
    inventory = inventory_arg.resolve(inventory_path)
    try:
        from rfc2544.engine.doctor import doctor as check_hosts
    except ImportError as exc:
        raise InfraError(f"doctor is not available in this build ({exc})")
    from rfc2544.engine.playbooks import find_tool, runs_through_mitogen
    exe = find_tool("ansible-playbook")
    mitogen = {True: ", through Mitogen", None: "",
               False: " (its Python lacks Mitogen: plays run one Python per task, slower; "
                      "pip install mitogen beside it)"}[runs_through_mitogen(exe) if exe else None]
    click.echo(f"ansible-playbook (setup, run --setup): {exe or 'not found'}{mitogen}")
    checks = check_hosts(inventory, networks=networks, ipv6=ipv6, sources=sources, bidirectional=bidirectional,
                         generators=generators, every_cpu=generator_cpus == "all")
    for name, ok, detail in checks:
        click.echo(f"{'ok  ' if ok else 'FAIL'}  {name}: {detail}")
    failed = [name for name, ok, _ in checks if not ok]
    if failed:
        raise InfraError(f"doctor: {len(failed)} of {len(checks)} checks failed: {', '.join(failed)}")
    click.echo(f"all {len(checks)} checks passed")
