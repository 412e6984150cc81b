"""Shared by the unit and the integration tests.

A skip whose reason says "(make deps)" stands for something the project's
own install step provides (a package, a compiler, the Debian archive): on a
developer's machine without it the test is skipped, but in CI (CI=true),
where `make test` has just run `make deps`, such a skip would hide lost
coverage, so it fails instead."""
import os

import pytest

MAKE_DEPS = "(make deps)"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") != "true" or not report.skipped or not isinstance(report.longrepr, tuple):
        return
    reason = report.longrepr[2]
    if MAKE_DEPS in reason:
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where `make deps` should have provided it: {reason}"


_SPANS = {}     # "unit"/"integration" -> [tests run, first start, last end]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    import time
    parts = item.nodeid.split("/")
    folder = parts[1] if len(parts) > 2 and parts[0] == "tests" else None
    start = time.time()
    yield
    if folder is not None:
        span = _SPANS.setdefault(folder, [0, start, start])
        span[0] += 1
        span[2] = time.time()


def pytest_terminal_summary(terminalreporter):
    """Where a run's wall time went, just before pytest's summary line: each
    test folder's span (the integration conftest adds each lab's)."""
    if not _SPANS:
        return
    t0 = min(s[1] for s in _SPANS.values())
    terminalreporter.write_line("budget: " + "; ".join(
        f"{folder} tests {n} from {first - t0:.0f} s to {last - t0:.0f} s ({last - first:.0f} s)"
        for folder, (n, first, last) in sorted(_SPANS.items(), key=lambda kv: kv[1][1])))
