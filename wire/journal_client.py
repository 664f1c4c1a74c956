"""The client side of the event stream (issue 16 item 4; docs/events.md).

One connection to plurmctld (wire/client.py's Connection, so the same credentials, hosts and
failover): ``journal_subscribe`` answers with the backlog and the marker's seq, then the
controller pushes ``journal_events`` to this connection.  The reader renews its subscription
(with how many live events it has read: the controller's credit window) every third of the
controller's timeout and whenever half a window is unacknowledged; one that stops reading is
dropped by the controller, which then sends a last message saying why (:class:`Dropped`).

Light like the rest of wire/ on the commands' path (stdlib only): squeue --iterate reads it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from plurm.wire import envelope
from plurm.wire import lightjson as json
from plurm.wire.client import ClientError, ClientSettings, Connection

MARKER = "marker"


class Dropped(ClientError):
    """The controller dropped this subscription (too slow, not renewed, standing by)."""


class Subscription:
    """A live subscription; iterate it for events, or call :meth:`poll` with a deadline."""

    def __init__(self, job_ids: Iterable[int] = (), users: Iterable[str] = (), partitions: Iterable[str] = (),
                 events: Iterable[str] = (), since: int | None = None, backlog: bool = True, window: int = 0,
                 settings: ClientSettings | None = None, conn: Connection | None = None) -> None:
        self.conn = conn or Connection(settings)
        body: dict[str, Any] = {"job_ids": [int(j) for j in job_ids], "users": [str(u) for u in users],
                                "partitions": list(partitions), "events": list(events), "window": int(window),
                                "since": since if backlog else -1}
        _header, payload = self.conn.request_raw("journal_subscribe", body)
        reply = json.loads(payload)
        self.backlog: list[dict[str, Any]] = reply.get("events", [])
        self.seq: int = reply["seq"]  # the marker: events after it are live
        self.window: int = reply["window"]
        self.timeout: float = float(reply["timeout"])
        self.received = 0  # live events read (what renewals acknowledge)
        self.acked = 0
        self.renew_at = time.monotonic() + self.timeout / 3
        self.closed = False
        dealer = self.conn._conn
        if dealer is None or not hasattr(dealer, "readable"):
            raise ClientError("the event stream needs plurm's own ZMTP transport", "Unsupported")
        self._dealer = dealer

    def marker(self) -> dict[str, Any]:
        return {MARKER: True, "seq": self.seq}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """The backlog, the marker, then live events until the subscription is dropped."""
        yield from self.backlog
        self.backlog = []
        yield self.marker()
        while not self.closed:
            yield from self.poll(time.monotonic() + self.timeout / 3)

    def poll(self, deadline: float) -> list[dict[str, Any]]:
        """Live events that arrive before ``deadline`` (time.monotonic()); returns at the first
        batch, or empty at the deadline.  Raises Dropped when the controller dropped us."""
        while True:
            now = time.monotonic()
            if now >= self.renew_at or self.received - self.acked >= max(1, self.window // 2):
                self._renew()
            wait = min(deadline, self.renew_at) - now
            try:
                ready = self._dealer.readable(wait)
            except OSError as exc:  # the connection's end (ZmtpError), nothing more to read
                self.closed = True
                raise ClientError(f"event stream lost: {exc}", "ConnectError") from None
            if not ready:
                if time.monotonic() >= deadline:
                    return []
                continue
            events = self._read_one()
            if events:
                return events
            if time.monotonic() >= deadline:
                return []

    def drain(self) -> list[dict[str, Any]]:
        """Every live event already here, without waiting (renewing when due): for a reader
        woken by an event loop when :meth:`fileno` is readable (rest/routes_events.py)."""
        if time.monotonic() >= self.renew_at:
            self._renew()
        out: list[dict[str, Any]] = []
        try:
            while self._dealer.readable(0):
                out.extend(self._read_one())
        except OSError as exc:  # the connection's end (ZmtpError)
            self.closed = True
            raise ClientError(f"event stream lost: {exc}", "ConnectError") from None
        return out

    def fileno(self) -> int:
        return self._dealer.fileno()

    def _renew(self) -> None:
        frames = envelope.seal(self.conn.auth, "journal_subscribe", {"renew": True, "ack": self.received})
        self.renew_at = time.monotonic() + self.timeout / 3
        try:
            self._dealer.send([b""] + frames)
        except OSError:
            # The controller may have dropped us and closed the connection, its last message (the
            # reason, "dropped") still unread here: the next read raises Dropped, or reports the
            # stream lost at the connection's end.
            return
        self.acked = self.received

    def _read_one(self) -> list[dict[str, Any]]:
        try:
            frames = self._dealer.recv()
        except (OSError, TimeoutError) as exc:
            self.closed = True
            raise ClientError(f"event stream lost: {exc}", "ConnectError") from None
        if frames and frames[0] == b"":
            frames = frames[1:]
        try:
            header, payload, sender = envelope.open_envelope(self.conn.auth, frames)
        except envelope.WireError as exc:
            raise ClientError(f"bad message on the event stream: {exc}", exc.code) from None
        if sender.uid not in self.conn.daemon_uids():
            raise ClientError(f"event from uid {sender.uid}, who is not the cluster's daemon user",
                              "AuthenticationError")
        body = json.loads(payload)
        kind = header["type"]
        if kind == "journal_events":
            if body.get("dropped"):
                self.closed = True
                raise Dropped(body["dropped"], body.get("code", "SubscriberDropped"))
            events = body.get("events", [])
            self.received += len(events)
            if self.received - self.acked >= max(1, self.window // 2):
                self._renew()  # (at once: the controller's window counts what we have not acknowledged)
            return events
        if kind == "error":  # a renewal refused: the subscription is gone
            self.closed = True
            raise Dropped(body.get("message", "error"), body.get("code", "Error"))
        return []  # a renewal's acknowledgement

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self._dealer.send([b""] + envelope.seal(self.conn.auth, "journal_subscribe", {"cancel": True}))
            except (OSError, envelope.WireError):
                pass
        self.conn.close()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()
