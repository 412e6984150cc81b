"""Lab tests whose evidence a loaded host can spoil.

A TCG lab's vCPUs are host threads: when the CI host's two cores are busy
(the background labs, the newest kernel's labs), a vCPU can be held back
for tens of milliseconds, and the generator falls behind its rate or the
calibration link's capture reads a backlog at once. Such an attempt says
nothing about the product, so a test runs it again, up to ATTEMPTS times,
only on evidence of the hold that its check does not judge (a departure
or arrival gap of STALL_MS or more, frames the tester's veth dropped, a
trial that reached less than its rate), and fails with every attempt's
reason when none was clean. A failed check without that evidence fails
at once; a product fault repeats in every attempt and still fails.
"""
import os

ATTEMPTS = 3
# A gap this long between two departures or two arrivals: the vCPU that
# sends or receives was held back (TCG on a shared 2-core host: up to
# ~200 ms; an idle lab host's paced runs: up to 16.6 ms).
STALL_MS = 50


def until_clean(attempt, held_back, attempts=ATTEMPTS):
    """attempt() until held_back(result) is falsy (else it is the reason
    the host spoiled that attempt), at most `attempts` times. Returns
    (last result, reasons of the spoiled attempts)."""
    reasons = []
    for _ in range(attempts):
        result = attempt()
        reason = held_back(result)
        if not reason:
            return result, reasons
        reasons.append(f"{reason} (host load {os.getloadavg()[0]:.1f})")
    return result, reasons
