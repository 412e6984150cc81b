"""A simulated tester host for unit tests (no SSH, no kernel: SIMULATED).

`SimKernel` models /proc/net/pktgen (pgctrl, kpktgend_N, device files in the
section B format), the module's pgrx (display script v1 to v6) and interface
counters, plus a DUT with a forwarding capacity and a tester with a sending
ceiling, in SIMULATED time: `SimClock` is shared by the kernel and the
SSHTester under test (its `clock`), and sleeping only advances it, so every
time and rate the tests assert on is exact, however fast the machine runs.
sim_session.py holds the SSH side (`SimSession`, `SimStart`).
"""
import ipaddress
import threading


PKTGEN = "/proc/net/pktgen/"


class SimClock:
    """monotonic() and sleep() of simulated time: sleep(s) advances it by s
    at once. Starts at an arbitrary point, as time.monotonic() does."""

    def __init__(self, start=1000.0):
        self.now = float(start)

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += max(float(seconds), 0.0)


def _stream_field(key):
    """A stream line's first field: sid=N (format v6) or src=ADDR."""
    return f"sid={key[4:]}" if key.startswith("sid:") else f"src={key}"


class SimDevice:
    def __init__(self, name, clock):
        self.name = name
        self.clock = clock
        self.p = {"count": 1000, "pkt_size": 60, "delay": 0, "dst_mac": "00:00:00:00:00:00",
                  "src_min": "", "dst_min": "", "src_max": "", "dst_max": "", "src6": "::", "dst6": "::", "dst6_min": "::", "dst6_max": "::",
                  "src6_min": "::", "src6_max": "::",
                  "ipv6": False, "clone_skb": 0, "udp_src_min": 9, "udp_src_max": 9,
                  "udp_dst_min": 9, "udp_dst_max": 9, "burst_frames": 1,
                  "dst_stride": 1, "stream_id": 0, "vlan_id": 0xffff, "svlan_id": 0xffff,
                  "vlan_p": 0, "vlan_cfi": 0, "svlan_p": 0, "svlan_cfi": 0,
                  "queue_map_min": 0, "queue_map_max": 0, "start_offset": 0,
                  "tos": 0, "traffic_class": 0}
        self.extra = {}             # other Params lines (e.g. vlan_id) written behind the tester's back
        self.result = ""
        self.sofar = 0
        self.started = None
        self.stopped_at = None
        self.run_usec = None
        self.dropped = 0            # frames the tester's own driver dropped
        self.writes = []

    def _us(self):
        if self.started is None:
            return 0, 0
        start = int(self.started * 1e6)
        stop = start + self.run_usec if self.run_usec is not None else int(self.clock.monotonic() * 1e6)
        return start, stop

    def text(self):
        p = self.p
        flags = ("IPV6  " if p["ipv6"] else "") + ("IPDST_RND  " if p.get("dst_rnd") else "")
        lines = [
            f"Params: count {p['count']}  min_pkt_size: {p['pkt_size']}  max_pkt_size: {p['pkt_size']}",
            f"     frags: 0  delay: {p['delay']}  clone_skb: {p['clone_skb']}  ifname: {self.name.split('@')[0]}",
            "     flows: 0 flowlen: 0",
            f"     queue_map_min: {p['queue_map_min']}  queue_map_max: {p['queue_map_max']}",
        ]
        if p["ipv6"]:
            src6, dst6, lo, hi, slo, shi = (ipaddress.IPv6Address(p[k]).compressed
                                            for k in ("src6", "dst6", "dst6_min", "dst6_max", "src6_min", "src6_max"))
            lines += [f"     saddr: {src6}  min_saddr: {slo}  max_saddr: {shi}",
                      f"     daddr: {dst6}  min_daddr: {lo}  max_daddr: {hi}"]
        else:
            lines += [f"     dst_min: {p['dst_min']}  dst_max: {p['dst_max']}",
                      f"     src_min: {p['src_min']}  src_max: {p['src_max']}"]
        if p["burst_frames"] > 1:
            lines.append(f"     burst_frames: {p['burst_frames']}")
        if p["dst_stride"] > 1:
            lines.append(f"     dst_stride: {p['dst_stride']}")
        if p["stream_id"]:
            lines.append(f"     stream_id: {p['stream_id']}")
        if p["start_offset"]:
            lines.append(f"     start_offset: {p['start_offset']}")
        if p["vlan_id"] <= 4095:
            lines.append(f"     vlan_id: {p['vlan_id']}  vlan_p: {p['vlan_p']}  vlan_cfi: {p['vlan_cfi']}")
            if p["svlan_id"] <= 4095:       # upstream names the outer tag's bits vlan_p/vlan_cfi too
                lines.append(f"     svlan_id: {p['svlan_id']}  vlan_p: {p['svlan_p']}  vlan_cfi: {p['svlan_cfi']}")
        for key in ("tos", "traffic_class"):        # the module's device_show.c: only when set
            if p[key]:
                lines.append(f"     {key}: 0x{p[key]:02x}")
        lines += [
            f"     src_mac: 52:54:00:00:00:01 dst_mac: {p['dst_mac']}",
            f"     udp_src_min: {p['udp_src_min']}  udp_src_max: {p['udp_src_max']}  "
            f"udp_dst_min: {p['udp_dst_min']}  udp_dst_max: {p['udp_dst_max']}",
            "     src_mac_count: 0  dst_mac_count: 0",
        ] + [f"     {k}: {v}" for k, v in self.extra.items()] + [
            f"     Flags: {flags}",
            "Current:",
            f"     pkts-sofar: {self.sofar}  errors: {self.dropped}  tx_dropped: {self.dropped}",
            f"     started: {self._us()[0]}us  stopped: {self._us()[1]}us idle: 0us",
            f"     seq_num: {self.sofar + 1}  cur_dst_mac_offset: 0  cur_src_mac_offset: 0",
            "     cur_saddr: 198.18.0.1  cur_daddr: 198.19.0.1",
            "     cur_udp_dst: 9  cur_udp_src: 9",
            "     cur_queue_map: 0",
            "     flows: 0",
        ]
        if self.run_usec is not None:
            usec = max(self.run_usec, 1)
            pps = self.sofar * 1000000 // usec
            lines.append(f"Result: OK: {usec}(c{usec - 5}+d5) usec, {self.sofar} ({p['pkt_size']}byte,0frags)")
            lines.append(f"  {pps}pps {pps * p['pkt_size'] * 8 // 1000000}Mb/sec ({pps * p['pkt_size'] * 8}bps) errors: {self.dropped}  tx_dropped: {self.dropped}")
        else:
            lines.append(f"Result: {self.result or 'Idle'}")
        return "\n".join(lines) + "\n"


