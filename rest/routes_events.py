"""``GET /plurm/v0/events``: the event stream as server-sent events (issue 16 item 4).

Not a slurmrestd path (slurmrestd has no stream), so it lives under plurm's own prefix and is
not in /openapi.json; docs/events.md describes it.  Authenticated as every other path: the
caller's JWT goes with the subscription to the controller, which verifies it and filters the
events for that user (PrivateData), as for a ZeroMQ subscriber.

Query parameters (each may repeat, or hold a comma-separated list): ``job``, ``user``,
``partition``, ``event``; ``since`` (a seq: the backlog after it) or ``backlog=0``; and
``window``.  Each event is one SSE message: ``id:`` its seq, ``event:`` its name, ``data:``
its JSON; the marker is ``event: marker``; a comment line every KEEPALIVE_S seconds keeps
proxies from closing an idle stream and tells us when the client has gone.  A resuming client
may send ``Last-Event-ID`` instead of ``since``.

Each stream holds one controller connection, read on the event loop (``add_reader`` on its
socket), never an executor thread: fifty watchers cost fifty sockets, not fifty threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from plurm.rest import responses
from plurm.rest.ctld import REQUEST_TIMEOUT_S, Controller
from plurm.wire.client import ClientError, Connection
from plurm.wire.journal_client import Dropped, Subscription
from plurm.wire.jwt_cred import TokenCredential

log = logging.getLogger("plurmrestd")

PATH = "/plurm/v0/events"
VERSION = "v0.0.44"  # (the error answers' envelope)
KEEPALIVE_S = 10.0


def _many(query: Any, key: str) -> list[str]:
    return [item for value in query.getall(key, []) for item in value.split(",") if item]


def _int(value: str, name: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ClientError(f"{name} must be an integer, not {value!r}", "BadRequest") from None


def _subscribe(ctl: Controller, caller: Any, request: web.Request) -> Subscription:
    query = request.query
    since_text = query.get("since") or request.headers.get("Last-Event-ID")
    backlog = query.get("backlog", "1").lower() not in ("0", "false", "no")
    conn = Connection(ctl.settings, timeout=REQUEST_TIMEOUT_S)
    try:
        conn.auth = TokenCredential(conn.auth, caller.token, caller.user_name)
    except ValueError as exc:
        raise ClientError(f"Invalid authentication token: {exc}", "AuthenticationError") from None
    return Subscription(job_ids=[_int(j, "job") for j in _many(query, "job")], users=_many(query, "user"),
                        partitions=_many(query, "partition"), events=_many(query, "event"),
                        since=_int(since_text, "since") if since_text else None, backlog=backlog,
                        window=_int(query.get("window", "0"), "window"), conn=conn)


def sse(name: str, data: bytes, seq: int | None = None) -> bytes:
    head = f"id: {seq}\n" if seq is not None else ""
    return f"{head}event: {name}\n".encode() + b"data: " + data + b"\n\n"


def register(app: web.Application, ctl: Controller, caller_of: Callable[[web.Request], Any],
             auth_missing: type[Exception]) -> None:
    """Add the path; ``caller_of`` (raising ``auth_missing``) reads a request's token, as
    rest/server.py does for every path (passed in: server imports this module)."""
    from plurm.wire import lightjson as json

    def encode(obj: Any) -> bytes:
        return json.dumps(obj).encode()

    async def events(request: web.Request) -> web.StreamResponse:
        try:
            caller = caller_of(request)
        except auth_missing as exc:
            return responses.failure(request, VERSION, ctl.cluster, 401, f"Authentication failure: {exc}",
                                     "AuthenticationError", "rest_auth/jwt")
        loop = asyncio.get_running_loop()
        try:
            sub = await loop.run_in_executor(None, _subscribe, ctl, caller, request)
        except ClientError as exc:
            status = 400 if exc.code in ("InvalidEventName", "InvalidFilter", "BadRequest") \
                else 503 if exc.code == "TooManySubscribers" else responses.status_for(exc.code)
            return responses.failure(request, VERSION, ctl.cluster, status, str(exc), exc.code, PATH)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                               "X-Accel-Buffering": "no"})
        ready = asyncio.Event()
        fd = sub.fileno()
        loop.add_reader(fd, ready.set)
        try:
            await response.prepare(request)
            for event in sub.backlog:
                await response.write(sse(event["event"], encode(event), event["seq"]))
            await response.write(sse("marker", encode(sub.marker()), sub.seq))
            while True:
                try:
                    batch = sub.drain()
                except Dropped as exc:
                    await response.write(sse("dropped", encode({"reason": str(exc), "code": exc.code})))
                    break
                except ClientError as exc:
                    log.info("event stream for %s ended: %s", request.remote, exc)
                    break
                if batch:
                    await response.write(b"".join(sse(e["event"], encode(e), e["seq"]) for e in batch))
                ready.clear()
                try:
                    await asyncio.wait_for(ready.wait(), KEEPALIVE_S)
                except asyncio.TimeoutError:
                    await response.write(b": keepalive\n\n")
        except (ConnectionResetError, asyncio.CancelledError):
            pass  # the client went away
        finally:
            loop.remove_reader(fd)
            sub.close()
        return response

    app.router.add_get(PATH, events)
