"""Session fixtures for lab integration tests (owned by the lab).

lab_plan.py says in one page which labs a full run boots, what runs on
each and in which order; this file and session_prep.py carry it out.

`lab`  - the single topology (tester VM, DUT in netns `dut`), booted once per
         pytest session under the lab name `pytest<PID>-single`, torn down at the end.
`lab2` - the two-host topology (tester VM + DUT VM), lab name `pytest<PID>-two`.
`wheel_venv` - the product's wheel installed with its dependencies into a
         fresh virtualenv outside the checkout, as a pipx user has it.
`early_result` - early_result(step): what an early step observed (below).

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

The slow preparations run in one process of their own (session_prep.py),
started when collection ends so they overlap the unit tests, with the
environment of that moment (a process: unit tests patch process-wide state a
thread would read): it builds the wheel's virtualenv, boots the single
lab with that wheel's own `rfc2544 lab up` (so CI boots its lab as a user
would), boots a niced single lab for the background tests' child pytest
(below), then
boots the two-host lab and runs the tuning test's lab work on it
(test_ansible_tuning_lab.exercise: it touches only that lab, and its
minutes of emulated Ansible would otherwise run alone at the end). Each
fixture waits only for its own step; `lab2` also waits for that lab work,
so no other test uses the two-host lab while it runs. A session that runs
the newest kernel's tests (below) boots no two-host lab of the default
kernel: its two-host tests are skipped here and run on the newest kernel's
two-host lab, and the tuning's lab work runs there too, before them.
Two more early steps run beside everything else, each a niced child
process: `kernels` (pktgen-kmod/scripts/check-kernels, when
test_kernel_matrix.py is selected) and `newest` (when test_newest_kernel.py
is: a single and a two-host lab of the newest Debian kernel, the latter's
test links on e1000e, and a child pytest of that module's NEWEST_TESTS on
them, whose outcomes its tests report).
Tests using `lab2` run after the other lab tests.
Tests marked `lab_down_last` stop (or reboot) a session lab; they run after
every other test of the same lab, so those still find it up.
Tests marked `lab_background` (the Ansible lab tests, the module's and
`run`'s fault tests, the fuzz tests: long, nothing timing-sensitive) run in a niced child pytest on a
single lab of their own, booted with BACKGROUND_KERNEL_ARGS, while this
session's timing-sensitive tests use the other lab: a TCG lab's tests leave a
core idle, and this keeps minutes of them off the run's critical path.
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from background_priority import BackgroundPriority
from lab_plan import BACKGROUND_KERNEL_ARGS, BACKGROUND_NICE, LATE_MODULES, STEPS
from test_ansible_support import wheel_venv as build_wheel_venv

_BACKGROUND = {"nodeids": [], "proc": None, "t0": None}    # the lab_background tests run by a child pytest; session_prep.py
_CHILDREN_RAN = {}  # "background"/"newest" -> (exit code, junit, log, start, end) of its child pytest
_CHILD_SLOWEST = {}     # "background"/"newest" -> its slowest tests (the junit file goes with the session)
_EARLY = {}     # step name -> {"done": Event, "error": exc, "value": ..., "log": [...]}
_NEWEST = {}    # the newest-kernel step: release, nic, tests (test_newest_kernel.py)
_TMP = []       # the early steps' scratch dir, removed at session end
_ON_NEWEST = set()  # two-host tests skipped here: the newest kernel's child pytest runs them
_PRIORITY = BackgroundPriority(BACKGROUND_NICE)     # not niced once our own lab tests are done


def pytest_configure(config):
    config.addinivalue_line("markers", "lab_down_last: stops or reboots a session lab; runs after the other tests of that lab")
    config.addinivalue_line("markers", "lab_background: a lab test that is not timing-sensitive; with other lab "
                                       "tests it runs in the background child pytest on a lab of its own")


def pytest_collection_modifyitems(session, config, items):
    _run_in_background(config, items)
    _two_host_tests_on_the_newest_kernel(config, items)
    # Order: lab tests, lab tests marked lab_down_last, the background
    # tests' results, lab2 tests, lab2 tests marked lab_down_last, and last
    # the build matrix's, the tuning's and the newest kernel's results
    # (their work ends late: waiting on them in file order held this
    # session's own lab tests back 447 s and 583 s in a CI run; the tuning
    # runs after the newest kernel's two-host lab has booted). (Both labs
    # stay up to the session's end: tests may request `lab` dynamically, so
    # its last user is not known.)
    items.sort(key=lambda item: (_module_name(item) in LATE_MODULES,
                                 "lab2" in getattr(item, "fixturenames", ()),
                                 item.nodeid in _BACKGROUND["nodeids"],
                                 item.get_closest_marker("lab_down_last") is not None))


def _run_in_background(config, items):
    """The tests marked lab_background run in a child pytest, niced, against
    a single lab of their own, while this session's tests use the other.
    Each is replaced here by a stand-in that waits for the child and reports
    the test's own outcome (its failure text included). Only when other lab
    tests are selected too, and not with RFC2544_REUSE_LAB."""
    if config.option.collectonly or os.environ.get("RFC2544_REUSE_LAB"):
        return
    background = [i for i in items if i.get_closest_marker("lab_background") is not None]
    others = [i for i in items if any(f in getattr(i, "fixturenames", ()) for f in SESSION_LAB_FIXTURES)
              and i not in background]
    if not background or not others:
        return
    for n, item in enumerate(items):
        if item in background:
            stand_in = pytest.Function.from_parent(item.parent, name=item.name,
                                                   callobj=_background_outcome(_module_name(item), item.name))
            stand_in.own_markers.extend(item.own_markers)
            items[n] = stand_in
            _BACKGROUND["nodeids"].append(item.nodeid)


def _newest_runs(config, items):
    """test_newest_kernel's module when its child pytest will run (its
    labs are booted by this session), else None."""
    if config.option.collectonly or os.environ.get("RFC2544_REUSE_LAB"):
        return None
    return next((item.module for item in items if _module_name(item) == "test_newest_kernel"), None)


def _two_host_tests_on_the_newest_kernel(config, items):
    """A session that runs the newest kernel's tests runs the two-host
    tests there only, on that kernel's two-host lab (its NIC: e1000e):
    booting a second two-host lab of the default kernel for them would
    cost two more emulated VMs on the CI host's two cores. Here they are
    skipped, saying where they ran (test_newest_kernel reports them)."""
    newest = _newest_runs(config, items)
    if newest is None:
        return
    listed = set(newest.NEWEST_TESTS)
    for item in items:
        if "lab2" not in getattr(item, "fixturenames", ()):
            continue
        path = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
        if path in listed or f"{path}::{item.originalname}" in listed:
            item.add_marker(pytest.mark.skip(reason=(
                f"two-host tests run on the newest kernel's two-host lab ({newest.NEWEST['release']}, "
                f"{newest.NEWEST['nic']}): test_newest_kernel.py reports them")))
            _ON_NEWEST.add(item.nodeid)


def _module_name(item):
    return getattr(getattr(item, "module", None), "__name__", "")


def _background_outcome(module, name):
    def ran_in_the_background_pytest():
        child_outcome("background", module, name)
    return ran_in_the_background_pytest


def child_outcome(step, module, name):
    """Report here what test `name` of test module `module` did in the child
    pytest of early step `step` (background, newest): its failure text
    included. `name` without parameters stands for each of its
    parametrizations, no name for every test of the module; all must pass."""
    outcome = _EARLY.get(step)
    if outcome is None:
        pytest.fail(f"the {step} tests were not started")
    outcome["done"].wait()
    if "error" in outcome:
        raise outcome["error"]
    code, junit, log, *_ = outcome["value"]
    cases = _junit_cases(junit, module, name)
    if not cases:
        pytest.fail(f"the {step} pytest (exit {code}) did not report {module}::{name}; "
                    f"its output ends:\n{Path(log).read_text()[-3000:]}", pytrace=False)
    for case in cases:
        for tag in ("failure", "error"):
            found = case.find(tag)
            if found is not None:
                pytest.fail(f"in the {step} pytest, {case.get('name')}: {found.get('message', '')}\n"
                            f"{found.text or ''}", pytrace=False)
    skipped = [case.find("skipped") for case in cases]
    if all(s is not None for s in skipped):
        pytest.skip(skipped[0].get("message", f"skipped in the {step} pytest"))


def _slowest_cases(junit, n=8):
    """The n slowest tests of a child pytest's junit file: (seconds, module::name)."""
    cases = [(float(c.get("time") or 0), f"{c.get('classname', '').split('.')[-1]}::{c.get('name')}")
             for c in _junit_cases(junit, None, None)]
    return sorted(cases, reverse=True)[:n]


