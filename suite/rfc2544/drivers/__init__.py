"""Traffic drivers: the pieces that talk to the kernel on the tester hosts.

- `pktgen`: the generator (our rfc2544_pktgen module or the in-tree pktgen:
  same /proc command language); builds one shell script per batch of writes
  and parses the device files.
- `pgrx`: the module's receiver (/proc/net/pktgen/pgrx, `display script`).
- `counters`: interface counters (/sys/class/net/IF/statistics), the
  lower-fidelity fallback receiver.
- `script`: the batch-script builder every driver uses (quoting, checked writes).
- `shell`: one persistent remote shell per host, so a batch costs one round trip.

Parsers are pure functions of the text read from the host.
"""
