"""rfc2544.yml's controller side (run, compare, verdict) with a stand-in for
the rfc2544 CLI that records its arguments and exits as told; the host plays
are limited away (no lab). The real CLI and hosts are covered elsewhere."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent

FAKE_CLI = """#!/bin/sh
echo "$@" >> "$FAKE_CALLS"
case "$1" in
  run) echo "rfc2544: threshold missed: 64 B throughput" >&2; exit ${FAKE_RUN_RC:-0} ;;
  compare) echo "1518 B  latency max (us)  4,329.1  7,001.8  +61.74 %  worse (not gated)"
           [ "${FAKE_COMPARE_RC:-0}" = 1 ] && echo "rfc2544: out regressed past 5 %: throughput (frames/s) at 64 B -12.0 %" >&2
           exit ${FAKE_COMPARE_RC:-0} ;;
  trend) echo "throughput NDR (frames/s) 64 B IPv4 (dut, quick)  2  5,000.0  0.0  -50.00 %  regression"
         [ "${FAKE_TREND_RC:-0}" = 1 ] && echo "rfc2544: regression in 1 series: throughput NDR (frames/s) 64 B IPv4 (dut, quick)" >&2
         exit ${FAKE_TREND_RC:-0} ;;
esac
"""


@pytest.fixture
def pipeline(tmp_path):
    cli = tmp_path / "rfc2544"
    cli.write_text(FAKE_CLI)
    cli.chmod(0o755)
    inv = tmp_path / "inventory.yml"
    inv.write_text("all:\n  hosts:\n    localhost: {ansible_connection: local, "
                   "ansible_python_interpreter: '{{ ansible_playbook_python }}'}\n"
                   "  children:\n    testers:\n      hosts:\n        tester: {ansible_host: 192.0.2.1}\n")
    (tmp_path / "thresholds.yml").write_text('baseline: baseline-run\nmax_regression: "5%"\n')

    def run(run_rc=0, compare_rc=0, threshold=True, trend_rc=0, extra=()):
        calls = tmp_path / "calls"
        calls.unlink(missing_ok=True)
        env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "playbooks/ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   FAKE_CALLS=str(calls), FAKE_RUN_RC=str(run_rc), FAKE_COMPARE_RC=str(compare_rc),
                   FAKE_TREND_RC=str(trend_rc), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
        args = [str(BIN / "ansible-playbook"), "-i", str(inv), str(ROOT / "playbooks/rfc2544.yml"), "-l", "localhost",
                "-e", f"rfc2544_cli={cli}", "-e", f"rfc2544_out_dir={tmp_path / 'out'}"]
        if threshold:
            args += ["-e", f"rfc2544_threshold_file={tmp_path / 'thresholds.yml'}"]
        for var in extra:
            args += ["-e", var.format(dir=tmp_path)]
        p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        out = " ".join((p.stdout + p.stderr).split())
        return p.returncode, out, calls.read_text().splitlines() if calls.exists() else []
    run.dir = tmp_path
    return run


def test_pass_runs_the_suite_and_compares(pipeline):
    rc, out, calls = pipeline()
    d = pipeline.dir
    assert rc == 0, out[-2000:]
    assert "the benchmark passed" in out
    assert calls == [f"run -i {d / 'inventory.yml'} -p quick --out {d / 'out'} --format=html --format=csv",
                     f"compare {d / 'baseline-run'} {d / 'out'} --max-regression 5% "
                     f"--junit {d / 'out/compare.junit.xml'} --html {d / 'out/compare.html'}"]


def test_regression_fails_the_play(pipeline):
    rc, out, _ = pipeline(compare_rc=1)
    assert rc == 2
    # the verdict quotes compare's summary (stderr), not the table's last row
    assert ("rfc2544: the benchmark regressed (allowed: 5%): rfc2544: out regressed past 5 %: "
            "throughput (frames/s) at 64 B -12.0 %") in out
    assert "not gated" not in out.split("the benchmark regressed")[1]


def test_missed_profile_threshold_fails_the_play(pipeline):
    rc, out, calls = pipeline(run_rc=1, threshold=False)
    assert rc == 2 and len(calls) == 1
    assert "the benchmark missed the profile thresholds: rfc2544: threshold missed" in out


def test_failed_run_fails_the_play_without_comparing(pipeline):
    rc, out, calls = pipeline(run_rc=3)
    assert rc == 2 and [c.split()[0] for c in calls] == ["run"]
    assert "the benchmark failed: rfc2544: threshold missed" in out


def test_the_trend_gate_adds_the_run_to_the_store_and_judges_the_trend(pipeline):
    d = pipeline.dir
    rc, out, calls = pipeline(threshold=False, extra=["rfc2544_store_dir={dir}/store", "rfc2544_gate=trend"])
    assert rc == 0, out[-2000:]
    assert calls == [f"run -i {d / 'inventory.yml'} -p quick --out {d / 'out'} --format=html --format=csv "
                     f"--store {d / 'store'}",
                     f"trend --store {d / 'store'} --out {d / 'out'} --junit {d / 'out/trend.junit.xml'}"]


def test_a_trend_regression_fails_the_play_and_both_gates_run(pipeline):
    rc, out, calls = pipeline(trend_rc=1, extra=["rfc2544_store_dir={dir}/store", "rfc2544_gate=both"])
    assert rc == 2 and [c.split()[0] for c in calls] == ["run", "compare", "trend"]
    assert ("rfc2544: the benchmark regressed in the trend: rfc2544: regression in 1 series: "
            "throughput NDR (frames/s) 64 B IPv4 (dut, quick)") in out


def test_the_trend_gate_without_a_store_is_refused_before_running(pipeline):
    rc, out, calls = pipeline(threshold=False, extra=["rfc2544_gate=trend"])
    assert rc == 2 and calls == []
    assert "trend and both need rfc2544_store_dir" in out
