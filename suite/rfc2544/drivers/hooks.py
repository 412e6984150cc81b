"""Per-trial hooks: the user's own shell commands on their DUT hosts.

Inventory `rfc2544_trial_hooks: {pre: [...], post: [...]}` on a DUT host.
They run as given over the tester's existing SSH session to that host (in
its netns, like everything else there), pre before the trial's
configuration and post after its final read. A hook that fails or cannot
run is recorded with the trial, never fatal: the DUT's traffic result
stands on its own.
"""
from rfc2544.model import HOOK_OUTPUT_LIMIT, HookRun

HOOK_TIMEOUT_S = 120
PHASES = ("pre", "post")


def truncate(text, limit=HOOK_OUTPUT_LIMIT):
    text = text or ""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters not kept]"


def hooks_of(inventory):
    """host name -> {phase: [command, ...]} for the DUT hosts that have hooks."""
    return {h.name: h.trial_hooks for h in inventory.duts if any(h.trial_hooks.get(p) for p in PHASES)}


def run_hooks(transport, hooks, phase):
    """Run every `phase` command of every host, in inventory order per host.
    -> [HookRun]."""
    runs = []
    for host in sorted(hooks):
        for command in hooks[host].get(phase) or []:
            try:
                status, out, err = transport.session(host).run(command, timeout=HOOK_TIMEOUT_S)
            except Exception as exc:  # recorded, not fatal (see the module doc)
                status, out, err = None, "", f"could not run: {exc}"
            runs.append(HookRun(host=host, phase=phase, command=command, exit_status=status,
                                stdout=truncate(out), stderr=truncate(err)))
    return runs


def hook_notes(runs):
    """A note per hook that did not exit 0 (the details are in the record)."""
    return [f"{r.phase} hook on {r.host} failed (exit status {r.exit_status}): {r.command}"
            for r in runs if r.exit_status != 0]
