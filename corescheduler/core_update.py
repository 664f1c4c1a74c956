"""scontrol update job: a job's changes, checked against the job and its sender, then applied.

A mixin of ``ClusterCore`` (corescheduler/core.py), pure in the same way.  The service
layer parses the Key=Value pairs into ``JobChanges``; the rules on who may change what
are authz.py's.  All the checks come first: a refused request changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from plurm.corescheduler import authz
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.scheduler import REASON_HELD_ADMIN, REASON_HELD_USER
from plurm.wire import model
from plurm.wire.model import Job

_UNSET: Any = object()


@dataclass
class JobChanges:
    """An ``scontrol update job`` request, parsed by the service layer; unset fields stay."""

    hold: str | None = None  # "user" or "admin"
    release: bool = False
    time_limit: Any = _UNSET  # minutes, or None for UNLIMITED
    partition: str | None = None
    priority: int | None = None
    nice: int | None = None
    name: str | None = None
    comment: str | None = None
    admin_comment: str | None = None  # AdminComment= (operators only; slurm-bridge's pods: core_external.py)
    nodes: tuple[int, int | None] | None = None  # (min, max)
    ntasks: int | None = None
    licenses: str | None = None  # Licenses= ("" takes them away; core_licenses.py)
    reservation: str | None = None  # Reservation= ("" takes it away; core_resv.py)


class JobUpdates:
    if TYPE_CHECKING:  # provided by ClusterCore
        partitions: dict[str, Any]
        priority_policy: Any
        shape: Any
        need_schedule: bool

        def _at(self, now: float) -> None: ...
        def _save(self, job: Job) -> None: ...
        def privileged(self, who: Identity | None) -> bool: ...
        def check_owner(self, job: Job, who: Identity, message: str = ...) -> None: ...
        def _check_access(self, partition: Any, spec: Any, who: Identity) -> None: ...
        def _update_licenses(self, job: Job, text: str | None) -> None: ...
        def reservation_change(self, job: Job, name: str | None, who: Identity) -> str | None: ...

    def update_job(self, job: Job, changes: JobChanges, who: Identity, now: float) -> None:
        """scontrol update job: the changes the service layer parsed, checked against the
        job and the sender (authz.py), then applied together or not at all."""
        self._at(now)
        self.check_owner(job, who, authz.USER_ID_MISSING)
        privileged = self.privileged(who)
        changes = replace(changes)  # (the caller's stays as parsed: it may serve several jobs)
        if changes.priority == 0:  # Priority=0 is a hold
            changes.hold, changes.priority = changes.hold or "admin", None
        if changes.hold and not privileged:
            # A user's hold is a user hold, and it leaves an operator's hold as it is.
            changes.hold = "admin" if job.held_by == "admin" else "user"
        pending_only = changes.hold or changes.release or changes.partition is not None or changes.nodes is not None
        if pending_only and job.state != model.PENDING:
            raise RequestError("Job is no longer pending execution", "NotPending")
        if changes.priority is not None and job.held_by and not changes.release:
            raise RequestError(authz.JOB_HELD, "JobHeld")
        current = self.partitions.get(job.partition)
        if not privileged and changes.priority == job.priority:
            changes.priority = None  # its own value again: nothing to change
        if not privileged:
            authz.check_owner_update(job, changes, _UNSET, current.max_time if current is not None else None)
            if changes.admin_comment is not None:
                raise authz.denied()  # (AdminComment is the operators', as Slurm's)
        partition = None
        if changes.partition is not None:
            partition = self.partitions.get(changes.partition)
            if partition is None:
                raise RequestError("Invalid partition name specified", "InvalidPartition")
            if not privileged:
                try:
                    self._check_access(partition, job.spec, who)
                except RequestError:  # (Slurm moves the job there anyway, held by PartitionConfig)
                    raise RequestError(authz.PART_UNAVAILABLE, "PartitionConfig") from None
        reservation = _UNSET if changes.reservation is None else self.reservation_change(job, changes.reservation, who)
        self._update_licenses(job, changes.licenses)  # (checked, then set: the last check that can refuse)
        if reservation is not _UNSET:
            job.spec.reservation = reservation
        if changes.hold:
            job.held_by = changes.hold
            job.priority = 0
            job.reason = REASON_HELD_ADMIN if job.held_by == "admin" else REASON_HELD_USER
        if changes.release:
            job.held_by = None
            job.priority = self.priority_policy.priority(job, now, self.shape)
            job.reason = "None"
        if changes.time_limit is not _UNSET:
            minutes = changes.time_limit
            job.time_limit = minutes
            if job.state == model.RUNNING and job.start_time is not None:
                job.end_time = job.start_time + minutes * 60 if minutes is not None else None
        if partition is not None:
            job.partition = partition.name
            job.spec.partition = partition.name
        if changes.priority is not None:
            job.priority = changes.priority
            job.priority_set = True  # set by hand: not recomputed
        if changes.nice is not None:
            job.spec.nice = changes.nice
            if job.state == model.PENDING and not job.held_by and not job.priority_set:
                job.priority = self.priority_policy.priority(job, now, self.shape)
        if changes.name is not None:
            job.spec.name = changes.name
        if changes.comment is not None:
            job.spec.comment = changes.comment
        if changes.admin_comment is not None:
            job.spec.admin_comment = changes.admin_comment or None
        if changes.nodes is not None:
            job.spec.nodes_min, job.spec.nodes_max = changes.nodes
        if changes.ntasks is not None:
            job.spec.ntasks = changes.ntasks
        self._save(job)
        self.need_schedule = True
