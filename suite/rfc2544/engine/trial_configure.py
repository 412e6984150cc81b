"""A trial's configure phase, TrialEngine's part that writes the generators'
devices and resets the receivers, in one batch per host, with every counter
checked zero in the same batch: only the device commands that changed since
the last trial are written (verified diff writes), and the whole device state
read back is verified against the intended one (any difference: devices
re-added, everything rewritten, counted).

A mixin of TrialEngine, whose state it uses: plans, settings, transport,
clock, detect(), reader, setup(), ready, control_counts, and its own
_written, _reference, _verifiable, _rx_level, _rx_format, _rx_pkt_size,
_rx_declared, mismatch_detail."""
from rfc2544 import wire
from rfc2544.drivers import pgrx as pgrx_mod
from rfc2544.drivers import pktgen
from rfc2544.drivers import streams as streams_mod
from rfc2544.drivers.script import Batch
from rfc2544.engine.detection import RECEIVER_PGRX
from rfc2544.errors import InfraError


class ConfigurePhase:
    """Device writes, the configure-and-zero batch and its checks."""

    def _forget(self):
        self._written = {}
        self._reference = {}

    def _write_configs(self, configs, batches, full=False):
        """Add the device commands of `configs` to the host batches: only
        those that differ from the last written (all of them with `full`,
        without diff writes, for an IMIX or a device not yet written).
        `clear_counters` always. -> {device: True if written in full}."""
        fulls = {}
        for cfg, p in zip(configs, self.plans):
            cmds = cfg.commands()
            last = self._written.get(cfg.device)
            whole = (full or last is None or cfg.imix is not None
                     or not (self.settings.diff_writes and self._verifiable))
            todo = cmds if whole else [c for c in cmds if pktgen.command_key(c) in pktgen.ALWAYS_WRITTEN
                                       or last.get(pktgen.command_key(c)) != c]
            b = batches.setdefault(p.tx_host, Batch())
            for c in todo:
                b.write(pktgen.device_path(cfg.device), c)
            self.control_counts["writes"] += len(todo)
            self.control_counts["full_writes"] += int(whole)
            fulls[cfg.device] = whole
            if cfg.imix is not None:
                self._written.pop(cfg.device, None)
            else:
                written = {} if whole else dict(last)
                written.update((pktgen.command_key(c), c) for c in cmds
                               if pktgen.command_key(c) not in pktgen.ALWAYS_WRITTEN)
                self._written[cfg.device] = written
        return fulls

    def note_write(self, device, command):
        """A device command written outside a configure (a rate change
        while sending)."""
        if device in self._written:
            self._written[device][pktgen.command_key(command)] = command

    def _run_writes(self, batches, timeout=30):
        """run_batches for batches with device writes: a failure leaves the
        devices in an unknown state, so nothing written is remembered."""
        try:
            return self.transport.run_batches(batches, timeout=timeout)
        except BaseException:
            self._forget()
            raise

    def _configure_checked(self, spec, configs):
        """Configure and zero until every counter reads zero (frames of the
        learning may still drain). -> counter baselines."""
        level = "time" if spec.latency or self.times_arrivals(spec) else "basic"
        full = False
        self.control_counts["configures"] += 1
        for attempt in range(4):
            self.setup()   # again only if a check below found the receiver or a device changed
            tx0, rx0, base, fulls = self._configure_and_zero(configs, level, full, spec)
            if self._verify(configs, tx0, fulls):
                if attempt == 3:
                    raise InfraError("the generator's devices do not read back as written: " + self.mismatch_detail)
                full = True
                continue       # devices re-added: write everything again at once
            problems = self._zero_problems(configs, tx0, rx0, base)
            if not problems:
                return base
            if attempt == 3:
                raise InfraError("counters not zero before the trial: " + "; ".join(problems))
            self.clock.sleep(0.2)  # frames still in flight (learning): let them drain

    def _verify(self, configs, tx, fulls):
        """Check every device's read-back against its config and the
        reference view (the read-back after the last verified configure).
        Any difference means the devices are not what we last wrote (a stale
        cache, a write behind our back): counted, the devices are re-added
        and everything is rewritten (-> True). After a full write, a
        difference in a value the config itself sets means the generator's
        read-out is not the one modelled: diff writes are turned off for the
        session (full writes as before; counted as unverifiable)."""
        mismatch = False
        for cfg, p in zip(configs, self.plans):
            st = tx.get(p.index)
            if st is None:
                continue
            whole = fulls.get(cfg.device, True)
            ref = self._reference.get(cfg.device)
            own = pktgen.verify_device(cfg, st)
            problems = pktgen.verify_device(cfg, st, ref) if ref is not None else own
            if whole and own:
                if self._verifiable:      # counted once: from now on full writes, as before
                    self.control_counts["unverifiable"] += 1
                    self.mismatch_detail = f"{p.tx_host}:{p.device}: " + "; ".join(own[:4])
                self._verifiable = False
            elif problems:
                mismatch = True
                self.mismatch_detail = f"{p.tx_host}:{p.device}: " + "; ".join(problems[:4])
            elif cfg.imix is None:
                self._reference[cfg.device] = pktgen.device_view(st)
        if mismatch:
            self.control_counts["mismatches"] += 1
            self.ready = False
            self._forget()
        return mismatch

    def _counted_size(self, spec, host):
        """The frame size `host`'s pgrx is to count (with FCS; RFC 2544
        section 10: the tester checks the length received): the size sent,
        changed by the tags a DUT adds or removes, or None (any) for an IMIX
        or where that size cannot be told (streams.arriving_frame_size). Streams
        of their own sizes (a Y.1564 service's) count theirs: one size they
        all send, else any."""
        if spec is None:
            return None
        own = {p.sizes for p in self.plans if p.rx_host == host and p.sizes}
        size = spec.frame_size
        if own:
            size = next(iter(own))[0] if len(own) == 1 and len(next(iter(own))) == 1 else 0
        if not size:
            return None
        sent = wire.wire_frame_size(size, spec.ipv6, streams_mod.frame_tags(self.plans))
        return streams_mod.arriving_frame_size(self.plans, host, sent)

    def _declared_streams(self, host, spec):
        """The streams `host`'s pgrx is to know (issue 31: frames of any
        other stream are foreign, never loss): the trial's streams into it,
        by stream id where the testers have them, else by source address in
        the spec's IP version; None where pgrx cannot be told (before format
        v5) or there is no trial spec."""
        if spec is None:
            return None
        return self._declarable(host, spec.ipv6)

    def _declarable(self, host, ipv6):
        """The streams `host`'s pgrx would be told of in that IP version
        (None: it cannot be told); BadInput past what it takes."""
        if self._rx_format.get(host, 0) < pgrx_mod.DECLARE_VERSION:
            return None
        by_id = self.detect().get("stream_ids", False)
        # a port with no address of that version sends nothing in it (check_addresses refuses such a trial)
        keys = {p.rx_key(ipv6, by_id) for p in self.plans if p.rx_host == host}
        return streams_mod.check_declared(host, keys - {None}, pgrx_mod.MAX_DECLARED)

    def _configure_and_zero(self, configs, level, full=False, spec=None):
        """One batch per host: reset receivers, configure generators, read all
        counters back. Returns (tx states, rx readings, counter baselines,
        {device: written in full}).

        Interface counters cannot be reset: their baseline is read first, in
        its own round trip, and they must be unchanged after
        `quiet_window_s` (stray traffic on the port would be counted)."""
        counters = self.detect()["receiver"] != RECEIVER_PGRX
        base = {}
        if counters:
            outs = self.transport.run_batches({h: Batch().read("base", *self.reader.paths(h, with_tx=False))
                                               for h in self.rx_hosts})
            t_base = self.clock.monotonic()
            base = self.reader.parse_baselines(outs, "base")
        batches = {}
        if not counters:
            for host in self.rx_hosts:
                size = pgrx_mod.counted_length(self._counted_size(spec, host))
                b = batches.setdefault(host, Batch())
                if self._rx_format.get(host, 0) >= pgrx_mod.PKT_SIZE_VERSION and self._rx_pkt_size.get(host) != size:
                    pgrx_mod.pkt_size_batch(size, b)
                    self._rx_pkt_size[host] = size
                streams = self._declared_streams(host, spec)
                if streams is not None and self._rx_declared.get(host) != streams:
                    pgrx_mod.declare_batch(streams, b)
                    self._rx_declared[host] = streams
                pgrx_mod.reset_batch(level if level != self._rx_level else None, b)
        fulls = self._write_configs(configs, batches, full)
        self._write_modifiers(batches, self._modifier_configs)
        if counters:
            self.clock.sleep(max(0.0, t_base + self.settings.quiet_window_s - self.clock.monotonic()))
        for host, b in self.reader.batches("zero").items():
            batches.setdefault(host, Batch()).extend(b)
        outputs = self._run_writes(batches)
        self._rx_level = level
        tx, rx = self.reader.parse(outputs, "zero")
        self._path_zero = self.reader.parse_path(outputs, "zero")
        return tx, rx, base, fulls

    def _zero_problems(self, configs, tx, rx, base):
        problems = []
        for p, cfg in zip(self.plans, configs):
            st = tx[p.index]
            if st.pkts_sofar not in (0, None):
                problems.append(f"{p.tx_host}:{p.device} pkts-sofar={st.pkts_sofar}")
            if st.params.get("count") != str(cfg.count):
                problems.append(f"{p.tx_host}:{p.device} count={st.params.get('count')} (wrote {cfg.count})")
            if st.params.get("dst_mac", "").lower() != cfg.dst_mac.lower():
                problems.append(f"{p.tx_host}:{p.device} dst_mac={st.params.get('dst_mac')} (wrote {cfg.dst_mac})")
        for host, reading in rx.items():
            if isinstance(reading, pgrx_mod.PgrxState):
                want = self.detect()["rx_ports"][host]
                if not reading.enabled or sorted(reading.devs) != sorted(want):
                    problems.append(f"{host}: pgrx counts on {reading.dev} (enabled={int(reading.enabled)}), "
                                    f"not on {','.join(want)}")
                    self.ready = False   # re-enable it on the next attempt
                if not reading.is_zero:
                    problems.append(f"{host}: pgrx counted {reading.total_packets} packets after reset")
                declared = self._rx_declared.get(host)
                if declared is not None and reading.declared != len(declared):
                    problems.append(f"{host}: pgrx knows {reading.declared} declared streams, not {len(declared)}")
                    self._rx_declared.pop(host)     # declared again on the next attempt
                want = self._rx_pkt_size.get(host)
                if reading.pkt_size is not None and want is not None and reading.pkt_size != want:
                    problems.append(f"{host}: pgrx counts frames of {reading.pkt_size} B, not {want or 'any'}")
                    self._rx_pkt_size.pop(host)     # written again on the next attempt
            else:
                for port, d in reading.delta(base[host]).items():
                    if d.get("rx_packets", 0):
                        problems.append(f"{host}:{port} received {d['rx_packets']} frames while idle")
        return problems