STRAY_SOURCE = "203.0.113.9"     # an intruder's source address (SimKernel.stray_frames)


class SimKernel:
    """One tester host (+ a DUT that forwards its streams)."""

    def __init__(self, threads=2, pgrx=True, dut_capacity_fps=None, tester_ceiling_fps=None,
                 rx_dev="rx0", noise_rx=0, loss_every=None, clock=None, tx_drop_every=None,
                 start_delay_s=0.0, stops_before_start=0, pgrx_version=4, rx_size_change=0,
                 device_loss_every=None, module_version=None, dut_bucket_frames=None, stray_frames=0):
        self.clock = clock or SimClock()
        self.lock = threading.RLock()
        self.threads = {i: [] for i in range(threads)}
        self.devices = {}
        self.has_pgrx = pgrx
        self.dut_capacity_fps = dut_capacity_fps
        self.tester_ceiling_fps = tester_ceiling_fps
        self.noise_rx = noise_rx            # extra frames the rx port counts per trial (ARP ...)
        self.loss_every = loss_every        # lose every Nth frame (DUT loss independent of rate)
        self.tx_drop_every = tx_drop_every  # the tester's driver drops every Nth frame (never sent)
        self.rx_dev = rx_dev
        self.rx_devs = [rx_dev]             # what `rx DEV [DEV ...]` named (several: format v4)
        self.device_loss_every = dict(device_loss_every or {})   # pktgen device -> lose every Nth of its frames
        self.start_delay_s = start_delay_s  # a start's write to the threads' first frame (a loaded tester)
        self.stops_before_start = stops_before_start  # stops that reach pgctrl before the start does: lost
        self.running = False
        self.t_start = None
        self.rx_enabled = False
        self.rx_level = "time"
        self.jitter_max_ns = 900     # pgrx `jitter` max at level time: the path's longest hold
        self.rx_result = ""
        # 3 takes `pkt_size N` (frames of another length: wrong_size); 4 (module 1.1) several devices
        self.pgrx_version = pgrx_version
        # 1.2 has burst_frames (bursty traffic), 1.3 stream ids; the default follows pgrx_version
        self.module_version = module_version or {6: "1.3", 5: "1.2", 4: "1.1"}.get(pgrx_version, "1.0")
        self.rx_declared = []               # `streams` (format v5): the declared sources or sid:N, [] any
        # test frames from a source no plan has (STRAY_SOURCE), seen once traffic arrived
        self.stray_frames = stray_frames
        # a policer's bucket: a burst of more frames loses the excess (the mean rate within capacity)
        self.dut_bucket_frames = dut_bucket_frames
        self.rx_pkt_size = 0
        self.rx_pkt_size_writes = 0
        self.rx_size_change = rx_size_change    # bytes a DUT adds to (or takes from) every frame
        self.rx_counter_base = 12345        # interface counters never start at zero
        # the host's own packet path (drivers/host_path.py): tests raise them mid-trial
        self.softnet_dropped = self.softnet_squeezed = self.nic_drops = 0
        self.path_drops_at_start = None     # (dropped, squeezed) added when traffic starts
        # a DUT namespace's queue facts (the probe's QUEUE_SCRIPT run there)
        self.dut_queue_text = "queues dut0 1 1 -1\nrps dut0 rx-0 2\nqueues dut1 1 1 -1\nrps dut1 rx-0 2\n"
        self.rx_delivered = {}              # device -> frames delivered so far
        self.rx_gap = {}
        self.starts = 0
        self.resets = 0                     # setups that forgot every device (reset or forget_devices)
        self.start_channels = []            # every SimStart opened, in order
        self.log = []
        self.fail_on = None                 # (path, command prefix) that the kernel refuses
        self.tx_queues = {"tx0": 1, "rx0": 1}   # interface -> TX queues (sysfs), as the probe reads them

    # ---------------------------------------------------------------- writes
    def write(self, path, cmd):
        with self.lock:
            self.log.append((path, cmd))
            if self.fail_on and path == self.fail_on[0] and cmd.startswith(self.fail_on[1]):
                dev = self.devices.get(path[len(PKTGEN):])
                if dev:
                    dev.result = f'No such parameter "{cmd.split()[0]}"'
                return False, f'Result: No such parameter "{cmd.split()[0]}"'
            name = path[len(PKTGEN):]
            if name == "pgctrl":
                return self._pgctrl(cmd)
            if name.startswith("kpktgend_"):
                t = int(name.split("_")[1])
                if cmd == "rem_device_all":
                    for d in self.threads[t]:
                        self.devices.pop(d, None)
                    self.threads[t] = []
                    return True, ""
                if cmd.startswith("add_device "):
                    dev = cmd.split()[1]
                    if dev in self.devices:
                        return False, f"Result: ERROR: can not add device {dev}"
                    self.devices[dev] = SimDevice(dev, self.clock)
                    self.threads[t].append(dev)
                    return True, ""
                return False, "Result: bad thread command"
            if name == "pgrx":
                return self._pgrx(cmd)
            dev = self.devices.get(name)
            if dev is None:
                return False, "(no such file)"
            return self._dev(dev, cmd)

    def forget_devices(self):
        """Batch.forget_devices: rem_device_all to each thread that lists
        a device (this kernel removes at once, as the module does)."""
        self.resets += 1
        for t, devices in list(self.threads.items()):
            if devices:
                self.write(f"{PKTGEN}kpktgend_{t}", "rem_device_all")

    def _pgctrl(self, cmd):
        if cmd == "stop":
            if self.stops_before_start:
                self.stops_before_start -= 1
                return True, ""
            self._update()
            self._stop()
            return True, ""
        if cmd == "reset":
            self._stop()
            self.resets += 1
            self.devices.clear()
            self.threads = {i: [] for i in self.threads}
            return True, ""
        if cmd == "start":
            self.start()
            while True:
                with self.lock:
                    self._update()
                    if not self.running:
                        return True, ""
                self.clock.sleep(0.002)
        return False, ""

    def _dev(self, dev, cmd):
        word, _, arg = cmd.partition(" ")
        p = dev.p
        dev.writes.append(cmd)
        if word in ("count", "pkt_size", "delay", "clone_skb", "udp_src_min", "udp_src_max",
                    "udp_dst_min", "udp_dst_max", "queue_map_min", "queue_map_max"):
            p[word] = int(arg)
        elif word in ("burst_frames", "dst_stride") and self.module_version >= "1.2":
            p[word] = max(int(arg), 1)
        elif word == "stream_id" and self.module_version >= "1.3":
            p[word] = int(arg)
        elif word in ("tos", "traffic_class"):    # both generators: two hex digits
            if int(arg, 16) > 0xff:
                return False, f"Result: ERROR: {word} hex 00..ff"
            p[word] = int(arg, 16)
        elif word == "start_offset" and self.module_version >= "1.7":
            p[word] = int(arg)      # the simulated start ignores it: it models no phase
        elif word in ("src6_min", "src6_max") and self.module_version >= "1.6":
            p[word] = arg
        elif word in ("vlan_id", "svlan_id"):     # both generators; above 4095 removes the tag
            p[word] = int(arg) if int(arg) <= 4095 else 0xffff
            if word == "vlan_id" and int(arg) > 4095:
                p["svlan_id"] = 0xffff
        elif word in ("vlan_p", "vlan_cfi", "svlan_p", "svlan_cfi"):
            # the in-tree pktgen takes them only on a tagged device, in range
            tag = "svlan_id" if word.startswith("s") else "vlan_id"
            if p[tag] > 4095 or int(arg) > (7 if word.endswith("_p") else 1):
                return False, f"Result: ERROR: {word} out of range or no {tag}"
            p[word] = int(arg)
        elif word == "ratep":
            with self.lock:
                self._update()
                if self.running and dev.run_usec is None:   # rate change while sending
                    dev.anchor = (self.clock.monotonic(), dev.sofar)
                p["delay"] = 10**9 // int(arg)
        elif word == "dst_mac":
            p["dst_mac"] = arg
        elif word in ("src_min", "dst_min", "src_max", "dst_max", "src6", "dst6", "dst6_min", "dst6_max"):
            p[word] = arg
            if word == "dst6":
                p["ipv6"] = True
        elif word == "flag":
            if arg == "IPV6":
                p["ipv6"] = True
            elif arg == "!IPV6":
                p["ipv6"] = False
            elif arg.lstrip("!") == "IPDST_RND":
                p["dst_rnd"] = not arg.startswith("!")
        elif word == "clear_counters":
            dev.sofar, dev.run_usec, dev.dropped = 0, None, 0
        elif word in ("imix_weights", "min_pkt_size", "max_pkt_size"):
            pass
        else:
            dev.result = f'No such parameter "{word}"'
            return False, f"Result: {dev.result}"
        dev.result = f"OK: {word}={arg}"
        return True, ""

    def _pgrx(self, cmd):
        if not self.has_pgrx:
            return False, "(no such file)"
        word, _, arg = cmd.partition(" ")
        if word == "rx":
            devs = arg.split()
            if not devs or (len(devs) > 1 and self.pgrx_version < 4):
                self.rx_result = "ERROR: usage: rx DEV"
                return False, f"Result: {self.rx_result}"
            self.rx_devs, self.rx_dev, self.rx_enabled = devs, devs[0], True
            self.rx_declared = []
            self._rx_reset()
        elif word == "rx_reset":
            self._rx_reset()
        elif word == "statistics":
            self.rx_level = arg
            self._rx_reset()
        elif word in ("display", "action", "rx_disable"):
            pass
        elif word == "streams" and self.pgrx_version >= 5 and arg:
            self.rx_declared = [] if arg == "any" else arg.split(",")
            self._rx_reset()
        elif word == "pkt_size" and self.pgrx_version >= 3 and arg.isdigit():
            self.rx_pkt_size = int(arg)
            self.rx_pkt_size_writes += 1
        else:
            self.rx_result = "No such command"
            return False, f"Result: {self.rx_result}"
        self.rx_result = f"OK: {cmd}"
        return True, ""

    def _rx_reset(self):
        self.rx_delivered = {}
        self.rx_gap = {}

    # --------------------------------------------------------------- traffic
    def start(self):
        if self.path_drops_at_start:
            dropped, squeezed = self.path_drops_at_start
            self.softnet_dropped += dropped
            self.softnet_squeezed += squeezed
        with self.lock:
            self.running = True
            self.starts += 1
            self.t_start = self.clock.monotonic() + self.start_delay_s
            for d in self.devices.values():
                d.sofar, d.run_usec, d.started, d.dropped = 0, None, self.t_start, 0
                d.anchor = (self.t_start, -1)   # the first frame goes at once
                d.result = "Starting"
            self.noise_pending = True

    def _rate(self, dev):
        want = 10**9 / dev.p["delay"] if dev.p["delay"] else float("inf")
        if self.tester_ceiling_fps:
            want = min(want, self.tester_ceiling_fps / max(len(self.devices), 1))
        return want

    def _update(self):
        if not self.running:
            return
        now = self.clock.monotonic()
        if now < self.t_start:
            return
        active = [d for d in self.devices.values() if d.run_usec is None]
        for d in active:
            rate = self._rate(d)
            t_a, n_a = d.anchor
            n = d.p["count"] if rate == float("inf") else min(d.p["count"], n_a + 1 + int((now - t_a) * rate))
            d.dropped = n // self.tx_drop_every if self.tx_drop_every else 0
            self._deliver(d, n - d.dropped)
            if n >= d.p["count"]:
                done_at = t_a + (d.p["count"] - 1 - n_a) / rate if rate != float("inf") else d.started
                d.run_usec = max(int((done_at - d.started) * 1e6), 1)
        if all(d.run_usec is not None for d in self.devices.values()):
            self.running = False

    def _deliver(self, d, n):
        new = n - d.sofar
        if new <= 0:
            return
        d.sofar = n
        offered = sum(10**9 / x.p["delay"] if x.p["delay"] else 1e12 for x in self.devices.values())
        share = 1.0 if not self.dut_capacity_fps else min(1.0, self.dut_capacity_fps / offered)
        got = self.rx_delivered.get(d.name, 0.0)
        lost_now = new - int(round(new * share))
        every = self.device_loss_every.get(d.name, self.loss_every)
        if every:
            lost_now = d.sofar // every - (d.sofar - new) // every
        b = d.p["burst_frames"]
        if self.dut_bucket_frames is not None and b > self.dut_bucket_frames:
            # frames beyond the bucket in each burst begun so far
            def over(n):
                whole, part = divmod(n, b)
                return whole * (b - self.dut_bucket_frames) + max(part - self.dut_bucket_frames, 0)
            lost_now += over(d.sofar) - over(d.sofar - new)
        self.rx_delivered[d.name] = got + new - lost_now
        self.rx_gap[d.name] = self.rx_gap.get(d.name, 0) + lost_now

    def _stop(self):
        now = self.clock.monotonic()
        for d in self.devices.values():
            if d.run_usec is None and d.started is not None and self.running:
                d.run_usec = max(int((now - d.started) * 1e6), 1)
        self.running = False

    # ---------------------------------------------------------------- reads
    def read(self, path):
        with self.lock:
            self._update()
            name = path[len(PKTGEN):] if path.startswith(PKTGEN) else None
            if name == "pgrx" and self.has_pgrx:
                return self._pgrx_text()
            if name in self.devices:
                return self.devices[name].text()
            if path == f"/sys/class/net/{self.rx_dev}/statistics/rx_packets":
                total = sum(int(v) for v in self.rx_delivered.values())
                return f"{self.rx_counter_base + total}\n"
            if path.startswith("/sys/class/net/") and "/statistics/" in path:
                return f"{self.nic_drops}\n" if path.endswith("/rx_dropped") else "0\n"
            if path == "/proc/net/softnet_stat":
                # two CPUs: processed, dropped, time_squeeze, then zeros (hex, as the kernel prints)
                return "".join(f"{1000 * (cpu + 1):08x} {d:08x} {q:08x} 00000000\n" for cpu, (d, q) in
                               enumerate(((self.softnet_dropped, self.softnet_squeezed), (0, 0))))
            return None

    def _pgrx_text(self):
        streams = []
        wrong_size = foreign = 0
        seen = set()
        arrivals = dict(self.rx_delivered)
        if self.stray_frames and arrivals:
            arrivals[STRAY_SOURCE] = self.stray_frames
        for name, got in arrivals.items():
            got = int(got)
            dev = self.devices.get(name)
            # the module pads a frame too short for its headers (rfc2544/wire.py): 78 B over IPv6,
            # 4 B more per VLAN tag (pgrx 1.4 counts the tags its VLAN devices took off)
            tags = 4 * ((dev.p["vlan_id"] <= 4095) + (dev.p["vlan_id"] <= 4095 and dev.p["svlan_id"] <= 4095)) \
                if dev else 0
            least = (78 if dev.p["ipv6"] else 58) + tags if dev else 0
            wire = max(int(dev.p["pkt_size"]), least, 60) + self.rx_size_change if dev else 0
            if self.rx_pkt_size and dev and wire != self.rx_pkt_size:
                wrong_size += got      # another length than pgrx counts: not counted, so lost
                continue
            src = dev.p["src6"] if dev and dev.p["ipv6"] else (dev.p["src_min"] if dev else name)
            if dev and dev.p["stream_id"] and self.pgrx_version >= 6:
                src = f"sid:{dev.p['stream_id']}"     # counted by the id its frames carry
            if self.rx_declared and src not in self.rx_declared:
                foreign += got         # no declared stream's: in no stream and no total
                continue
            seen.add(src)
            gap = self.rx_gap.get(name, 0)
            streams.append(f"stream {_stream_field(src)} packets={got} bytes={got * 60} seq_max={got + gap} "
                           f"lost={gap} ooo=0 dup=0 old=0")
        # declared streams are listed from the start, frames or none
        streams += [f"stream {_stream_field(src)} packets=0 bytes=0 seq_max=0 lost=0 ooo=0 dup=0 old=0"
                    for src in self.rx_declared if src not in seen]
        total = sum(int(v) for v in arrivals.values()) - wrong_size - foreign
        lat = self.rx_level == "time" and total > 0
        n = total if lat else 0
        v = self.pgrx_version
        devs = ",".join(self.rx_devs) if v >= 4 else self.rx_dev
        ifindex = ",".join(str(5 + i) for i in range(len(self.rx_devs))) if v >= 4 else "5"
        lines = [f"pgrx version={v} enabled={int(self.rx_enabled)} dev={devs} ifindex={ifindex} "
                 f"statistics={self.rx_level} action=drop" + (f" pkt_size={self.rx_pkt_size}" if v >= 3 else "")
                 + f" streams={len(streams)} streams_dropped=0"
                 + (f" declared={len(self.rx_declared)} foreign={foreign}" if v >= 5 else ""),
                 f"cpu id=0 packets={total} bytes={total * 60} first_ns=0 last_ns=0",
                 f"total id=all packets={total} bytes={total * 60} first_ns=0 last_ns=0", *streams]
        if v >= 2:
            lines.append("invalid bad_len=0 bad_csum=0 bad_ts=0 seq_jump=0"
                         + (f" wrong_size={wrong_size}" if v >= 3 else ""))
        if lat:
            lines += [f"stat name=latency n={n} skipped=0 min=10000 max=50000 mean=20000.000 var=100 "
                      f"sum={20000 * n} sumsq={n * (20000 ** 2 + 100)}",
                      f"stat name=interarrival n={n - 1} skipped=0 min=1 max=2 mean=1.500 var=0 sum=1 sumsq=1",
                      f"stat name=jitter n={n - 1} skipped=0 min=0 max={self.jitter_max_ns} mean=300.000 var=0 "
                      f"sum={300 * (n - 1)} sumsq=0",
                      f"percentile name=latency n={n} p50=19968 p90=30000 p99=40000 p999=49920 p9999=50000",
                      f"hist name=latency low=19968 high=20095 count={n}"]
        else:
            for name in ("latency", "interarrival", "jitter"):
                lines.append(f"stat name={name} n=0 skipped=0 min=0 max=0 mean=0.000 var=0 sum=0 sumsq=0")
            lines.append("percentile name=latency n=0 p50=0 p90=0 p99=0 p999=0 p9999=0")
        lines += ["end", f"Result: {self.rx_result or 'OK'}"]
        return "\n".join(lines) + "\n"

    def probe_text(self):
        out = ["pgctrl Packet Generator for packet performance testing. Version: 2.75"]
        if self.has_pgrx:
            out += ["pgrx", f"modver {self.module_version}"]
        out += [f"thread {t}" for t in self.threads]
        out += [f"queues {name} {n} 1 -1" for name, n in self.tx_queues.items()]
        return "\n".join(out) + "\n"
