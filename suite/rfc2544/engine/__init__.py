"""The tester: runs RFC 2544 section 23 trials on the inventory's hosts over
SSH (transport, trial engine, rate schedule, traffic watch, pacing), and the
host-level work around them (calibration, doctor, playbooks)."""