def _junit_cases(path, module, name):
    """The junit testcases of test `name` (or of its parametrizations; all
    of them for no name) in test module `module` (any module for None; junit's classname is
    the module's dotted path)."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return []
    return [c for c in root.iter("testcase")
            if (not name or c.get("name") == name or c.get("name", "").startswith(name + "["))
            and (module is None or c.get("classname", "").split(".")[-1] == module)]


# Fixtures that are (or reach) a session lab. `tlab` reaches `lab` through
# request.getfixturevalue, which `fixturenames` does not show: left out, the
# tester tests (the capped DUT, the calibration link, the rate change) ran
# beside an unniced background and failed on its load in CI.
SESSION_LAB_FIXTURES = ("lab", "lab2", "tlab")


def pytest_runtest_setup(item):
    """The background work yields while a test of this session's own labs
    runs, and only then (background_priority.py)."""
    names = getattr(item, "fixturenames", ())
    own_lab = (any(f in names for f in SESSION_LAB_FIXTURES)
               and item.nodeid not in _BACKGROUND["nodeids"] and _module_name(item) not in LATE_MODULES)
    _PRIORITY.set(BACKGROUND_NICE if own_lab else 0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that drove the module (the `kmod` fixture) carries the
    tail of the guest's kernel log in its failure text: a CI run's guest is
    gone when someone reads the report, and an oops or a slab report is the
    first thing to look for. (The failure text reaches the session's report
    from the background pytest too.)"""
    outcome = yield
    report = outcome.get_result()
    vm = getattr(item, "funcargs", {}).get("kmod")
    if not report.failed or call.when != "call" or vm is None:
        return
    try:
        tail = vm.host.run("dmesg | tail -n 40", timeout=20, check=False)[1]
    except Exception as exc:  # the guest may be what failed: say so, keep the failure
        tail = f"(cannot read it: {exc})"
    if hasattr(report.longrepr, "addsection"):     # keeps the summary line's message
        report.longrepr.addsection("guest kernel log, last 40 lines", tail)
    else:
        report.longrepr = f"{report.longrepr}\n--- guest kernel log, last 40 lines ---\n{tail}"


