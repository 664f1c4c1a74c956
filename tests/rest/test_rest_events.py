"""GET /plurm/v0/events: the event stream as server-sent events from plurmrestd (issue 16 item
4; rest/routes_events.py), against the real server and controller."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request

from resttest import Rest, call

PATH = "/plurm/v0/events"


def open_stream(rest: Rest, token: str | None, query: str = "", headers: dict | None = None):
    request = urllib.request.Request(rest.url + PATH + (f"?{query}" if query else ""),
                                     headers=dict({"Authorization": f"Bearer {token}"} if token else {},
                                                  **(headers or {})))
    return urllib.request.urlopen(request, timeout=60)


def messages(stream):
    """(event, id, data) of each SSE message; comments (keepalives) skipped."""
    name = seq = None
    data: list[str] = []
    for raw in stream:
        line = raw.decode().rstrip("\n")
        if line.startswith(":"):
            continue
        if not line:
            if data:
                yield name, seq, json.loads("\n".join(data))
            name = seq = None
            data = []
            continue
        field, _, value = line.partition(": ")
        if field == "event":
            name = value
        elif field == "id":
            seq = int(value)
        elif field == "data":
            data.append(value)


def test_sse_backlog_marker_and_live_events(rest: Rest) -> None:
    token = rest.token()
    with open_stream(rest, token, "backlog=0&event=submit,start,complete") as stream:
        assert stream.headers["Content-Type"].startswith("text/event-stream")
        events = messages(stream)
        name, marker_seq, data = next(events)
        assert name == "marker" and data == {"marker": True, "seq": marker_seq}
        job_id = rest.cluster.sbatch("--wrap", "true", cwd=rest.work)
        seen = []
        for name, seq, data in events:
            assert name == data["event"] and seq == data["seq"] and seq > marker_seq
            if data.get("job_id") == job_id:
                seen.append(name)
                assert data["user_id"] == os.getuid()
                if name == "complete":
                    break
    assert seen == ["submit", "start", "complete"]
    # Resuming from a seq (Last-Event-ID as browsers send it): that job's events as the backlog.
    with open_stream(rest, token, f"job={job_id}", {"Last-Event-ID": str(marker_seq)}) as stream:
        backlog = []
        for name, seq, data in messages(stream):
            if name == "marker":
                break
            backlog.append(name)
    assert [n for n in backlog if n in ("submit", "start", "complete")] == seen


def test_sse_needs_a_token_and_checks_its_filters(rest: Rest) -> None:
    for token in (None, "not.a.token"):
        try:
            open_stream(rest, token)
            raise AssertionError("a stream without a valid token")
        except urllib.error.HTTPError as exc:
            assert exc.code == 401, exc.read()
    try:
        open_stream(rest, rest.token(), "event=no_such_event")
        raise AssertionError("an unknown event name was accepted")
    except urllib.error.HTTPError as exc:
        assert exc.code == 400
        assert "no_such_event" in json.loads(exc.read())["errors"][0]["description"]
    status, spec = call(rest.url, "GET", "/openapi.json")
    assert status == 200 and PATH not in json.dumps(spec)  # not slurmrestd's: not in its spec
