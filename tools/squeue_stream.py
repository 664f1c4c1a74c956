"""squeue --iterate over the event stream (issue 16 item 4; docs/events.md).

Without it, ``squeue -i N`` asks the controller for the whole listing every N seconds, the
polling that loads Slurm's controllers.  Here it asks once, subscribes to the job events that
its filters select, and at each period asks again only if an event came in since; otherwise it
prints the listing it holds with the clock moved on (the TIME column of running jobs), which is
what a new request would print, since no job changed state.  What changes without a state
change (a pending job's reason or priority, an expected start, scontrol update) shows at the
next event or at the resynchronisation every ``RESYNC_S`` seconds.  The stream failing (a
dropped subscription, an older controller) falls back to a request per period, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

RESYNC_S = 30.0
JOB_EVENTS = ["submit", "start", "suspend", "resume", "requeue", "complete", "cancel"]
WINDOW = 100_000  # events between two prints before the controller drops us (then: resubscribe)


class StreamedListing:
    """The job_info reply squeue prints, refreshed only when the stream says something changed."""

    def __init__(self, body: dict[str, Any], users: list[str], partitions: list[str],
                 request: Callable[[str, dict], dict]) -> None:
        self.body = body
        self.users = users
        self.partitions = partitions
        self.request = request
        self.sub: Any = None
        self.reply: dict[str, Any] | None = None
        self.loaded_at = 0.0  # time.monotonic() of the reply

    def _subscribe(self) -> None:
        from plurm.wire.client import ClientError
        from plurm.wire.journal_client import Subscription

        try:
            self.sub = Subscription(users=self.users, partitions=self.partitions, events=JOB_EVENTS, since=-1,
                                    window=WINDOW)
        except ClientError:
            self.sub = None  # (no stream here: a request per period)

    def _changed(self) -> bool:
        """Whether a job event came in since the last listing (True when there is no stream)."""
        from plurm.wire.client import ClientError

        if self.sub is None:
            return True
        changed = False
        try:
            while True:
                events = self.sub.poll(time.monotonic())
                if not events:
                    return changed
                changed = True
        except ClientError:  # dropped or lost: start again from a fresh listing
            self.sub.close()
            self.sub = None
            return True

    def __call__(self) -> dict[str, Any]:
        """The reply for this period (squeue.run_once's reply source)."""
        if self.reply is None or self._changed() or time.monotonic() - self.loaded_at >= RESYNC_S:
            if self.sub is None:
                self._subscribe()  # before the request: what changes after it is an event
            self.reply = self.request("job_info", self.body)
            self.loaded_at = time.monotonic()
            return dict(self.reply, jobs=list(self.reply.get("jobs", [])))
        now = self.reply.get("now") or time.time()
        return dict(self.reply, jobs=list(self.reply.get("jobs", [])), now=now + time.monotonic() - self.loaded_at)

    def close(self) -> None:
        if self.sub is not None:
            self.sub.close()
            self.sub = None
