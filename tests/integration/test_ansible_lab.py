"""setup.yml / teardown.yml against the single-topology lab (tester VM with
the DUT in netns `dut`): bad input fails with one clear message and changes
nothing; --check on a fresh host changes nothing; setup builds (or installs
a prebuilt module) and loads it; the wheel, installed outside the checkout,
runs `run --setup -p quick` from /tmp with its own Ansible, and that second
setup reports changed=0; teardown leaves every value the playbooks touched
as it was before. The tests run in file order and share the lab's state.

Which kernel runs which: the refusals, the check mode and the build on the
target (make in the guest, the role's default path) on the default kernel's
lab; on the newest kernel's (test_newest_kernel.py) the role installs the
module built on this host for that kernel (pktgen_kmod_prebuilt,
rfc2544.lab.module_build), refuses one built for another kernel, and the
wheel's quick run follows. Compiling in an emulated sid guest was 577-647 s
of CI; the host builds it in seconds with that kernel's own compiler, and
check-kernels proves every kernel's build. `modprobe pktgen` and teardown
run on both. The plays run through Mitogen (playbooks/strategy_plugins),
one Python per guest and play. Durations go to
results/ansible-lab-timings.json."""
import hashlib
import json
import os
import re
import subprocess
import sys
import time

import pytest

import yaml

from test_ansible_support import ROOT, PlaybookRun, frozen_source, host_state, playbook, state_script
from kmod_helpers import KMOD_SRC, build_ko_for

pytestmark = [pytest.mark.lab, pytest.mark.lab_background]     # conftest.py: off the critical path

TIMINGS = ROOT / "results" / "ansible-lab-timings.json"
MODULE = "rfc2544_pktgen"
PGCTRL = "/proc/net/pktgen/pgctrl"
STARTED_WITHIN_S = 300      # a start on the niced background lab, which CI starves
FRESH_SETUP_TIMEOUT_S = 2700    # setup.yml on a fresh guest that builds the module, niced


def on_newest(lab):
    from lab_plan import NEWEST
    return lab.status()["release"] == NEWEST["release"]


def with_prebuilt(inventory_path, ko, dest):
    """A copy of the lab's inventory whose tester installs `ko` (the role's
    pktgen_kmod_prebuilt): `run --setup` reads it as a user's would."""
    data = yaml.safe_load(inventory_path.read_text())
    data["all"]["children"]["testers"]["hosts"]["tester"]["pktgen_kmod_prebuilt"] = str(ko)
    dest.write_text(yaml.safe_dump(data, sort_keys=False))
    return dest


@pytest.fixture(scope="module")
def ctx(lab, tmp_path_factory):
    inv = lab.inventory_path
    ko = None
    if on_newest(lab):
        ko = build_ko_for(lab)
        inv = with_prebuilt(inv, ko, tmp_path_factory.mktemp("inventory") / "lab-prebuilt.yml")
    from rfc2544.config import inventory
    hosts = inventory.load(inv).hosts
    script = state_script(list(hosts["tester"].ports), list(hosts["dut"].ports), hosts["dut"].netns)
    ssh = lab.connect("tester")
    source = frozen_source(tmp_path_factory.mktemp("pktgen-kmod"))
    c = {"inv": inv, "ssh": ssh, "script": script, "src": ["-e", f"pktgen_kmod_source_dir={source}"],
         "timings": {}, "lab": lab, "ko": ko}
    c["state"] = lambda: host_state(ssh, script)
    # the fresh host, which teardown must restore (check mode, when it runs, records it again)
    c["before"] = c["state"]()
    if MODULE in c["before"]["modules"]:
        pytest.fail(f"{MODULE} is loaded before the Ansible tests: an earlier test did not unload it")
    yield c
    # Leave the lab as found even when a test failed half-way.
    if c.get("dirty"):
        playbook(inv, "teardown.yml", "-e", "rfc2544_kmod_teardown_state=absent")
    ssh.close()
    if c["timings"]:
        TIMINGS.parent.mkdir(exist_ok=True)
        TIMINGS.write_text(json.dumps(c["timings"], indent=1) + "\n")
        print(f"\nansible lab timings (s): {c['timings']}")


def sh(ssh, cmd, timeout=60):
    return ssh.run(cmd, timeout=timeout)[1]     # raises on a non-zero exit


def one_clear_failure(run, *words):
    """The play failed with exactly one message, and it names cause and fix."""
    assert run.rc == 2, run.output[-3000:]
    assert run.recap["tester"]["failed"] == 1, run.output[-3000:]
    messages = run.fatal_messages
    assert len(messages) == 1, messages or run.output[-3000:]
    text = " ".join(messages[0].split())
    for word in words + ("Fix:",):
        assert word in text, text
    assert "Traceback" not in run.output
    return text


