"""The controller's truth: jobs, nodes, partitions, and every change to them.

ClusterState does no network I/O.  Each operation changes the records,
writes them to the state store (uncommitted: the controller commits once per
loop turn, before any reply leaves) and returns the messages to send to node
daemons as ``Outgoing`` items.  The controller turns those into frames.
"""

from __future__ import annotations

import logging
import os
import pwd
import time
from dataclasses import dataclass
from typing import Any

from plurm.wire import model
from plurm.wire.model import Job, JobSpec, Node, Partition, StepRecord
from plurm.corescheduler.scheduler import (
    REASON_RESOURCES,
    REASON_BEGIN_TIME,
    REASON_DEPENDENCY,
    REASON_DEP_NEVER,
    REASON_HELD_ADMIN,
    REASON_HELD_USER,
    Allocation,
    Demand,
    Scheduler,
    SubmitRefused,
    demand_of,
)
from plurm.corescheduler import preempt
from plurm.corescheduler.associations import AssociationStore
from plurm.corescheduler.dependency import Dependencies
from plurm.corescheduler.backfill import BackfillParams, schedule_with_backfill
from plurm.corescheduler.preempt import NoPreemption
from plurm.corescheduler.priority import BasicPriority, ClusterShape, factor_report
from plurm.corescheduler.store import StateStore

log = logging.getLogger("plurmctld")

PRIORITY_CALC_PERIOD_S = 300.0  # PriorityCalcPeriod: how often pending jobs' priorities are recomputed
MAX_ARRAY_SIZE = 1001
UNLIMITED_RUN_MINUTES = 365 * 24 * 60
MAX_JOB_EVENTS = 32
MIN_JOB_AGE_S = 300.0
NODE_FAIL_GRACE_S = 15.0


