"""What a full `make test` boots, what runs on each lab, in which order.

The one place to read it; conftest.py and session_prep.py carry it out
(tests/README.md has the long version). Each step below starts when the
collection ends, while the unit tests run, in STEPS order; `newest` runs
in a thread of its own (BESIDE), the others one after another.

  step        what it is                        kernel, topology               niced  what runs there
  ----------  --------------------------------  -----------------------------  -----  --------------------------------
  kernels     pktgen-kmod/scripts/check-kernels every kernel in kernels.list   yes    the module built, W=1 and sparse
              (a child process, no VM)          (host chroots)                        clean, per kernel
  wheel_venv  the wheel in a fresh virtualenv   -                              no     (the Ansible tests use it)
  single      lab pytest<PID>-single            bookworm 6.1, single           no     THIS pytest's lab tests (timing)
  background  lab pytest<PID>-background        bookworm 6.1, single,          yes    a child pytest: the tests marked
              and a child pytest                BACKGROUND_KERNEL_ARGS                lab_background (Ansible, faults,
                                                                                      fuzz, kselftest)
  newest      labs pytest<PID>-newest1, -2      NEWEST's release: single,      yes    a child pytest: NEWEST_TESTS (the
              and a child pytest                and two-host on NEWEST's NIC          two-host tests last, once -2 is up)
  two         lab pytest<PID>-two               bookworm, two-host             yes    only when the newest step does
                                                                                      not run (the lab2 tests here)
  tuning      the host_tuning role's exercise   on newest2 (else on -two)      yes    test_ansible_tuning_lab.exercise

In this pytest the tests run in this order: the unit tests; its own lab
tests; those marked lab_down_last; the background tests' outcomes (each
waits for the child); the lab2 tests; last the LATE_MODULES, which only
report what another process did.
"""

STEPS = ("kernels", "wheel_venv", "single", "background", "newest", "two", "tuning")
BESIDE = ("newest",)        # the newest kernel's labs boot while the others do (they only wait on QEMU)

# The niceness of the background labs' QEMUs and of the child processes,
# each in a session of its own niced as a whole (rfc2544.lab.niceness): the
# session lab's timing tests come first. Not 19: a guest starved for tens of
# seconds reports RCU stalls and soft lockups that are not the module's.
BACKGROUND_NICE = 10
# The slab allocator's checks (sanity, red zones, poisoning) in the
# background lab, whose tests unload the module under traffic: a
# use-after-free there oopses or is reported instead of passing silently.
BACKGROUND_KERNEL_ARGS = ("slub_debug=FZP",)

# Modules whose tests only report another process's work: they run last
# (waiting on them in file order held this session's own lab tests back
# 447 s and 583 s in a CI run).
LATE_MODULES = ("test_kernel_matrix", "test_ansible_tuning_lab", "test_newest_kernel")

NEWEST = {"release": "sid", "nic": "e1000e"}

# The lab tests that matter most for a new kernel, run again on NEWEST's
# labs (test_newest_kernel.py reports each): test functions (every
# parametrization of each), by test file.
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
    "test_kmod_two_host.py::test_two_generators_find_the_policed_rate",
    "test_lab_two_host.py::test_the_clock_reader_states_chrony_s_bound_on_both_vms",
    "test_lab_two_host.py::test_down_leaves_no_qemu",
]
