"""The integration session's slow preparations, in a process of their own.

    python tests/integration/session_prep.py SPEC_JSON

Started by conftest.py when collection ends, so it runs while the unit tests
do. A process, not a thread: unit tests patch process-wide state
(os.environ's RFC2544_CACHE, module attributes) that a thread's Lab objects
and child processes would read; this process has the environment of the
moment it started (a run once lost both its labs to that race).

SPEC_JSON: {"steps": [...], "tmp": dir, "names": {step: lab name},
"nice": N, "background_tests": [nodeid, ...], "background_kernel_args": [word, ...],
"newest": {"release": name, "nic": model, "tests": [nodeid, ...]}, "report_fd": fd}. Steps, in order:
  wheel_venv  build the wheel, install it with its dependencies in tmp/venv
  single      boot the single lab (with the wheel's `rfc2544 lab up` when
              wheel_venv is a step: CI boots its lab as a user would)
  background  boot a niced single lab (with background_kernel_args) and
              start the background tests' niced child pytest on it;
              reported when that pytest has ended, as (exit code, junit
              path, log path, start time, end time)
  two         boot the two-host lab (niced)
  tuning      test_ansible_tuning_lab.exercise on the two-host lab (niced);
              with `newest`, on the newest kernel's two-host lab instead,
              once it has booted and before its ready file is written
              (spec["newest"]["tuning"]: the step `two` is not run then)
  kernels     start pktgen-kmod/scripts/check-kernels (niced) with its
              results in tmp/kernels.json; reported when it has ended, as
              (exit code, results path, log path, start time, end time)
  newest      boot a single and a two-host lab of the newest kernel
              (spec["newest"]: release, and the two-host lab's NIC model),
              niced, and run the newest_tests in a niced child pytest on
              them, started as soon as the single lab is up (the two-host
              tests wait for tmp/newest2.ready); reported when it has
              ended, as background is
`newest` runs in a thread of its own (BESIDE), the others in order.
Each finished step is pickled to tmp/<step>.pickle as
{"value": ..., "error": text or None, "log": [lines]} and its name written,
one line, to report_fd. SIGTERM ends the work (and the child pytest).
"""
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from lab_plan import BESIDE

ROOT = Path(__file__).resolve().parents[2]


def wheel_lab_up(venv, name, log):
    """Boot the single lab with the wheel's CLI, from /tmp with PATH holding
    only system directories: the `rfc2544 lab up` a pipx user runs."""
    from rfc2544.lab import Lab
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV"))}
    env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
    run = subprocess.run([str(venv / "bin" / "rfc2544"), "lab", "up", "--name", name], cwd="/tmp", env=env,
                         capture_output=True, text=True, timeout=1800)
    log.extend(run.stderr.splitlines())
    lab = Lab(name)
    if run.returncode != 0 or run.stdout.strip() != str(lab.inventory_path):
        raise RuntimeError(f"{venv}/bin/rfc2544 lab up exited {run.returncode}: "
                           f"{run.stdout[-1000:]}{run.stderr[-2000:]}")
    return name


def _write_ready(path, text):
    """Whole or not at all: the reader takes the file's existence as the end."""
    part = path.with_suffix(".part")
    part.write_text(text)
    part.rename(path)