def pytest_collection_finish(session):
    """Start the selected tests' slow preparations now, in a process of
    their own (session_prep.py), so they run while the unit tests do."""
    if session.config.option.collectonly:
        return
    needs = set()
    for item in session.items:
        if item.nodeid not in _ON_NEWEST:
            needs.update(n for n in ("lab", "lab2", "wheel_venv") if n in getattr(item, "fixturenames", ()))
    tuning = any(_module_name(item) == "test_ansible_tuning_lab" for item in session.items)
    wanted = set()      # the steps this selection needs (lab_plan.py), run in STEPS order
    if any(_module_name(item) == "test_kernel_matrix" for item in session.items):
        wanted.add("kernels")      # a niced process of its own from the start
    # (the background pytest's Ansible tests use the wheel too)
    if ("wheel_venv" in needs or _BACKGROUND["nodeids"]) and not os.environ.get("RFC2544_WHEEL_VENV"):
        wanted.add("wheel_venv")
    if "lab" in needs and not os.environ.get("RFC2544_REUSE_LAB"):
        wanted.add("single")
    if _BACKGROUND["nodeids"]:
        wanted.add("background")
    newest = _newest_runs(session.config, session.items)
    if newest is not None:
        wanted.add("newest")
        # the tuning's lab work runs on the newest kernel's two-host lab too
        _NEWEST.update(newest.NEWEST, tests=[f"tests/integration/{t}" for t in newest.NEWEST_TESTS],
                       tuning=tuning)
    elif tuning:
        needs.add("lab2")
    if tuning:
        wanted.add("tuning")
    if "lab2" in needs and not os.environ.get("RFC2544_REUSE_LAB2"):
        wanted.add("two")
    elif tuning and newest is None:
        wanted.discard("tuning")        # no two-host lab of ours to run it on
    steps = [step for step in STEPS if step in wanted]
    if steps:
        _start_early(steps)


