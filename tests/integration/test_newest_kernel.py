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
NEWEST_TESTS in a child pytest on them (session_prep.py, step `newest`);
each test here reports one of those tests' outcome, its failure text
included. The module is built for the newest kernel with the compiler its
headers were built with, inside the image's own root (kmod_helpers).
"""
import pytest

NEWEST = {"release": "sid", "nic": "e1000e"}

# Test functions (every parametrization of each), by test file.
NEWEST_TESTS = [
    "test_kmod.py::test_load_creates_files_and_threads",
    "test_kmod.py::test_exact_tx_count",
    "test_kmod.py::test_receiver_counts_exactly_what_crosses_the_dut",
    "test_kmod_rx.py::test_loss_is_tx_minus_rx",
    "test_kmod_rx.py::test_reorder_is_counted",
    "test_kmod_rx.py::test_duplicates_are_counted",
    "test_kmod_hardening.py::test_count_is_exact_with_burst",
    # issue 32: who may write (a user namespace's root, a container), and the
    # hostile-frame corpus (where KFENCE, which 6.1 lacks, guards the
    # receiver's allocations), on both kernels. What is the module's own code
    # and the same on every kernel runs on 6.1 only: the grammar fuzz, every
    # module parameter's extremes, the kselftest's 49 /proc cases, and the 100
    # load/unload cycles (the kernel matrix loads the module on each kernel
    # and sends with it). Together they were 540 s of this child's 2000.
    "test_kmod_hardening.py::test_writes_need_net_admin_where_the_netns_belongs",
    "test_kmod_rx_adversarial.py",
    # setup installs the module built on the host for this kernel (a module
    # for another kernel refused); the wheel's `run --setup -p quick`;
    # teardown restores every touched value (compared with the fresh host's
    # state). The role's refusals, its check mode and its build on the
    # target know no kernel: the 6.1 lab runs them (an in-guest compile on
    # sid was 577-647 s of CI; check-kernels builds every kernel on the host).
    "test_ansible_lab.py::test_prebuilt_module_for_another_kernel_is_refused",
    "test_ansible_lab.py::test_setup_installs_the_prebuilt_module",
    "test_ansible_lab.py::test_modprobe_pktgen_acts_on_the_module",
    "test_ansible_lab.py::test_wheel_second_setup_changes_nothing_and_runs_the_quick_profile",
    "test_ansible_lab.py::test_teardown_restores_every_touched_value",
    # last: the child starts before the two-host lab has booted. A session
    # that runs these runs its two-host tests here only (conftest.py), and
    # the host_tuning lab work on this lab (session_prep.py).
    "test_lab_two_host.py::test_two_host_inventory",
    "test_lab_two_host.py::test_two_host_forwarding",
    "test_kmod_two_host.py::test_burst_fills_the_tx_ring_on_socket_link",
    "test_kmod_two_host.py::test_flows_spread_the_dut_over_its_cpus",
    "test_lab_two_host.py::test_the_clock_reader_states_chrony_s_bound_on_both_vms",
    "test_lab_two_host.py::test_down_leaves_no_qemu",
]

pytestmark = pytest.mark.lab


def _module_and_name(nodeid):
    path, _, name = nodeid.partition("::")
    return path.rsplit("/", 1)[-1][:-len(".py")], name


@pytest.mark.parametrize("nodeid", NEWEST_TESTS)
def test_on_the_newest_kernel(nodeid, child_test_outcome):
    module, name = _module_and_name(nodeid)
    child_test_outcome("newest", module, name)
