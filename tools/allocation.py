"""Interactive allocations for srun and salloc: ask, wait, release.

``-I``/``--immediate[=secs]`` (as the real 22.05 acts, tests/integration/reference/immediate/):
``-I`` and ``-I1`` are the controller's: the job is marked ``immediate`` and the pass after
its submission starts it or fails it (corescheduler/core_immediate.py), and this prints the
cause.  A longer time is the client's: it waits that long, then cancels its request.  Either
way the exit status is SLURM_EXIT_IMMEDIATE's (default 1).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from plurm.wire.client import ClientError, Connection

BUSY = "Requested nodes are busy"
NOT_TOP = "Immediate execution impossible, insufficient priority"
TIMED_OUT = "Connection timed out"
# A pending reason that says no wait would help (22.05: "Job submit/allocate failed: ...").
PART_CONFIG = "Requested partition configuration not available now"
_PARTITION_REASONS = ("PartitionNodeLimit", "PartitionTimeLimit", "PartitionConfig")
DEPENDENCY = "Job dependency problem"  # 22.05's words for a held job, or one that must wait to begin
_INELIGIBLE_REASONS = ("JobHeldUser", "JobHeldAdmin", "BeginTime", "Dependency")


class AllocationError(Exception):
    """The allocation was not had; its lines, and the command's exit status."""

    def __init__(self, text: str, exit_code: int = 1) -> None:
        super().__init__(text)
        self.exit_code = exit_code


def immediate_seconds(spec: dict[str, Any], controller: bool = True, prog: str = "salloc") -> int | None:
    """-I (1 second), -I<secs>, or None (off: also -I0, as 22.05 reads it).  The mark stays in
    ``other_options`` for the controller only when it is the controller's to act on (1, and
    ``controller``: not for a hetjob, whose components the client's wait cancels together)."""
    other = spec.get("other_options") or {}
    value = other.get("immediate")
    if value is None:
        return None
    if value != "True" and not value.isdigit():  # (22.05 reads it before anything is asked for)
        raise AllocationError(f'{prog}: error: Invalid numeric value "{value[:64]}" for immediate.')
    seconds = 1 if value == "True" else int(value)
    if seconds == 1 and controller:
        other["immediate"] = "1"
    else:
        del other["immediate"]
        if not other:
            spec.pop("other_options", None)
    return seconds if seconds > 0 else None


def _immediate_exit() -> int:
    try:
        return int(os.environ.get("SLURM_EXIT_IMMEDIATE", "1"))
    except ValueError:
        return 1


def job_record(conn: Connection, job_id: int) -> dict[str, Any] | None:
    try:
        jobs = conn.request("job_info", {"job_ids": [str(job_id)], "all_states": True})["jobs"]
    except ClientError:
        return None
    return next((j for j in jobs if j["job_id"] == job_id), None)


