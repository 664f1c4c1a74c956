"""Who watches the event journal, and what each may still be sent (issue 16 item 4).

Pure bookkeeping, like journal.py: the shell (journal_shell.py) sends.  The costs a watcher
can impose are bounded three ways:

- at most ``max_subscribers`` subscriptions (one per connection: a routing id);
- a credit window: a subscriber acknowledges how many live events it has read (in its
  renewals); one that has more than ``window`` events sent and not acknowledged is dropped
  with a final message, so a reader that stops reading costs at most a window's worth of
  queued messages, never an unbounded queue;
- a lease: a subscription not renewed within ``timeout_s`` is dropped (a vanished client).
"""

from __future__ import annotations

from dataclasses import dataclass

from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.journal import Event, Filter, Viewer

MAX_SUBSCRIBERS = 256
DEFAULT_WINDOW = 10_000
MAX_WINDOW = 100_000
TIMEOUT_S = 60.0


@dataclass(slots=True)
class Subscription:
    ident: bytes
    viewer: Viewer
    filt: Filter
    window: int
    renewed: float
    sent: int = 0  # live events sent
    acked: int = 0  # live events the subscriber says it has read


class Hub:
    def __init__(self, max_subscribers: int = MAX_SUBSCRIBERS, timeout_s: float = TIMEOUT_S) -> None:
        self.max_subscribers = max_subscribers
        self.timeout_s = timeout_s
        self.subs: dict[bytes, Subscription] = {}

    def subscribe(self, ident: bytes, viewer: Viewer, filt: Filter, window: int, now: float) -> Subscription:
        if ident not in self.subs and len(self.subs) >= self.max_subscribers:
            raise RequestError(f"too many event stream subscribers (at most {self.max_subscribers})",
                               "TooManySubscribers")
        window = DEFAULT_WINDOW if window <= 0 else min(window, MAX_WINDOW)
        sub = Subscription(ident, viewer, filt, window, now)
        self.subs[ident] = sub  # a second subscribe on one connection replaces the first
        return sub

    def renew(self, ident: bytes, uid: int, ack: int, now: float) -> Subscription:
        sub = self.subs.get(ident)
        if sub is None or sub.viewer.uid != uid:
            raise RequestError("no event stream subscription on this connection (dropped or expired)",
                               "NoSubscription")
        if not sub.acked <= ack <= sub.sent:
            raise RequestError(f"acknowledged {ack} events, {sub.sent} were sent", "InvalidAck")
        sub.acked = ack
        sub.renewed = now
        return sub

    def cancel(self, ident: bytes, uid: int) -> bool:
        sub = self.subs.get(ident)
        if sub is None or sub.viewer.uid != uid:
            return False
        del self.subs[ident]
        return True

    def fanout(self, events: list[Event]) -> tuple[list[tuple[Subscription, list[Event]]], list[tuple[bytes, str]]]:
        """Each subscriber's share of ``events``; and those dropped for falling behind."""
        deliveries: list[tuple[Subscription, list[Event]]] = []
        dropped: list[tuple[bytes, str]] = []
        if not events:
            return deliveries, dropped
        for ident, sub in list(self.subs.items()):
            batch = [e for e in events if sub.filt.matches(e.body) and sub.viewer.may_see(e.body)]
            if not batch:
                continue
            if sub.sent + len(batch) - sub.acked > sub.window:
                del self.subs[ident]
                dropped.append((ident, f"subscriber too slow: more than {sub.window} events unacknowledged"))
                continue
            sub.sent += len(batch)
            deliveries.append((sub, batch))
        return deliveries, dropped

    def expire(self, now: float) -> list[tuple[bytes, str]]:
        gone = [ident for ident, sub in self.subs.items() if now - sub.renewed > self.timeout_s]
        for ident in gone:
            del self.subs[ident]
        return [(ident, f"subscription not renewed for {self.timeout_s:g} s") for ident in gone]

    def drop_all(self, reason: str) -> list[tuple[bytes, str]]:
        gone = [(ident, reason) for ident in self.subs]
        self.subs.clear()
        return gone
