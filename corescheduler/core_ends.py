"""Jobs' ends: a node daemon's report, srun/salloc's end of an allocation, scancel.

A mixin of ``ClusterCore`` (corescheduler/core.py), pure in the same way: the clock
is ``now``, the sender an ``Identity``.  ``_finish`` is where every job ends: it frees
the resources, closes the steps, charges fair-share usage and writes accounting.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from plurm.corescheduler import effects as fx
from plurm.corescheduler.effects import Outgoing
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.wire import model
from plurm.wire.model import Job, Node, StepRecord
from plurm.wire.protocol import STEP_USAGE_KEYS

log = logging.getLogger("plurmctld")

# What Slurm 22.05 records for a job or step the kernel OOM-killed: its SIG_OOM status (253),
# which sacct and scontrol show as signal 125 (253 & 0x7f) with exit code 0.
OOM_EXIT = (0, 125)
_USAGE_NODES = ("max_rss_node", "max_vmsize_node")


def step_usage(usage: dict[str, Any] | None, node: str | None = None) -> dict[str, Any]:
    """A node's or srun's usage report (protocol.STEP_USAGE_KEYS) as a step keeps it: only the
    known keys, numbers as numbers and node names as short strings (the figures come from a
    node daemon or from the job's own srun: kept, never trusted to be well formed);
    ``node`` fills in the *_node keys a node's own report leaves out."""
    out: dict[str, Any] = {}
    for key, value in (usage or {}).items():
        if key not in STEP_USAGE_KEYS:
            continue
        if key in _USAGE_NODES:
            if isinstance(value, str) and value:
                out[key] = value[:256]
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 2 ** 63:
            out[key] = value
    if node:
        for peak, key in (("max_rss_kb", "max_rss_node"), ("max_vmsize_kb", "max_vmsize_node")):
            if peak in out:
                out.setdefault(key, node)
    return out


class JobEnds:
    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, Job]
        nodes: dict[str, Node]
        steps: dict[tuple[int, str], StepRecord]
        missing_since: dict[int, float]
        scheduler: Any
        accounts: Any
        need_schedule: bool
        _effects: list[fx.Effect]

        def _at(self, now: float) -> None: ...
        def _save(self, job: Job) -> None: ...
        def _save_step(self, step: StepRecord) -> None: ...
        def _new_job_id(self) -> int: ...
        def _requeue(self, job: Job, now: float) -> None: ...
        def check_owner(self, job: Job, who: Identity) -> None: ...
        def owned_job(self, job_id: int, who: Identity) -> Job: ...
        def terminate_body(self, job: Job) -> dict[str, Any]: ...

    # ------------------------------------------------------------------ job end
    def job_ended(self, job_id: int, exit_code: int, exit_signal: int, end_time: float | None, now: float,
                  timed_out: bool = False, usage_max: dict[str, str] | None = None,
                  usage_ave: dict[str, str] | None = None, launch_failed: bool = False,
                  requeue_held: bool = False, restarts: int = -1, node: str | None = None,
                  oom_kills: int = 0, usage: dict[str, Any] | None = None) -> list[Outgoing]:
        """A batch script's end, from ``node`` (None: not said), of the run ``restarts`` (-1:
        not said).  The end of another run than the job's current one, or from another node
        than its batch host (a copy left on a node that failed and came back), is
        acknowledged by the service layer and otherwise ignored, as Slurm's "Batch completion
        for JobId=N sent from wrong node".  ``oom_kills``: the kernel killed processes of the
        batch step for memory (its cgroup's limit): the job ends OUT_OF_MEMORY, as Slurm's
        task/cgroup makes it; ``usage``: the batch step's (MaxRSS, TotalCPU, ...)."""
        self._at(now)
        job = self.jobs.get(job_id)
        if job is None or (job.state in model.FINISHED_STATES and not job.completing):
            return []  # already recorded: a resent report
        if (restarts >= 0 and restarts != job.restarts) or (node is not None and node not in job.nodes[:1]) \
                or (job.state == model.PENDING and not job.completing):
            log.warning("job %s: end of run %s from node %s ignored (its run %s is on %s)", job_id,
                        restarts if restarts >= 0 else "?", node or "?", job.restarts, ",".join(job.nodes) or "none")
            return []
        if requeue_held and not job.cancel_state and job.spec.requeue and job.spec.batch:
            # The node's Prolog failed (the node is drained): Slurm puts the job back in the
            # queue held, for an administrator to release once the node is mended.
            self.steps.pop((job_id, "batch"), None)
            job.held_by = "admin"
            self._requeue(job, end_time or now)
            return []
        if launch_failed and not job.cancel_state:
            job.reason = "JobLaunchFailure"  # Slurm's reason for a batch job that never started
        end = end_time or now
        if job.cancel_state:
            state = job.cancel_state
        elif timed_out:
            state = model.TIMEOUT
        elif oom_kills > 0:
            state = model.OUT_OF_MEMORY
            exit_code, exit_signal = OOM_EXIT
            log.info("job %s: %d oom-kill event(s) in its batch step: OUT_OF_MEMORY", job_id, oom_kills)
        elif exit_signal or exit_code:
            state = model.FAILED
        else:
            state = model.COMPLETED
        step = self.steps.pop((job_id, "batch"), None)
        if step is not None:
            step.end_time = end
            step.exit_code, step.exit_signal = exit_code, exit_signal
            step.tres_usage_max, step.tres_usage_ave = dict(usage_max or {}), dict(usage_ave or {})
            step.usage = step_usage(usage, node or (job.nodes[0] if job.nodes else None))
            # A launch that failed (its files could not be opened): Slurm's .batch step is CANCELLED;
            # so is a timed-out job's (22.05: the job TIMEOUT 0:15, its .batch step CANCELLED 0:15).
            if state in (model.CANCELLED, model.PREEMPTED, model.TIMEOUT, "REQUEUE") or launch_failed:
                step.state = model.CANCELLED
            elif state == model.OUT_OF_MEMORY:
                step.state = model.OUT_OF_MEMORY
            else:
                step.state = model.FAILED if exit_code or exit_signal else model.COMPLETED
            self._save_step(step)
        if state == "REQUEUE":
            self._requeue(job, end)
            return []
        out = self._finish(job, state, end, exit_code, exit_signal)
        # Steps that may still run on the other nodes of the allocation.
        out.extend(Outgoing(n, "terminate_job", self.terminate_body(job))
                   for n in job.nodes[1:])
        return out

    def _finish(self, job: Job, state: str, end: float, exit_code: int = 0, exit_signal: int = 0) -> list[Outgoing]:
        if state == "REQUEUE":  # a requeued job whose end came another way (its node failed)
            self._requeue(job, end)
            return []
        was_allocated = job.state in (model.RUNNING, model.SUSPENDED) or job.completing
        job.state = state
        job.completing = False
        job.end_time = end
        job.exit_code, job.exit_signal = exit_code, exit_signal
        if job.start_time is None:
            job.start_time = end if state != model.CANCELLED else None
        job.frozen = ""  # (its reason keeps the cause: scontrol and sacct show why it stopped)
        if job.suspend_time is not None:  # suspended: only its memory was still held
            self.scheduler.release(job, cpus_and_gres=False)
            job.suspend_time = None
        elif was_allocated:
            self.scheduler.release(job)
            for name in job.nodes:
                self.nodes[name].last_busy_time = end
        for key in [k for k in self.steps if k[0] == job.job_id]:
            step = self.steps.pop(key)
            step.end_time = end
            step.state = state if state != model.COMPLETED else step.state
            if step.state in (model.RUNNING, model.NODE_FAIL):  # (Slurm: a failed node's steps CANCELLED)
                step.state = model.CANCELLED
            self._save_step(step)
        self.missing_since.pop(job.job_id, None)
        if was_allocated and job.start_time is not None and job.spec.account:
            # Fair share usage: CPU-seconds of the association, decayed by PriorityDecayHalfLife.
            self.accounts.add_usage(job.spec.account, job.spec.user,
                                    sum(job.cpus) * max(0.0, end - job.start_time), end)
        self._save(job)
        self._effects.append(fx.SaveAcctJob(job))
        self.need_schedule = True
        return []

    def allocation_complete(self, job_id: int, who: Identity, exit_code: int, exit_signal: int,
                            now: float, oom_kills: int = 0) -> list[Outgoing]:
        """srun/salloc report the end of the allocation they hold (no batch script); srun's
        ``oom_kills``: its step was OOM-killed, and so the job is OUT_OF_MEMORY (Slurm's)."""
        self._at(now)
        job = self.owned_job(job_id, who)
        if job.state != model.RUNNING:
            return []
        if oom_kills > 0:
            state = model.OUT_OF_MEMORY
            exit_code, exit_signal = OOM_EXIT
        else:
            state = model.FAILED if exit_code or exit_signal else model.COMPLETED
        out = self._finish(job, state, now, exit_code, exit_signal)
        return out + [Outgoing(n, "terminate_job", self.terminate_body(job)) for n in job.nodes]

    # ------------------------------------------------------------------ cancel / signal
    def cancel(self, job: Job, who: Identity, now: float, signal: int | None = None, batch_only: bool = False,
               task_ids: set[int] | None = None, full: bool = False) -> list[Outgoing]:
        self._at(now)
        self.check_owner(job, who)
        if signal is not None:
            if job.state != model.RUNNING:
                raise RequestError("Job is pending execution" if job.state == model.PENDING
                                   else "Job/step already completing or completed", "NotRunning")
            # As scancel: -b signals the batch shell (and its children) only, -f the batch
            # shell and every step, neither: the steps only.
            targets = job.nodes[:1] if batch_only else job.nodes
            scope = "batch" if batch_only else ("all" if full else "steps")
            return [Outgoing(n, "signal_job", {"job_id": job.job_id, "signal": signal, "scope": scope})
                    for n in targets]
        job.cancel_uid = who.uid
        if job.state == model.PENDING and not job.completing:
            if job.array_pending and task_ids is not None:
                remaining = [t for t in job.array_pending if t not in task_ids]
                cancelled = [t for t in job.array_pending if t in task_ids]
                if remaining:
                    job.array_pending = remaining
                    if len(remaining) == 1:
                        job.array_task_id = remaining[0]
                    for task in cancelled:
                        record = Job(job_id=self._new_job_id(), spec=job.spec, partition=job.partition,
                                     time_limit=job.time_limit, submit_time=job.submit_time,
                                     array_job_id=job.array_job_id, array_task_id=task, cancel_uid=who.uid)
                        self.jobs[record.job_id] = record
                        self._finish(record, model.CANCELLED, now)
                    self._save(job)
                    return []
                job.array_task_id = cancelled[-1] if len(cancelled) == 1 else job.array_task_id
            return self._finish(job, model.CANCELLED, now)
        if job.state in (model.RUNNING, model.SUSPENDED):
            job.cancel_state = model.CANCELLED
            if not job.spec.batch or job.configuring:  # (nothing launched: its nodes still boot, core_reboot.py)
                out = self._finish(job, model.CANCELLED, now)
                return out + [Outgoing(n, "terminate_job", self.terminate_body(job))
                              for n in job.nodes]
            job.state = model.CANCELLED
            job.completing = True
            job.end_time = now
            self._save(job)
            return [Outgoing(n, "terminate_job", self.terminate_body(job))
                    for n in job.nodes]
        if job.completing:
            if job.cancel_state == "REQUEUE":  # requeued, still ending on its nodes: it ends there
                job.cancel_state = job.state = model.CANCELLED
                job.end_time = now
                self._save(job)
            return []
        raise RequestError("Job/step already completing or completed", "AlreadyDone")