def allocate(conn: Connection, spec: dict[str, Any], prog: str, immediate: float | None = None,
             quiet: bool = False, components: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Submit an allocation request and wait until it runs; return the job record (a hetjob's:
    ``components`` after the first, which start with it: its leader's).  ``immediate``: -I's
    seconds, else read from the spec's options (srun's and salloc's own -I)."""
    by_controller = False
    if immediate is None:
        immediate = immediate_seconds(spec, controller=not components, prog=prog)
        by_controller = immediate == 1 and not components
        if immediate == 1 and components:  # 22.05's slurmctld refuses it before it is a job, free nodes too
            raise AllocationError(f"{prog}: error: Job submit/allocate failed: Job can not start immediately")
    from plurm.wire.busy_retry import new_key, submit_retrying

    # Busy: Slurm's line, sleep and retry; a timed-out reply: sent again with its key (wire/busy_retry.py)
    body = {"spec": spec, "key": new_key(), **({"components": components} if components else {})}
    try:
        reply = submit_retrying(lambda: conn.request("submit_job", body), prog)
    except ClientError as exc:
        if exc.detail:
            print(f"{prog}: error: {exc.detail}", file=sys.stderr)
        raise AllocationError(f"{prog}: error: Unable to allocate resources: {exc}") from None
    job_id = reply["job_id"]
    try:
        return _wait_running(conn, job_id, prog, immediate, quiet, by_controller)
    except KeyboardInterrupt:
        # Ctrl-C while pending: Slurm's srun and salloc cancel the request at the first one.
        release(conn, job_id, cancel=True)
        if prog == "salloc":
            raise AllocationError(f"salloc: Job allocation {job_id} has been revoked.\n"
                                  "salloc: Job aborted due to signal") from None
        raise AllocationError(f"{prog}: Job allocation {job_id} has been revoked\n"
                              f"{prog}: Force Terminated JobId={job_id}") from None


def _wait_running(conn: Connection, job_id: int, prog: str, immediate: float | None,
                  quiet: bool, by_controller: bool = False) -> dict[str, Any]:
    """``by_controller``: -I, answered by the controller's next pass (so no "Pending" line)."""
    announced = False
    delay = 0.02
    started = time.monotonic()
    booting: list[str] = []  # --reboot: the nodes srun waits for (core_reboot.py)
    while True:
        job = job_record(conn, job_id)
        if job is None:
            raise AllocationError(f"{prog}: error: Job allocation {job_id} has been revoked.")
        state = job.get("state", "PENDING")
        # --reboot: srun's allocation is granted once its nodes are back; salloc's at once (as 22.05)
        configuring = prog == "srun" and state == "RUNNING" and job.get("configuring")
        booting = list(job.get("nodes") or booting) if configuring else booting
        if state == "RUNNING" and not configuring:
            if announced and not quiet:
                print(f"{prog}: job {job_id} has been allocated resources", file=sys.stderr)
            return job
        if state != "PENDING" and not configuring:
            if booting and state == "NODE_FAIL":
                raise AllocationError(_boot_failed(booting))
            if by_controller and state == "FAILED":
                raise _refused(job, job_id, prog)
            raise AllocationError(f"{prog}: error: Job allocation {job_id} has been revoked.")
        if not announced and not quiet and not by_controller and not configuring:
            if prog == "salloc":  # (srun says only "queued and waiting")
                print(f"salloc: Pending job allocation {job_id}", file=sys.stderr)
            print(f"{prog}: job {job_id} queued and waiting for resources", file=sys.stderr)
            announced = True
        if immediate is not None and not by_controller and not configuring and time.monotonic() - started > immediate:
            release(conn, job_id, cancel=True)
            # 22.05: salloc's wait timed out; srun names the cause (both seen on the anchor).
            if prog == "salloc":
                raise AllocationError(f"salloc: error: Unable to allocate resources: {TIMED_OUT}\n"
                                      f"salloc: Job allocation {job_id} has been revoked.", _immediate_exit())
            raise AllocationError(f"{prog}: error: Unable to allocate resources: {BUSY}", _immediate_exit())
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def _refused(job: dict[str, Any], job_id: int, prog: str) -> AllocationError:
    """The controller failed an immediate job: why, from its last pending reason (the
    transition log), in 22.05's words; salloc adds the revoke line."""
    reasons = [reason for _, state, reason in job.get("events") or [] if state == "PENDING"]
    reason = reasons[-1] if reasons else "None"
    if reason in _PARTITION_REASONS or reason in _INELIGIBLE_REASONS:
        cause = PART_CONFIG if reason in _PARTITION_REASONS else DEPENDENCY
        text, code = f"{prog}: error: Job submit/allocate failed: {cause}", 1
    else:
        cause = NOT_TOP if reason == "Priority" else BUSY
        text, code = f"{prog}: error: Unable to allocate resources: {cause}", _immediate_exit()
    if prog == "salloc":
        text += f"\nsalloc: Job allocation {job_id} has been revoked."
    return AllocationError(text, code)


def _boot_failed(nodes: list[str]) -> str:
    """srun's words when its nodes did not come back from their reboot (22.05, on the anchor)."""
    from plurm.grammar.hostlist import compress

    names = compress(nodes)
    return (f"srun: error: Node failure on {names}\nsrun: error: Nodes {names} are still not ready\n"
            "srun: error: Something is wrong with the boot of the nodes.")


def release(conn: Connection, job_id: int, exit_code: int = 0, cancel: bool = False) -> None:
    try:
        if cancel:
            conn.request("cancel_job", {"job_ids": [str(job_id)]})
        else:
            conn.request("job_complete", {"job_id": job_id, "exit_code": exit_code})
    except ClientError:
        pass