class RequestError(Exception):
    """A refused request; ``message`` is what Slurm's command prints after its prefix."""

    def __init__(self, message: str, code: str = "Error", detail: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.detail = detail


@dataclass
class Outgoing:
    node: str
    msg_type: str
    body: dict[str, Any]


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


class ClusterState:
    def __init__(self, store: StateStore, nodes: dict[str, Node], partitions: dict[str, Partition], *,
                 cluster_name: str, kill_wait: float = 30.0, default_mem_per_cpu: int | None = None,
                 slurmd_timeout: float = 300.0, min_job_age: float = MIN_JOB_AGE_S,
                 max_array_size: int = MAX_ARRAY_SIZE, first_job_id: int = 1,
                 priority_policy: Any = None, priority_calc_period: float = PRIORITY_CALC_PERIOD_S,
                 preempt_policy: Any = None, preempt_mode: str = "OFF", preempt_exempt_s: float = 0.0,
                 decay_half_life_s: float = 7 * 86400) -> None:
        self.store = store
        self.nodes = nodes
        self.partitions = partitions
        self.cluster_name = cluster_name
        self.kill_wait = kill_wait
        self.slurmd_timeout = slurmd_timeout
        self.min_job_age = min_job_age
        self.max_array_size = max_array_size
        self.default_partition = next((p.name for p in partitions.values() if p.default),
                                      next(iter(partitions), None))
        for partition in partitions.values():
            for name in partition.nodes:
                if name in nodes and partition.name not in nodes[name].partitions:
                    nodes[name].partitions.append(partition.name)
        self.scheduler = Scheduler(nodes, partitions, default_mem_per_cpu)
        # The priority policy (a priority plugin's object): basic unless slurm.conf chose one.
        self.priority_policy = priority_policy or BasicPriority()
        self.priority_calc_period = priority_calc_period
        self.preempt_policy = preempt_policy or NoPreemption()
        self.preempt_mode = preempt_mode
        self.preempt_exempt_s = preempt_exempt_s
        self.kill_invalid_depend = False  # SchedulerParameters=kill_invalid_depend
        # SchedulerType=sched/backfill (Slurm's default) adds a backfill cycle to the main pass
        # every bf_interval seconds (SchedulerParameters); the main pass runs on every event.
        self.scheduler_type = "sched/backfill"
        self.backfill_params = BackfillParams()
        self.next_backfill = 0.0
        self.need_backfill = False
        self.next_priority_calc = time.time() + priority_calc_period
        self.assocs = AssociationStore(store.db, decay_half_life_s)
        if hasattr(self.preempt_policy, "preempts"):  # preempt/qos reads the QOS table
            self.preempt_policy.preempts = lambda qos: self.assocs.qos_preempts().get(qos, set())
        self.enforce_associations = False  # AccountingStorageEnforce=associations
        self.shape = ClusterShape(len(nodes), sum(n.cpus for n in nodes.values()),
                                  {p.name: p.priority_job_factor for p in partitions.values()},
                                  fairshare=lambda job: self.assocs.fairshare(job.spec.account, job.spec.user),
                                  qos=lambda job: self.assocs.qos_priority(job.spec.qos))
        self.jobs: dict[int, Job] = {}
        self.dependencies = Dependencies(self.jobs, self.find_jobs, store)
        self.steps: dict[tuple[int, str], StepRecord] = {}
        self.node_seen: dict[str, float] = {}
        self.node_registered: set[str] = set()
        self.missing_since: dict[int, float] = {}
        next_id = store.get_meta("next_job_id")
        self.next_job_id = int(next_id) if next_id else first_job_id
        now = time.time()
        for job in store.load_jobs():
            self.jobs[job.job_id] = job
            if job.state == model.RUNNING or job.completing:
                self.scheduler.allocate(Allocation.of_job(job))
        for step in store.acct_steps([j.job_id for j in self.jobs.values() if j.state == model.RUNNING]):
            if step.end_time is None:
                self.steps[(step.job_id, step.step_id)] = step
        # Node daemons get one SlurmdTimeout to come back after a controller restart.
        for name in nodes:
            self.node_seen[name] = now
        self.need_schedule = True

    # ------------------------------------------------------------------ helpers
    def _new_job_id(self) -> int:
        job_id = self.next_job_id
        self.next_job_id += 1
        self.store.set_meta("next_job_id", str(self.next_job_id))
        return job_id

    def terminate_body(self, job: Job) -> dict[str, Any]:
        return {"job_id": job.job_id, "kill_wait": self.kill_wait,
                "batch_host": job.nodes[0] if job.spec.batch and job.nodes else ""}

    def _save(self, job: Job) -> None:
        self._log_transition(job)
        self.store.put_job(job)

    @staticmethod
    def _log_transition(job: Job) -> None:
        """Append (time, state, reason) when either changed: `plurm why` reads this log."""
        state = job.state + ("+COMPLETING" if job.completing else "")
        if job.events and job.events[-1][1] == state and job.events[-1][2] == job.reason:
            return
        job.events.append((time.time(), state, job.reason))
        if len(job.events) > MAX_JOB_EVENTS:
            del job.events[1:len(job.events) - MAX_JOB_EVENTS + 1]  # keep the first and the latest

    def find_jobs(self, spec: str) -> list[Job]:
        """Jobs named by "12", "12_3" or "12_[1-3]" (array tasks by their array id)."""
        base, sep, task = spec.partition("_")
        try:
            job_id = int(base)
        except ValueError:
            raise RequestError("Invalid job id specified", "InvalidJobId") from None
        if not sep:
            direct = self.jobs.get(job_id)
            members = [j for j in self.jobs.values() if j.array_job_id == job_id and j.job_id != job_id]
            if direct is None and not members:
                return []
            if direct is not None and direct.array_job_id is None:
                return [direct]
            return ([direct] if direct is not None else []) + members
        wanted = parse_task_ids(task)
        found = []
        for job in self.jobs.values():
            if job.array_job_id != job_id:
                continue
            if job.array_task_id is not None and job.array_task_id in wanted and not job.array_pending:
                found.append(job)
            elif job.array_pending and wanted.intersection(job.array_pending):
                found.append(job)
        return found

    # ------------------------------------------------------------------ submission
    def submit(self, spec: JobSpec, uid: int, gid: int, test_only: bool = False) -> tuple[Job, list[str]]:
        warnings: list[str] = []
        partition_name = spec.partition or self.default_partition
        if partition_name is None or partition_name not in self.partitions:
            raise RequestError("Invalid partition name specified", "InvalidPartition",
                               f"invalid partition specified: {spec.partition}")
        partition = self.partitions[partition_name]
        spec.user_id, spec.group_id = uid, gid
        spec.user = user_name(uid)
        if spec.ntasks is not None and spec.ntasks < 1:
            raise RequestError("Invalid number of tasks", "InvalidTasks")
        self._check_access(partition, spec, uid, gid)
        if not spec.account:
            spec.account = self.assocs.default_account(spec.user)
        if self.enforce_associations and not (spec.account and self.assocs.has_association(spec.user, spec.account)):
            raise RequestError("Invalid account or account/partition combination specified", "InvalidAccount")
        try:
            self.scheduler.validate(spec, partition)
        except SubmitRefused as exc:
            raise RequestError(str(exc), "ConfigUnavailable", exc.detail) from None
        if spec.array_indices and len(spec.array_indices) > self.max_array_size:
            raise RequestError("Invalid job array specification", "BadArray")
        if spec.array_indices and max(spec.array_indices) >= self.max_array_size:
            raise RequestError("Invalid job array specification", "BadArray")
        if spec.time_unlimited:
            time_limit = partition.max_time
        elif spec.time_limit is not None:
            time_limit = spec.time_limit
        else:
            time_limit = partition.default_time if partition.default_time is not None else partition.max_time
        now = time.time()
        job = Job(job_id=self.next_job_id, spec=spec, partition=partition.name, time_limit=time_limit,
                  submit_time=now)
        job.priority = self.priority_policy.priority(job, now, self.shape)
        if spec.hold:
            job.priority = 0
            job.held_by = "user"
            job.reason = REASON_HELD_USER
        if spec.array_indices:
            job.array_job_id = job.job_id
            job.array_pending = sorted(set(spec.array_indices))
            if len(job.array_pending) == 1:
                job.array_task_id = job.array_pending[0]
        if test_only:
            return job, warnings
        job.job_id = self._new_job_id()
        if spec.array_indices:
            job.array_job_id = job.job_id
        job.eligible_time = None
        self.jobs[job.job_id] = job
        self.store.put_script(job.job_id, spec.script, spec.environment)
        # The script and environment live in their own table: keep the job blob small.
        spec.script = None
        spec.environment = {}
        self._save(job)
        self.need_schedule = True
        return job, warnings

    @staticmethod
    def _check_access(partition: Partition, spec: JobSpec, uid: int, gid: int) -> None:
        """The partition's AllowGroups / AllowAccounts / AllowQos (None: ALL)."""
        if partition.allow_groups is not None and uid != 0:
            import grp

            try:
                mine = {grp.getgrgid(g).gr_name for g in os.getgrouplist(user_name(uid), gid)}
            except (KeyError, OSError):
                mine = set()
            if not mine & set(partition.allow_groups):
                raise RequestError("User's group not permitted to use this partition", "AccessDenied")
        if partition.allow_accounts is not None and (spec.account or "") not in partition.allow_accounts:
            raise RequestError("Invalid account or account/partition combination specified", "InvalidAccount")
        if partition.allow_qos is not None and spec.qos and spec.qos not in partition.allow_qos:
            raise RequestError("Invalid qos specification", "InvalidQos")

    def test_start(self, job: Job) -> tuple[float, Allocation | None]:
        partition = self.partitions[job.partition]
        demand = demand_of(job.spec, partition, self.scheduler.default_mem_per_cpu)
        self.scheduler.prepare()
        return time.time(), self.scheduler.try_place(demand, partition)

    # ------------------------------------------------------------------ scheduling
    def _eligible_reason(self, job: Job, now: float) -> str | None:
        if job.held_by == "admin":
            return REASON_HELD_ADMIN
        if job.held_by == "user":
            return REASON_HELD_USER
        if job.spec.begin_time is not None and job.spec.begin_time > now:
            return REASON_BEGIN_TIME
        if job.spec.dependency:
            return self.dependencies.reason(job, now)
        return None

    def _kill_invalid_dep(self, job: Job) -> bool:
        """--kill-on-invalid-dep=yes, or SchedulerParameters=kill_invalid_depend (and not =no)."""
        choice = job.spec.other_options.get("kill-on-invalid-dep", "").lower()
        if choice:
            return choice in ("yes", "true", "1")
        return self.kill_invalid_depend

    def schedule(self, now: float | None = None) -> list[Outgoing]:
        now = time.time() if now is None else now
        self.need_schedule = False
        candidates: list[tuple[Job, Demand]] = []
        # As Slurm: a higher PriorityTier partition's jobs are evaluated first, then by priority.
        tiers = {p.name: p.priority_tier for p in self.partitions.values()}
        pending = sorted((j for j in self.jobs.values() if j.state == model.PENDING),
                         key=lambda j: (-tiers.get(j.partition, 0), -j.priority, j.job_id))
        running_tasks: dict[int, int] = {}
        ready_tasks: dict[int, list[int]] = {}  # array record -> the task ids that may start now, in order
        qos_limits = self.assocs.qos_limits()
        running_per_qos: dict[tuple[str, int], int] = {}
        for job in self.jobs.values():
            if job.array_job_id is not None and job.state == model.RUNNING:
                running_tasks[job.array_job_id] = running_tasks.get(job.array_job_id, 0) + 1
            if job.state == model.RUNNING and job.spec.qos in qos_limits:
                key = (job.spec.qos, job.spec.user_id)
                running_per_qos[key] = running_per_qos.get(key, 0) + 1
        for job in pending:
            reason = self._eligible_reason(job, now)
            limit = qos_limits.get(job.spec.qos or "")
            if reason is None and limit is not None and \
                    running_per_qos.get((job.spec.qos or "", job.spec.user_id), 0) >= limit:
                reason = "QOSMaxJobsPerUserLimit"
            if reason == REASON_DEP_NEVER and self._kill_invalid_dep(job):
                log.info("job %s: dependency never satisfied, cancelled (--kill-on-invalid-dep)", job.job_id)
                job.reason = reason
                self._finish(job, model.CANCELLED, now)
                continue
            if reason is not None:
                if job.reason != reason:
                    job.reason = reason
                    self._save(job)
                continue
            if job.eligible_time is None:
                job.eligible_time = now
            partition = self.partitions.get(job.partition)
            demand = demand_of(job.spec, partition, self.scheduler.default_mem_per_cpu)
            if job.array_pending:
                tasks = self.dependencies.aftercorr_ready(job) if "aftercorr" in (job.spec.dependency or "") \
                    else list(job.array_pending)
                if not tasks:
                    if job.reason != REASON_DEPENDENCY:
                        job.reason = REASON_DEPENDENCY
                        self._save(job)
                    continue
                ready_tasks[job.job_id] = tasks
                limit = job.spec.array_max_running
                room = len(tasks)
                if limit:
                    room = min(room, max(0, limit - running_tasks.get(job.array_job_id or 0, 0)))
                    if room == 0:
                        if job.reason != "JobArrayTaskLimit":
                            job.reason = "JobArrayTaskLimit"
                            self._save(job)
                        continue
                candidates.extend((job, demand) for _ in range(room))
            else:
                candidates.append((job, demand))
        before = {job.job_id: job.reason for job, _ in candidates}
        if self.scheduler_type == "sched/backfill" and now >= self.next_backfill:
            self.next_backfill = now + max(self.backfill_params.interval_s, 0)
            holding = [j for j in self.jobs.values() if j.state == model.RUNNING or j.completing]
            starts, planned = schedule_with_backfill(self.scheduler, candidates, holding, now, self.backfill_params)
            for job, _ in candidates:
                job.planned_start = planned.planned_start.get(job.job_id)
        else:
            starts = self.scheduler.schedule(candidates, now)
            if self.scheduler_type == "sched/backfill":
                self.need_backfill = True
        out: list[Outgoing] = []
        for job, demand in candidates:
            if job.state == model.PENDING and job.reason == REASON_RESOURCES:
                out.extend(self._preempt_for(job, demand, now))
        for start in starts:
            job = start.job
            if job.array_pending and len(job.array_pending) > 1:
                job = self._split_array_task(job, ready_tasks[job.job_id].pop(0))
            elif job.array_pending:
                job.array_task_id = job.array_pending[0]
                job.array_pending = []
            out.extend(self._start(job, start.allocation, now))
        out.extend(self._resume_suspended(now))
        # Write back only what changed: a pass over a long queue must not rewrite it.
        for job, _ in candidates:
            if job.state == model.PENDING and before.pop(job.job_id, job.reason) != job.reason:
                self._save(job)
        return out

    def _preempt_for(self, job: Job, demand: Demand, now: float) -> list[Outgoing]:
        """Preempt the fewest lower-tier running jobs that make room for ``job``, if any do."""
        partition = self.partitions.get(job.partition)
        if partition is None:
            return []
        running = [j for j in self.jobs.values() if j.state == model.RUNNING]
        # Jobs already on their way out for a preemption free their resources soon:
        # count them as free, so that one waiting job never preempts more than it needs.
        leaving = [j for j in self.jobs.values()
                   if j.completing and j.cancel_state in (model.PREEMPTED, "REQUEUE")]
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
        for victim in self.preempt_policy.candidates(job, running, self.partitions, now, self.preempt_exempt_s):
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
            victim.cancel_state = model.PREEMPTED if mode == preempt.CANCEL else "REQUEUE"
            if mode == preempt.CANCEL:
                victim.state = model.PREEMPTED
            victim.completing = True
            victim.reason = f"Preempted by {job.job_id}"
            self._save(victim)
            body = dict(self.terminate_body(victim), kill_wait=float(grace))
            out.extend(Outgoing(n, "terminate_job", body) for n in victim.nodes)
        return out

    def _preempt_mode(self, victim: Job) -> str:
        """The victim's QOS PreemptMode (preempt/qos), else its partition's, else the cluster's."""
        qos_mode = self.assocs.qos_preempt_mode(victim.spec.qos) if hasattr(self.preempt_policy, "preempts") else None
        if qos_mode:
            return qos_mode.upper().split(",", 1)[0]
        return preempt.mode_of(self.partitions.get(victim.partition), self.preempt_mode)

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
            preemptor = self.jobs.get(job.preempted_by) if job.preempted_by is not None else None
            if preemptor is not None and preemptor.state == model.PENDING:
                continue  # the room is for the job it was suspended for, which has not started yet
            index = self.scheduler._index
            if not self.scheduler.can_hold(Allocation.of_job(job)):
                continue
            if any(self.scheduler.gres_used[index[n]].get(name, set()) & set(units)
                   for n, alloc in zip(job.nodes, job.gres_alloc) for name, units in alloc.items()):
                continue
            self.scheduler.allocate(Allocation.of_job(job), memory=False)
            if job.end_time is not None and job.suspend_time is not None:
                job.end_time += now - job.suspend_time  # suspended time does not count
            job.state = model.RUNNING
            job.suspend_time = None
            job.preempted_by = None
            job.reason = "None"
            self._save(job)
            log.info("job %s resumed", job.job_id)
            out.extend(Outgoing(n, "signal_job", {"job_id": job.job_id, "signal": 18, "scope": "all"})
                       for n in job.nodes)
        return out

    def _requeue(self, job: Job, now: float) -> None:
        """A preempted job goes back to the queue: same id, one more restart."""
        self.scheduler.release(job)
        for name in job.nodes:
            self.nodes[name].last_busy_time = now
        job.state = model.PENDING
        job.completing = False
        job.cancel_state = None
        job.restarts += 1
        job.nodes, job.cpus, job.mem, job.tasks, job.gres_alloc = [], [], [], [], []
        job.share_rows = ()
        job.start_time = job.end_time = None
        job.reason = "None"
        job.priority = self.priority_policy.priority(job, now, self.shape)
        self._save(job)
        self.need_schedule = True

    def _split_array_task(self, meta: Job, task_id: int) -> Job:
        meta.array_pending.remove(task_id)
        job = Job(job_id=self._new_job_id(), spec=meta.spec, partition=meta.partition, time_limit=meta.time_limit,
                  submit_time=meta.submit_time, priority=meta.priority, array_job_id=meta.array_job_id,
                  array_task_id=task_id, eligible_time=meta.eligible_time)
        script, env = self.store.get_script(meta.job_id)
        self.store.put_script(job.job_id, script, env)
        self.jobs[job.job_id] = job
        if len(meta.array_pending) == 1:
            meta.array_task_id = meta.array_pending[0]
        self._save(meta)
        return job

    def _start(self, job: Job, alloc: Allocation, now: float) -> list[Outgoing]:
        job.state = model.RUNNING
        job.reason = "None"
        job.start_time = now
        if job.time_limit is None:
            # As Slurm: a job without a limit runs under a year-long one (TimeLimit=365-00:00:00).
            job.time_limit = UNLIMITED_RUN_MINUTES
        job.end_time = now + job.time_limit * 60
        job.nodes, job.cpus, job.mem, job.tasks = alloc.nodes, alloc.cpus, alloc.mem, alloc.tasks
        job.gres_alloc = list(alloc.gres)
        job.share_rows = tuple(alloc.share_rows)
        self._save(job)
        if not job.spec.batch:
            return []
        step = StepRecord(job_id=job.job_id, step_id="batch", name="batch", nodes=job.nodes[:1],
                          ntasks=1, cpus=job.cpus[0], start_time=now)
        self.steps[(job.job_id, "batch")] = step
        self.store.put_acct_step(step)
        script, env = self.store.get_script(job.job_id)
        body = {
            "job_id": job.job_id,
            "job": model_to_dict(job),
            "script": script or "",
            "args": job.spec.script_args,
            "environment": env,
            "work_dir": job.spec.work_dir,
            "stdout": job.spec.stdout or "",
            "stderr": job.spec.stderr or "",
            "stdin": job.spec.stdin or "/dev/null",
            "open_mode": job.spec.open_mode or "truncate",
            "uid": job.spec.user_id,
            "gid": job.spec.group_id,
        }
        return [Outgoing(job.nodes[0], "launch_job", body)]

    # ------------------------------------------------------------------ job end
    def job_ended(self, job_id: int, exit_code: int, exit_signal: int, end_time: float | None,
                  timed_out: bool = False, usage_max: dict[str, str] | None = None,
                  usage_ave: dict[str, str] | None = None) -> list[Outgoing]:
        job = self.jobs.get(job_id)
        if job is None or (job.state in model.FINISHED_STATES and not job.completing):
            return []  # already recorded: a resent report
        end = end_time or time.time()
        if job.cancel_state:
            state = job.cancel_state
        elif timed_out:
            state = model.TIMEOUT
        elif exit_signal:
            state = model.FAILED
        elif exit_code:
            state = model.FAILED
        else:
            state = model.COMPLETED
        step = self.steps.pop((job_id, "batch"), None)
        if step is not None:
            step.end_time = end
            step.exit_code, step.exit_signal = exit_code, exit_signal
            step.tres_usage_max, step.tres_usage_ave = dict(usage_max or {}), dict(usage_ave or {})
            step.state = model.CANCELLED if state in (model.CANCELLED, model.PREEMPTED, "REQUEUE") else (
                model.FAILED if exit_code or exit_signal else model.COMPLETED)
            self.store.put_acct_step(step)
        if state == "REQUEUE":
            self._requeue(job, end)
            return []
        out = self._finish(job, state, end, exit_code, exit_signal)
        # Steps that may still run on the other nodes of the allocation.
        out.extend(Outgoing(n, "terminate_job", self.terminate_body(job))
                   for n in job.nodes[1:])
        return out

    def _finish(self, job: Job, state: str, end: float, exit_code: int = 0, exit_signal: int = 0) -> list[Outgoing]:
        was_allocated = job.state in (model.RUNNING, model.SUSPENDED) or job.completing
        job.state = state
        job.completing = False
        job.end_time = end
        job.exit_code, job.exit_signal = exit_code, exit_signal
        if job.start_time is None:
            job.start_time = end if state != model.CANCELLED else None
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
            if step.state == model.RUNNING:
                step.state = model.CANCELLED
            self.store.put_acct_step(step)
        self.missing_since.pop(job.job_id, None)
        if was_allocated and job.start_time is not None and job.spec.account:
            # Fair share usage: CPU-seconds of the association, decayed by PriorityDecayHalfLife.
            self.assocs.add_usage(job.spec.account, job.spec.user, sum(job.cpus) * max(0.0, end - job.start_time), end)
        self._save(job)
        self.store.put_acct_job(job)
        self.need_schedule = True
        return []

    @staticmethod
    def _check_owner(job: Job, uid: int) -> None:
        """A job is its user's, root's and the cluster owner's (SlurmUser) to change."""
        if uid not in (0, os.getuid(), job.spec.user_id):
            raise RequestError("Access/permission denied", "AccessDenied")

    def _owned_job(self, job_id: int, uid: int) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            raise RequestError("Invalid job id specified", "InvalidJobId")
        self._check_owner(job, uid)
        return job

    def allocation_complete(self, job_id: int, uid: int, exit_code: int, exit_signal: int) -> list[Outgoing]:
        """srun/salloc report the end of the allocation they hold (no batch script)."""
        job = self._owned_job(job_id, uid)
        if job.state != model.RUNNING:
            return []
        state = model.FAILED if exit_code or exit_signal else model.COMPLETED
        out = self._finish(job, state, time.time(), exit_code, exit_signal)
        return out + [Outgoing(n, "terminate_job", self.terminate_body(job)) for n in job.nodes]

    # ------------------------------------------------------------------ cancel / signal
    def cancel(self, job: Job, uid: int, signal: int | None = None, batch_only: bool = False,
               task_ids: set[int] | None = None, full: bool = False) -> list[Outgoing]:
        self._check_owner(job, uid)
        now = time.time()
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
        job.cancel_uid = uid
        if job.state == model.PENDING:
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
                                     array_job_id=job.array_job_id, array_task_id=task, cancel_uid=uid)
                        self.jobs[record.job_id] = record
                        self._finish(record, model.CANCELLED, now)
                    self._save(job)
                    return []
                job.array_task_id = cancelled[-1] if len(cancelled) == 1 else job.array_task_id
            return self._finish(job, model.CANCELLED, now)
        if job.state in (model.RUNNING, model.SUSPENDED):
            job.cancel_state = model.CANCELLED
            if not job.spec.batch:
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
            return []
        raise RequestError("Job/step already completing or completed", "AlreadyDone")

    # ------------------------------------------------------------------ updates
    def update(self, job: Job, fields: dict[str, str], uid: int) -> None:
        self._check_owner(job, uid)
        for key, value in fields.items():
            lowered = key.lower()
            if lowered == "hold":
                if job.state != model.PENDING:
                    raise RequestError("Job is no longer pending execution", "NotPending")
                job.held_by = "admin" if value == "admin" else "user"
                job.priority = 0
                job.reason = REASON_HELD_ADMIN if job.held_by == "admin" else REASON_HELD_USER
            elif lowered == "release":
                if job.state != model.PENDING:
                    raise RequestError("Job is no longer pending execution", "NotPending")
                if job.held_by == "admin" and uid not in (0, os.getuid()):
                    raise RequestError("Access/permission denied", "AccessDenied")
                job.held_by = None
                job.priority = self.priority_policy.priority(job, time.time(), self.shape)
                job.reason = "None"
            elif lowered == "timelimit":
                from plurm.grammar.slurmconf import parse_time_limit
                try:
                    minutes = parse_time_limit(value)
                except ValueError:
                    raise RequestError("Invalid time limit specification", "InvalidTimeLimit") from None
                job.time_limit = minutes
                if job.state == model.RUNNING and job.start_time is not None:
                    job.end_time = job.start_time + minutes * 60 if minutes is not None else None
            elif lowered == "partition":
                if job.state != model.PENDING:
                    raise RequestError("Job is no longer pending execution", "NotPending")
                if value not in self.partitions:
                    raise RequestError("Invalid partition name specified", "InvalidPartition")
                job.partition = value
                job.spec.partition = value
            elif lowered == "priority":
                job.priority = int(value)
                job.priority_set = True  # an administrator's value: not recomputed
            elif lowered == "nice":
                job.spec.nice = int(value)
            elif lowered in ("jobname", "name"):
                job.spec.name = value
            elif lowered == "comment":
                job.spec.comment = value
            elif lowered in ("numnodes", "minnodes"):
                if job.state != model.PENDING:
                    raise RequestError("Job is no longer pending execution", "NotPending")
                low, _, high = value.partition("-")
                job.spec.nodes_min = int(low)
                job.spec.nodes_max = int(high) if high else None
            elif lowered in ("numtasks", "ntasks"):
                job.spec.ntasks = int(value)
            else:
                raise RequestError(f"Update of {key} is not supported", "InvalidUpdate")
        self._save(job)
        self.need_schedule = True

    def update_node(self, name: str, state: str | None, reason: str | None, uid: int) -> None:
        node = self.nodes.get(name)
        if node is None:
            raise RequestError("Invalid node name specified", "InvalidNode")
        if state:
            upper = state.upper()
            if upper in ("DRAIN", "DOWN") and not reason:
                raise RequestError("You must specify a reason when DOWNING or DRAINING a node", "ReasonRequired")
            if upper == "DRAIN":
                node.drain = True
            elif upper == "DOWN":
                node.down = True
            elif upper in ("RESUME", "IDLE", "UNDRAIN"):
                node.drain = False
                node.down = False
                node.reason = None
            else:
                raise RequestError("Invalid node state specified", "InvalidNodeState")
        if reason is not None and (node.drain or node.down):
            node.reason = reason
            node.reason_time = time.time()
            node.reason_user = user_name(uid)
        self.need_schedule = True

    # ------------------------------------------------------------------ steps
    def step_create(self, job_id: int, uid: int, name: str, ntasks: int | None, nodes_min: int | None,
                    cpus_per_task: int | None, nodelist: list[str]) -> dict[str, Any]:
        job = self._owned_job(job_id, uid)
        if job.state != model.RUNNING:
            raise RequestError("Job/step already completing or completed", "AlreadyDone")
        cpt = cpus_per_task or job.spec.cpus_per_task or 1
        capacity = [max(c // cpt, 0) for c in job.cpus]
        names = list(job.nodes)
        if nodelist:
            keep = [i for i, n in enumerate(names) if n in nodelist]
            if len(keep) != len(set(nodelist)):
                raise RequestError("Requested node configuration is not available", "ConfigUnavailable")
            names = [names[i] for i in keep]
            capacity = [capacity[i] for i in keep]
        ntasks = ntasks or (sum(job.tasks) if not nodelist else len(names))
        count = nodes_min or min(len(names), ntasks)
        if count > len(names):
            raise RequestError("Requested node configuration is not available", "ConfigUnavailable")
        names, capacity = names[:count], capacity[:count]
        if ntasks > sum(capacity) or ntasks < count:
            raise RequestError("More processors requested than permitted", "TooManyProcessors")
        tasks = [1] * count
        left = ntasks - count
        for i in range(count):
            extra = min(left, capacity[i] - 1)
            tasks[i] += extra
            left -= extra
        step_id = job.next_step_id
        job.next_step_id += 1
        self._save(job)
        step = StepRecord(job_id=job_id, step_id=str(step_id), name=name or "step", nodes=names, ntasks=ntasks,
                          cpus=sum(t * cpt for t in tasks), start_time=time.time())
        self.steps[(job_id, str(step_id))] = step
        self.store.put_acct_step(step)
        addrs = [{"name": n, "addr": self.nodes[n].addr, "port": self.nodes[n].port} for n in names]
        return {"job_id": job_id, "step_id": step_id, "nodes": names, "tasks": tasks, "addrs": addrs,
                "cpus_per_task": cpt}

    def step_complete(self, job_id: int, step_id: int, exit_code: int, exit_signal: int) -> None:
        step = self.steps.pop((job_id, str(step_id)), None)
        if step is None:
            return
        step.end_time = time.time()
        step.exit_code, step.exit_signal = exit_code, exit_signal
        job = self.jobs.get(job_id)
        if job is not None and job.cancel_state:
            step.state = job.cancel_state
        else:
            step.state = model.FAILED if exit_code or exit_signal else model.COMPLETED
        self.store.put_acct_step(step)

    # ------------------------------------------------------------------ nodes
    def node_register(self, name: str, info: dict[str, Any]) -> list[Outgoing]:
        node = self.nodes.get(name)
        if node is None:
            raise RequestError(f"Node {name} is not in slurm.conf", "InvalidNode")
        now = time.time()
        node.responding = True
        node.boot_time = info.get("boot_time") or node.boot_time
        node.slurmd_start_time = info.get("slurmd_start_time") or node.slurmd_start_time
        for attr in ("os", "arch", "version", "cpu_load", "free_mem"):
            if info.get(attr) is not None:
                setattr(node, attr, info[attr])
        if node.down and node.reason in (None, "Not responding", "Node unexpectedly rebooted"):
            node.down = False
            node.reason = None
        node.devices = list(info.get("devices") or [])
        problems = info.get("gres_problems") or []
        if problems:
            # As Slurm: a node whose devices fall short of its configuration is drained.
            self._drain(node, "; ".join(problems), now)
        self.node_seen[name] = now
        self.node_registered.add(name)
        self.need_schedule = True
        return self._reconcile(name, set(info.get("running_jobs", [])), now)

    def _drain(self, node: Node, reason: str, now: float) -> None:
        if node.drain and node.reason == reason:
            return
        log.warning("draining node %s: %s", node.name, reason)
        node.drain = True
        node.reason = reason
        node.reason_time = now
        node.reason_user = user_name(os.getuid())
        self.need_schedule = True

    def node_ping(self, name: str, running: list[int], cpu_load: float | None, free_mem: int | None,
                  unhealthy: dict[str, str] | None = None) -> list[Outgoing]:
        node = self.nodes.get(name)
        if node is None:
            return []
        now = time.time()
        self.node_seen[name] = now
        if name not in self.node_registered:
            return [Outgoing(name, "please_register", {})]
        node.cpu_load, node.free_mem = cpu_load, free_mem
        if unhealthy:
            self._drain(node, "; ".join(f"gpu {uuid}: {why}" for uuid, why in sorted(unhealthy.items())), now)
        if not node.responding:
            node.responding = True
            self.need_schedule = True
        return self._reconcile(name, set(running), now)

    def _reconcile(self, name: str, running: set[int], now: float) -> list[Outgoing]:
        """Batch jobs the controller believes run on ``name`` but the node does not have."""
        out: list[Outgoing] = []
        for job in list(self.jobs.values()):
            if not job.spec.batch or not job.nodes or job.nodes[0] != name:
                continue
            if job.state != model.RUNNING and not job.completing:
                continue
            if job.job_id in running or (job.start_time or now) > now - NODE_FAIL_GRACE_S:
                self.missing_since.pop(job.job_id, None)
                continue
            first = self.missing_since.setdefault(job.job_id, now)
            if now - first >= NODE_FAIL_GRACE_S:
                log.warning("job %s vanished from node %s: NODE_FAIL", job.job_id, name)
                out.extend(self._finish(job, job.cancel_state or model.NODE_FAIL, now, 0, 0))
        return out

    # ------------------------------------------------------------------ timers
    def recompute_priorities(self, now: float) -> None:
        """PriorityCalcPeriod: age moves pending jobs up (multifactor).  A policy that can
        compute the whole queue at once (``priorities``: multifactor's priority kernel) does."""
        jobs = [job for job in self.jobs.values()
                if job.state == model.PENDING and not job.held_by and not job.priority_set]
        batch = getattr(self.priority_policy, "priorities", None)
        if batch is not None:
            values = batch(jobs, now, self.shape)
        else:
            values = [self.priority_policy.priority(job, now, self.shape) for job in jobs]
        for job, priority in zip(jobs, values):
            if priority != job.priority:
                job.priority = priority
                self._save(job)
                self.need_schedule = True

    def priority_factors(self, now: float, job_ids: list[int] | None = None, users: list[str] | None = None
                         ) -> list[dict[str, Any]]:
        """What sprio shows, as Slurm's controller lists it: pending jobs that are eligible
        (an eligible time, no begin time or dependency to wait for, not a throttled array
        remainder, which Slurm makes ineligible when it splits a task off), not held and
        whose priority no administrator set; with their factors as of the last priority
        calculation (or their submission, if later), from which job.priority was computed."""
        wanted, who = set(job_ids or ()), set(users or ())
        last_calc = self.next_priority_calc - self.priority_calc_period
        waiting = (REASON_BEGIN_TIME, REASON_DEPENDENCY, REASON_DEP_NEVER, "JobArrayTaskLimit")
        rows = []
        for job in sorted(self.jobs.values(), key=lambda j: j.job_id):
            if job.state != model.PENDING or job.priority == 0 or job.held_by or job.priority_set \
                    or job.eligible_time is None or job.eligible_time > now or job.reason in waiting:
                continue
            if wanted and job.job_id not in wanted and job.array_job_id not in wanted:
                continue
            if who and job.spec.user not in who and str(job.spec.user_id) not in who:
                continue
            report = factor_report(self.priority_policy, job, max(last_calc, job.submit_time), self.shape)
            rows.append({"job_id": job.job_id, "partition": job.partition, "user": job.spec.user,
                         "user_id": job.spec.user_id, "priority": job.priority, **report})
        return rows

    def tick(self, now: float | None = None) -> list[Outgoing]:
        now = time.time() if now is None else now
        out: list[Outgoing] = []
        if now >= self.next_priority_calc:
            self.next_priority_calc = now + self.priority_calc_period
            self.recompute_priorities(now)
        if self.need_backfill and now >= self.next_backfill:
            self.need_backfill = False
            self.need_schedule = True  # the backfill cycle a busy second postponed
        for job in list(self.jobs.values()):
            if job.state == model.RUNNING and job.end_time is not None and job.end_time <= now:
                log.info("job %s reached its time limit", job.job_id)
                job.cancel_state = model.TIMEOUT
                if not job.spec.batch:
                    out.extend(self._finish(job, model.TIMEOUT, now))
                else:
                    job.state = model.TIMEOUT
                    job.completing = True
                    self._save(job)
                out.extend(Outgoing(n, "terminate_job", self.terminate_body(job))
                           for n in job.nodes)
            elif (job.state in model.FINISHED_STATES and not job.completing and job.end_time is not None
                  and now - job.end_time > self.min_job_age):
                del self.jobs[job.job_id]
                self.store.delete_job(job.job_id)
            elif job.state == model.PENDING and job.spec.begin_time and job.spec.begin_time <= now \
                    and job.reason == REASON_BEGIN_TIME:
                self.need_schedule = True
        for name, node in self.nodes.items():
            if node.responding and now - self.node_seen.get(name, now) > self.slurmd_timeout:
                log.warning("node %s not responding", name)
                node.responding = False
                node.reason = node.reason or "Not responding"
                for job in list(self.jobs.values()):
                    if name in job.nodes and (job.state == model.RUNNING or job.completing):
                        out.extend(self._finish(job, job.cancel_state or model.NODE_FAIL, now))
        return out


def parse_task_ids(text: str) -> set[int]:
    text = text.strip("[]")
    wanted: set[int] = set()
    for part in text.split(","):
        part = part.split("%", 1)[0]
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            if high:
                step = 1
                if ":" in high:
                    high, step_text = high.split(":", 1)
                    step = int(step_text)
                wanted.update(range(int(low), int(high) + 1, step))
            else:
                wanted.add(int(low))
        except ValueError:
            raise RequestError("Invalid job id specified", "InvalidJobId") from None
    return wanted


def model_to_dict(job: Job) -> dict[str, Any]:
    import msgspec

    return msgspec.to_builtins(job)
