"""`rfc2544 run` in the QEMU lab meets faults: a killed SSH connection,
Ctrl-C and a rebooted tester VM, each followed by a resume that completes
the run."""
import json
import signal
import threading
import time

import pytest

from rfc2544.config import inventory as inventory_mod
from rfc2544.config import profiles
from rfc2544.cli.display import Display
from rfc2544.errors import InfraError
from rfc2544.results.file import Results
from rfc2544.procedures.runner import Runner, build_plan

from run_lab_support import (assert_generator_idle, fault_profile, resume, start_fault_run, wait_for_traffic,
                             wait_for_trials)
from run_lab_support import capped  # noqa: F401 (fixture)

pytestmark = pytest.mark.lab


# The run's fault tests are not timing-sensitive: the background child
# pytest runs them on its own lab (conftest.py), off the critical path.
@pytest.mark.lab_background
def test_killed_ssh_connection_mid_trial(capped, tmp_path):
    """The tester's SSH connection dies during a trial: the run stops with an
    infrastructure error, the generator is stopped, finished trials stay."""
    lab = capped
    from rfc2544.engine.tester import SSHTester
    prof = profiles.load(str(fault_profile(tmp_path)))
    inv = inventory_mod.load(lab.inventory_path)
    tester = SSHTester(inv, waits={k: prof["waits"][k] for k in ("learning_s", "residual_s", "settle_s")})
    out = tmp_path / "out"
    results = Results.create(out, prof, build_plan(prof), profiles.deviations(prof),
                             {"inventory": str(lab.inventory_path)})
    outcome = {}

    def run():
        try:
            Runner(tester, prof, results, Display(quiet=True)).run()
        except BaseException as exc:       # what the CLI would turn into exit 3
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    wait_for_trials(out / "results.json", 2)
    wait_for_traffic(lab)                                  # inside the next trial
    for conn in list(tester._connections.values()):       # cut the TCP connection under paramiko
        conn._client.get_transport().sock.shutdown(2)
    thread.join(timeout=120)
    assert not thread.is_alive()
    tester.close()
    assert isinstance(outcome.get("error"), InfraError), outcome
    kept = Results.load(out)
    assert kept.data["interruptions"] and len(kept.data["trials"]) >= 2
    assert_generator_idle(lab)
    data = resume(out)
    assert len(data["trials"]) >= len(kept.data["trials"])


@pytest.mark.lab_background
def test_ctrl_c_mid_run(capped, tmp_path):
    lab = capped
    proc, out = start_fault_run(lab, tmp_path)
    wait_for_traffic(lab)                                  # inside the next trial
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout[-2000:] + stderr
    assert "Traceback" not in stderr and "--resume" in stdout
    kept = json.loads((out / "results.json").read_text())
    assert not kept["complete"] and len(kept["trials"]) >= 2
    assert_generator_idle(lab)
    data = resume(out)
    assert data["trials"][:len(kept["trials"])] == kept["trials"]


@pytest.mark.lab_background
@pytest.mark.lab_down_last
def test_tester_reboot_mid_run(capped, tmp_path):
    """The tester VM reboots mid-run (the lab's QEMU runs with -no-reboot, so
    the VM goes away): exit 3, trials kept; the lab is booted again and the
    resumed run completes."""
    lab = capped
    proc, out = start_fault_run(lab, tmp_path)
    host = lab.connect("tester")
    try:
        host.run("systemctl reboot --force", timeout=10, check=False)
    except InfraError:
        pass                                       # the connection goes down with the host
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 3, stdout[-2000:] + stderr
    assert stderr.startswith("rfc2544: ") and "Traceback" not in stderr, stderr
    kept = json.loads((out / "results.json").read_text())
    assert len(kept["trials"]) >= 2 and kept["interruptions"]
    deadline = time.monotonic() + 120
    while lab.is_up() and time.monotonic() < deadline:
        time.sleep(1)
    if lab.is_up():                 # the guest rebooted in place: it is fresh either way
        lab.down(log=lambda m: None)
    lab.up("single", log=lambda m: None)
    assert_generator_idle(lab)
    data = resume(out)
    assert data["trials"][:len(kept["trials"])] == kept["trials"]
