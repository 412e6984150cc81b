"""`Lab`: bring a named QEMU lab up and down, reach its hosts, cap its DUT."""
import fcntl
import json
import os
import re
import shutil
import socket
import time
from contextlib import contextmanager
from pathlib import Path

from rfc2544.errors import BadInput, HostKeyError, InfraError
from rfc2544.lab import image as image_mod
from rfc2544.lab import inventory_file, paths, qemu, seed, topology
from rfc2544.lab.boot_faults import BootCrash, ClockFault, clock_fault, console_clock_fault

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")
# one guest kernel command-line word: name or name=value, nothing a shell or QEMU would split
KERNEL_ARG = re.compile(r"[A-Za-z0-9_.-]+(=[A-Za-z0-9_.,:=-]+)?")
# Under TCG a Debian boot to sshd takes ~1 minute on a busy 2-core host.
SSH_TIMEOUT = float(os.environ.get("RFC2544_LAB_SSH_TIMEOUT", "300"))


def ready_timeout(nice):
    """Seconds to wait for a VM's SSH: twice as long for a niced (background) VM."""
    return SSH_TIMEOUT * (2 if nice else 1)


# A booting VM whose console has not grown for this long and whose SSH does
# not answer has hung (CI: a sid guest silent for 600 s after "smp: Brought
# up 1 node, 2 CPUs"); a booting kernel and systemd print every few seconds,
# even on a loaded TCG host.
STALL_S = float(os.environ.get("RFC2544_LAB_STALL_S", "240"))


def stall_timeout(nice):
    return STALL_S * (2 if nice else 1)


# A VM that has not had the CPU is starved, not late: its wait runs past
# ready_timeout until its QEMU has run CPU_SHARE of that time on a CPU, up to
# STARVED_CAP times the timeout (CI: a niced sid VM, booting beside four
# busier sessions, was still mounting /tmp 585 s after its start; another
# had run 192 s on a CPU in 603 s and was starting its last units).
CPU_SHARE = 1.0
STARVED_CAP = 3
# Connecting to a lab VM: its sshd answers late on a busy host (CI: "Error
# reading SSH protocol banner" from a niced guest); a refused host key is final.
CONNECT_ATTEMPTS = 3
CONNECT_TIMEOUT_S = 30.0


