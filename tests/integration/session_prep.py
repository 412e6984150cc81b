"""The integration session's slow preparations, in a process of their own.

    python tests/integration/session_prep.py SPEC_JSON

Started by conftest.py when collection ends, so it runs while the unit tests
do. A process, not a thread: unit tests patch process-wide state
(os.environ's RFC2544_CACHE, module attributes) that a thread's Lab objects
and child processes would read; this process has the environment of the
moment it started (a run once lost both its labs to that race).

SPEC_JSON: {"steps": [...], "tmp": dir, "names": {step: lab name},
"nice": N, "background_tests": [nodeid, ...], "background_kernel_args": [word, ...],
"report_fd": fd}. Steps, in order:
  wheel_venv  build the wheel, install it with its dependencies in tmp/venv
  single      boot the single lab (with the wheel's `rfc2544 lab up` when
              wheel_venv is a step: CI boots its lab as a user would)
  background  boot a niced single lab (with background_kernel_args) and
              start the background tests' niced child pytest on it;
              reported when that pytest has ended, as (exit code, junit
              path, log path, start time, end time)
  two         boot the two-host lab (niced)
  tuning      test_ansible_tuning_lab.exercise on the two-host lab (niced)
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
import time
import traceback
from pathlib import Path

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


class Prep:
    def __init__(self, spec):
        self.spec = spec
        self.tmp = Path(spec["tmp"])
        self.nice = spec["nice"]
        self.values = {}
        self.child = None       # the background tests' pytest
        self.background_files = None   # (its junit path, its log path)
        self.background_started = None  # time.time() when it started

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
        if step == "tuning":
            if self.values.get("two") is None:
                raise RuntimeError("the two-host lab did not boot")
            import test_ansible_tuning_lab
            return test_ansible_tuning_lab.exercise(Lab(self.values["two"]), nice=self.nice)
        raise ValueError(f"unknown step {step!r}")

    def start_background_tests(self, lab):
        """A niced single lab of their own and a niced child pytest on it: the
        single lab's tests leave a core idle."""
        lab.up("single", log=lambda m: None, nice=self.nice, kernel_args=self.spec["background_kernel_args"])
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
        env["RFC2544_REUSE_LAB"] = lab.name
        env["RFC2544_LAB_KERNEL_ARGS"] = " ".join(self.spec["background_kernel_args"])
        if self.values.get("wheel_venv") is not None:
            env["RFC2544_WHEEL_VENV"] = str(self.values["wheel_venv"])
        junit, log = self.tmp / "background-tests.xml", self.tmp / "background-tests.log"
        with open(log, "w") as out:
            self.child = subprocess.Popen(
                ["nice", "-n", str(self.nice), sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 f"--junitxml={junit}", *self.spec["background_tests"]],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.background_files = (str(junit), str(log))
        self.background_started = time.time()

    def main(self, report):
        steps = self.spec["steps"]
        for step in steps:
            log, value, error = [], None, None
            try:
                value = self.run(step, log)
            except Exception:
                error = traceback.format_exc()
            self.values[step] = value
            if step == "background" and error is None:
                continue
            self.report(report, step, value, error, log)
        if "background" in steps and self.child is not None:
            code = self.child.wait()
            self.report(report, "background", (code, *self.background_files, self.background_started, time.time()),
                        None, [])

    def report(self, report, step, value, error, log):
        path = self.tmp / f"{step}.pickle"
        path.with_suffix(".part").write_bytes(pickle.dumps({"value": value, "error": error, "log": log}))
        path.with_suffix(".part").rename(path)
        os.write(report, f"{step}\n".encode())

    def stop(self, *_):
        if self.child is not None and self.child.poll() is None:
            self.child.terminate()
            try:
                self.child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.child.kill()
        sys.exit(143)


def main():
    spec = json.loads(sys.argv[1])
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    prep = Prep(spec)
    signal.signal(signal.SIGTERM, prep.stop)
    prep.main(spec["report_fd"])


if __name__ == "__main__":
    main()
