"""Which controller this is, whether it is the active one, and what a failed store means.

- ``choose_endpoint``: a controller must know which SlurmctldHost line is its own.  Slurm
  matches the host name; two controllers on one host (127.0.0.1 and 127.0.0.2) cannot be
  told apart that way, so ``plurmctld --host NAME`` (or ``PLURM_SLURMCTLD_HOST=NAME``)
  names the entry; without it, the entry whose name is this host's name (short or full),
  else the first entry when there is only one.
- ``Election``: the lease (lease.py) as the controller's loop uses it: start (take the
  lease, or ask a lower-priority holder to hand it back, as slurm.conf(5) says the primary
  does at start-up), renew about every second, step down when fenced or when the lease has
  run out by this host's own clock.  With the embedded SQLite store there is no lease: the
  controller is always active (one host, one controller).
- ``StoreFailure``: the controller's state while its store cannot write: since when, the
  error the refused requests get, when to probe next; logged at a bounded rate.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import dataclass

from plurm.common.ratelimit import RateLimitedLog
from plurm.corescheduler.store import SqlStore, StoreError

log = logging.getLogger("plurmctld")

# Slurm's words (ESLURM_IN_STANDBY_MODE) for a request that reaches a backup in standby.
STANDBY_MESSAGE = "Slurm backup controller in standby mode"
STANDBY_CODE = "StandbyMode"
STORE_CODE = "StoreError"
HOST_ENV = "PLURM_SLURMCTLD_HOST"
# What a controller whose store fails still answers (they write nothing).
READ_MESSAGES = frozenset({"ping", "config", "job_info", "step_info", "node_info", "acct_query", "priority_factors",
                           "share_info"})
PROBE_INTERVAL_S = 1.0


@dataclass(frozen=True)
class Endpoint:
    index: int  # 0 = primary, 1 = backup, ...
    name: str
    addr: str
    count: int  # how many SlurmctldHost entries there are

    @property
    def mode(self) -> str:
        """As scontrol ping names it: primary, backup, backup2, ..."""
        if self.index == 0:
            return "primary"
        return "backup" if self.index == 1 and self.count == 2 else f"backup{self.index}"


class EndpointError(Exception):
    pass


def choose_endpoint(endpoints: list[tuple[str, str]], host: str | None = None) -> Endpoint:
    wanted = host or os.environ.get(HOST_ENV) or None
    count = len(endpoints)
    if wanted:
        for index, (name, addr) in enumerate(endpoints):
            if wanted in (name, addr):
                return Endpoint(index, name, addr, count)
        raise EndpointError(f"{wanted} is none of the SlurmctldHost entries "
                            f"({', '.join(n for n, _ in endpoints)})")
    if count == 1:
        name, addr = endpoints[0]
        return Endpoint(0, name, addr, 1)
    full = socket.gethostname()
    for index, (name, addr) in enumerate(endpoints):
        if name in (full, full.split(".", 1)[0]):
            return Endpoint(index, name, addr, count)
    raise EndpointError(f"this host ({full}) is none of the SlurmctldHost entries "
                        f"({', '.join(n for n, _ in endpoints)}): name the entry with --host NAME or {HOST_ENV}")


class Election:
    """The lease as the loop uses it; ``lease`` is None for the embedded store (always active)."""

    def __init__(self, store: SqlStore, endpoint: Endpoint, names: list[str], timeout_s: float) -> None:
        self.endpoint = endpoint
        self.names = names
        self.timeout_s = timeout_s
        self.interval_s = min(1.0, max(0.1, timeout_s / 4))
        self.lease = None
        self.next_turn = 0.0  # monotonic: when the loop next renews or tries to take the lease
        self.valid_until = float("inf")  # this host's monotonic clock: when the lease runs out
        if hasattr(store, "set_timeout"):
            from plurm.corescheduler.lease import Lease

            store.set_timeout(timeout_s)
            self.lease = Lease(store, endpoint.name, timeout_s)
        elif endpoint.index > 0:
            # Without a lease two controllers would both write: only the primary runs on SQLite.
            raise EndpointError(f"{endpoint.name} is a backup controller (SlurmctldHost #{endpoint.index + 1}): "
                                "a backup needs a shared store, StateSaveLocation=postgresql://USER@HOST:PORT/DB")

    @property
    def holds(self) -> bool:
        return self.lease is None or self.lease.epoch is not None

    def start(self) -> bool:
        """At start-up: take the lease if free; if a lower-priority controller holds it, ask for
        it back (the holder hands over at its next renewal).  True when this one is active."""
        if self.lease is None:
            return True
        if self.endpoint.index > 0:
            # A backup leaves the primary its first claim, as slurmctld's backup waits
            # SlurmctldTimeout for the primary before it takes over.
            self.next_turn = time.monotonic() + self.timeout_s
            return False
        if self.try_acquire():
            return True
        try:
            state = self.lease.state()
            if state.holder in self.names and self.names.index(state.holder) > self.endpoint.index:
                log.info("%s holds control (epoch %d): asking it to hand control back", state.holder, state.epoch)
                self.lease.request()
        except StoreError as exc:
            log.warning("cannot read the lease: %s", exc)
        return False

    def try_acquire(self) -> bool:
        if self.lease is None:
            return True
        started = time.monotonic()
        if not self.lease.try_acquire():
            return False
        self.valid_until = started + self.timeout_s
        log.info("%s took the lease (epoch %d)", self.endpoint.name, self.lease.epoch)
        return True

    def renewed(self, started: float) -> None:
        """A commit (which renews the lease in its transaction) that began at ``started`` succeeded."""
        self.valid_until = started + self.timeout_s

    def expired(self, now: float) -> bool:
        """The lease has run out by this host's clock: another controller may hold it by now."""
        return self.lease is not None and now > self.valid_until

    def handback_wanted(self) -> str | None:
        """Another controller asked for control (seen at the last renewal)."""
        if self.lease is None or not self.lease.handback_to or self.lease.handback_to == self.endpoint.name:
            return None
        return self.lease.handback_to

    def request(self) -> None:
        """scontrol takeover, on a standby: ask the holder for control."""
        if self.lease is not None:
            self.lease.request()

    def release(self, to: str | None) -> None:
        if self.lease is not None:
            self.lease.release(to)

    def forget(self) -> None:
        """Fenced or stepped down: this controller no longer holds the lease."""
        if self.lease is not None:
            self.lease.epoch = None


