"""Interactive allocations for srun and salloc: ask, wait, release."""

from __future__ import annotations

import sys
import time
from typing import Any

from plurm.wire.client import ClientError, Connection


class AllocationError(Exception):
    pass


def job_record(conn: Connection, job_id: int) -> dict[str, Any] | None:
    try:
        jobs = conn.request("job_info", {"job_ids": [str(job_id)], "all_states": True})["jobs"]
    except ClientError:
        return None
    return next((j for j in jobs if j["job_id"] == job_id), None)


def allocate(conn: Connection, spec: dict[str, Any], prog: str, immediate: float | None = None,
             quiet: bool = False, components: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Submit an allocation request and wait until it runs; return the job record (a hetjob's:
    ``components`` after the first, which start with it: its leader's)."""
    try:
        reply = conn.request("submit_job", {"spec": spec, **({"components": components} if components else {})})
    except ClientError as exc:
        if exc.detail:
            print(f"{prog}: error: {exc.detail}", file=sys.stderr)
        raise AllocationError(f"{prog}: error: Unable to allocate resources: {exc}") from None
    job_id = reply["job_id"]
    try:
        return _wait_running(conn, job_id, prog, immediate, quiet)
    except KeyboardInterrupt:
        # Ctrl-C while pending: Slurm's srun and salloc cancel the request at the first one.
        release(conn, job_id, cancel=True)
        if prog == "salloc":
            raise AllocationError(f"salloc: Job allocation {job_id} has been revoked.\n"
                                  "salloc: Job aborted due to signal") from None
        raise AllocationError(f"{prog}: Job allocation {job_id} has been revoked\n"
                              f"{prog}: Force Terminated JobId={job_id}") from None


def _wait_running(conn: Connection, job_id: int, prog: str, immediate: float | None,
                  quiet: bool) -> dict[str, Any]:
    announced = False
    delay = 0.02
    started = time.monotonic()
    while True:
        job = job_record(conn, job_id)
        if job is None:
            raise AllocationError(f"{prog}: error: Job allocation {job_id} has been revoked.")
        state = job.get("state", "PENDING")
        configuring = state == "RUNNING" and job.get("configuring")  # --reboot: granted once its nodes are back
        if state == "RUNNING" and not configuring:
            if announced and not quiet:
                print(f"{prog}: job {job_id} has been allocated resources", file=sys.stderr)
            return job
        if state != "PENDING" and not configuring:
            raise AllocationError(f"{prog}: error: Job allocation {job_id} has been revoked.")
        if not announced and not quiet and not configuring:
            if prog == "salloc":  # (srun says only "queued and waiting")
                print(f"salloc: Pending job allocation {job_id}", file=sys.stderr)
            print(f"{prog}: job {job_id} queued and waiting for resources", file=sys.stderr)
            announced = True
        if immediate is not None and not configuring and time.monotonic() - started > immediate:
            release(conn, job_id, cancel=True)
            raise AllocationError(f"{prog}: error: Unable to allocate resources: Requested node configuration "
                                  "is not available")
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def release(conn: Connection, job_id: int, exit_code: int = 0, cancel: bool = False) -> None:
    try:
        if cancel:
            conn.request("cancel_job", {"job_ids": [str(job_id)]})
        else:
            conn.request("job_complete", {"job_id": job_id, "exit_code": exit_code})
    except ClientError:
        pass