def _session_lab_name(name):
    return f"pytest{os.getpid()}-{name}"


def _start_early(steps):
    """Start session_prep.py with this moment's environment (before any unit
    test patches it) and a thread that turns its reports into _EARLY's
    outcomes."""
    _stop_orphans()
    _BACKGROUND["t0"] = time.time()
    _BACKGROUND["busy0"] = _machine_busy_seconds()
    tmp = Path(tempfile.mkdtemp(prefix="rfc2544-session-"))
    _TMP.append(tmp)
    for step in steps:
        _EARLY[step] = {"done": threading.Event(), "log": []}
    read_fd, write_fd = os.pipe()
    spec = {"steps": steps, "tmp": str(tmp), "nice": BACKGROUND_NICE, "report_fd": write_fd,
            "names": {s: _session_lab_name(s) for s in ("single", "two", "background", "newest")},
            "newest": _NEWEST,
            "background_tests": _BACKGROUND["nodeids"], "background_kernel_args": BACKGROUND_KERNEL_ARGS}
    with open(tmp / "prep.log", "w") as out:
        proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("session_prep.py")), json.dumps(spec)],
                                env=dict(os.environ), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, pass_fds=(write_fd,))
    os.close(write_fd)
    _BACKGROUND["proc"] = proc
    _PRIORITY.start(proc.pid)

    def collect():
        with os.fdopen(read_fd) as reports:
            for line in reports:
                _take_report(tmp, line.strip())
        proc.wait()
        for step, outcome in _EARLY.items():
            if not outcome["done"].is_set():
                log = (tmp / "prep.log").read_text()[-3000:]
                outcome["error"] = RuntimeError(f"session_prep.py exited {proc.returncode} before step {step} "
                                                f"ended; its output ends:\n{log}")
                outcome["done"].set()

    threading.Thread(target=collect, name="session-prep-reports", daemon=True).start()


def _take_report(tmp, step):
    import pickle
    outcome = _EARLY[step]
    report = pickle.loads((tmp / f"{step}.pickle").read_bytes())
    outcome["log"].extend(report["log"])
    if report["error"]:
        outcome["error"] = RuntimeError(f"session preparation {step!r} failed:\n{report['error']}")
    else:
        outcome["value"] = report["value"]     # a lab's name: its Lab is made when a test asks
        if step in ("background", "newest", "kernels"):
            _CHILDREN_RAN[step] = report["value"]
            _CHILD_SLOWEST[step] = _slowest_cases(report["value"][1]) if step != "kernels" else ()
    outcome["done"].set()


def _wait_early(request, step):
    """The early step's value, or None if it was not started early."""
    outcome = _EARLY.get(step)
    if outcome is None:
        return None
    outcome["done"].wait()
    for line in outcome["log"]:
        print(line, flush=True)
    if "error" in outcome:
        raise outcome["error"]
    if step in ("single", "two"):
        from rfc2544.lab import Lab
        return Lab(outcome["value"])
    return outcome["value"]


