"""The tester's transport: SSH sessions, batches and start channels.

One SSH connection per distinct address/port/user, one HostSession per
inventory host on it (a DUT's netns honoured). Batches go to every host
first and are collected afterwards, so hosts work in parallel. The blocking
`pgctrl start` runs on a channel opened before it is needed; `stop_all`
stops every generator and reconnects once if a connection died.
"""
import time

from rfc2544.errors import InfraError
from rfc2544.drivers.ssh import SSHHost

from rfc2544.drivers import pktgen
from rfc2544.drivers.session import HostSession

STOP_RACE_S = 0.5   # how long a just-sent start may take to reach pgctrl


class Transport:
    """Sessions and batches for the hosts of `inventory`; `tx_hosts` run
    the generators. `sessions`: host name -> session (tests only: injected
    sessions are never replaced). `clock`: monotonic() and sleep()."""

    def __init__(self, inventory, tx_hosts, sessions=None, clock=time):
        self.inventory = inventory
        self.tx_hosts = list(tx_hosts)
        self._clock = clock
        self._sessions = dict(sessions) if sessions else {}
        self._can_reconnect = not sessions
        self.connections = {}
        self.loop_starts = True      # start channels serve trial after trial (False: one per trial)
        self.running_starts = []     # start channels of the traffic now running
        self._spare_starts = {}      # host -> a channel pre-opened for the next trial

    # ------------------------------------------------------------ sessions
    def session(self, name):
        """The HostSession of `name` (connects on first use)."""
        if name not in self._sessions:
            h = self.inventory.hosts[name]
            key = (h.address, h.port, h.user)
            if key not in self.connections:
                self.connections[key] = SSHHost.connect(
                    name, h.address, h.port, h.user, h.key_file, h.known_hosts)
            self._sessions[name] = HostSession(self.connections[key], h.netns)
        return self._sessions[name]

    def run_batches(self, batches, timeout=30):
        """Send one batch per host, then collect them all (hosts work in parallel)."""
        for host, batch in batches.items():
            self.session(host).send_batch(batch)
        return {host: self.session(host).collect_batch(timeout) for host in batches}

    def stop_generators(self):
        """One 'stop' batch on every tester host (the trial stays in control)."""
        return self.run_batches({h: pktgen.stop_batch() for h in self.tx_hosts})

    # ------------------------------------------------------------ start channels
    def take_start(self, host):
        """The start channel for `host`: the one pre-opened after the last
        trial if it is still waiting, else a new one."""
        pre = self._spare_starts.pop(host, None)
        if pre is not None and not pre.done():
            return pre
        if pre is not None:
            pre.close()
        return self._open_start(host)

    def _open_start(self, host):
        return self.session(host).open_start(loop=self.loop_starts)

    def keep_start(self, host, start):
        """After a trial: the start channel waits for the next trigger
        (its shell loops) and becomes `host`'s spare; one that cannot
        (exited, or never saw the end of its run) is closed."""
        old = self._spare_starts.pop(host, None)
        if old is not None and old is not start:
            old.close()
        reusable = getattr(start, "reusable", None)
        if self.loop_starts and reusable is not None and reusable():
            start.rearm()
            self._spare_starts[host] = start
        else:
            start.close()

    def preopen_starts(self):
        """Open the next trial's start channels now: the remote shell that
        waits for 'start' spawns while the caller does other work. An unused
        one exits harmlessly when closed (no 'start' line, no traffic)."""
        for host in self.tx_hosts:
            if host not in self._spare_starts:
                try:
                    self._spare_starts[host] = self._open_start(host)
                except InfraError:
                    break  # the next trial opens its own (and reports the failure)

    def drop_spares(self):
        for s in self._spare_starts.values():
            try:
                s.close()
            except Exception:  # a dead channel is already closed
                pass
        self._spare_starts = {}

    # ------------------------------------------------------------ stop and close
    def stop_all(self, race_wait_s=STOP_RACE_S):
        """Stop the generators on every tester host. Never raises: a dead
        connection is reopened once; failures are swallowed (the in-tree
        pktgen also stops when its start writer dies with the session)."""
        for s in list(self.running_starts):
            try:
                s.close()
            except Exception:
                pass
        self.running_starts = []
        self.drop_spares()
        # Twice: a 'start' sent just before the interruption can reach
        # pgctrl after the first 'stop' (seen in the lab: Ctrl-C mid-run left
        # the generator sending); the second stop catches it.
        for round_ in range(2):
            if round_:
                self._clock.sleep(race_wait_s)
            for host in self.tx_hosts:
                self._stop_host(host)

    def _stop_host(self, host):
        for attempt in range(2):
            try:
                session = self._sessions.get(host)
                if attempt == 1 and not self._can_reconnect:
                    # the batch shell may be mid-batch: a plain command still works
                    if session is not None:
                        session.run(f"echo stop > {pktgen.PGCTRL}", timeout=10)
                    break
                if session is None or attempt == 1:
                    self._sessions.pop(host, None)
                    h = self.inventory.hosts[host]
                    self.connections.pop((h.address, h.port, h.user), None)
                    session = self.session(host)
                session.run_batch(pktgen.stop_batch(), timeout=10)
                break
            except Exception:
                continue

    def close(self):
        self.drop_spares()
        for s in self._sessions.values():
            try:
                s.close()
            except Exception:  # closing must never mask what the caller is handling
                pass
        for c in self.connections.values():
            try:
                c.close()
            except Exception:
                pass
        self._sessions.clear()
        self.connections.clear()