class Lab:
    def __init__(self, name="default"):
        if not NAME_RE.match(str(name)):
            raise BadInput(f"lab name '{name}' must be 1-32 letters, digits, '.', '_' or '-'")
        self.name = str(name)
        self.dir = paths.labs_dir() / self.name
        self._image = None

    # ---- paths and facts -------------------------------------------------
    @property
    def inventory_path(self) -> Path:
        return self.dir / "inventory.yml"

    key_file = property(lambda self: self.dir / "id_ed25519")
    known_hosts = property(lambda self: self.dir / "known_hosts")
    state_file = property(lambda self: self.dir / "state.json")

    @property
    def image(self):
        if self._image is None:
            state = self._state()
            if state and state.get("image_dir") and Path(state["image_dir"], "image.json").exists():
                self._image = image_mod.Image(Path(state["image_dir"]))
            else:
                self._image = image_mod.ensure_image()
        return self._image

    @property
    def kdir(self) -> Path:
        """KBUILD dir for the lab kernel, usable on the host: make -C <kdir> M=..."""
        return self.image.kdir

    @property
    def kernel_release(self) -> str:
        return self.image.kernel_release

    @property
    def topology(self):
        state = self._state()
        return topology.get(state["topology"]) if state else None

    @property
    def dut_netns(self):
        """Namespace of the DUT on its VM ('dut' in the single topology), or None."""
        topo = self.topology
        return topo.dut_netns if topo else None

    # ---- state ------------------------------------------------------------
    def _state(self):
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None

    def _save(self, state):
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1) + "\n")
        tmp.replace(self.state_file)

    def _qemu_name(self, vm):
        return f"rfc2544-{self.name}-{vm}"

    @contextmanager
    def _lock(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / "lock", "w") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise BadInput(f"lab '{self.name}' is busy: another `lab up`/`lab down` is running")
            yield

    def _busy(self):
        """True while another process holds the lab's lock (booting or stopping)."""
        try:
            with open(self.dir / "lock", "r") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return True
                fcntl.flock(f, fcntl.LOCK_UN)
        except OSError:
            pass
        return False

    def running_vms(self):
        state = self._state() or {}
        return {vm: info["pid"] for vm, info in state.get("vms", {}).items()
                if info.get("pid") and qemu.is_our_qemu(info["pid"], self._qemu_name(vm))}

    def is_up(self):
        return bool(self.running_vms())

    # ---- up / down ----------------------------------------------------------
    def up(self, topology_name="single", log=print, nice=0, kernel_args=(),
           release=image_mod.DEFAULT_RELEASE, nic=qemu.DEFAULT_NIC):
        """Build the image if needed, boot the topology's VMs, write the
        inventory. `nice`: the QEMU processes' niceness (a background lab
        that should only use CPU time others leave idle). `kernel_args`:
        extra guest kernel command-line words (checked: KERNEL_ARG).
        `release`: the Debian release of the image (image.RELEASES).
        `nic`: the QEMU NIC model of the two-host test links (qemu.NICS);
        the single topology's test links are veth pairs inside its VM."""
        kernel_args = tuple(kernel_args)
        for word in kernel_args:
            if not KERNEL_ARG.fullmatch(word):
                raise BadInput(f"lab: kernel argument {word!r} is not of the form name or name=value "
                               "(letters, digits, and . , _ - = :)")
        topo = topology.get(topology_name)
        image_mod.release_info(release)
        qemu.nic_model(nic)
        if not topo.links and nic != qemu.DEFAULT_NIC:
            raise BadInput(f"lab: --nic {nic} needs the two-host topology: the {topo.name} topology's "
                           "test links are veth pairs inside one VM, not QEMU NICs")
        qemu.qemu_binary()
        with self._lock():
            running = self.running_vms()
            if running:
                vm, pid = next(iter(running.items()))
                raise BadInput(f"lab '{self.name}' is already up ({vm} is pid {pid}): "
                               f"run `rfc2544 lab down --name {self.name}` first")
            img = image_mod.ensure_image(release=release)
            self._image = img
            accel = qemu.accel(img.kernel)
            t0 = time.monotonic()
            self._clean_state_dir()
            seed.keygen(self.key_file, f"rfc2544-lab-{self.name}")
            ports = {vm.name: qemu.free_port() for vm in topo.vms}
            udp = self._link_ports(topo)
            state = {"name": self.name, "topology": topo.name, "accel": accel,
                     "release": release, "nic": nic if topo.links else None,
                     "image_dir": str(img.dir), "kernel_release": img.kernel_release,
                     "kernel_args": list(kernel_args), "started": time.time(), "vms": {}}
            known = []
            for vm in topo.vms:
                vm_dir = self.dir / vm.name
                vm_dir.mkdir(parents=True, exist_ok=True)
                seed.make_seed(vm_dir, vm.name, self.key_file.with_name("id_ed25519.pub"),
                               topo.script(vm.name))
                known.append(f"[127.0.0.1]:{ports[vm.name]} {seed.host_public_key(vm_dir)}")
                qemu.make_overlay(img.rootfs, vm_dir / "overlay.qcow2")
            self.known_hosts.write_text("\n".join(known) + "\n")
            os.chmod(self.known_hosts, 0o644)

            def vm_command(vm, extra_args=()):
                vm_dir = self.dir / vm.name
                cmd = qemu.command(
                    name=self._qemu_name(vm.name), vm_dir=vm_dir, kernel=img.kernel,
                    initrd=img.initrd, accel_name=accel, ssh_port=ports[vm.name],
                    mgmt_mac=vm.mgmt_mac, links=udp.get(vm.name, ()),
                    kernel_args=kernel_args + tuple(extra_args), nic=nic)
                (vm_dir / "qemu.cmdline").write_text(" ".join(cmd) + "\n")
                return cmd

            cmds = {}
            try:
                for vm in topo.vms:
                    cmds[vm.name] = vm_command(vm)
                    self._start_vm(state, vm.name, cmds[vm.name], ports[vm.name], nice)
                # A niced VM yields the host to everything else: CI saw a
                # niced sid VM ready 296 s after its start under load.
                wait_s = ready_timeout(nice)
                log(f"lab {self.name}: {topo.name} topology, {len(topo.vms)} VM(s) booting under "
                    f"{accel.upper()} (waiting up to {wait_s:.0f} s for SSH)")
                for vm in topo.vms:
                    try:
                        self._wait_ready(vm.name, ports[vm.name], t0, nice)
                    except BootCrash as crash:
                        # Under TCG a vCPU can run code another vCPU is
                        # live-patching (an int3 of text_poke_bp): an emulator
                        # race, not the guest's bug; so is a guest spinning
                        # short of SSH. Boot it once more from a fresh overlay
                        # (a clock mis-measured under load, ClockFault, told
                        # the HPET's rate); a second crash or hang fails.
                        what = (f"{vm.name}'s clock is wrong: {crash.first_line}"
                                if isinstance(crash, ClockFault) else
                                f"{vm.name} crashed while booting ({crash.first_line})")
                        log(f"lab {self.name}: {what}; booting it again"
                            f"{''.join(' with ' + a for a in crash.kernel_args)} "
                            f"(its console kept as console.crash.log)")
                        pid = state["vms"][vm.name]["pid"]
                        if pid:     # a hung VM still runs
                            qemu.stop(pid, self._qemu_name(vm.name))
                        vm_dir = self.dir / vm.name
                        shutil.copyfile(vm_dir / "console.log", vm_dir / "console.crash.log")
                        qemu.make_overlay(img.rootfs, vm_dir / "overlay.qcow2")
                        if crash.kernel_args:
                            cmds[vm.name] = vm_command(vm, crash.kernel_args)
                        self._start_vm(state, vm.name, cmds[vm.name], ports[vm.name], nice)
                        self._wait_ready(vm.name, ports[vm.name], time.monotonic(), nice, retry=False)
            except BaseException:
                self._stop_all(state)
                raise
            state["boot_seconds"] = round(time.monotonic() - t0, 1)
            self._save(state)
            inventory_file.write(self.inventory_path, inventory_file.build(
                self.name, topo, ports, self.key_file, self.known_hosts,
                speed_mbps=qemu.NICS[nic][2] if topo.links else None))
            log(f"lab {self.name}: up in {state['boot_seconds']:.0f} s; inventory {self.inventory_path}")
        return self.status()

    def _clean_state_dir(self):
        for p in self.dir.iterdir():
            if p.name == "lock":
                continue
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()

    def _link_ports(self, topo):
        """For two-host: per VM, (mac, local udp port, remote udp port) per NIC."""
        out = {}
        for tester_nic, dut_nic in topo.links.items():
            a, b = qemu.free_port(socket.SOCK_DGRAM), qemu.free_port(socket.SOCK_DGRAM)
            while b == a:
                b = qemu.free_port(socket.SOCK_DGRAM)
            out.setdefault("tester", []).append((topology.PORTS[tester_nic].mac, a, b))
            out.setdefault(topo.dut_vm, []).append((topology.PORTS[dut_nic].mac, b, a))
        return out

    def _start_vm(self, state, vm, cmd, port, nice):
        pid = qemu.start(cmd, self.dir / vm, nice=nice)
        state["vms"][vm] = {"pid": pid, "ssh_port": port, "console": str(self.dir / vm / "console.log")}
        self._save(state)

    def _wait_ready(self, vm, port, t0, nice, retry=True):
        """Wait until SSH answers with the VM's verified host key and the seed
        unit marked the network ready. A VM whose kernel crashed while
        booting, or whose console stayed silent for stall_timeout without
        SSH, raises BootCrash if `retry`, else InfraError."""
        wait_s, stall_s = ready_timeout(nice), stall_timeout(nice)
        banner_seen = False
        console = self.dir / vm / "console.log"
        last_err = "no answer"
        console_size, grown_at = -1, time.monotonic()
        pid = self._state()["vms"][vm]["pid"]
        cpu0 = qemu.cpu_seconds(pid)
        while not self._waited_enough(t0, wait_s, pid, cpu0):
            state = self._state()
            pid = state["vms"][vm]["pid"]
            if not qemu.is_our_qemu(pid, self._qemu_name(vm)):
                # Without an oops too: with -no-reboot a guest's reset ends
                # QEMU (CI: a sid tester's console stopped at 9.4 s, "sched_clock:
                # Marking stable", and its QEMU was gone, having said nothing).
                crash = qemu.boot_crash(console) or "its QEMU exited (the guest reset) without a kernel message"
                if retry:
                    raise BootCrash(crash)
                raise InfraError(f"lab {self.name}: VM {vm} exited during boot; console tail:\n"
                                 + qemu.console_tail(console))
            size = console.stat().st_size if console.exists() else 0
            if size != console_size:
                console_size, grown_at = size, time.monotonic()
                fault = console_clock_fault(console, state.get("accel"))
                if fault:
                    if retry:
                        raise fault
                    raise InfraError(f"lab {self.name}: VM {vm}: {fault.first_line}; console tail:\n"
                                     + qemu.console_tail(console))
            banner = qemu.ssh_banner(port)
            banner_seen = banner_seen or banner
            if not banner_seen and time.monotonic() - grown_at > stall_s:
                what = (f"hung: console silent for {stall_s:.0f} s after "
                        f"'{qemu.console_tail(console, lines=1)}'")
                if retry:
                    raise BootCrash(what)
                raise InfraError(f"lab {self.name}: VM {vm} {what}; console tail:\n" + qemu.console_tail(console))
            if banner:
                try:
                    host = self._ssh(vm, port, timeout=20)
                except InfraError as exc:
                    last_err = str(exc)
                else:
                    try:
                        status, out, _ = host.run(
                            "test -e /run/rfc2544-ready && { echo ready; dmesg | grep -E 'tsc: |clocksource: tsc: '; } || "
                            "{ systemctl is-active rfc2544-seed; tail -n 5 /run/rfc2544-network.log; }",
                            timeout=30, check=False)
                    finally:
                        host.close()
                    if out.split("\n", 1)[0].strip() == "ready":
                        fault = clock_fault(out, state.get("accel"))
                        if fault is None:
                            return
                        if fault != "pending":
                            if retry:
                                raise fault
                            raise InfraError(f"lab {self.name}: VM {vm}: {fault.first_line}; its kernel log:\n"
                                             + out.split("\n", 1)[-1].strip())
                        last_err = "the guest has not refined its TSC calibration yet"
                        time.sleep(2)
                        continue
                    if "failed" in out or "inactive" in out.split("\n")[0]:
                        raise InfraError(f"lab {self.name}: {vm}: network setup failed: "
                                         + " | ".join(out.strip().splitlines()[-3:]))
                    last_err = "network setup still running"
            time.sleep(2)
        elapsed, cpu = time.monotonic() - t0, qemu.cpu_seconds(pid)
        used = None if cpu is None or cpu0 is None else cpu - cpu0
        ran = "" if used is None else f"; its QEMU ran {used:.0f} s on a CPU"
        stalls = qemu.console_stalls(console)
        what = (f"SSH to {vm} (127.0.0.1:{port}) not ready after {max(wait_s, elapsed):.0f} s ({last_err}{ran}"
                + (f"; its kernel reported {len(stalls)} stall(s), first: {stalls[0]})" if stalls else ")"))
        # It had the CPU and got nowhere: a guest spinning under TCG (CI: stall
        # reports for 600 s while its QEMU ran 657 s on a CPU). A starved VM
        # is not booted again: the next boot would starve too.
        if retry and not banner_seen and used is not None and used >= CPU_SHARE * wait_s:
            raise BootCrash(what)
        raise InfraError(f"lab {self.name}: {what}; console tail:\n" + qemu.console_tail(console))

    @staticmethod
    def _waited_enough(t0, wait_s, pid, cpu0):
        """Past wait_s, with CPU_SHARE of it on a CPU (or STARVED_CAP x wait_s went by)."""
        elapsed = time.monotonic() - t0
        if elapsed < wait_s:
            return False
        cpu = qemu.cpu_seconds(pid)
        if cpu is None or cpu0 is None:
            return True
        return cpu - cpu0 >= CPU_SHARE * wait_s or elapsed >= STARVED_CAP * wait_s

    def down(self, log=print):
        """Stop the lab's QEMU processes (only those recorded and verified)."""
        with self._lock():
            state = self._state()
            if not state:
                log(f"lab {self.name}: not up")
                return []
            stopped = self._stop_all(state)
            log(f"lab {self.name}: stopped {', '.join(stopped) if stopped else 'nothing (no VM was running)'}")
            return stopped

    def _stop_all(self, state):
        stopped = []
        for vm, info in state.get("vms", {}).items():
            if info.get("pid") and qemu.is_our_qemu(info["pid"], self._qemu_name(vm)):
                info["cpu_seconds"] = qemu.cpu_seconds(info["pid"])    # what the VM cost, kept (cpu_seconds())
            if info.get("pid") and qemu.stop(info["pid"], self._qemu_name(vm)):
                stopped.append(vm)
            info["pid"] = None
            overlay = self.dir / vm / "overlay.qcow2"
            if overlay.exists():
                overlay.unlink()
        state["stopped"] = time.time()
        self._save(state)
        return stopped

    def cpu_seconds(self):
        """{vm: host CPU seconds its QEMU has used}: running VMs' so far,
        stopped ones' as recorded when the lab went down (None if unknown)."""
        state = self._state() or {}
        running = self.running_vms()
        return {vm: qemu.cpu_seconds(running[vm]) if vm in running else info.get("cpu_seconds")
                for vm, info in state.get("vms", {}).items()}

    def status(self):
        state = self._state()
        if not state:
            return {"name": self.name, "up": False, "vms": {}}
        running = self.running_vms()
        vms = {vm: {"pid": info.get("pid"), "running": vm in running, "ssh_port": info.get("ssh_port"),
                    "console": info.get("console")}
               for vm, info in state.get("vms", {}).items()}
        busy = self._busy()
        # state.json of labs started before release/nic were recorded: bookworm, virtio
        nic = state.get("nic", qemu.DEFAULT_NIC if state.get("topology") == "two-host" else None)
        return {"name": self.name, "up": bool(running) and len(running) == len(vms) and not busy,
                "busy": busy,
                "topology": state.get("topology"), "accel": state.get("accel"),
                "release": state.get("release", image_mod.DEFAULT_RELEASE), "nic": nic,
                "kernel_release": state.get("kernel_release"), "kernel_args": state.get("kernel_args", []),
                "boot_seconds": state.get("boot_seconds"),
                "inventory": str(self.inventory_path), "vms": vms}

    # ---- reaching hosts ---------------------------------------------------
    def _ssh(self, vm, port, timeout=10):
        from rfc2544.drivers.ssh import SSHHost
        return SSHHost.connect(vm, "127.0.0.1", port, "root", self.key_file, self.known_hosts,
                               timeout=timeout)

    def ssh_port(self, host):
        state = self._state()
        if not state or not self.is_up():
            raise InfraError(f"lab '{self.name}' is not up: run `rfc2544 lab up --name {self.name}`")
        topo = topology.get(state["topology"])
        vm = topo.dut_vm if host == "dut" else host
        if vm not in state["vms"]:
            raise BadInput(f"lab '{self.name}' has no host '{host}' (hosts: tester, dut)")
        return vm, state["vms"][vm]["ssh_port"]

    def connect(self, host):
        """SSHHost for 'tester' or 'dut'. In the single topology 'dut' is the
        tester VM itself: run DUT commands with `ip netns exec dut ...`
        (see `dut_netns`)."""
        vm, port = self.ssh_port(host)
        from rfc2544.drivers.ssh import SSHHost
        for attempt in range(CONNECT_ATTEMPTS):
            try:
                return SSHHost.connect(host, "127.0.0.1", port, "root", self.key_file, self.known_hosts,
                                       timeout=CONNECT_TIMEOUT_S)
            except HostKeyError:
                raise                   # a key that does not verify never will
            except InfraError:
                if attempt == CONNECT_ATTEMPTS - 1:
                    raise
                time.sleep(2)

    def dut_cmd(self, command):
        """`command` wrapped to run in the DUT's namespace, if it has one."""
        ns = self.dut_netns
        return f"ip netns exec {ns} {command}" if ns else command

    # ---- DUT capacity ---------------------------------------------------------
    def cap_dut(self, pps: int, burst: int = None):
        """Police the DUT's forwarding toward the rx port to `pps` packets/s
        (tc police pkts_rate on the DUT's egress port). Burst defaults to
        max(pps/100, 10) packets."""
        from rfc2544.lab import cap
        return cap.apply(self, pps, burst)

    def uncap_dut(self):
        from rfc2544.lab import cap
        return cap.remove(self)

    def shape_dut(self, pps: int, frame_len: int, queue_s: float):
        """A buffering DUT: tbf at `pps` behind a FIFO of `queue_s` (cap.shape)."""
        from rfc2544.lab import cap
        return cap.shape(self, pps, frame_len, queue_s)

    def unshape_dut(self):
        from rfc2544.lab import cap
        return cap.unshape(self)


def images_in_use():
    """Image dirs of labs that have a running VM."""
    used = []
    root = paths.labs_dir()
    if root.is_dir():
        for d in root.iterdir():
            try:
                lab = Lab(d.name)
            except BadInput:
                continue
            state = lab._state()
            if state and state.get("image_dir") and lab.running_vms():
                used.append(state["image_dir"])
    return used
