"""The controller's side of failover and of a failing store (mixed into controller.Controller).

Three states: **standby** (``core is None``: every request but ``ping`` and ``takeover``
gets Slurm's standby error, node messages are ignored, the loop tries to take the lease),
**active** (serving; each commit renews the lease) and **active with a failing store**
(``store_failure.failed``: reads answered, changes refused with the store's error, node
reports left unacknowledged so plurmd resends them, nothing scheduled; the store is probed
about every second and changes resume once a write succeeds).

A failed commit never stops the controller: the turn's writes are rolled back, its
success replies become errors and its node messages (launches, acknowledgements) are
dropped, and the core is rebuilt from the store, as at start, so memory matches what
was committed.  Should even the rebuild fail (the server is gone), memory is kept for
reads and rebuilt before the first change is accepted again.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from plurm.corescheduler import failover
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.store import Fenced, StoreError
from plurm.wire import envelope

log = logging.getLogger("plurmctld")

ALWAYS_ANSWERED = frozenset({"ping", "takeover"})


class FailoverShell:
    # Set by Controller.__init__ (declared for the type checker).
    core: Any
    store: Any
    election: failover.Election
    store_failure: failover.StoreFailure
    endpoint: failover.Endpoint
    outbox: list[list[bytes]]
    outbox_kinds: dict[int, tuple[bytes, str | None] | None]
    node_routes: dict[str, bytes]
    auth: Any

    def load_state(self) -> None:  # Controller's
        raise NotImplementedError

    def apply_effects(self) -> None:  # Controller's
        raise NotImplementedError

    # ------------------------------------------------------------------ requests
    def unavailable(self, msg_type: str) -> tuple[str, str] | None:
        """Why this controller does not take ``msg_type`` now (None: it does)."""
        if msg_type in ALWAYS_ANSWERED:
            return None
        if self.core is None:
            return failover.STANDBY_MESSAGE, failover.STANDBY_CODE
        if self.store_failure.failed and msg_type not in failover.READ_MESSAGES:
            return self.store_failure.message, failover.STORE_CODE
        return None

    def on_ping(self, header: dict, msg: Any, ident: bytes) -> Any:
        return {"ok": True, "host": self.endpoint.name, "mode": self.endpoint.mode,
                "active": self.core is not None, "store_ok": not self.store_failure.failed}

    def on_takeover(self, header: dict, msg: Any, ident: bytes) -> Any:
        """scontrol takeover: this (backup) controller asks the active one for control."""
        if header["uid"] not in getattr(self, "daemon_uids", frozenset({0})):
            raise RequestError("Access/permission denied", "AccessDenied")
        if self.core is not None:
            return {"ok": True, "active": True}
        if self.election.lease is None:
            raise RequestError("takeover needs a shared state store (StateSaveLocation=postgresql://...)",
                               "InvalidRequest")
        try:
            self.election.request()
        except StoreError as exc:
            raise RequestError(f"cannot ask for control: {exc}", failover.STORE_CODE) from None
        log.info("takeover requested: asking the active controller to hand control over")
        return {"ok": True, "active": False}

    # ------------------------------------------------------------------ a failed commit
    def _fenced(self, exc: StoreError) -> Fenced | None:
        """Why a write that failed means this controller is no longer the active one: fenced
        (another took the lease) or the lease found taken once the store answered; None when
        the store itself failed."""
        if isinstance(exc, Fenced):
            return exc
        if self._lost_lease():
            return Fenced(f"the lease is no longer {self.endpoint.name}'s: another controller took over")
        return None

    def refuse_turn(self, exc: StoreError) -> None:
        """The commit failed: nothing of this turn is reported done; memory goes back to the store."""
        taken = self._fenced(exc)
        fenced = taken is not None
        exc = taken or exc
        code, message = ((failover.STANDBY_CODE, failover.STANDBY_MESSAGE) if fenced
                         else (failover.STORE_CODE, f"Unable to save the controller's state, nothing was changed: {exc}"))
        kept: list[list[bytes]] = []
        for index, frames in enumerate(self.outbox):
            kind = self.outbox_kinds.get(index, ())
            if kind is None:
                continue  # a launch, kill or acknowledgement that its state no longer backs
            if kind:
                ident, parent = kind
                kept.append([ident, b""] + envelope.seal(self.auth, "error", {"message": message, "code": code},
                                                          parent))
            else:
                kept.append(frames)  # already an error
        self.outbox[:] = kept
        self.outbox_kinds.clear()
        try:
            self.store.rollback()
        except StoreError:
            pass  # the connection is gone: the server forgot the transaction anyway
        if fenced:
            self.step_down(str(exc))
            return
        self.store_failure.enter(exc)
        self._rebuild()

    def _lost_lease(self) -> bool:
        """After a failure that is not a fence (the session was cut, e.g. while this controller
        was paused): ask the server once whether the lease is still ours, so that a controller
        that was taken over says so (standby) instead of blaming the store."""
        lease = self.election.lease
        if lease is None or lease.epoch is None:
            return False
        try:
            state = lease.state()  # rolls back and reconnects first
        except StoreError:
            return False  # the server is unreachable: a store failure, as far as anyone can tell
        if state.holder == lease.holder and state.epoch == lease.epoch:
            return False
        lease.epoch = None
        return True

    def _rebuild(self) -> None:
        try:
            if self.core is not None:
                self.core.take_effects()  # what the core decided this turn was not stored
            self.load_state()
            self.store.end_read()
            self.store_failure.stale_core = False
        except StoreError as exc:
            self.store_failure.stale_core = True
            self.store.rollback()
            self.store_failure.limit.warning("rebuild", "cannot reload the state from the store (%s): "
                                             "answering reads from memory until it can", exc)

    # ------------------------------------------------------------------ the loop's timer
    def failover_turn(self) -> None:
        now = time.monotonic()
        if self.store_failure.probe_due(now):
            self._probe()
        if self.election.lease is None or now < self.election.next_turn:
            return
        self.election.next_turn = now + self.election.interval_s
        if self.core is None:
            self._try_take_over()
            return
        if not self.store_failure.failed:
            try:
                started = time.monotonic()
                self.store.commit()  # an empty transaction: the renewal alone
                self.election.renewed(started)
            except StoreError as exc:
                taken = self._fenced(exc)
                if taken is not None:
                    self.step_down(str(taken))
                    return
                self.store_failure.enter(exc)
        wanted = self.election.handback_wanted()
        if wanted and not self.store_failure.failed:
            self._hand_over(wanted)
        elif self.election.expired(time.monotonic()) and self.endpoint.count > 1:
            # Cut off from the store longer than the lease: another controller may be active by
            # now; answering as standby sends the commands on to it.
            self.step_down("the lease ran out before it could be renewed")

    def _probe(self) -> None:
        try:
            if self.store_failure.stale_core:
                self.store.rollback()
                self.core.take_effects()
                self.load_state()
            started = time.monotonic()
            self.store.probe()
            self.election.renewed(started)
        except StoreError as exc:
            taken = self._fenced(exc)
            if taken is not None:
                self.step_down(str(taken))
                return
            self.store_failure.enter(exc)
            try:
                self.store.rollback()
            except StoreError:
                pass
            return
        self.store_failure.leave()

    def _try_take_over(self) -> None:
        try:
            if not self.election.try_acquire():
                return
        except StoreError as exc:
            self.store_failure.limit.warning("lease", "cannot reach the store for the lease: %s", exc)
            return
        try:
            self.load_state()
            self.store.end_read()
        except StoreError as exc:
            log.warning("took the lease but cannot load the state (%s): standing by again", exc)
            self.store.rollback()
            self.core = self.service = None
            try:
                self.election.release(None)
            except StoreError:
                self.election.forget()
            return
        self.store_failure.reset()
        self.node_routes.clear()  # nodes are heard from again, and asked to register
        log.info("%s (%s) is now the active controller: %d jobs loaded from the store",
                 self.endpoint.name, self.endpoint.mode, len(self.core.jobs))

    def _hand_over(self, to: str) -> None:
        """Another controller asked for control (a primary back at start-up, scontrol takeover)."""
        try:
            self.apply_effects()
            started = time.monotonic()
            self.store.commit()
            self.election.renewed(started)
            self.election.release(to)
        except StoreError as exc:
            log.warning("cannot hand control to %s: %s", to, exc)
            self.election.forget()
        log.info("handing control to %s", to)
        self._stand_by()

    def step_down(self, reason: str) -> None:
        if self.core is None:
            return
        log.warning("%s steps down to standby: %s", self.endpoint.name, reason)
        self.election.forget()
        self._stand_by()

    def _stand_by(self) -> None:
        self.core = None
        self.service = None
        self.node_routes.clear()
        self.store_failure.reset()

    def shut_down(self) -> None:
        """At SIGTERM: commit what is left; a standby or a failing store has nothing to save."""
        if self.core is None:
            return
        try:
            self.apply_effects()
            self.store.commit()
        except StoreError as exc:
            log.warning("could not save the last changes at shutdown: %s", exc)