class Prep:
    def __init__(self, spec):
        self.spec = spec
        self.tmp = Path(spec["tmp"])
        self.nice = spec["nice"]
        self.values = {}
        self.children = {}      # step -> (its child pytest, junit path, log path, start time)
        # the tuning's lab work runs on the newest kernel's two-host lab (in its thread)
        self.tuning_on_newest = bool(spec.get("newest", {}).get("tuning"))

    def run(self, step, log):
        from rfc2544.lab import Lab
        name = self.spec["names"].get(step)
        if step == "wheel_venv":
            import test_ansible_support
            return test_ansible_support.wheel_venv(self.tmp)
        if step == "single" and "wheel_venv" in self.spec["steps"]:
            venv = self.values.get("wheel_venv")
            if venv is None:
                raise RuntimeError("no wheel virtualenv to boot the lab with (its step failed)")
            return wheel_lab_up(venv, name, log)
        if step in ("single", "two"):
            # The two-host lab and its tuning work are niced: they fill the
            # CPU time the single lab's tests leave idle instead of slowing them.
            Lab(name).up({"single": "single", "two": "two-host"}[step], log=log.append,
                         nice=self.nice if step == "two" else 0)
            return name
        if step == "background":
            self.start_background_tests(Lab(name))
            return None          # reported when the child pytest ends
        if step == "kernels":
            results = self.tmp / "kernels.json"
            self.start_child("kernels", [str(ROOT / "pktgen-kmod" / "scripts" / "check-kernels"),
                                         "--json", str(results)], {}, results)
            return None          # reported when it ends
        if step == "newest":
            self.start_newest_tests(Lab(name + "1"), Lab(name + "2"))
            return None          # reported when the child pytest ends
        if step == "tuning":
            import test_ansible_tuning_lab
            if self.tuning_on_newest:
                return test_ansible_tuning_lab.exercise(Lab(self.spec["names"]["newest"] + "2"), nice=self.nice)
            if self.values.get("two") is None:
                raise RuntimeError("the two-host lab did not boot")
            return test_ansible_tuning_lab.exercise(Lab(self.values["two"]), nice=self.nice)
        raise ValueError(f"unknown step {step!r}")

    def start_background_tests(self, lab):
        """A niced single lab of their own and a niced child pytest on it: the
        single lab's tests leave a core idle."""
        lab.up("single", log=lambda m: None, nice=self.nice, kernel_args=self.spec["background_kernel_args"])
        self.start_pytest("background", self.spec["background_tests"], {
            "RFC2544_REUSE_LAB": lab.name,
            "RFC2544_LAB_KERNEL_ARGS": " ".join(self.spec["background_kernel_args"])})

    def start_newest_tests(self, single, two):
        """The newest kernel's labs (a single one, a two-host one on its NIC
        model), niced, and a niced child pytest on them. The child starts
        once the single lab is up: its two-host tests come last and wait for
        the ready file written when the two-host lab has booted (or failed
        to: the file says why), so the second boot overlaps the first tests."""
        newest = self.spec["newest"]
        single.up("single", log=lambda m: None, nice=self.nice, release=newest["release"])
        ready = self.tmp / "newest2.ready"
        # RFC2544_REUSE_LAB2_OWNED: the lab was booted for this session, so
        # the child's test of `lab down` may stop it.
        self.start_pytest("newest", newest["tests"], {"RFC2544_REUSE_LAB": single.name,
                                                      "RFC2544_REUSE_LAB2": two.name,
                                                      "RFC2544_REUSE_LAB2_READY": str(ready),
                                                      "RFC2544_REUSE_LAB2_OWNED": "1"})
        try:
            two.up("two-host", log=lambda m: None, nice=self.nice, release=newest["release"], nic=newest["nic"])
        except Exception:
            # the child's two-host tests fail with this; its other tests stand
            _write_ready(ready, traceback.format_exc())
            if self.tuning_on_newest:
                self.report(self.report_fd, "tuning", None, "the newest kernel's two-host lab did not boot:\n"
                            + traceback.format_exc(), [])
            return
        if self.tuning_on_newest:
            # before the ready file: the child's two-host tests must not
            # send while the tuning changes rings and coalescing
            self.step(self.report_fd, "tuning")
        _write_ready(ready, "up")

    def start_pytest(self, step, tests, env_add):
        """A niced child pytest of `tests` for `step`, its junit in tmp/<step>-tests.xml."""
        junit = self.tmp / f"{step}-tests.xml"
        self.start_child(step, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                f"--junitxml={junit}", *tests], env_add, junit)

    def start_child(self, step, argv, env_add, result):
        """A niced child process for `step` that writes `result`; its output
        in tmp/<step>-tests.log."""
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
        env.update(env_add)
        if self.values.get("wheel_venv") is not None:
            env["RFC2544_WHEEL_VENV"] = str(self.values["wheel_venv"])
        from rfc2544.lab import niceness
        log = self.tmp / f"{step}-tests.log"
        with open(log, "w") as out:
            # A session of its own, niced as a whole (rfc2544.lab.niceness):
            # niced tasks in ours would still take our session's share, the
            # same as the session lab's QEMU, while that lab runs timing tests.
            child = subprocess.Popen(["nice", "-n", str(self.nice), *argv], cwd=ROOT, env=env, stdout=out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        niceness.set_session_nice(child.pid, self.nice)
        self.children[step] = (child, str(result), str(log), time.time())

    def main(self, report):
        self.report_fd = report
        steps = self.spec["steps"]
        threads = []
        for step in steps:
            if step == "tuning" and self.tuning_on_newest:
                continue        # the newest thread runs it on its two-host lab
            if step in BESIDE:
                threads.append(threading.Thread(target=self.step, args=(report, step), daemon=True))
                threads[-1].start()
            else:
                self.step(report, step)
        for thread in threads:
            thread.join()
        pending = dict(self.children)
        while pending:          # each child is reported as soon as it ends
            for step, (child, junit, log, started) in list(pending.items()):
                if child.poll() is not None:
                    self.report(report, step, (child.returncode, junit, log, started, time.time()), None, [])
                    del pending[step]
            time.sleep(0.5)

    def step(self, report, step):
        log, value, error = [], None, None
        try:
            value = self.run(step, log)
        except Exception:
            error = traceback.format_exc()
        self.values[step] = value
        if step not in self.children or error is not None:
            self.report(report, step, value, error, log)

    def report(self, report, step, value, error, log):
        path = self.tmp / f"{step}.pickle"
        path.with_suffix(".part").write_bytes(pickle.dumps({"value": value, "error": error, "log": log}))
        path.with_suffix(".part").rename(path)
        os.write(report, f"{step}\n".encode())

    def stop(self, *_):
        for child, *_ in self.children.values():
            if child.poll() is None:
                child.terminate()
        for child, *_ in self.children.values():
            try:
                child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                child.kill()
        sys.exit(143)


def main():
    spec = json.loads(sys.argv[1])
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    prep = Prep(spec)
    signal.signal(signal.SIGTERM, prep.stop)
    # The children are in sessions of their own: a Ctrl-C reaches them only through here.
    signal.signal(signal.SIGINT, prep.stop)
    prep.main(spec["report_fd"])


if __name__ == "__main__":
    main()
