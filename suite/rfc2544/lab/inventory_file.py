"""Writes the lab's Ansible inventory in the project's schema (rfc2544.config.inventory)."""
from pathlib import Path

import yaml

from rfc2544.lab import dut_reset
from rfc2544.lab.topology import (DUT_PORTS, NOMINAL_SPEED_MBPS, PORTS, TESTER_PORTS,
                                  Topology, addr)


def _port(name, speed_mbps):
    p, peer = PORTS[name], PORTS[PORTS[name].peer]
    return {
        "name": p.name, "role": p.role, "mac": p.mac, "ipv4": p.ipv4, "ipv6": p.ipv6,
        "peer_mac": peer.mac, "peer_ipv4": addr(peer.ipv4), "peer_ipv6": addr(peer.ipv6),
        "speed_mbps": speed_mbps,
    }


def _ssh_vars(ssh_port, key_file: Path, known_hosts: Path):
    return {
        "ansible_host": "127.0.0.1",
        "ansible_port": ssh_port,
        "ansible_user": "root",
        "ansible_ssh_private_key_file": str(key_file),
        "ansible_ssh_common_args": (f"-o UserKnownHostsFile={known_hosts} "
                                    "-o StrictHostKeyChecking=yes -o IdentitiesOnly=yes"),
        "ansible_python_interpreter": "/usr/bin/python3",
        "rfc2544_known_hosts": str(known_hosts),
    }


def build(lab_name: str, topo: Topology, ssh_ports: dict, key_file: Path, known_hosts: Path,
          speed_mbps=None) -> dict:
    """`speed_mbps`: the test ports' link speed if their NIC reports one
    (e1000e: 1000), else NOMINAL_SPEED_MBPS."""
    speed_mbps = speed_mbps or NOMINAL_SPEED_MBPS
    tester = _ssh_vars(ssh_ports["tester"], key_file, known_hosts)
    tester["rfc2544_ports"] = [_port(n, speed_mbps) for n in TESTER_PORTS]
    # cal0-cal1 (CALIBRATION_LINK) is wired but left out: named here, every
    # failed trial of the in-tree pktgen would also be measured on it
    # (inventory/README.md); the tests that want it name it
    dut = _ssh_vars(ssh_ports[topo.dut_vm], key_file, known_hosts)
    if topo.dut_netns:
        dut["rfc2544_netns"] = topo.dut_netns
    dut["rfc2544_ports"] = [_port(n, speed_mbps) for n in DUT_PORTS]
    # RFC 2544 26.6: an outage of known length, logged (rfc2544.lab.dut_reset)
    dut["rfc2544_reset_cmd"] = dut_reset.command()
    return {"all": {
        "vars": {
            "rfc2544_lab": lab_name,
            "rfc2544_lab_topology": topo.name,
            "rfc2544_streams": [{"tx": "tester:tx0", "rx": "tester:rx0"}],
        },
        "children": {
            "testers": {"hosts": {"tester": tester}},
            "duts": {"hosts": {"dut": dut}},
        },
    }}


def write(path: Path, data: dict):
    header = ("# Written by `rfc2544 lab up`; schema: inventory/README.md (rfc2544.config.inventory).\n"
              "# Regenerated at every `lab up`: edits are lost.\n")
    path.write_text(header + yaml.safe_dump(data, sort_keys=False, default_flow_style=False))