def _wait_for_ready_file(reuse_env):
    """A child pytest whose lab of `reuse_env` is still booting (the
    newest kernel's two-host lab: session_prep.py starts the child on the
    single lab first) gets `<reuse_env>_READY`, a file that says "up" or
    why the boot failed: wait for it."""
    path = os.environ.get(reuse_env + "_READY")
    if not path:
        return
    deadline = time.monotonic() + 1800
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            pytest.fail(f"{reuse_env}: the lab did not come up within 30 minutes")
        time.sleep(1)
    text = open(path).read()
    if text.strip() != "up":
        pytest.fail(f"{reuse_env}: the lab did not boot: {text[-3000:]}")


def _boot(request, name, topology, reuse_env):
    from rfc2544.lab import Lab
    reuse = os.environ.get(reuse_env)
    if reuse:
        _wait_for_ready_file(reuse_env)
        lab = Lab(reuse)
        if lab.is_up() and lab.status().get("topology") == topology:
            return lab
        pytest.fail(f"{reuse_env}={reuse}: no running {topology} lab of that name")
    if name in _EARLY:
        if not os.environ.get("RFC2544_KEEP_LAB"):
            lab = Lab(_session_lab_name(name))
            request.addfinalizer(lambda: lab.down(log=lambda m: None))
        return _wait_early(request, name)
    _stop_orphans()
    lab = Lab(_session_lab_name(name))
    if not os.environ.get("RFC2544_KEEP_LAB"):
        request.addfinalizer(lambda: lab.down(log=lambda m: None))
    lab.up(topology, log=lambda m: print(m, flush=True))
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
    lab = _boot(request, "two", "two-host", "RFC2544_REUSE_LAB2")
    if "tuning" in _EARLY and not _NEWEST.get("tuning"):
        _EARLY["tuning"]["done"].wait()      # its lab work is over: the lab is free
    return lab


@pytest.fixture(scope="session")
def wheel_venv(request, tmp_path_factory):
    """Path of a fresh virtualenv holding the wheel and its dependencies
    (RFC2544_WHEEL_VENV: one the parent session built)."""
    if os.environ.get("RFC2544_WHEEL_VENV"):
        return Path(os.environ["RFC2544_WHEEL_VENV"])
    return _wait_early(request, "wheel_venv") or build_wheel_venv(tmp_path_factory.mktemp("wheel"))


