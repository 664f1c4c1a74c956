"""The event stream's part of plurmctld (issue 16 item 4; docs/events.md).

The controller calls three hooks: :meth:`EventShell.observe` with the core's effects as it
applies them, :meth:`EventShell.publish` once a turn is committed (so no event reports what the
store could still refuse), and the ``journal_subscribe`` handler this class registers.  Events
then leave on the controller's own ROUTER socket, to the routing id that subscribed, sealed
like every reply: ``journal_events`` messages ``{"events": [...]}``, and a last one
``{"events": [], "dropped": reason, "code": ...}`` when the controller drops a subscriber.

Who may see what is decided here once, at subscription, from the identity the controller
verified (PrivateData=jobs, PrivateData=nodes), and applied to every event (journal.Viewer).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.journal import DEFAULT_SIZE, EVENT_NAMES, Deriver, Filter, Journal, Viewer
from plurm.corescheduler.journal_hub import Hub
from plurm.wire import envelope, protocol

log = logging.getLogger("plurmctld")

NODE_SCAN_S = 0.5  # nodes' states are compared at most this often when no job moved
EXPIRE_S = 1.0
# Events of a burst go out together, at most this often (a message per subscriber costs a seal,
# ~30 us, whatever it holds): the first after a quiet spell leaves at once, the rest of a burst
# at the next turn after this much time (the loop turns at least every TICK_S, 0.5 s).
COALESCE_S = 0.05
MAX_FILTER_ITEMS = 1000  # per filter list: a subscription's cost per event stays bounded


class EventShell:
    def __init__(self, ctl: Any, size: int = DEFAULT_SIZE) -> None:
        self.ctl = ctl
        self.journal = Journal(protocol.encode, size)
        self.deriver = Deriver()
        self.hub = Hub()
        self.core: Any = None
        self.pending: list[dict[str, Any]] = []
        self.last_scan = 0.0
        self.last_expire = 0.0
        self.last_fanout = 0.0
        self.unsent: list[Any] = []  # in the journal, not yet sent to subscribers (COALESCE_S)
        self._sync()
        ctl.handlers["journal_subscribe"] = self.on_subscribe

    def _sync(self) -> bool:
        """Whether the core is the one the journal follows; a new one (start, takeover, a
        rebuild after a refused commit) is seeded: what it holds is not news, and what was
        observed of the refused turn is forgotten."""
        core = self.ctl.core
        if core is self.core:
            return core is not None
        self.core = core
        self.pending.clear()
        self.unsent.clear()
        if core is not None:
            self.deriver.seed(core)
        return False

    def observe(self, effects: list[Any]) -> None:
        if self._sync() and effects:
            self.pending.extend(self.deriver.job_events(effects, self.core, time.time()))

    def publish(self) -> None:
        """After the commit: this turn's events into the journal and to their subscribers."""
        now = time.time()
        if not self._sync():
            if self.core is None and self.hub.subs:  # standing by: the active controller serves
                self._drop(self.hub.drop_all("controller standing by"))
            return
        bodies, self.pending = self.pending, []
        if bodies or now - self.last_scan >= NODE_SCAN_S:
            bodies.extend(self.deriver.node_events(self.core, now))
            self.last_scan = now
        self.unsent.extend(self.journal.append(body) for body in bodies)
        dropped: list[tuple[bytes, str]] = []
        if self.unsent and now - self.last_fanout >= COALESCE_S:
            deliveries, dropped = self.hub.fanout(self.unsent)
            for sub, batch in deliveries:
                self._send(sub.ident, b'{"events":[' + b",".join(e.raw for e in batch) + b"]}")
            self.unsent = []
            self.last_fanout = now
        if now - self.last_expire >= EXPIRE_S:
            dropped.extend(self.hub.expire(now))
            self.last_expire = now
        self._drop(dropped)

    def _drop(self, dropped: list[tuple[bytes, str]]) -> None:
        for ident, reason in dropped:
            log.info("event stream: dropped subscriber %r: %s", ident, reason)
            self._send(ident, protocol.encode({"events": [], "dropped": reason, "code": "SubscriberDropped"}))

    def _send(self, ident: bytes, payload: bytes) -> None:
        ctl = self.ctl
        ctl.outbox_kinds[len(ctl.outbox)] = None  # (as a node message: a refused turn sends none)
        ctl.outbox.append([ident, b""] + envelope.seal_raw(ctl.auth, "journal_events", payload))

    # ------------------------------------------------------------------ the request
    def on_subscribe(self, header: dict, msg: protocol.JournalSubscribe, ident: bytes) -> Any:
        uid, now = header["uid"], time.time()
        if msg.renew:
            sub = self.hub.renew(ident, uid, msg.ack, now)
            return {"ok": True, "seq": self.journal.seq, "sent": sub.sent}
        if msg.cancel:
            return {"ok": self.hub.cancel(ident, uid)}
        unknown = sorted(set(msg.events) - EVENT_NAMES)
        if unknown:
            raise RequestError(f"unknown event name {unknown[0]!r} (known: {', '.join(sorted(EVENT_NAMES))})",
                               "InvalidEventName")
        if max(len(msg.job_ids), len(msg.users), len(msg.partitions)) > MAX_FILTER_ITEMS:
            raise RequestError(f"at most {MAX_FILTER_ITEMS} items per filter", "InvalidFilter")
        who = self.ctl._who(header)
        service = self.ctl.service
        viewer = Viewer(uid, service.private("jobs", who), service.private("nodes", who))
        filt = Filter(frozenset(msg.job_ids), frozenset(msg.users), frozenset(msg.partitions), frozenset(msg.events))
        sub = self.hub.subscribe(ident, viewer, filt, msg.window, now)
        # The marker: the last event sent to subscribers; those after it reach this one live.
        marker = self.unsent[0].seq - 1 if self.unsent else self.journal.seq
        backlog = [] if msg.since == -1 else self.journal.backlog(msg.since or 0, filt, viewer, marker)
        head = protocol.encode({"marker": True, "seq": marker, "window": sub.window,
                                "timeout": self.hub.timeout_s})
        # {"marker":..., "events":[backlog]}: each event's JSON as encoded once for all.
        return head[:-1] + b',"events":[' + b",".join(e.raw for e in backlog) + b"]}"
