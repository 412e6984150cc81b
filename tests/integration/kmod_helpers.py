"""Helpers for the rfc2544_pktgen lab tests (no tests in this file).

`kmod` fixture (the single lab; `kmod_on(lab)` for any lab): builds
pktgen-kmod on the host against the lab kernel's headers (lab.kdir; in the
image's own root when the host lacks the kernel's compiler), copies
the .ko and a small in-VM agent to the tester VM, unloads the in-tree pktgen
if loaded, and guarantees that the module is unloaded and qdiscs removed when
the test module ends.

The agent (AGENT below, run with the VM's python3) performs many /proc
writes in one SSH round trip and reports each write's return value (byte
count or -errno) and the file's Result line, so tests can assert on exact
error codes.
"""
import base64
import contextlib
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from rfc2544.drivers import vlan as vlan_devices
from rfc2544.drivers.ssh import put_file, quote
from rfc2544.lab import module_build

ROOT = Path(__file__).resolve().parents[2]
# RFC2544_KMOD_SRC=DIR builds the module from another tree (e.g. an older
# commit's pktgen-kmod, to see a test fail on it); tools/ stay this tree's.
KMOD_SRC = Path(os.environ.get("RFC2544_KMOD_SRC") or ROOT / "pktgen-kmod")
TOOLS = ROOT / "pktgen-kmod" / "tools"
REMOTE_KO = "/root/rfc2544_pktgen.ko"
REMOTE_AGENT = "/root/kmod_agent.py"
REMOTE_FUZZ = "/root/pgfuzz"
PG = "/proc/net/pktgen"
MODULE = "rfc2544_pktgen"
DUT = "ip netns exec dut "

