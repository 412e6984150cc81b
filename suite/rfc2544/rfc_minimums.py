"""What the RFCs ask of a run, written once: the profile's defaults
(config/profiles.py), the deviations a run declares (results/deviations.py)
and the report's own checks of the data (reports/checks.py) read them here.
A fact of the standards, not of a layer: every layer may import it."""

FRAME_SIZES = (64, 128, 256, 512, 1024, 1280, 1518)   # RFC 2544 9.1, Ethernet
FINAL_TRIAL_S = 60          # RFC 2544 24: the final determination's trials
# RFC 2544 23: the waits around a trial (key of the profile's `waits`, s, what for)
WAITS = (("route_s", 2, "after the routing update"), ("learning_s", 2, "after learning frames"),
         ("residual_s", 2, "for residual frames"), ("settle_s", 5, "for the DUT to settle"))
LATENCY_TRIAL_S = 120       # RFC 2544 26.2
LATENCY_REPETITIONS = 20    # RFC 2544 26.2
LATENCY_SAMPLES = 500       # RFC 8219 7.2
LOSS_STEP_PCT = 10          # RFC 2544 26.3: steps of 10 % or finer
B2B_BURST_S = 2             # RFC 9004: bursts of at least 2 s
B2B_DEPLETION_S = 2         # RFC 9004: 2 s of buffer depletion between bursts
B2B_TRIALS = 50             # RFC 2544 26.4
RECOVERY_OVERLOAD = 1.10    # RFC 2544 26.5: 110 % of the throughput
RECOVERY_OVERLOAD_S = 60    # RFC 2544 26.5