def bad_setup(ctx, *extra):
    before = ctx["state"]()
    # the lab's own inventory: the refusals are of the build's checks
    run = playbook(ctx["lab"].inventory_path, "setup.yml", "-l", "tester", *ctx["src"], *extra)
    assert ctx["state"]() == before, "a failed setup changed the host"
    return run


def on_the_newest_kernel_only(ctx, what="the prebuilt module's install and the wheel's run"):
    """Skip on the default kernel's lab (see the module's docstring)."""
    if ctx["ko"] is None:
        pytest.skip(f"{what}: tested on the newest kernel's lab")


def on_the_default_kernel_only(ctx, what="the build on the target"):
    if ctx["ko"] is not None:
        pytest.skip(f"{what}: tested on the default kernel's lab")


def test_unsupported_distribution_fails_clearly(ctx):
    run = bad_setup(ctx, "-e", "pktgen_kmod_os_family=Archlinux")
    one_clear_failure(run, "unsupported distribution", "Archlinux", "Debian/Ubuntu and RedHat/Fedora")


def test_missing_headers_for_the_running_kernel_fails_clearly(ctx):
    run = bad_setup(ctx, "-e", "pktgen_kmod_kernel_release=6.1.0-99-custom")
    one_clear_failure(run, "no kernel headers for kernel 6.1.0-99-custom",
                      "/lib/modules/6.1.0-99-custom/build is missing", "linux-headers-6.1.0-99-custom")


def test_enforced_module_signing_fails_clearly(ctx):
    # sig_enforce can only be switched on until the next boot: a bind mount
    # makes the VM's switch read Y for this run and is undone afterwards.
    switch = "/sys/module/module/parameters/sig_enforce"
    sh(ctx["ssh"], f"echo Y > /run/rfc2544-fake-sig-enforce && mount --bind /run/rfc2544-fake-sig-enforce {switch}")
    try:
        run = bad_setup(ctx)
    finally:
        sh(ctx["ssh"], f"umount {switch}; rm -f /run/rfc2544-fake-sig-enforce")
    assert sh(ctx["ssh"], f"cat {switch}").strip() == "N"
    one_clear_failure(run, "module signing is enforced", "sig_enforce=Y", "unsigned rfc2544_pktgen")


def test_busy_intree_pktgen_fails_clearly(ctx):
    # A running in-tree pktgen test: the role must not unload it. Its use
    # count is no sign: the 'start' writer holds the module only while it
    # waits, and returns at once when the thread has not started the device
    # within 125 ms of the write, which a niced background lab often misses
    # (CI runs 9 and 12: use count 0 for minutes while rx0 was sending). The
    # thread's 'Running:' line is the sign the role reads too.
    ssh = ctx["ssh"]
    sh(ssh, "modprobe pktgen && echo 'add_device rx0' > /proc/net/pktgen/kpktgend_0 && "
            "for c in 'count 0' 'delay 1000000000' 'dst 198.19.0.2' 'dst_mac 02:00:00:19:00:02'; "
            "do echo \"$c\" > /proc/net/pktgen/rx0; done")
    try:
        sh(ssh, f"nohup sh -c 'echo start > {PGCTRL}' >/dev/null 2>&1 &")
        # A deadline, not a count of looks: a starved guest makes each look slow.
        waited = ssh.run(f"end=$(($(date +%s) + {STARTED_WITHIN_S})); while [ $(date +%s) -lt $end ]; do "
                         "grep -q '^Running:.* rx0 ' /proc/net/pktgen/kpktgend_0 && exit 0; sleep 0.5; done; exit 1",
                         timeout=STARTED_WITHIN_S + 60, check=False)
        if waited[0] != 0:
            pytest.fail(f"the in-tree pktgen did not start rx0 within {STARTED_WITHIN_S} s of 'start': "
                        f"{ssh.run('cat /proc/net/pktgen/kpktgend_0', check=False)[1].strip()!r}")
        run = bad_setup(ctx)
    finally:
        ssh.run(f"echo stop > {PGCTRL}; sleep 1; modprobe -r pktgen", timeout=60, check=False)
    assert "pktgen" not in ctx["state"]()["modules"]
    one_clear_failure(run, "in-tree pktgen module is busy", "use count", "running a test on rx0",
                      "echo stop > /proc/net/pktgen/pgctrl")