class StoreFailure:
    """Whether the store is failing, and what the refused requests are told."""

    def __init__(self, logger: logging.Logger) -> None:
        self.limit = RateLimitedLog(logger, burst=5, window_s=60.0)
        self.since: float | None = None
        self.error = ""
        self.next_probe = 0.0
        self.stale_core = False  # the rebuild from the store failed too: memory is ahead of it

    @property
    def failed(self) -> bool:
        return self.since is not None

    @property
    def message(self) -> str:
        return f"Unable to save the controller's state, nothing was changed: {self.error}"

    def enter(self, exc: BaseException) -> None:
        first = self.since is None
        self.error = str(exc)
        if first:
            self.since = time.monotonic()
        self.next_probe = time.monotonic() + PROBE_INTERVAL_S
        self.limit.warning("store", "state store failed%s: %s; refusing changes, still answering reads",
                           "" if first else " again", exc)

    def probe_due(self, now: float) -> bool:
        return self.since is not None and now >= self.next_probe

    def reset(self) -> None:
        """Standing by: nothing to refuse or probe any more (the next holder finds out for itself)."""
        self.since = None
        self.stale_core = False

    def leave(self) -> None:
        if self.since is not None:
            log.info("state store writable again after %.1f s: accepting changes", time.monotonic() - self.since)
        self.since = None
        self.stale_core = False
