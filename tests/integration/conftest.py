"""Session fixtures for lab integration tests (owned by the lab).

`lab`  - the single topology (tester VM, DUT in netns `dut`), booted once per
         pytest session under the lab name `pytest<PID>-single`, torn down at the end.
`lab2` - the two-host topology (tester VM + DUT VM), lab name `pytest<PID>-two`.

Lab names of their own keep a developer's `default` lab untouched, and the
pytest process id keeps two concurrent sessions (several developers on one
machine) apart; labs of sessions whose process is gone are stopped and
removed at start (a finished session's lab dir keeps its console logs until then). Tests that
load modules or change the DUT must restore what they changed (rmmod, remove
qdiscs) so later tests see a clean lab. Set RFC2544_KEEP_LAB=1 to leave the
labs running after the session (then `rfc2544 lab down --name pytest<PID>-single`).
RFC2544_REUSE_LAB=NAME (and RFC2544_REUSE_LAB2=NAME) uses an already running
lab of the right topology instead of booting one, and leaves it running:
quick iterations without a boot.

The single lab starts booting in a background thread as soon as the session
knows it will need it (pytest_collection_finish): the image build and the
VM's boot overlap the unit tests, which run first. The `lab` fixture waits
for that boot. Tests using `lab2` run after the other lab tests.
Tests marked `lab_down_last` stop (or reboot) a session lab; they run after
every other test of the same lab, so those still find it up.
"""
import os
import shutil
import threading

import pytest

_EARLY = {}     # lab name -> (thread, outcome dict) of a boot started early


def pytest_configure(config):
    config.addinivalue_line("markers", "lab_down_last: stops or reboots a session lab; runs after the other tests of that lab")


def pytest_collection_modifyitems(session, config, items):
    # Order: lab tests, lab tests marked lab_down_last, lab2 tests, lab2
    # tests marked lab_down_last. (Both labs stay up to the session's end:
    # tests may request `lab` dynamically, so its last user is not known.)
    items.sort(key=lambda item: ("lab2" in getattr(item, "fixturenames", ()),
                                 item.get_closest_marker("lab_down_last") is not None))


def pytest_collection_finish(session):
    """Start booting the single lab now if a selected test needs it, so the
    boot runs while the unit tests do."""
    if os.environ.get("RFC2544_REUSE_LAB") or session.config.option.collectonly:
        return
    if any("lab" in getattr(item, "fixturenames", ()) for item in session.items):
        _start_early("single", "single")


def _session_lab_name(name):
    return f"pytest{os.getpid()}-{name}"


def _start_early(name, topology):
    from rfc2544.lab import Lab
    _stop_orphans()
    lab = Lab(_session_lab_name(name))
    outcome = {"log": []}

    def boot():
        try:
            lab.up(topology, log=outcome["log"].append)
        except BaseException as exc:     # re-raised in the test that needs the lab
            outcome["error"] = exc

    thread = threading.Thread(target=boot, name=f"lab-boot-{name}", daemon=True)
    thread.start()
    _EARLY[name] = (thread, outcome, lab)


def _boot(request, name, topology, reuse_env):
    from rfc2544.lab import Lab
    reuse = os.environ.get(reuse_env)
    if reuse:
        lab = Lab(reuse)
        if lab.is_up() and lab.status().get("topology") == topology:
            return lab
        pytest.fail(f"{reuse_env}={reuse}: no running {topology} lab of that name")
    early = _EARLY.pop(name, None)
    if early:
        thread, outcome, lab = early
        thread.join()
        for line in outcome["log"]:
            print(line, flush=True)
        if not os.environ.get("RFC2544_KEEP_LAB"):
            request.addfinalizer(lambda: lab.down(log=lambda m: None))
        if "error" in outcome:
            raise outcome["error"]
        return lab
    _stop_orphans()
    lab = Lab(_session_lab_name(name))
    lab.up(topology, log=lambda m: print(m, flush=True))
    if not os.environ.get("RFC2544_KEEP_LAB"):
        request.addfinalizer(lambda: lab.down(log=lambda m: None))
    return lab


def _stop_orphans():
    """Stop labs of pytest sessions that died without tearing down."""
    from rfc2544.lab import Lab, paths
    root = paths.labs_dir()
    for d in root.glob("pytest*-*") if root.is_dir() else ():
        pid = d.name[len("pytest"):].split("-", 1)[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            orphan = Lab(d.name)
            if orphan.is_up():
                orphan.down(log=lambda m: None)
            shutil.rmtree(d, ignore_errors=True)     # its console logs are stale now


@pytest.fixture(scope="session")
def lab(request):
    """The single-topology lab (Lab object), up for the whole session."""
    return _boot(request, "single", "single", "RFC2544_REUSE_LAB")


@pytest.fixture(scope="session")
def lab2(request):
    """The two-host lab (Lab object), up for the whole session."""
    return _boot(request, "two", "two-host", "RFC2544_REUSE_LAB2")


@pytest.fixture
def tester(lab):
    host = lab.connect("tester")
    yield host
    host.close()


def pytest_sessionfinish(session):
    """A lab booted early that no test ended up using is taken down too."""
    for name, (thread, _, lab) in list(_EARLY.items()):
        thread.join()
        if not os.environ.get("RFC2544_KEEP_LAB"):
            lab.down(log=lambda m: None)
        _EARLY.pop(name, None)
