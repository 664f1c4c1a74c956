"""Idempotent and bulk submission (plurm.api): a retried submission returns the job it made.

A client that timed out waiting for ``submit_job`` cannot know whether the controller
took the job.  With a client-chosen key (``SubmitJob.key``) it may simply send again:
the controller answers with the job the first attempt created (``"duplicate": true``)
instead of creating a second one.

Where the key is kept: on the job record itself (``Job.submit_key``), so it is as
durable as the job (the store writes the whole record in the same commit that answers
the submission) and lives exactly as long as the record (until MinJobAge purges the
finished job: the documented horizon).  The index below is memory only, rebuilt from
the core's jobs whenever the controller loads its state.

Whose key: the uid the job belongs to, which the controller takes from the verified
credential (or from --uid, for root and SlurmUser only): two users' equal keys never
collide, and a key can never be used to read another user's job id.

Bulk (``submit_jobs``): up to MAX_BATCH submissions in one message, handled in one
controller turn, so one store commit makes them all durable before the one reply.
Each entry succeeds or fails on its own (a refused entry carries Slurm's message and
code); the accepted ones are all committed together.

Like the service layer this module does no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.wire import protocol
from plurm.wire.model import Job

MAX_KEY_LEN = 128
MAX_BATCH = 10_000  # submissions per submit_jobs message (and 16 MiB per frame: wire/hardening.py)
_KEY = re.compile(r"[A-Za-z0-9._:@/+=-]+")

Submit = Callable[[protocol.SubmitJob, Identity, float], dict[str, Any]]


def check_key(key: str) -> None:
    """A key is 1..MAX_KEY_LEN printable ASCII characters of a safe set (no spaces, no control)."""
    if not key or len(key) > MAX_KEY_LEN or not _KEY.fullmatch(key):
        raise RequestError(f"Invalid idempotency key: 1 to {MAX_KEY_LEN} characters of "
                           "A-Z a-z 0-9 . _ : @ / + = -", "InvalidIdempotencyKey")


def check_batch(msg: protocol.SubmitJobs) -> None:
    if not msg.jobs:
        raise RequestError("Bulk submission with no jobs", "InvalidBatch")
    if len(msg.jobs) > MAX_BATCH:
        raise RequestError(f"Bulk submission of {len(msg.jobs)} jobs exceeds the limit of {MAX_BATCH} "
                           "per request", "BatchTooLarge")


class SubmitKeys:
    """(uid, key) -> job id, for the jobs the core holds now."""

    def __init__(self, jobs: Mapping[int, Job]) -> None:
        self._jobs = jobs
        self._index: dict[tuple[int, str], int] | None = None  # built on first use (not at every load)

    def _rebuild(self) -> None:
        index: dict[tuple[int, str], int] = {}
        for job in self._jobs.values():
            if job.submit_key is not None and job.spec.user_id is not None:
                answer = job.array_job_id or job.job_id  # an array's tasks share their submission's key
                entry = (job.spec.user_id, job.submit_key)
                index[entry] = min(answer, index.get(entry, answer))
        self._index = index

    def find(self, uid: int, key: str) -> int | None:
        if self._index is None:
            self._rebuild()
        assert self._index is not None
        job_id = self._index.get((uid, key))
        if job_id is None:
            return None
        job = self._jobs.get(job_id)
        if job is None or job.submit_key != key or job.spec.user_id != uid:
            self._rebuild()  # purged (or an array whose first record went first): look again
            return self._index.get((uid, key))
        return job_id

    def remember(self, job: Job, key: str) -> None:
        job.submit_key = key
        if self._index is None:
            self._rebuild()
        assert self._index is not None
        if job.spec.user_id is not None:
            self._index[(job.spec.user_id, key)] = job.job_id
        if len(self._index) > 2 * len(self._jobs) + 1024:  # purged jobs' keys: bounded memory
            self._rebuild()


def submit_once(keys: SubmitKeys, jobs: Mapping[int, Job], submit: Submit, msg: protocol.SubmitJob,
                who: Identity, now: float) -> dict[str, Any]:
    """``submit`` (Service.submit without the key) unless this uid's key names a job already."""
    key, msg.key = msg.key, None  # (``submit`` is the plain submission)
    if key is None or msg.test_only:
        return submit(msg, who, now)
    check_key(key)
    seen = keys.find(who.uid, key)
    if seen is not None:
        return {"job_id": seen, "warnings": [], "duplicate": True}
    reply = submit(msg, who, now)
    job = jobs.get(reply["job_id"])
    if job is not None:
        keys.remember(job, key)
    return reply


def submit_many(one: Callable[[protocol.SubmitJob], dict[str, Any]],
                msg: protocol.SubmitJobs) -> dict[str, Any]:
    """Each entry through ``one`` (the keyed submission above); a refusal is that entry's result."""
    check_batch(msg)
    results: list[dict[str, Any]] = []
    accepted = 0
    for entry in msg.jobs:
        try:
            result = one(entry)
        except RequestError as exc:
            result = {"error": str(exc), "code": exc.code}
        else:
            accepted += 1
        results.append(result)
    return {"results": results, "accepted": accepted}
