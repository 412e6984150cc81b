"""`rfc2544 lab ...`: the local QEMU lab."""
import json
import os
import sys

import click

from rfc2544.interrupts import interruptible
from rfc2544.errors import BadInput, InfraError


def _log(msg):
    click.echo(msg, err=True)


def _lab(name):
    from rfc2544.lab.lab import Lab
    return Lab(name)


name_option = click.option("--name", default="default", show_default=True,
                           help="Lab name (state in ~/.cache/rfc2544/labs/NAME).")
# plain strings checked by the lab code (BadInput names the known values)
release_option = click.option("--release", default="bookworm", show_default=True, metavar="RELEASE",
                              help="Debian release of the VMs' image: bookworm (12), trixie (13) or "
                                   "sid (unstable); one cached image per release.")


@click.group()
def lab():
    """Local QEMU lab of Debian hosts (tester and DUT): Debian 12 by default, or trixie or sid."""


@lab.command()
@click.option("--hosts", type=int, default=1, show_default=True,
              help="1: tester VM with the DUT in a namespace; 2: tester VM + DUT VM.")
@click.option("--topology", "topology_name", default=None,
              help="Topology by name (single, two-host); overrides --hosts.")
@click.option("--kernel-arg", "kernel_args", multiple=True, metavar="WORD",
              help="Append WORD to the VMs' kernel command line (repeatable), "
                   "e.g. slub_debug=FZP to catch use-after-free in a module under test.")
@release_option
@click.option("--nic", default="virtio", show_default=True, metavar="MODEL",
              help="QEMU NIC model of the two-host topology's test links: virtio or e1000e "
                   "(the management NIC stays virtio; the single topology's test links are veth).")
@name_option
def up(hosts, topology_name, kernel_args, release, nic, name):
    """Build the image if needed, boot the lab, write its inventory."""
    from rfc2544.lab import topology
    topo = topology_name or topology.from_hosts(hosts)
    topology.get(topo)
    status = _lab(name).up(topo, log=_log, kernel_args=kernel_args, release=release, nic=nic)
    click.echo(status["inventory"])


@lab.command()
@name_option
def down(name):
    """Stop the lab's VMs (only the QEMU processes it started)."""
    _lab(name).down(log=_log)


@lab.command()
@name_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def status(name, as_json):
    """Is the lab up; its VMs, ports and inventory."""
    st = _lab(name).status()
    if as_json:
        click.echo(json.dumps(st, indent=1))
        return
    if not st["vms"]:
        click.echo(f"lab {name}: not up")
        return
    word = "up" if st["up"] else ("booting or stopping" if st.get("busy") else "down")
    links = f"test NICs {st['nic']}" if st.get("nic") else "test links veth"
    click.echo(f"lab {name}: {word}, topology {st['topology']}, "
               f"{(st.get('accel') or '?').upper()}, Debian {st.get('release')}, "
               f"kernel {st.get('kernel_release')}, {links}")
    for vm, info in st["vms"].items():
        state = f"running pid {info['pid']}" if info["running"] else "stopped"
        click.echo(f"  {vm}: {state}, ssh 127.0.0.1:{info['ssh_port']}, console {info['console']}")
    if st["up"]:
        click.echo(f"  inventory: {st['inventory']}")


@lab.command(context_settings={"ignore_unknown_options": True})
@name_option
@click.argument("host")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def ssh(name, host, command):
    """SSH to HOST (tester or dut) with host-key checking: ssh HOST [-- CMD]."""
    lab_ = _lab(name)
    vm, port = lab_.ssh_port(host)
    argv = ["ssh", "-p", str(port), "-i", str(lab_.key_file), "-o", "IdentitiesOnly=yes",
            "-o", f"UserKnownHostsFile={lab_.known_hosts}", "-o", "StrictHostKeyChecking=yes",
            "-o", "LogLevel=ERROR", "root@127.0.0.1"]
    # like ssh(1): the words after -- form one remote shell command
    remote = " ".join(command)
    if host == "dut" and lab_.dut_netns:
        from rfc2544.drivers.ssh import quote
        remote = f"ip netns exec {quote(lab_.dut_netns)} " + (f"sh -c {quote(remote)}" if remote else "bash -l")
        if not command:
            argv.insert(1, "-t")
    if remote:
        argv += ["--", remote]
    sys.stdout.flush()
    try:
        os.execvp("ssh", argv)
    except OSError as exc:
        raise InfraError(f"cannot run ssh: {exc.strerror} (install openssh-client)")


@lab.command()
@click.option("--rebuild", is_flag=True, help="Build even if a cached image matches.")
@click.option("--prune", is_flag=True, help="Remove older cached images no running lab uses "
                                            "(the current image of every release is kept).")
@release_option
def image(rebuild, prune, release):
    """Build (if needed) and describe the lab image of a Debian release."""
    from rfc2544.lab import image as image_mod
    img = image_mod.ensure_image(force=rebuild, release=release)
    click.echo(image_mod.describe(img))
    if prune:
        from rfc2544.lab.lab import images_in_use
        for d in image_mod.prune(images_in_use()):
            click.echo(f"removed {d}")


@lab.command()
@name_option
@click.option("--pps", type=int, default=None, help="Cap the DUT's forwarding to N packets/s.")
@click.option("--burst", type=int, default=None, help="Policer burst in packets (default pps/100, >= 10).")
@click.option("--off", is_flag=True, help="Remove the cap.")
def cap(name, pps, burst, off):
    """Cap (or uncap) the DUT's forwarding rate with tc."""
    if off == (pps is not None):
        raise BadInput("lab cap: give exactly one of --pps N or --off")
    lab_ = _lab(name)
    if off:
        lab_.uncap_dut()
        click.echo(f"lab {name}: DUT cap removed")
    else:
        lab_.cap_dut(pps, burst)
        click.echo(f"lab {name}: DUT forwarding capped at {pps} packets/s")


@lab.command()
@name_option
@click.option("--out", "out_dir", default="results/demo", show_default=True, type=click.Path())
@click.option("--count", default=10000, show_default=True, type=int)
@interruptible
def demo(name, out_dir, count):
    """Send COUNT packets through the DUT with the kernel's pktgen; report counts."""
    from rfc2544.lab import demo as demo_mod
    demo_mod.run(_lab(name), out_dir, count, echo=click.echo)
