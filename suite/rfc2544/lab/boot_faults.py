"""What can go wrong while a lab VM boots that booting it again mends: a
kernel crash or hang (BootCrash, read from the console by qemu.boot_crash
and Lab._wait_ready), or a clock the guest mis-measured (ClockFault)."""
import re

from rfc2544.errors import InfraError


class BootCrash(InfraError):
    """A lab VM's kernel oopsed, panicked or hung before it was ready, or
    kept a clock rate it should not have: boot it again, with kernel_args
    added to its command line."""

    def __init__(self, first_line, kernel_args=()):
        super().__init__(first_line)
        self.first_line = first_line
        self.kernel_args = tuple(kernel_args)


class ClockFault(BootCrash):
    """A TCG guest kept a TSC rate its HPET did not confirm: its clock, and
    every timeout, rate and latency measured in it, would be off."""


def clock_fault(kernel_log, accel):
    """A ClockFault if a TCG guest kept a TSC rate its HPET did not confirm
    (tsc_calibration), None if its clock is good; "pending" while the
    kernel has not refined it yet. The next boot is told the HPET's rate
    (tsc_early_khz), which skips the PIT calibration the load skewed."""
    if accel != "tcg":
        return None
    verdict, detail = tsc_calibration(kernel_log)
    if verdict == "pending":
        return verdict
    if verdict != "bad":
        return None
    used, reference = detail
    if reference is None:
        return ClockFault(f"its kernel kept a TSC rate of {used / 1000:.3f} MHz that the HPET did not confirm")
    return ClockFault(f"its kernel calibrated the TSC at {used / 1000:.3f} MHz against the HPET's "
                      f"{reference / 1000:.3f} MHz (a clock {reference / used:.1f} times too fast)",
                      kernel_args=(f"tsc_early_khz={reference}",))


def console_clock_fault(console, accel):
    """A ClockFault read from a booting guest's console (a Path), or None.
    It shows there before SSH can: CI's sid tester kept a TSC of 29 MHz for
    2.6 GHz, its clock ran 89 times fast, and RCU stall reports flooded it
    for 1800 s without reaching SSH."""
    try:
        text = console.read_bytes().decode(errors="replace")
    except OSError:
        return None
    fault = clock_fault(text, accel)
    return fault if isinstance(fault, ClockFault) else None


# Under TCG the guest's TSC is the host's counter, and the guest measures its
# rate at boot against the emulated PIT, then refines it against the HPET. A
# starved vCPU can skew the PIT figure, and the kernel keeps it when the two
# disagree by more than 10 %: CI's sid guest logged "PIT calibration deviates
# from HPET: 304025 2596131", "Using PIT calibration value", and its clock ran
# 8.5 times fast (kselftest cases "terminated by timeout" after 3.5 real
# seconds; pacing and latencies off by as much). A refinement the kernel
# accepted ("Refined TSC clocksource calibration") agrees with the HPET to 1 %.
TSC_REFINED = re.compile(r"tsc: Refined TSC clocksource calibration: ")
TSC_DEVIATES = re.compile(r"tsc: PIT calibration deviates from (?:HPET|PMTIMER): (\d+) (\d+)")
TSC_DETECTED = re.compile(r"tsc: Detected (\d+)\.(\d+) MHz")
TSC_REGISTERED = re.compile(r"clocksource: tsc: mask:")    # the refinement has run (or given up)


def tsc_calibration(kernel_log: str):
    """How a TCG guest calibrated its TSC, from its kernel log: ("good",
    None); ("pending", None) while the refinement has not run; ("bad",
    (used_khz, reference_khz or None)) when the kernel kept a rate the HPET
    did not confirm; ("none", None) when the log says nothing of a TSC."""
    if TSC_REFINED.search(kernel_log):
        return "good", None
    detected = TSC_DETECTED.search(kernel_log)
    if not detected:
        return "none", None
    if not TSC_REGISTERED.search(kernel_log):
        return "pending", None
    used = int(detected.group(1)) * 1000 + int(detected.group(2))
    deviates = TSC_DEVIATES.search(kernel_log)
    return "bad", (used, int(deviates.group(2)) if deviates else None)