def build_fuzzer():
    """pktgen-kmod/tools/pgfuzz.c, static, for the guest."""
    out = Path(tempfile.mkdtemp(prefix="pgfuzz-")) / "pgfuzz"
    res = subprocess.run(["gcc", "-O2", "-static", "-Wall", "-Wextra", "-Werror", "-o", str(out),
                          str(TOOLS / "pgfuzz.c")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out


def build_ko_for(lab):
    """The module for `lab`'s kernel, built on this host and cached
    (rfc2544.lab.module_build: the kernel's own headers and compiler)."""
    return module_build.build_for(lab.image, KMOD_SRC)


AGENT = r'''
import json, os, sys, base64

PG = "/proc/net/pktgen"

def result_line(path):
    try:
        with open(path, "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError as e:
        return "<read failed: %s>" % e.strerror
    idx = text.rfind("Result:")
    return text[idx + 7:].strip() if idx >= 0 else "<no Result line>"

def write(path, data):
    fd = os.open(path, os.O_WRONLY)
    try:
        return os.write(fd, data)
    except OSError as e:
        return -e.errno
    finally:
        os.close(fd)

def do_writes(req):
    out = []
    for path, b64 in req["writes"]:
        data = base64.b64decode(b64)
        ret = write(path, data)
        out.append({"ret": ret, "result": result_line(path)})
    return out

def pcap_latency(req):
    """Independent latency reference: capture timestamps (ns, from the
    kernel's receive path) minus the test header's ns timestamp."""
    import struct
    with open(req["path"], "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    assert magic == 0xa1b23c4d, "need a nanosecond pcap"
    off, lats, seqs = 24, [], []
    while off + 16 <= len(data):
        sec, nsec, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        pkt = data[off + 16:off + 16 + incl]
        off += 16 + incl
        etype = struct.unpack("!H", pkt[12:14])[0]
        l3 = 14
        udp = l3 + (20 if etype == 0x0800 else 40)
        hdr = pkt[udp + 8:udp + 24]
        if len(hdr) < 16 or struct.unpack("!I", hdr[:4])[0] != 0x25449e55:
            continue
        lats.append(sec * 10**9 + nsec - struct.unpack("!Q", hdr[8:16])[0])
        seqs.append(struct.unpack("!I", hdr[4:8])[0])
    return {"n": len(lats), "mean": sum(lats) / len(lats) if lats else 0,
            "min": min(lats) if lats else 0,
            "seq_first": seqs[0] if seqs else 0, "seq_last": seqs[-1] if seqs else 0}

def _csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s

def decode(pkt, orig):
    """One test frame: Ethernet/[802.1ad][802.1Q][MPLS]/IP/UDP/test header."""
    import ipaddress, struct
    p = {"len": orig, "dst_mac": pkt[0:6].hex(":"), "src_mac": pkt[6:12].hex(":"),
         "tags": [], "mpls": []}
    i, etype = 14, struct.unpack("!H", pkt[12:14])[0]
    while etype in (0x8100, 0x88a8):
        p["tags"].append([etype, struct.unpack("!H", pkt[i:i + 2])[0]])
        etype = struct.unpack("!H", pkt[i + 2:i + 4])[0]
        i += 4
    if etype == 0x8847:
        while True:
            lse = struct.unpack("!I", pkt[i:i + 4])[0]
            p["mpls"].append(lse)
            i += 4
            if lse & 0x100:
                break
        etype = 0x86dd if pkt[i] >> 4 == 6 else 0x0800
    if etype == 0x0800:
        ihl = (pkt[i] & 15) * 4
        p.update(ip=4, tos=pkt[i + 1], ttl=pkt[i + 8], proto=pkt[i + 9],
                 id=struct.unpack("!H", pkt[i + 4:i + 6])[0],
                 src=str(ipaddress.ip_address(pkt[i + 12:i + 16])),
                 dst=str(ipaddress.ip_address(pkt[i + 16:i + 20])),
                 ip_ok=_csum(pkt[i:i + ihl]) == 0xffff)
        pseudo = pkt[i + 12:i + 20] + b"\0\x11" + pkt[i + ihl + 4:i + ihl + 6]
        u = i + ihl
    elif etype == 0x86dd:
        p.update(ip=6, tc=((pkt[i] & 15) << 4) | (pkt[i + 1] >> 4), ttl=pkt[i + 7],
                 proto=pkt[i + 6], src=str(ipaddress.ip_address(pkt[i + 8:i + 24])),
                 dst=str(ipaddress.ip_address(pkt[i + 24:i + 40])))
        pseudo = pkt[i + 8:i + 40] + b"\0\0" + pkt[i + 44:i + 46] + b"\0\0\0\x11"
        u = i + 40
    else:
        return p
    if p["proto"] != 17:
        return p
    sport, dport, ulen, ucsum = struct.unpack("!HHHH", pkt[u:u + 8])
    p.update(sport=sport, dport=dport, ulen=ulen, ucsum=ucsum)
    if ucsum and len(pkt) >= u + ulen:
        p["ucsum_ok"] = _csum(pseudo + pkt[u:u + ulen]) == 0xffff
    h = pkt[u + 8:u + 24]
    if len(h) == 16:
        magic, seq = struct.unpack("!II", h[:8])
        p.update(magic=magic, seq=seq, ts_hi=struct.unpack("!I", h[8:12])[0],
                 ts_lo=struct.unpack("!I", h[12:16])[0], pad_zero=not any(pkt[u + 24:]))
    return p

def capture_run(req):
    """Capture on req["dev"] (AF_PACKET, opened before the run) while a
    blocking `start` runs on req["ctrl"]; return the decoded test frames."""
    import socket, struct, threading, time
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)          # SO_RCVBUFFORCE
    s.bind((req["dev"], 0))
    s.setsockopt(263, 8, 1)                                # SOL_PACKET, PACKET_AUXDATA
    frames = []
    done = threading.Event()

    def run():
        with open(req["ctrl"], "w") as f:
            f.write("start\n")
        done.set()

    threading.Thread(target=run, daemon=True).start()
    s.settimeout(0.2)
    deadline = None
    while True:
        if done.is_set() and deadline is None:
            deadline = time.time() + req.get("settle", 0.3)
        if deadline is not None and time.time() > deadline:
            # the frames in flight have arrived; a slow guest may not have
            # read all that the socket holds yet: take them too
            s.setblocking(False)
        try:
            pkt, anc, _, addr = s.recvmsg(65535, 256)
        except socket.timeout:
            continue
        except BlockingIOError:
            break
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        for level, typ, data in anc:
            # the receive path moved the outer VLAN tag into metadata: put it back
            if level == 263 and typ == 8 and len(data) >= 20:
                status, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", data[:20])
                if status & 0x10:
                    tpid = tpid if status & 0x40 else 0x8100
                    pkt = pkt[:12] + struct.pack("!HH", tpid, tci) + pkt[12:]
        frames.append(pkt)
    out = []
    for pkt in frames:
        p = decode(pkt, len(pkt))
        if "magic" in p:
            out.append(p)
    return out

def pcap_packets(req):
    import struct
    with open(req["path"], "rb") as f:
        data = f.read()
    off, out = 24, []
    while off + 16 <= len(data):
        sec, nsec, incl, orig = struct.unpack("<IIII", data[off:off + 16])
        out.append(decode(data[off + 16:off + 16 + incl], orig))
        off += 16 + incl
    return out

req = json.loads(sys.stdin.read())
if req["op"] == "pcap_packets":
    print(json.dumps(pcap_packets(req)))
elif req["op"] == "capture_run":
    print(json.dumps(capture_run(req)))
if req["op"] == "pcap_latency":
    print(json.dumps(pcap_latency(req)))
if req["op"] == "writes":
    print(json.dumps(do_writes(req)))
'''


def run_all(host, command, timeout=300, stdin=None, check=True):
    """SSHHost.run (which reads to EOF), failing the test on a non-zero status
    with the command and the tail of its stderr."""
    status, out, err = host.run(command, timeout=timeout, check=False, stdin=stdin)
    if check and status != 0:
        raise AssertionError(f"'{command[:200]}' exited {status}: {err[-2000:]}")
    return status, out, err


class KmodVM:
    """The tester VM with rfc2544_pktgen: proc writes, reads, shell."""

    def __init__(self, lab, host, ko):
        self.lab, self.host, self.ko = lab, host, ko
        self._macs = {}

    def run(self, cmd, timeout=300, check=True, stdin=None):
        return run_all(self.host, cmd, timeout=timeout, check=check, stdin=stdin)

    def sh(self, cmd, timeout=300, check=True):
        return self.run(cmd, timeout=timeout, check=check)[1]

    def dut(self, cmd, timeout=120, check=True):
        return self.run(DUT + cmd, timeout=timeout, check=check)[1]

    def agent(self, req, timeout=900):
        return json.loads(self.run(f"python3 {REMOTE_AGENT}", stdin=json.dumps(req),
                                   timeout=timeout)[1])

    def fuzz(self, path, kind, n, seed, mode="random"):
        """pgfuzz in the guest: n malformed writes, each checked (mode:
        random or grammar, see tools/pgfuzz.c)."""
        status, out, err = self.run(f"{REMOTE_FUZZ} {quote(path)} {kind} {int(n)} {int(seed)} "
                                    f"{quote(mode)}", timeout=1200, check=False)
        assert status in (0, 1), f"pgfuzz {path}: exit {status}: {err}"
        return json.loads(out)

    def writes(self, pairs):
        """[(path, str|bytes)] -> [{"ret": n|-errno, "result": str}]"""
        enc = [(p, base64.b64encode(d.encode() if isinstance(d, str) else d).decode())
               for p, d in pairs]
        return self.agent({"op": "writes", "writes": enc})

    def pg(self, path, *cmds):
        """Write commands (each as one `echo` line) in one shell round trip;
        fail with the file's Result line if any write is refused."""
        path = path if path.startswith("/") else f"{PG}/{path}"
        lines = [f"echo {quote(c)} > {quote(path)} || "
                 f"{{ echo {quote('refused: ' + c)}; tail -n 2 {quote(path)}; exit 1; }}"
                 for c in cmds]
        status, out, err = self.run("\n".join(lines), check=False)
        assert status == 0, f"{path}: {out.strip()} {err.strip()}"

    def read(self, name):
        return self.sh(f"cat {quote(PG + '/' + name)}")

    def load(self):
        self.sh(f"rmmod pktgen 2>/dev/null; lsmod | grep -q '^{MODULE} ' && rmmod {MODULE}; "
                f"insmod {REMOTE_KO}")

    def unload(self):
        self.sh(f"lsmod | grep -q '^{MODULE} ' && rmmod {MODULE} || true")

    def mac(self, dev, netns=False):
        key = (dev, netns)
        if key not in self._macs:
            self._macs[key] = self.sh((DUT if netns else "") +
                                      f"cat /sys/class/net/{quote(dev)}/address").strip()
        return self._macs[key]

    def dmesg_mark(self, tag):
        self.sh(f"echo {quote('kmodtest-mark ' + tag)} > /dev/kmsg")

    def dmesg_since(self, tag):
        text = self.sh("dmesg")
        idx = text.rfind("kmodtest-mark " + tag)
        return text[idx:] if idx >= 0 else text

    def start(self, timeout=300):
        """Blocking pgctrl start (returns when every device stopped)."""
        self.sh(f"echo start > {PG}/pgctrl", timeout=timeout)

    def start_bg(self):
        """pgctrl start in the background; stop with stop()."""
        self.sh(f"(echo start > {PG}/pgctrl) >/dev/null 2>&1 < /dev/null & echo $! > /tmp/pgstart.pid")

    def stop(self):
        self.sh(f"echo stop > {PG}/pgctrl; "
                "p=$(cat /tmp/pgstart.pid 2>/dev/null); [ -n \"$p\" ] && "
                "for i in $(seq 50); do kill -0 $p 2>/dev/null || break; sleep 0.1; done; true")

    def start_captured(self, dev="dut0", netns=True, settle=0.3):
        """Blocking `start` with the frames arriving on dev captured; returns
        the decoded test frames (see AGENT decode)."""
        out = self.run((DUT if netns else "") + f"python3 {REMOTE_AGENT}",
                       stdin=json.dumps({"op": "capture_run", "dev": dev, "settle": settle,
                                         "ctrl": "/proc/1/net/pktgen/pgctrl"}),
                       timeout=600)[1]
        return json.loads(out)

    def capture(self, dev, netns=False, snaplen=0):
        """Context manager: tcpdump on dev into a pcap; yields a callable
        that returns the decoded packets once the capture stopped."""
        return _Capture(self, dev, netns, snaplen)

    def clean_qdiscs(self):
        self.sh(DUT + "tc qdisc del dev dut1 root 2>/dev/null; "
                + DUT + "tc qdisc del dev dut0 root 2>/dev/null; true")


class _Capture:
    def __init__(self, vm, dev, netns, snaplen):
        self.vm, self.dev, self.netns, self.snaplen = vm, dev, netns, snaplen
        self.path = f"/tmp/kmodcap-{dev}.pcap"

    def __enter__(self):
        pre = DUT if self.netns else ""
        self.vm.sh(f"rm -f {self.path}; ({pre}tcpdump -i {quote(self.dev)} -n -s {self.snaplen} "
                   f"--time-stamp-precision=nano -w {self.path} 'udp' >/dev/null 2>&1 &); "
                   "for i in $(seq 50); do [ -s " + self.path + " ] && break; sleep 0.1; done; "
                   "sleep 0.5")
        return self

    def __exit__(self, *exc):
        self.vm.sh("sleep 0.3; pkill -INT -x tcpdump; sleep 0.5; true")

    def packets(self):
        return self.vm.agent({"op": "pcap_packets", "path": self.path})


# (the last line: what slub_debug=FZP reports, e.g. "BUG kmalloc-512 (Tainted: G O): Poison overwritten")
BROKEN = re.compile(r"(BUG:|WARNING:|Oops|general protection|Call Trace|RIP:|"
                    r"kernel BUG|soft lockup|hung_task|refcount_t|use-after-free|KASAN|"
                    r"BUG [\w.-]+ \(|Poison overwritten|Redzone overwritten|Freepointer corrupt|Padding overwritten)")


def kernel_problems(dmesg_text):
    return [line for line in dmesg_text.splitlines() if BROKEN.search(line)]


def parse_device(text):
    """Upstream-format device file -> dict of the numbers the tests use."""
    d = {}
    m = re.search(r"pkts-sofar: (\d+)\s+errors: (\d+)(?:\s+tx_dropped: (\d+))?", text)
    d["sofar"], d["errors"], d["tx_dropped"] = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    m = re.search(r"seq_num: (\d+)", text)
    d["seq_num"] = int(m.group(1))
    m = re.search(r"Result: OK: (\d+)\(c(\d+)\+d(\d+)\) usec, (\d+) \((\d+)byte,(\d+)frags\)\s+"
                  r"(\d+)pps (\d+)Mb/sec \((\d+)bps\) errors: (\d+)", text)
    if m:
        d["usec"], d["packets"], d["pps"] = int(m.group(1)), int(m.group(4)), int(m.group(7))
    m = re.search(r"max_gap_ns: (\d+)", text)        # the departure records (module 1.5)
    d["max_gap_ns"] = int(m.group(1)) if m else None
    d["result"] = text[text.rfind("Result:"):].strip()
    return d


def parse_pgrx(text):
    """pgrx `display script` v1 to v6 -> dict (format: docs/pgrx-receiver.md)."""
    out = {"cpus": [], "streams": [], "stat": {}, "hist": []}
    lines = text.splitlines()
    for line in lines:
        if line.startswith("Result:"):
            out["result"] = line[7:].strip()
            continue
        word, *fields = line.split()
        kv = dict(f.split("=", 1) for f in fields)
        assert word != "hist" or len(kv) == 4, f"bad pgrx line {line!r} in:\n{text[-3000:]}"
        if word == "pgrx":
            out["header"] = kv
        elif word == "cpu":
            out["cpus"].append(kv)
        elif word == "total":
            out["total"] = {k: int(v) for k, v in kv.items() if k != "id"}
        elif word == "stream":
            out["streams"].append({k: (v if k == "src" else int(v)) for k, v in kv.items()})     # v6: sid=N instead of src
        elif word == "stat":
            name = kv.pop("name")
            out["stat"][name] = {k: float(v) if k == "mean" else int(v) for k, v in kv.items()}
        elif word == "percentile":
            kv.pop("name")
            out["percentile"] = {k: int(v) for k, v in kv.items()}
        elif word == "hist":
            out["hist"].append((int(kv["low"]), int(kv["high"]), int(kv["count"])))
        elif word == "invalid":             # format v2, v3
            out["invalid"] = {k: int(v) for k, v in kv.items()}
    return out


@contextlib.contextmanager
def kmod_on(lab):
    """The module built against lab.kdir and loaded on lab's tester VM (any
    topology), with the agent and pgfuzz copied there; stopped, qdiscs
    removed and unloaded at the end. Yields a KmodVM."""
    ko = build_ko_for(lab)
    host = lab.connect("tester")
    put_file(host, ko, REMOTE_KO)
    agent = Path(tempfile.mkdtemp()) / "kmod_agent.py"
    agent.write_text(AGENT)
    put_file(host, agent, REMOTE_AGENT)
    put_file(host, build_fuzzer(), REMOTE_FUZZ, mode=0o755)
    vm = KmodVM(lab, host, ko)
    vm.unload()
    vm.load()
    try:
        yield vm
    finally:
        try:
            vm.sh(f"echo stop > {PG}/pgctrl 2>/dev/null; true")
            vm.clean_qdiscs()
            vm.unload()
        finally:
            host.close()


@pytest.fixture(scope="module")
def kmod(lab):
    with kmod_on(lab) as vm:
        yield vm


def add_vlan_stack(run, port, vlan, svlan=None, top_reorder_hdr=True):
    """Create `port`'s VLAN devices with `run` (a shell runner), quiet (no
    IPv6 autoconf, DAD or router solicitations: the test ports stay
    silent), and up; top_reorder_hdr=False: the top device (the 802.1Q one)
    keeps its tag in the frames it receives. Returns the top device's name."""
    stack = vlan_devices.devices(port, vlan, svlan, dotted=True)
    for name, link, proto, vid in stack:
        sysctl = name.replace(".", "/")
        reorder = "" if top_reorder_hdr or name != stack[-1][0] else " reorder_hdr off"
        run(f"ip link add link {link} name {name} type vlan proto {proto} id {vid}{reorder} && "
            + " && ".join(f"sysctl -qw net.ipv6.conf.{sysctl}.{k}=0" for k in vlan_devices.QUIET_IPV6)
            + f" && ip link set {name} up")
    return stack[-1][0]


@contextlib.contextmanager
def dut_vlan(vm, vlan, svlan=None, out=None):
    """The DUT (netns `dut` of the single lab) forwards the test stream
    tagged: VLAN devices on dut0 and dut1 (802.1Q `vlan`, on an 802.1ad
    `svlan` for QinQ), and 198.19.0.1 / 2001:2:0:100::1 routed out of dut1's
    tagged device to rx0's MAC; no reverse-path filter on the tagged
    ingress. `out`: dut1's tags where the DUT changes them, (vlan[, svlan]),
    () for untagged (the lab's own route and neighbour on dut1 then serve).
    Removed on exit, also on failure: the routes and neighbours go with the
    devices, rp_filter is restored.

      tx0 =[tags]= dut0.T [netns dut] dut1.T' =[tags' (out)]= rx0
    """
    rx_mac = vm.mac("rx0")
    rpf_all = vm.dut("sysctl -n net.ipv4.conf.all.rp_filter").strip()
    out = (vlan, svlan) if out is None else tuple(out) + (None,) * (2 - len(out))
    made = []

    def dut_shell(cmd):
        return vm.dut(f"sh -c {quote(cmd)}")
    try:
        made.append(("dut0", vlan, svlan))
        tagged_in = add_vlan_stack(dut_shell, "dut0", vlan, svlan)
        tagged_out = "dut1"
        if out[0] is not None:
            made.append(("dut1",) + out)
            tagged_out = add_vlan_stack(dut_shell, "dut1", *out)
        # no reverse-path filter on the tagged ingress: the source is routed
        # via dut0 itself, and a device without an IPv4 address fails even
        # the loose check (fib_validate_source's no_addr case). The kernel
        # applies the larger of `all` and the device's value: `all` is set
        # to 0 too while the devices exist.
        vm.dut(f"sysctl -qw net.ipv4.conf.{tagged_in.replace('.', '/')}.rp_filter=0")
        if rpf_all != "0":
            vm.dut("sysctl -qw net.ipv4.conf.all.rp_filter=0")
        if tagged_out != "dut1":
            vm.dut(f"ip route replace 198.19.0.1/32 dev {tagged_out}")
            vm.dut(f"ip neigh replace 198.19.0.1 lladdr {rx_mac} dev {tagged_out} nud permanent")
            vm.dut(f"ip -6 route replace 2001:2:0:100::1/128 dev {tagged_out}")
            vm.dut(f"ip -6 neigh replace 2001:2:0:100::1 lladdr {rx_mac} dev {tagged_out} nud permanent")
        yield tagged_in, tagged_out
    finally:
        for port, tag, outer in reversed(made):
            for name, *_ in reversed(vlan_devices.devices(port, tag, outer, dotted=True)):
                vm.dut(f"ip link del {name}", check=False)
        if rpf_all != "0":
            vm.dut(f"sysctl -qw net.ipv4.conf.all.rp_filter={rpf_all}", check=False)


def setup_stream(vm, count, ratep=None, size=64, ipv6=False, thread="kpktgend_0", extra=()):
    """tx0 -> DUT -> rx0 generator on `thread`, receiver on rx0 (reset)."""
    vm.pg(thread, "rem_device_all")
    vm.pg(thread, "add_device tx0")
    cmds = [f"count {count}", f"pkt_size {size}", f"dst_mac {vm.mac('dut0', netns=True)}"]
    if ipv6:
        cmds += ["dst6 2001:2:0:100::1", "src6 2001:2::1"]
    else:
        cmds += ["dst 198.19.0.1", "src_min 198.18.0.1"]
    if ratep:
        cmds.append(f"ratep {ratep}")
    vm.pg("tx0", *cmds, *extra)
    vm.pg("pgrx", "statistics time", "display script", "rx rx0")
