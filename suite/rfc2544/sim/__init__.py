"""Simulated devices for unit tests and benches (nothing touches a network)."""
