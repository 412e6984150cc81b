"""What to run and against what: the inventory (hosts, ports, streams), the
profiles (tests, sizes, search, waits) and their typed models."""
