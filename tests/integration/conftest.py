"""Session fixtures for lab integration tests (owned by the lab).

`lab`  - the single topology (tester VM, DUT in netns `dut`), booted once per
         pytest session under the lab name `pytest-single`, torn down at the end.
`lab2` - the two-host topology (tester VM + DUT VM), lab name `pytest-two`.

Separate lab names keep a developer's own `default` lab untouched. Tests that
load modules or change the DUT must restore what they changed (rmmod, remove
qdiscs) so later tests see a clean lab. Set RFC2544_KEEP_LAB=1 to leave the
labs running after the session (then `rfc2544 lab down --name pytest-single`).
"""
import os

import pytest


def _boot(request, name, topology):
    from rfc2544.lab import Lab
    lab = Lab(name)
    if lab.is_up():
        # left over from an interrupted session: start clean
        lab.down(log=lambda m: None)
    lab.up(topology, log=lambda m: print(m, flush=True))
    if not os.environ.get("RFC2544_KEEP_LAB"):
        request.addfinalizer(lambda: lab.down(log=lambda m: None))
    return lab


@pytest.fixture(scope="session")
def lab(request):
    """The single-topology lab (Lab object), up for the whole session."""
    return _boot(request, "pytest-single", "single")


@pytest.fixture(scope="session")
def lab2(request):
    """The two-host lab (Lab object), up for the whole session."""
    return _boot(request, "pytest-two", "two-host")


@pytest.fixture
def tester(lab):
    host = lab.connect("tester")
    yield host
    host.close()
