"""External jobs: the job flag ``EXTERNAL_JOB`` (issue 16, item 6; docs/kubernetes.md).

slurm-bridge, the Kubernetes scheduler plugin, asks Slurm where a pod group may run by
submitting a job with ``flags: ["EXTERNAL_JOB"]`` and no script over REST (``job/submit``),
reads the job's ``nodes`` once it is RUNNING, binds the pods there itself, and ends the job
with ``DELETE job/{id}`` when the pods are gone.  So such a job is an allocation that nobody
launches from here: the controller places it and puts it RUNNING, sends nothing to any
plurmd, still ends it at its time limit, and records its end in accounting as it records an
allocation's (``salloc --no-shell``'s, which is the same thing for the scheduler).

A mixin of ``ClusterCore`` (through core_options.OptionEffects), pure as the rest of the core.
An external job is a job with ``spec.batch`` False (as an allocation for salloc/srun, whose
end the core already handles: cancel, time limit, no batch step) and ``spec.external`` True;
the core makes the first follow from the second, whoever built the spec.  Where it may be
placed: External nodes (``State=External``, core_dynnodes.py) take external jobs only; the
scheduler applies ``scheduler.takes_kind`` (``may_use_node`` is the same rule by job spec).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from plurm.corescheduler import authz
from plurm.corescheduler.identity import Identity
from plurm.wire.model import Job, JobSpec, Node

log = logging.getLogger("plurmctld")

EXTERNAL_FLAG = "EXTERNAL_JOB"  # the job flag's name in job_desc_msg.flags and job_info.flags


def is_external(job: Job) -> bool:
    """A job allocated for someone else to launch (EXTERNAL_JOB)."""
    return job.spec.external


def job_flags(spec: JobSpec) -> list[str]:
    """The job_info ``flags`` this module accounts for (REST job output)."""
    return [EXTERNAL_FLAG] if spec.external else []


def may_use_node(spec: JobSpec, node: Node) -> bool:
    """Whether a job of ``spec`` may be placed on ``node``: an External node (no plurmd: the
    Kubernetes node slurm-bridge registered) takes external jobs only; other nodes take all
    (the scheduler's rule, scheduler.takes_kind, which every placement and submission check uses)."""
    from plurm.corescheduler.scheduler import takes_kind

    return takes_kind(node, spec.external)


class ExternalJobs:
    if TYPE_CHECKING:  # provided by ClusterCore
        def privileged(self, who: Identity | None) -> bool: ...

    def external_submit(self, spec: JobSpec, who: Identity) -> None:
        """At submission, before the job exists.  An external job has nothing to launch: it is
        an allocation (batch False) whatever the client sent, with no script kept.  Its
        ``admin_comment`` (slurm-bridge keeps the pods' names there) is the operators' field,
        as Slurm's AdminComment: anyone else setting it is refused."""
        if spec.admin_comment is not None and not self.privileged(who):
            log.info("submission of %s refused: admin_comment set by a user who is not an operator", who.user)
            raise authz.denied()
        if spec.external:
            spec.batch = False
            spec.script = None
            spec.script_args = []
