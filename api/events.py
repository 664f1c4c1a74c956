"""``plurm.api.watch``: the event stream (docs/events.md) as a Python generator.

    from plurm import api
    for event in api.watch(user="alice", events=["start", "complete"]):
        if event.get("marker"):
            print("backlog done; live from here")
        else:
            print(event["seq"], event["event"], event.get("job_id"), event.get("state"))

It yields the journal's backlog (the events it still holds that the filters select and this
user may see), then ``{"marker": True, "seq": N}``, then live events as they happen, until the
caller stops iterating (the subscription is cancelled) or the controller drops it
(``plurm.wire.journal_client.Dropped``, a ``ClientError``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from plurm.wire.client import read_settings
from plurm.wire.journal_client import Dropped, Subscription

__all__ = ["Dropped", "watch"]


def _many(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, int)):
        return [value]
    return list(value)


def watch(job: int | Iterable[int] | None = None, user: str | Iterable[str] | None = None,
          partition: str | Iterable[str] | None = None, events: str | Iterable[str] | None = None,
          backlog: bool = True, since: int | None = None, conf: str | None = None,
          window: int = 0) -> Iterator[dict[str, Any]]:
    """Events of these jobs, users, partitions and event names (None: any): the backlog (after
    ``since``, a seq, when given; none when ``backlog`` is False), the marker, then live ones."""
    settings = read_settings(conf) if conf else None
    sub = Subscription(job_ids=[int(j) for j in _many(job)], users=[str(u) for u in _many(user)],
                       partitions=_many(partition), events=_many(events), since=since, backlog=backlog,
                       window=window, settings=settings)
    try:
        yield from sub
    finally:
        sub.close()