def test_check_mode_on_a_fresh_host_changes_nothing(ctx):
    before = ctx["state"]()
    ctx["before"] = before
    run = playbook(ctx["inv"], "setup.yml", "--check", *ctx["src"])
    assert run.rc == 0, run.output[-3000:]
    assert run.recap["tester"]["changed"] > 0, "check mode predicted no change on a fresh host"
    assert ctx["state"]() == before


def test_setup_builds_and_loads_the_module(ctx):
    on_the_default_kernel_only(ctx)
    ctx["dirty"] = True
    run = playbook(ctx["inv"], "setup.yml", *ctx["src"], timeout=FRESH_SETUP_TIMEOUT_S)
    ctx["timings"]["setup_fresh_s"] = run.seconds
    assert run.rc == 0, run.output[-4000:]
    assert task_status(run, "Build the module against") == "changed"
    assert_loaded_as_installed(ctx)


def task_status(run, name):
    """The first host status (changed, ok, skipping, fatal) of the task whose title starts with `name`."""
    found = re.search(re.escape(name) + r".*?\n(changed|ok|skipping|fatal)", run.output, re.S)
    return found and found.group(1)


def assert_loaded_as_installed(ctx):
    state = ctx["state"]()
    assert state["modules"].split() == [MODULE]
    ssh = ctx["ssh"]
    assert "pgrx" in sh(ssh, "ls /proc/net/pktgen")
    loaded = sh(ssh, f"cat /sys/module/{MODULE}/srcversion").strip()
    installed = sh(ssh, f"modinfo -F srcversion {MODULE}").strip()
    assert loaded == installed and loaded
    assert state["cpu_dma_latency"] == "0"           # C-states held for the run
    assert "rfc2544-cpu-dma-latency.service loaded active running" in state["units"]
    return loaded


def test_prebuilt_module_for_another_kernel_is_refused(ctx):
    """The default kernel's module (built on this host against its image's
    headers) given to the newest kernel's host: one message naming both
    releases, nothing copied, nothing loaded."""
    on_the_newest_kernel_only(ctx, "the refusal of a module for another kernel")
    from rfc2544.lab import image, module_build
    other = image.ensure_image()        # the default release's: the session's own lab booted it
    assert other.kernel_release != ctx["lab"].kernel_release
    ko = module_build.build_for(other, KMOD_SRC)
    run = bad_setup(ctx, "-e", f"pktgen_kmod_prebuilt={ko}")
    one_clear_failure(run, f"built for kernel {other.kernel_release}", f"not for {ctx['lab'].kernel_release}",
                      "it was not installed or loaded")
    assert task_status(run, "Install the prebuilt module") is None, "the refused module reached its install"
    assert MODULE not in ctx["state"]()["modules"]
    assert ctx["ssh"].run(f"modinfo {MODULE}", check=False)[0] != 0, "the refused module was installed"


def test_setup_installs_the_prebuilt_module(ctx):
    """The newest kernel's host gets the module built on this host for its
    kernel (the inventory's pktgen_kmod_prebuilt): no build, no headers
    task, the file installed as it is and loaded."""
    on_the_newest_kernel_only(ctx)
    ctx["dirty"] = True
    run = playbook(ctx["inv"], "setup.yml", *ctx["src"], timeout=FRESH_SETUP_TIMEOUT_S)
    ctx["timings"]["setup_prebuilt_s"] = run.seconds
    assert run.rc == 0, run.output[-4000:]
    assert task_status(run, "Install the prebuilt module") == "changed", run.output[-4000:]
    for task in ("Build the module against", "Install the headers", "Install the build tools",
                 "Copy the source in one archive"):
        assert task_status(run, task) in (None, "skipping"), task
    assert_loaded_as_installed(ctx)
    # the file as built, where modprobe found it
    installed = sh(ctx["ssh"], f"modinfo -F filename {MODULE}").strip()
    assert installed == f"/lib/modules/{ctx['lab'].kernel_release}/updates/{MODULE}.ko"
    assert sh(ctx["ssh"], f"sha256sum {installed}").split()[0] == hashlib.sha256(ctx["ko"].read_bytes()).hexdigest()


def pktgen_modules(ssh):
    return sh(ssh, "grep -E '^(pktgen|rfc2544_pktgen) ' /proc/modules | cut -d' ' -f1").split()


