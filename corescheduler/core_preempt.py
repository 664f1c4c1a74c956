"""Preemption, suspension and requeue: the part of the core that takes resources back.

A mixin of ``ClusterCore`` (corescheduler/core.py): it reads and changes the same
jobs, scheduler and effects, and is pure in the same way (the clock is ``now``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from plurm.corescheduler import preempt
from plurm.corescheduler.effects import Outgoing
from plurm.corescheduler.scheduler import Allocation, Demand
from plurm.wire import model
from plurm.wire.model import EarlierRun, Job

log = logging.getLogger("plurmctld")

MAX_EARLIER_RUNS = 16  # the runs a requeued job remembers for sacct -D (the latest)


class Preemption:
    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, Job]
        partitions: dict[str, Any]
        nodes: dict[str, Any]
        scheduler: Any
        preempt_policy: Any
        priority_policy: Any
        accounts: Any
        settings: Any
        shape: Any
        need_schedule: bool

        def _save(self, job: Job) -> None: ...
        def terminate_body(self, job: Job) -> dict[str, Any]: ...
        def _preempt_with_grace(self, victim: Job, mode_state: str, grace: float, now: float) -> list[Outgoing]: ...

    def _preempt_for(self, job: Job, demand: Demand, now: float) -> list[Outgoing]:
        """Preempt the fewest lower-tier running jobs that make room for ``job``, if any do."""
        partition = self.partitions.get(job.partition)
        if partition is None or isinstance(self.preempt_policy, preempt.NoPreemption):
            return []  # preempt/none: no victim, and no job on its way out for a preemption
        # (A running job with an end decided is already leaving: in its GraceTime, or ending.)
        running = [j for j in self.jobs.values() if j.state == model.RUNNING and not j.cancel_state]
        # Jobs already on their way out for a preemption free their resources soon (at the
        # latest when their GraceTime is over): count them as free, so that one waiting job
        # never preempts more than it needs.
        leaving = [j for j in self.jobs.values()  # (a suspended job holds only its memory: not counted)
                   if (j.completing or j.state == model.RUNNING) and j.cancel_state in (model.PREEMPTED, "REQUEUE")
                   and j.suspend_time is None]
        victims: list[Job] = []
        for gone in leaving:
            self.scheduler.release(gone)
            victims.append(gone)
        self.scheduler.prepare()
        placed = self.scheduler.try_place(demand, partition) if leaving else None
        if placed is not None:
            for gone in leaving:
                self.scheduler.allocate(Allocation.of_job(gone))
            return []
        for victim in self.preempt_policy.candidates(job, running, self.partitions, now, self.settings.preempt_exempt_s,
                                                        self.accounts.qos_preempts()):
            mode = self._preempt_mode(victim)
            if mode not in preempt.SUPPORTED_MODES:
                continue
            # Tentatively (put back below); a suspended job would keep its memory.
            self.scheduler.release(victim, memory=mode != preempt.SUSPEND)
            victims.append(victim)
            self.scheduler.prepare()
            placed = self.scheduler.try_place(demand, partition)
            if placed is not None:
                break
        for k, victim in enumerate(victims):
            suspended = k >= len(leaving) and self._preempt_mode(victim) == preempt.SUSPEND
            self.scheduler.allocate(Allocation.of_job(victim),
                                    memory=not suspended)
        if placed is None:
            return []
        out: list[Outgoing] = []
        for victim in victims[len(leaving):]:
            mode = self._preempt_mode(victim)
            if mode == preempt.SUSPEND:
                out.extend(self._suspend(victim, job, now))
                continue
            grace = self.partitions[victim.partition].grace_time if victim.partition in self.partitions else 0
            log.info("job %s preempts job %s (%s)", job.job_id, victim.job_id, mode)
            if grace > 0:  # it runs on for GraceTime seconds, warned (core_signals.py)
                state = model.PREEMPTED if mode == preempt.CANCEL else "REQUEUE"
                out.extend(self._preempt_with_grace(victim, state, float(grace), now))
                continue
            victim.cancel_state = model.PREEMPTED if mode == preempt.CANCEL else "REQUEUE"
            if mode == preempt.CANCEL:
                victim.state = model.PREEMPTED
            victim.completing = True
            victim.reason = f"Preempted by {job.job_id}"
            self._save(victim)
            out.extend(Outgoing(n, "terminate_job", self.terminate_body(victim)) for n in victim.nodes)
        return out

    def _preempt_mode(self, victim: Job) -> str:
        """The victim's QOS PreemptMode (preempt/qos), else its partition's, else the cluster's."""
        qos_mode = self.accounts.qos_preempt_mode(victim.spec.qos) if getattr(self.preempt_policy, "uses_qos", False) \
            else None
        if qos_mode:
            return qos_mode.upper().split(",", 1)[0]
        return preempt.mode_of(self.partitions.get(victim.partition), self.settings.preempt_mode)

    def _suspend(self, victim: Job, preemptor: Job, now: float) -> list[Outgoing]:
        """PreemptMode=SUSPEND: SIGTSTP then SIGSTOP; CPUs and GRES go, memory stays."""
        log.info("job %s preempts job %s (SUSPEND)", preemptor.job_id, victim.job_id)
        self.scheduler.release(victim, memory=False)
        victim.state = model.SUSPENDED
        victim.suspend_time = now
        victim.preempted_by = preemptor.job_id
        victim.reason = f"Preempted by {preemptor.job_id}"
        self._save(victim)
        self.need_schedule = True  # its CPUs are free now: the preemptor starts in the next pass
        out = []
        for signum in (20, 19):  # SIGTSTP, then SIGSTOP
            out.extend(Outgoing(n, "signal_job", {"job_id": victim.job_id, "signal": signum, "scope": "all"})
                       for n in victim.nodes)
        return out

    def _resume_suspended(self, now: float) -> list[Outgoing]:
        """Resume suspended jobs whose CPUs and GRES are free again (SIGCONT), highest tier first."""
        out: list[Outgoing] = []
        tiers = {p.name: p.priority_tier for p in self.partitions.values()}
        waiting = sorted((j for j in self.jobs.values() if j.state == model.SUSPENDED and j.suspend_time),
                         key=lambda j: (-tiers.get(j.partition, 0), -j.priority, j.job_id))
        for job in waiting:
            if job.priority == 0:
                continue  # suspended by scontrol suspend: only scontrol resume resumes it
            preemptor = self.jobs.get(job.preempted_by) if job.preempted_by is not None else None
            if preemptor is not None and preemptor.state == model.PENDING:
                continue  # the room is for the job it was suspended for, which has not started yet
            if self._can_resume(job):
                out.extend(self._resume(job, now))
        return out

    def _can_resume(self, job: Job) -> bool:
        """Are a suspended job's CPUs and GRES free again?"""
        index = self.scheduler._index
        if not self.scheduler.can_hold(Allocation.of_job(job)):
            return False
        return not any(self.scheduler.gres_used[index[n]].get(name, set()) & set(units)
                       for n, alloc in zip(job.nodes, job.gres_alloc) for name, units in alloc.items())

    def _resume(self, job: Job, now: float) -> list[Outgoing]:
        """A suspended job takes its CPUs and GRES back and runs on (SIGCONT); the time it was
        suspended does not count against its time limit."""
        self.scheduler.allocate(Allocation.of_job(job), memory=False)
        if job.end_time is not None and job.suspend_time is not None:
            job.end_time += now - job.suspend_time  # suspended time does not count
        job.state = model.RUNNING
        job.suspend_time = None
        job.preempted_by = None
        job.reason = "None"
        job.frozen = ""  # (a frozen job: resumed by scontrol resume; its node thaws it)
        if job.priority == 0:  # (scontrol suspend zeroed it, as Slurm does)
            job.priority = self.priority_policy.priority(job, now, self.shape)
        self._save(job)
        log.info("job %s resumed", job.job_id)
        return [Outgoing(n, "signal_job", {"job_id": job.job_id, "signal": 18, "scope": "all"}) for n in job.nodes]

    def _requeue(self, job: Job, now: float) -> None:
        """A preempted (or requeued) job goes back to the queue: same id, one more restart;
        held (priority 0) if a hold was put on it on its way out (scontrol requeuehold)."""
        if job.suspend_time is not None:  # suspended: only its memory was still held
            self.scheduler.release(job, cpus_and_gres=False)
            job.suspend_time = None
        else:
            self.scheduler.release(job)
        job.frozen = ""
        job.derived_exit_code = job.derived_exit_signal = 0  # (the next run's steps decide it)
        for name in job.nodes:
            self.nodes[name].last_busy_time = now
        if job.start_time is not None:  # the run that ends here: sacct -D shows it as REQUEUED
            job.earlier_runs = [*job.earlier_runs[-(MAX_EARLIER_RUNS - 1):], EarlierRun(
                submit_time=job.submit_time, start_time=job.start_time, nodes=list(job.nodes),
                end_time=job.end_time if job.state in model.FINISHED_STATES and job.end_time else now,
                cpus=list(job.cpus))]
        job.state = model.PENDING
        job.completing = False
        job.cancel_state = None
        job.restarts += 1
        job.nodes, job.cpus, job.mem, job.tasks, job.gres_alloc = [], [], [], [], []
        job.share_rows = ()
        job.start_time = job.end_time = None
        job.reason = "None"
        job.preempted_by = None
        job.priority = 0 if job.held_by else self.priority_policy.priority(job, now, self.shape)
        self._save(job)
        self.need_schedule = True
