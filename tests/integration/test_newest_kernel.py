"""The lab tests that matter most for a new kernel, run again on the newest
kernel Debian has (NEWEST's release), with the two-host lab's test links on
QEMU's e1000e (the emulated Intel 82574L: the guest runs the real e1000e
driver, its descriptor ring, BQL, TX-completion interrupts and queue
stop/wake, which virtio-net hides):

    newest1 (single)                    newest2 (two-host)
    +---------------------------+       +---------+  e1000e   +---------+
    | tester  tx0 ==veth== dut0 |       | tester  |-tx0--dut0-|  DUT    |
    |         rx0 ==veth== dut1 |       |         |-rx0--dut1-|         |
    +---------------------------+       +---------+  socket   +---------+

conftest.py boots both labs (niced) while the unit tests run and runs
NEWEST_TESTS (lab_plan.py) in a child pytest on them (session_prep.py, step `newest`);
each test here reports one of those tests' outcome, its failure text
included. The module is built for the newest kernel with the compiler its
headers were built with, inside the image's own root (kmod_helpers).
"""
import pytest

from lab_plan import NEWEST, NEWEST_TESTS  # noqa: F401 (conftest reads both from this module)

pytestmark = pytest.mark.lab


def _module_and_name(nodeid):
    path, _, name = nodeid.partition("::")
    return path.rsplit("/", 1)[-1][:-len(".py")], name


@pytest.mark.parametrize("nodeid", NEWEST_TESTS)
def test_on_the_newest_kernel(nodeid, child_test_outcome):
    module, name = _module_and_name(nodeid)
    child_test_outcome("newest", module, name)
