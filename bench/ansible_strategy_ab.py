#!/usr/bin/env python3
"""The shipped playbooks under Ansible's linear strategy against
mitogen_or_linear (playbooks/strategy_plugins: one Python interpreter per
host for the whole play), side by side on one lab in one run.

Each round runs, for each strategy (the order alternating, ABBA...):
  check     setup.yml --check on a host without the module
  setup     setup.yml: build, install and load the module, tune
  again     setup.yml a second time (changed=0)
  teardown  teardown.yml -e rfc2544_kmod_teardown_state=absent
Printed per play and strategy: the median wall seconds and the lab VMs'
QEMU CPU seconds over the play (what it costs CI's two cores), then the
ratio linear / mitogen. Every play must succeed with the same recap under
both strategies; a play that fails stops the bench with its output.

Usage: bench/ansible_strategy_ab.py [--lab NAME] [--release sid] [--rounds 2]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kmod_common import KMOD, ROOT, median, parser, table
from rfc2544.lab import Lab

PLAYBOOKS = ROOT / "playbooks"
STRATEGIES = ("linear", "mitogen_or_linear")
PLAYS = (("check", "setup.yml", ("--check",)),
         ("setup", "setup.yml", ()),
         ("again", "setup.yml", ()),
         ("teardown", "teardown.yml", ("-e", "rfc2544_kmod_teardown_state=absent")))
RECAP = re.compile(r"^(\S+)\s*:\s*(ok=\d+\s+changed=\d+\s+unreachable=\d+\s+failed=\d+)", re.M)


def play(lab, strategy, playbook, args, source):
    """(wall s, QEMU CPU s, recap) of one ansible-playbook run."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(PLAYBOOKS / "ansible.cfg"), ANSIBLE_STRATEGY=strategy,
               ANSIBLE_NOCOLOR="1")
    cpu0, t0 = sum(lab.cpu_seconds().values()), time.monotonic()
    run = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(lab.inventory_path),
                          str(PLAYBOOKS / playbook), "-e", f"pktgen_kmod_source_dir={source}", *args],
                         env=env, capture_output=True, text=True, timeout=3600)
    wall, cpu = time.monotonic() - t0, sum(lab.cpu_seconds().values()) - cpu0
    if run.returncode != 0:
        sys.exit(f"{strategy} {playbook} {' '.join(args)} exited {run.returncode}:\n{run.stdout[-3000:]}{run.stderr}")
    return wall, cpu, sorted(RECAP.findall(run.stdout))


def source_copy(dest):
    """The module's source without build outputs or the guest tools."""
    shutil.copytree(KMOD, dest, ignore=shutil.ignore_patterns("tools", ".*", "*.o", "*.ko", "*.mod*", "*.cmd",
                                                               "modules.order", "Module.symvers"))
    return dest


def main():
    p = parser(__doc__)
    p.add_argument("--release", default=None, help="Debian release of a lab brought up here (default: the lab's)")
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    lab = Lab(args.lab or "bench-ansible")
    if not args.lab:
        kw = {"release": args.release} if args.release else {}
        lab.up("single", log=lambda m: print(m, file=sys.stderr, flush=True), **kw)
    walls, cpus, recaps = {}, {}, {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            source = source_copy(Path(tmp) / "pktgen-kmod")
            for r in range(args.rounds):
                order = STRATEGIES if r % 2 == 0 else STRATEGIES[::-1]
                for strategy in order:
                    for name, playbook, extra in PLAYS:
                        wall, cpu, recap = play(lab, strategy, playbook, extra, source)
                        print(f"round {r + 1} {strategy:18} {name:8} {wall:6.1f} s, QEMU {cpu:6.1f} s",
                              file=sys.stderr, flush=True)
                        walls.setdefault((name, strategy), []).append(wall)
                        cpus.setdefault((name, strategy), []).append(cpu)
                        recaps.setdefault(name, {}).setdefault(strategy, recap)
                        if recaps[name][strategy] != recap:
                            sys.exit(f"{strategy} {name}: recap {recap} differs from round 1's {recaps[name][strategy]}")
    finally:
        if not args.lab:
            lab.down(log=lambda m: None)
    for name, by in recaps.items():
        if by[STRATEGIES[0]] != by[STRATEGIES[1]]:
            sys.exit(f"{name}: the strategies' recaps differ: {by}")
    rows = []
    for name, *_ in PLAYS + (("all",),):
        keys = [n for n, *_ in PLAYS] if name == "all" else [name]
        w = {s: sum(median(walls[(k, s)]) for k in keys) for s in STRATEGIES}
        c = {s: sum(median(cpus[(k, s)]) for k in keys) for s in STRATEGIES}
        rows.append((name, f"{w['linear']:.1f}", f"{w['mitogen_or_linear']:.1f}", f"{w['linear'] / w['mitogen_or_linear']:.2f}",
                     f"{c['linear']:.0f}", f"{c['mitogen_or_linear']:.0f}", f"{c['linear'] / c['mitogen_or_linear']:.2f}"))
    print(f"lab {lab.name} ({lab.status().get('release', '?')}), {args.rounds} round(s), medians")
    table(("play", "linear s", "mitogen s", "ratio", "linear CPU s", "mitogen CPU s", "ratio"), rows)


if __name__ == "__main__":
    main()