def _schema_check():
    """tests/unit/schema_check.py, loaded by path (a second `conftest`-style
    directory on sys.path would shadow this one's modules)."""
    path = Path(__file__).resolve().parents[1] / "unit" / "schema_check.py"
    spec = importlib.util.spec_from_file_location("rfc2544_tests_schema_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def results_match_the_schema(request):
    """Every results.json a lab test leaves in its tmp_path (written by the
    CLI in a child process or by Results in this one) matches the published
    schema (docs/results.schema.json), as the unit tests' files do."""
    # tmp_path is looked up now: after the test it may be torn down already
    tmp = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if tmp is None:
        return
    check = None
    for path in tmp.rglob("results.json"):
        check = check or _schema_check()
        check.assert_valid(json.loads(path.read_text()), str(path))


@pytest.fixture
def child_test_outcome():
    """child_test_outcome(step, module, name): report here what a test did
    in the child pytest of early step `step` (child_outcome)."""
    return child_outcome


@pytest.fixture
def early_result(request):
    """early_result(step): what early step `step` returned, or None if the
    session did not start it."""
    return lambda step: _wait_early(request, step)


@pytest.fixture
def tester(lab):
    host = lab.connect("tester")
    yield host
    host.close()


_OWN_TESTS = {"count": 0, "first": None, "last": None}   # this session's own integration tests: start, end


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own = _is_own_integration_test(item)
    if own and _OWN_TESTS["first"] is None:
        _OWN_TESTS["first"] = time.time()
    yield
    if own:
        _OWN_TESTS["count"] += 1
        _OWN_TESTS["last"] = time.time()


def _is_own_integration_test(item):
    """An integration test this process runs (not one that reports a child's)."""
    return (item.nodeid.startswith("tests/integration/") and item.nodeid not in _BACKGROUND["nodeids"]
            and _module_name(item) not in ("test_kernel_matrix", "test_newest_kernel"))


def pytest_terminal_summary(terminalreporter):
    """When the child pytests ran, and for how long: one that ends after
    this session's other lab tests is the run's critical path."""
    # (pytest_sessionfinish, which clears _EARLY, runs before this)
    t0 = _BACKGROUND["t0"]
    if t0 is not None and _OWN_TESTS["last"] is not None:
        terminalreporter.write_line(f"this pytest's own integration tests ({_OWN_TESTS['count']}): from "
                                    f"{_OWN_TESTS['first'] - t0:.0f} s to {_OWN_TESTS['last'] - t0:.0f} s "
                                    "after collection")
    for step, what in (("background", f"pytest ({len(_BACKGROUND['nodeids'])} tests"),
                       ("newest", f"pytest ({len(_NEWEST.get('tests', ()))} tests on {_NEWEST.get('release')}"),
                       ("kernels", "check-kernels (host builds")):
        if step in _CHILDREN_RAN:
            code, _, _, started, ended = _CHILDREN_RAN[step]
            slowest = _CHILD_SLOWEST.get(step, ())
            terminalreporter.write_line(f"{step} {what}, exit {code}): "
                                        f"from {started - t0:.0f} s to {ended - t0:.0f} s after collection "
                                        f"({ended - started:.0f} s)" + ("; slowest: " if slowest else "")
                                        + ", ".join(f"{name} {sec:.0f} s" for sec, name in slowest))
    _write_cpu_use(terminalreporter, t0)


def _write_cpu_use(terminalreporter, t0):
    """Where the host's CPU went: each session lab's QEMUs and the host's own
    processes (this pytest and every child it waited for: the child pytests,
    Ansible, ssh, compilers). On a 2-core host CI's wall time is this sum
    over two once the labs keep both cores busy."""
    from rfc2544.lab import Lab
    if t0 is None:
        return
    parts, total = [], 0.0
    for step in ("single", "two", "background", "newest1", "newest2"):
        lab = Lab(_session_lab_name(step))
        vms = {vm: s for vm, s in lab.cpu_seconds().items() if s is not None}
        if vms:
            total += sum(vms.values())
            parts.append(f"{step} " + "+".join(f"{vm} {s:.0f}" for vm, s in vms.items()))
    host = sum(os.times()[:4])
    wall = time.time() - t0
    busy = _machine_busy_seconds() - _BACKGROUND["busy0"]     # set with t0
    terminalreporter.write_line(
        f"CPU seconds: lab VMs {total:.0f} ({'; '.join(parts) or 'none'}), host processes {host:.0f}; "
        f"wall {wall:.0f} s x {os.cpu_count()} cores = {wall * (os.cpu_count() or 1):.0f}, of which busy "
        f"{busy:.0f} (/proc/stat: every process, a rebooted VM's and short-lived ones too)")


def _machine_busy_seconds():
    """CPU seconds the whole machine worked since boot (/proc/stat: user,
    nice, system, irq, softirq; not idle, iowait or steal). The per-lab
    figures miss a VM that was booted again and processes that ended
    unwaited; this does not."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:7]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def pytest_sessionfinish(session):
    """Early steps no test ended up waiting for are finished and undone
    (a lab booted early that no test used is taken down)."""
    from rfc2544.lab import Lab
    proc = _BACKGROUND["proc"]
    if proc is not None and proc.poll() is None:      # the session ended early (Ctrl-C, -x)
        proc.terminate()                              # (it ends the background tests' pytest too)
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
    for step, outcome in list(_EARLY.items()):
        outcome["done"].wait()
        if step in ("single", "two", "background") and not os.environ.get("RFC2544_KEEP_LAB"):
            Lab(_session_lab_name(step)).down(log=lambda m: None)
        if step == "newest" and not os.environ.get("RFC2544_KEEP_LAB"):
            for n in "12":
                Lab(_session_lab_name(step) + n).down(log=lambda m: None)
    _EARLY.clear()
    for tmp in _TMP:
        shutil.rmtree(tmp, ignore_errors=True)