def test_modprobe_pktgen_acts_on_the_module(ctx):
    # Tools that `modprobe pktgen` get ours (the in-tree module would fail
    # with EBUSY while ours owns /proc/net/pktgen), and -r unloads ours.
    ssh = ctx["ssh"]
    assert "install pktgen /sbin/modprobe --ignore-install rfc2544_pktgen" in \
        sh(ssh, "cat /etc/modprobe.d/rfc2544_pktgen.conf")
    assert ssh.run("modprobe pktgen", check=False)[0] == 0
    assert pktgen_modules(ssh) == [MODULE]
    assert "pgrx" in sh(ssh, "ls /proc/net/pktgen")
    sh(ssh, "modprobe -r pktgen")
    assert pktgen_modules(ssh) == []
    sh(ssh, "modprobe pktgen")
    assert pktgen_modules(ssh) == [MODULE] and "pgrx" in sh(ssh, "ls /proc/net/pktgen")


def test_wheel_second_setup_changes_nothing_and_runs_the_quick_profile(ctx, wheel_venv, tmp_path):
    """The product from its wheel alone, as a pipx user has it: installed
    with its dependencies into a fresh virtualenv outside the checkout
    (the `wheel_venv` fixture; the session's lab was booted with its
    `rfc2544 lab up`), started by full path from /tmp with PATH holding
    only system directories, it prepares the hosts with the shipped
    playbooks and the venv's own ansible-playbook (`run --setup`), runs the
    quick profile end to end with our module and reports it. It runs here,
    on the hosts the tests above set up: its setup is the second run, which
    must change nothing (the shipped module source is the same files, so no
    second build in the emulated VM); the teardown below then covers it too.
    It runs on the newest kernel's lab (test_newest_kernel.py) only: nothing
    in it depends on the kernel that the module's and `run`'s tests on the
    default kernel do not cover, and the quick run is four minutes of the
    2-core CI host's time."""
    on_the_newest_kernel_only(ctx, "the wheel's setup and quick run")
    venv = wheel_venv
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV"))}
    env["PATH"] = "/usr/bin:/bin"

    def rfc2544(*args, timeout=300):
        return subprocess.run([str(venv / "bin" / "rfc2544"), *args], cwd="/tmp", env=env,
                              capture_output=True, text=True, timeout=timeout)

    version = rfc2544("--version")
    assert version.returncode == 0 and version.stdout.startswith("rfc2544, version "), version.stdout + version.stderr
    out = tmp_path / "quick"
    t0 = time.monotonic()
    run = rfc2544("run", "--setup", "-i", str(ctx["inv"]), "-p", "quick", "--out", str(out), "--format", "csv",
                  timeout=3600)
    ctx["timings"]["wheel_run_setup_quick_s"] = round(time.monotonic() - t0, 1)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    recap = PlaybookRun(run.returncode, run.stdout, 0).recap
    assert set(recap) == {"tester", "dut"}, run.stdout[-3000:]
    assert sum(h["changed"] for h in recap.values()) == 0, {h: r["changed"] for h, r in recap.items()}
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    playbooks = site / "rfc2544" / "data" / "playbooks"
    assert f"rfc2544: {venv / 'bin' / 'ansible-playbook'} setup.yml (ANSIBLE_CONFIG={playbooks / 'ansible.cfg'})" \
        in run.stderr
    assert "ETA" in run.stdout
    data = json.loads((out / "results.json").read_text())
    assert data["complete"]
    assert data["conditions"]["generator"] == "rfc2544_pktgen"
    assert {row["frame_size"] for row in data["throughput"]} == {64, 1518}
    assert all(row["ndr_fps"] and row["ndr_fps"] > 1000 for row in data["throughput"])
    assert (out / "trials.csv").exists()
    report = rfc2544("report", str(out), "--format", "html", "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stdout + report.stderr
    html, = (tmp_path / "report").glob("*.html")
    assert "Throughput" in html.read_text()


def test_teardown_restores_every_touched_value(ctx):
    run = playbook(ctx["inv"], "teardown.yml", "-e", "rfc2544_kmod_teardown_state=absent")
    ctx["timings"]["teardown_s"] = run.seconds
    assert run.rc == 0, run.output[-3000:]
    after = ctx["state"]()
    assert after == ctx["before"], {k: (ctx["before"].get(k), v) for k, v in after.items() if ctx["before"].get(k) != v}
    ctx["dirty"] = False
    # The name is the in-tree module's again.
    ssh = ctx["ssh"]
    try:
        assert ssh.run("modprobe pktgen", check=False)[0] == 0
        assert pktgen_modules(ssh) == ["pktgen"]
        assert "pgrx" not in sh(ssh, "ls /proc/net/pktgen") and "pgctrl" in sh(ssh, "ls /proc/net/pktgen")
    finally:
        ssh.run("modprobe -r pktgen", check=False)
