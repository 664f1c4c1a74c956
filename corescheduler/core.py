"""The scheduling core: the cluster's jobs, nodes and partitions as a pure state machine.

Events in, decisions out.  Every public method is one event (a submission, a job's
end, a node's report, time passing) and takes the clock as ``now``; identities come
resolved (``Identity``), the associations as an in-memory ``AccountBook``.  The core
does no I/O: no state store, no ``time.time()``, no user database, no socket.  It
returns the messages for node daemons (``Outgoing``) and records what must be made
durable as effects (``take_effects``), which the controller writes and commits
before it answers, and the simulator drops.  The controller, the tests and
``plurm simulate`` drive this same class.

Jobs' ends and cancellations live in core_ends.py, preemption, suspension and requeue
in core_preempt.py, ``scontrol requeue/suspend/resume`` in core_requeue.py, node and step
events in core_nodes.py, ``scontrol update`` in core_update.py, --signal and GraceTime in
core_signals.py, node administration (drain, down, reboot) in core_nodeadmin.py, ``scontrol
reconfigure`` in core_reconfig.py, the periodic tick in core_tick.py (mixins of
``ClusterCore``, one role each); who may do what is authz.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from plurm.corescheduler import authz
from plurm.corescheduler import effects as fx
from plurm.corescheduler.accounts import AccountBook
from plurm.corescheduler.backfill import BackfillParams, schedule_with_backfill
from plurm.corescheduler.compact import shrink
from plurm.corescheduler.core_dynnodes import DynamicNodes
from plurm.corescheduler.core_ends import JobEnds
from plurm.corescheduler.core_nodeadmin import NodeAdmin
from plurm.corescheduler.core_nodes import NodeEvents
from plurm.corescheduler.core_options import OptionEffects
from plurm.corescheduler.core_preempt import Preemption
from plurm.corescheduler.core_reconfig import NodeReconfig
from plurm.corescheduler.core_requeue import JobControl
from plurm.corescheduler.core_signals import Signals
from plurm.corescheduler.core_tick import Ticks
from plurm.corescheduler.core_update import JobChanges, JobUpdates
from plurm.corescheduler.dependency import Dependencies, dependency_targets
from plurm.corescheduler.effects import Outgoing
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.jobids import parse_task_ids
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.preempt import NoPreemption
from plurm.corescheduler.priority import BasicPriority, ClusterShape, factor_report
from plurm.corescheduler.tickset import TickSet
from plurm.corescheduler.scheduler import (
    REASON_BEGIN_TIME,
    REASON_DEP_NEVER,
    REASON_DEPENDENCY,
    REASON_HELD_ADMIN,
    REASON_HELD_USER,
    REASON_RESOURCES,
    Allocation,
    Demand,
    Scheduler,
    SubmitRefused,
    demand_of,
)
from plurm.wire import model
from plurm.wire.model import Job, JobSpec, Node, Partition, StepRecord

log = logging.getLogger("plurmctld")

MAX_JOB_EVENTS = 32
_HELD_REASON = {"user": REASON_HELD_USER, "admin": REASON_HELD_ADMIN}  # a pass skips held jobs showing it

__all__ = ["ClusterCore", "CoreSettings", "JobChanges", "Outgoing", "RequestError", "parse_task_ids"]


@dataclass
class CoreSettings:
    """The slurm.conf values the core acts on (corescheduler/configure.py reads them)."""

    cluster_name: str = "cluster"
    kill_wait: float = 30.0  # KillWait
    default_mem_per_cpu: int | None = None  # DefMemPerCPU
    slurmd_timeout: float = 300.0  # SlurmdTimeout
    min_job_age: float = 300.0  # MinJobAge: finished jobs stay in memory this long
    max_array_size: int = 1001  # MaxArraySize
    first_job_id: int = 1  # FirstJobId
    priority_calc_period: float = 300.0  # PriorityCalcPeriod
    preempt_mode: str = "OFF"  # PreemptMode
    preempt_exempt_s: float = 0.0  # PreemptExemptTime
    preempt_send_user_signal: bool = False  # PreemptParameters=send_user_signal (core_signals.py)
    kill_invalid_depend: bool = False  # SchedulerParameters=kill_invalid_depend
    enforce_associations: bool = False  # AccountingStorageEnforce=associations
    # SchedulerType=sched/backfill (Slurm's default) adds a backfill cycle to the main pass
    # every bf_interval seconds (SchedulerParameters); the main pass runs on every event.
    scheduler_type: str = "sched/backfill"
    backfill: BackfillParams = field(default_factory=BackfillParams)
    slurm_user: str = "root"  # SlurmUser: who drains a node the cluster drains by itself
    node_fail_grace_s: float = 15.0  # a batch job missing from its node this long has failed
    # PrivateData: what only its owner and operators see (jobs, usage, users, accounts, ...)
    private_data: frozenset[str] = frozenset()
    max_script_size: int = authz.DEFAULT_MAX_SCRIPT_SIZE  # SchedulerParameters=max_script_size
    cred_expire: float = 120.0  # AuthInfo=cred_expire: a requeued job waits this long + 1 s
    resume_timeout: float = 60.0  # ResumeTimeout: a node told to reboot is DOWN if not back by then
    reboot_program: str = ""  # RebootProgram: without it only a local cluster's nodes reboot (core_reboot.py)
    job_requeue: bool = True  # JobRequeue: a batch job without --requeue/--no-requeue may be requeued
    return_to_service: int = 0  # ReturnToService: when a DOWN node comes back by itself (core_nodes.py)
    mpi_params: str = ""  # MpiParams (ports=P1-P2: the steps' reserved ports, step_resources.py)


class ClusterCore(JobEnds, Preemption, JobControl, NodeEvents, JobUpdates, Signals, NodeAdmin, NodeReconfig,
                  OptionEffects, DynamicNodes, Ticks):
    def __init__(self, nodes: dict[str, Node], partitions: dict[str, Partition],
                 settings: CoreSettings | None = None, *, priority_policy: Any = None, preempt_policy: Any = None,
                 accounts: AccountBook | None = None, jobs: Iterable[Job] = (),
                 open_steps: Iterable[StepRecord] = (), next_job_id: int | None = None, now: float = 0.0) -> None:
        self.settings = settings = settings or CoreSettings()
        self.now = now
        self.nodes = nodes
        self.partitions = partitions
        self.cluster_name = settings.cluster_name
        self.default_partition = next((p.name for p in partitions.values() if p.default),
                                      next(iter(partitions), None))
        for partition in partitions.values():
            for name in partition.nodes:
                if name in nodes and partition.name not in nodes[name].partitions:
                    nodes[name].partitions.append(partition.name)
        self.scheduler = Scheduler(nodes, partitions, settings.default_mem_per_cpu)
        # The priority policy (a priority plugin's object): basic unless slurm.conf chose one.
        self.priority_policy = priority_policy or BasicPriority()
        self.preempt_policy = preempt_policy or NoPreemption()
        self.backfill_params = settings.backfill
        self.next_backfill = 0.0
        self.need_backfill = False
        self.sched_depth = 0  # jobs the last scheduling pass considered (sdiag: stats.py)
        self.next_priority_calc = now + settings.priority_calc_period
        self.accounts = accounts or AccountBook()
        self.accounts.now = now
        self.shape = ClusterShape(len(nodes), sum(n.cpus for n in nodes.values()),
                                  {p.name: p.priority_job_factor for p in partitions.values()},
                                  fairshare=lambda job: self.accounts.fairshare(job.spec.account, job.spec.user),
                                  qos=lambda job: self.accounts.qos_priority(job.spec.qos))
        self.jobs: dict[int, Job] = {}
        self.tickset = TickSet()
        # Final states of jobs no longer in memory that a dependency may still name:
        # job id -> (state, array job id, array task id).  The controller seeds it from
        # accounting (it knows the store); the core adds the jobs it purges.
        self.archive: dict[int, tuple[str, int | None, int | None]] = {}
        self.dependencies = Dependencies(self.jobs, self.find_jobs, self.archive)
        self.steps: dict[tuple[int, str], StepRecord] = {}
        self.node_seen: dict[str, float] = {}
        self.node_registered: set[str] = set()
        self.missing_since: dict[int, float] = {}
        self.stale_told: dict[tuple[str, int, int], float] = {}  # (node, job, run) told to die (core_nodes)
        self.reboot_pending: set[str] = set()  # nodes with a reboot requested or issued (core_nodeadmin)
        self._liveness_due = now  # the earliest SlurmdTimeout deadline (core_nodes.py)
        self.next_job_id = next_job_id or settings.first_job_id
        self._effects: list[fx.Effect] = []
        self._array_index: dict[int, list[Job]] | None = None  # (_array_members)
        self._array_index_size = 0
        for job in jobs:
            shrink(job)  # (as at submission: compact.py)
            self.jobs[job.job_id] = job
            if job.state == model.RUNNING or job.completing:
                self.scheduler.allocate(Allocation.of_job(job))
        for step in open_steps:
            self.steps[(step.job_id, step.step_id)] = step
        # Node daemons get one SlurmdTimeout to come back after a controller restart.
        for name in nodes:
            self.node_seen[name] = now
        self.need_schedule = True

    # ------------------------------------------------------------------ the shell's side
    def take_effects(self) -> list[fx.Effect]:
        """What to make durable since the last call, in order (the controller writes it)."""
        effects, self._effects = self._effects, []
        return effects

    def _at(self, now: float) -> None:
        """Every event carries the clock; the account book's decay reads it too."""
        self.now = now
        self.accounts.now = now
        self._array_index = None

    def _array_members(self, array_job_id: int) -> list[Job]:
        """The records of an array other than the one whose id it has: from an index built
        once per event (and again when a record comes or goes), so that a dependency on
        thousands of ids costs thousands of lookups, not thousands of queue scans."""
        index = self._array_index
        if index is None or self._array_index_size != len(self.jobs):
            index = {}
            for job in self.jobs.values():
                if job.array_job_id is not None and job.array_job_id != job.job_id:
                    index.setdefault(job.array_job_id, []).append(job)
            self._array_index, self._array_index_size = index, len(self.jobs)
        return index.get(array_job_id, [])

    # ------------------------------------------------------------------ helpers
    def _new_job_id(self) -> int:
        job_id = self.next_job_id
        self.next_job_id += 1
        self._effects.append(fx.SetNextJobId(self.next_job_id))
        return job_id

    def terminate_body(self, job: Job) -> dict[str, Any]:
        return {"job_id": job.job_id, "kill_wait": self.settings.kill_wait,
                "batch_host": job.nodes[0] if job.spec.batch and job.nodes else ""}

    def _save(self, job: Job) -> None:
        self._log_transition(job)
        self._effects.append(fx.SaveJob(job))
        self.tickset.note(job.job_id)  # (the tick visits changed jobs: tickset.py)

    def _save_step(self, step: StepRecord) -> None:
        self._effects.append(fx.SaveAcctStep(step))

    def _log_transition(self, job: Job) -> None:
        """Append (time, state, reason) when either changed: `plurm why` reads this log."""
        state = job.state + ("+COMPLETING" if job.completing else "")
        if job.events and job.events[-1][1] == state and job.events[-1][2] == job.reason:
            return
        self._mail_on_transition(job, state)  # --mail-type (core_mail.py): before the log moves on
        job.events.append((self.now, state, job.reason))
        if len(job.events) > MAX_JOB_EVENTS:
            del job.events[1:len(job.events) - MAX_JOB_EVENTS + 1]  # keep the first and the latest

    def find_jobs(self, spec: str) -> list[Job]:
        """Jobs named by "12", "12_3" or "12_[1-3]" (array tasks by their array id)."""
        if (het := self._het_find(spec)) is not None:  # "12+1", or every component of hetjob 12
            return het
        base, sep, task = spec.partition("_")
        try:
            job_id = int(base)
        except ValueError:
            raise RequestError("Invalid job id specified", "InvalidJobId") from None
        if not sep:
            direct = self.jobs.get(job_id)
            if direct is not None and direct.array_job_id is None:
                return [direct]  # (before the array index, built over every job: a million, issue 17)
            members = self._array_members(job_id)
            if direct is None and not members:
                return []
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

    def privileged(self, who: Identity | None) -> bool:
        """root, SlurmUser, and the users sacctmgr made Operator or Administrator."""
        return authz.is_operator(who, self.accounts)

    def check_owner(self, job: Job, who: Identity, message: str = authz.ACCESS_DENIED) -> None:
        """A job is its user's and the operators' to change (authz.py)."""
        if who.uid != job.spec.user_id and not self.privileged(who):
            raise authz.denied(message)

    def owned_job(self, job_id: int, who: Identity) -> Job:
        job = self.jobs.get(job_id)
        if job is None:
            raise RequestError("Invalid job id specified", "InvalidJobId")
        self.check_owner(job, who)
        return job

    # ------------------------------------------------------------------ submission
    def submit(self, spec: JobSpec, who: Identity, now: float, test_only: bool = False) -> tuple[Job, list[str]]:
        self._at(now)
        warnings: list[str] = []
        partition_name = spec.partition or self.default_partition
        if partition_name is None or partition_name not in self.partitions:
            raise RequestError("Invalid partition name specified", "InvalidPartition",
                               f"invalid partition specified: {spec.partition}")
        partition = self.partitions[partition_name]
        spec.user_id, spec.group_id = who.uid, who.gid
        spec.user = who.user
        if spec.requeue and not spec.requeue_given:  # neither --requeue nor --no-requeue: JobRequeue
            spec.requeue = self.settings.job_requeue
        if spec.ntasks is not None and spec.ntasks < 1:
            raise RequestError("Invalid number of tasks", "InvalidTasks")
        authz.check_submission(spec, self.settings.max_script_size, self.privileged(who))
        if spec.dependency and self.next_job_id in dependency_targets(spec.dependency):
            raise RequestError("Job dependency problem", "DependencyProblem")  # on itself: never
        self._check_access(partition, spec, who)
        if not spec.account:
            spec.account = self.accounts.default_account(spec.user)
        if not spec.qos:  # as slurmctld: the association's default QOS, which is normal here
            spec.qos = "normal"
        if self.settings.enforce_associations and not (
                spec.account and self.accounts.has_association(spec.user, spec.account)):
            raise RequestError("Invalid account or account/partition combination specified", "InvalidAccount")
        self.rest_submit(spec, who)  # --batch refused as without node_features (core_rest.py)
        self.reboot_submit(spec, who)  # --reboot: operators only (core_reboot.py)
        self.external_submit(spec, who)  # EXTERNAL_JOB: never launched; admin_comment (core_external.py)
        try:
            self.scheduler.validate(spec, partition)
        except SubmitRefused as exc:
            raise RequestError(str(exc), "ConfigUnavailable", exc.detail) from None
        max_array = self.settings.max_array_size
        if spec.array_indices and (len(spec.array_indices) > max_array or max(spec.array_indices) >= max_array):
            raise RequestError("Invalid job array specification", "BadArray")
        if spec.time_unlimited:
            time_limit = partition.max_time
        elif spec.time_limit is not None:
            time_limit = spec.time_limit
        else:
            time_limit = partition.default_time if partition.default_time is not None else partition.max_time
        job = Job(job_id=self.next_job_id, spec=spec, partition=partition.name, time_limit=time_limit,
                  submit_time=now)
        job.priority = self.priority_policy.priority(job, now, self.shape)
        self.timeprio_submit(job, who, now)  # --priority, --time-min, --deadline, --tmp, --prefer (core_timeprio.py)
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
        self._effects.append(fx.SaveScript(job.job_id, spec.script, spec.environment))
        # The script and environment live in their own table: keep the job record small.
        spec.script = None
        spec.environment = {}
        shrink(job)  # shared empty containers and strings: a million jobs in memory (compact.py)
        self._save(job)
        self.need_schedule = True
        return job, warnings

    @staticmethod
    def _check_access(partition: Partition, spec: JobSpec, who: Identity) -> None:
        """The partition's AllowGroups / AllowAccounts / AllowQos (None: ALL)."""
        if partition.allow_groups is not None and who.uid != 0 and not who.groups & set(partition.allow_groups):
            raise RequestError("User's group not permitted to use this partition", "AccessDenied")
        if partition.allow_accounts is not None and (spec.account or "") not in partition.allow_accounts:
            raise RequestError("Invalid account or account/partition combination specified", "InvalidAccount")
        if partition.allow_qos is not None and spec.qos and spec.qos not in partition.allow_qos:
            raise RequestError("Invalid qos specification", "InvalidQos")

    def test_start(self, job: Job, now: float) -> tuple[float, Allocation | None]:
        partition = self.partitions[job.partition]
        demand = demand_of(job.spec, partition, self.scheduler.default_mem_per_cpu)
        self.scheduler.prepare()
        return now, self.scheduler.try_place(demand, partition)

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
        return self.settings.kill_invalid_depend

    def schedule(self, now: float) -> list[Outgoing]:
        self._at(now)
        self.need_schedule = False
        candidates: list[tuple[Job, Demand]] = []
        # As Slurm: a higher PriorityTier partition's jobs are evaluated first, then by priority.
        tiers = {p.name: p.priority_tier for p in self.partitions.values()}
        pending = sorted((j for j in self.jobs.values() if j.state == model.PENDING and not j.completing
                          and j.reason != _HELD_REASON.get(j.held_by)),  # (held, reason shown: nothing to do)
                         key=lambda j: (-tiers.get(j.partition, 0), -j.priority, j.job_id))
        running_tasks: dict[int, int] = {}
        ready_tasks: dict[int, list[int]] = {}  # array record -> the task ids that may start now, in order
        qos_limits = self.accounts.qos_limits()
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
            demand = self.resv_demand(job, demand, now)  # the nodes reservations keep from it (core_resv.py)
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
        candidates = self._license_gate(candidates, now)  # -L: reason Licenses, planned over time (core_licenses.py)
        self.sched_depth = len(candidates)  # the jobs this pass considers (sdiag's depth: stats.py)
        het_out = self._het_schedule(candidates, now)  # hetjobs wait out of the pass (core_hetjob.py)
        before = {job.job_id: job.reason for job, _ in candidates}
        if self.settings.scheduler_type == "sched/backfill" and now >= self.next_backfill:
            self.next_backfill = now + max(self.backfill_params.interval_s, 0)
            holding = [j for j in self.jobs.values() if j.state == model.RUNNING or j.completing]
            starts, planned = schedule_with_backfill(self.scheduler, candidates, holding, now, self.backfill_params)
            for job, _ in candidates:
                job.planned_start = planned.planned_start.get(job.job_id)
        else:
            starts = self.scheduler.schedule(candidates, now)
            if self.settings.scheduler_type == "sched/backfill":
                self.need_backfill = True
        self.resv_reasons(candidates, now)
        out: list[Outgoing] = self._het_start(het_out, now)  # all components or none, after the pass
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
        self.refuse_immediate(now)  # salloc/srun -I: not started in this pass, failed (core_immediate.py)
        return out

    def _split_array_task(self, meta: Job, task_id: int) -> Job:
        meta.array_pending.remove(task_id)
        job = Job(job_id=self._new_job_id(), spec=meta.spec, partition=meta.partition, time_limit=meta.time_limit,
                  submit_time=meta.submit_time, priority=meta.priority, array_job_id=meta.array_job_id,
                  array_task_id=task_id, eligible_time=meta.eligible_time)
        self._effects.append(fx.CopyScript(meta.job_id, job.job_id))
        self.jobs[job.job_id] = job
        if len(meta.array_pending) == 1:
            meta.array_task_id = meta.array_pending[0]
        self._save(meta)
        return job

    def _start(self, job: Job, alloc: Allocation, now: float) -> list[Outgoing]:
        job.state = model.RUNNING
        job.reason = "None"
        job.start_time = now
        if self.timeprio_start(job, alloc, now):  # --deadline missed: DEADLINE instead (core_timeprio.py)
            return []
        # A job without a limit keeps it: as Slurm 22.05 with accounting (slurmdbd) shows it,
        # TimeLimit=UNLIMITED and EndTime=Unknown while it runs (squeue %l UNLIMITED, %e NONE).
        # (A Slurm without accounting shows 365-00:00:00; plurm always keeps accounting.)
        job.end_time = now + job.time_limit * 60 if job.time_limit is not None else None
        job.nodes, job.cpus, job.mem, job.tasks = alloc.nodes, alloc.cpus, alloc.mem, alloc.tasks
        job.gres_alloc = list(alloc.gres)
        job.share_rows = tuple(alloc.share_rows)
        booting = self.reboot_for_job(job, now)  # --reboot: CONFIGURING until its nodes are back (core_reboot.py)
        self._save(job)
        if booting is not None:
            return booting
        return self._launch_batch(job, now)

    def _launch_batch(self, job: Job, now: float) -> list[Outgoing]:
        """The batch step of a job that has just started, and the word that launches it."""
        if not job.spec.batch:
            return []
        step = StepRecord(job_id=job.job_id, step_id="batch", name="batch", nodes=job.nodes[:1],
                          ntasks=1, cpus=job.cpus[0], start_time=now)
        self.steps[(job.job_id, "batch")] = step
        self._save_step(step)
        # The script and environment are the store's: the controller adds them to the body.
        body = {
            "job_id": job.job_id,
            "job": msgspec.to_builtins(job),
            "args": job.spec.script_args,
            "work_dir": job.spec.work_dir,
            "stdout": job.spec.stdout or "",
            "stderr": job.spec.stderr or "",
            "stdin": job.spec.stdin or "/dev/null",
            "open_mode": job.spec.open_mode or "truncate",
            "uid": job.spec.user_id,
            "gid": job.spec.group_id,
        }
        return [Outgoing(job.nodes[0], "launch_job", body)]

    # ------------------------------------------------------------------ timers
    def recompute_priorities(self, now: float) -> None:
        """PriorityCalcPeriod: age moves pending jobs up (multifactor).  A policy that can
        compute the whole queue at once (``priorities``: multifactor's priority kernel) does."""
        self._at(now)
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
        self._at(now)
        wanted, who = set(job_ids or ()), set(users or ())
        last_calc = self.next_priority_calc - self.settings.priority_calc_period
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
