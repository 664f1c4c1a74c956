"""Time and priority options in the core (issue 14, area timeprio): --priority, --time-min,
--deadline, --tmp, --prefer and --no-kill.

A mixin of ``ClusterCore`` (registered in core_options.py), pure like the rest of the core
(the clock is ``now``).  core.py calls ``timeprio_submit`` when a job is created,
``timeprio_start`` when it starts and ``timeprio_tick`` from its tick; core_nodes.py asks
``timeprio_keeps_running`` before a failed node ends a job.  Where the nodes are chosen
(--tmp, --prefer, --spread-job, --use-min-nodes, --overcommit) is timeprio_place.py; the
shortening to --time-min in backfill is timeprio_backfill.py.

As Slurm 22.05 behaves (measured: tests/integration/reference/timeprio/):

- **--priority=N|TOP**: operators and administrators only (others: Access/permission
  denied); the job's priority is N, kept as an administrator's ``scontrol update
  Priority=`` is (never recomputed).  TOP is the highest a job can get.
- **--deadline**: a pending job that can no longer end by its deadline, that is whose
  start now plus its --time-min (or, without one, its time limit) passes the deadline,
  ends in state DEADLINE (scontrol ExitCode 0:1, sacct 1:0; Reason DeadLine; StartTime =
  EndTime = then), at a tick or instead of starting.  A job with --time-min starts with
  its limit cut to what is left before the deadline (whole minutes, never below
  --time-min) and so ends TIMEOUT by then at the latest.  A
  --time-min that already passes the deadline at submission is refused: "Invalid
  time-min specification (exceeds job's time or other limits)"; so is a --time-min longer
  than the time limit; a deadline already past: "Requested time limit is invalid (missing
  or exceeds some limit)".  A --priority that is no number is ignored (sbatch, measured).
- **--tmp**: refused unless a node of the partition has that much TmpDisk ("Temporary disk
  specification can not be satisfied"), then only such nodes are used.
- **--prefer**: its features must be nodes' features ("Invalid preferred feature
  specification"); a job started where it is met shows it as its Features.
- **-O/--overcommit**: its tasks are laid out evenly over the nodes it got (the CPUs of
  one task per node, timeprio_place.py).
- **-k/--no-kill**: a failed node that is not the batch host is taken out of the job,
  which keeps running on its other nodes (its NodeList shrinks); the batch host's failure
  ends or requeues the job as without -k.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from plurm.corescheduler import authz
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.timeprio_place import parse_preference, small_tmp_nodes
from plurm.wire import model
from plurm.wire.model import Job

if TYPE_CHECKING:
    from plurm.corescheduler.effects import Outgoing
    from plurm.corescheduler.identity import Identity

log = logging.getLogger("plurmctld")

# The highest priority a job can be given (--priority=TOP), as Slurm shows it.
TOP_JOB_PRIORITY = 0xFFFFFFFD
MAX_JOB_PRIORITY = 0xFFFFFFFD
INVALID_TIME_MIN = "Invalid time-min specification (exceeds job's time or other limits)"
REASON_DEADLINE = "DeadLine"
INVALID_TIME_LIMIT = "Requested time limit is invalid (missing or exceeds some limit)"


class TimePriority:
    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, Job]
        nodes: dict[str, Any]
        partitions: dict[str, Any]
        scheduler: Any
        need_schedule: bool

        def privileged(self, who: Identity | None) -> bool: ...
        def _save(self, job: Job) -> None: ...
        def _finish(self, job: Job, state: str, end: float, exit_code: int = 0,
                    exit_signal: int = 0) -> list[Outgoing]: ...

    # ------------------------------------------------------------------ submission
    def timeprio_submit(self, job: Job, who: Identity, now: float) -> None:
        """Refuse what Slurm refuses (logged); fix an operator's --priority.  Called once the
        job record exists (its time limit resolved) and before it is kept."""
        spec = job.spec
        if spec.priority is not None or spec.priority_top:
            if not self.privileged(who):
                _refused(who, "--priority by a user who is no operator")
                raise authz.denied()
            if not spec.priority_top and not 0 <= (spec.priority or 0) <= MAX_JOB_PRIORITY:
                _refused(who, f"--priority={spec.priority}")
                raise RequestError("Invalid job priority", "InvalidPriority")  # (sbatch itself bounds it)
            job.priority = TOP_JOB_PRIORITY if spec.priority_top else int(spec.priority or 0)
            job.priority_set = True  # as scontrol update Priority=: not recomputed
        if spec.deadline is not None and not spec.deadline > now:  # (past, or no number: NaN)
            _refused(who, f"--deadline={spec.deadline} is not after now")
            raise RequestError(INVALID_TIME_LIMIT, "InvalidTimeLimit")
        if spec.time_min is not None and (
                spec.time_min < 0 or (job.time_limit is not None and spec.time_min > job.time_limit)
                or (spec.deadline is not None and now + spec.time_min * 60 > spec.deadline)):
            _refused(who, f"--time-min={spec.time_min} beyond the limit {job.time_limit} or the deadline")
            raise RequestError(INVALID_TIME_MIN, "InvalidTimeMin")
        if spec.tmp_disk:
            partition = self.partitions[job.partition]
            small = set(small_tmp_nodes(self.scheduler, spec.tmp_disk))
            if sum(1 for name in partition.nodes if name not in small) < max(spec.nodes_min, 1):
                _refused(who, f"--tmp={spec.tmp_disk}: too few nodes with that TmpDisk")
                raise RequestError("Requested node configuration is not available", "ConfigUnavailable",
                                   "Temporary disk specification can not be satisfied")
        if spec.prefer:
            from plurm.corescheduler import constraint as constraints

            known = {f for node in self.nodes.values() for f in node.features}
            try:
                wanted = constraints.parse(spec.prefer).features()
            except constraints.ConstraintError:
                wanted = {""}
            if not wanted <= known:
                _refused(who, f"--prefer={spec.prefer!r}: no such node features")
                raise RequestError("Invalid preferred feature specification", "InvalidPreferFeature")
        if spec.deadline is not None:
            self._deadline_ids().add(job.job_id)

    # ------------------------------------------------------------------ start
    def timeprio_start(self, job: Job, alloc: Any, now: float) -> bool:
        """A job about to start on ``alloc`` (already allocated, state RUNNING): -O lays its
        tasks out; True when it can no longer end by its --deadline, and has ended DEADLINE
        instead (the allocation given back, nothing launched).  A job with --time-min and
        --deadline starts with its limit cut to what is left before the deadline."""
        spec = job.spec
        if spec.overcommit and spec.ntasks and len(alloc.tasks) and not spec.ntasks_per_node:
            # -O: the CPUs of one task per node, the tasks all the same (SLURM_TASKS_PER_NODE=2 for
            # -n2 -O on one node, measured), dealt evenly over the nodes.
            share, extra = divmod(spec.ntasks, len(alloc.tasks))
            alloc.tasks[:] = [share + (1 if i < extra else 0) for i in range(len(alloc.tasks))]  # (frozen)
        if spec.prefer and spec.constraint is None and self._preference_met(spec.prefer, alloc.nodes):
            # As Slurm shows a job that got its preference: Features=<the --prefer>, no Prefer= line.
            job.spec = spec = msgspec.structs.replace(spec, constraint=spec.prefer)  # (a copy: arrays share one)
        if spec.deadline is None:
            return False
        if not self._can_end_in_time(job, now):
            job.nodes, job.cpus, job.mem, job.tasks = alloc.nodes, alloc.cpus, alloc.mem, alloc.tasks
            job.gres_alloc, job.share_rows = list(alloc.gres), tuple(alloc.share_rows)
            self._end_deadline(job, now)  # (_finish gives the allocation back)
            job.nodes, job.cpus, job.mem, job.tasks, job.gres_alloc, job.share_rows = [], [], [], [], [], ()
            self._save(job)
            return True
        left = int((spec.deadline - now) // 60)
        if spec.time_min is not None and (job.time_limit is None or job.time_limit > left):
            job.time_limit = max(spec.time_min, left)
        return False

    def _preference_met(self, prefer: str, names: list[str]) -> bool:
        parsed = parse_preference(prefer)
        return parsed is not None and any(all(alt.node_ok(set(self.nodes[n].features)) for n in names)
                                           for alt in parsed.alternatives)

    @staticmethod
    def _can_end_in_time(job: Job, now: float) -> bool:
        """Started now, could it end by its deadline (with its --time-min, else its limit)?"""
        minutes = job.spec.time_min if job.spec.time_min is not None else job.time_limit
        return job.spec.deadline is None or (minutes is not None and now + minutes * 60 <= job.spec.deadline)

    def _end_deadline(self, job: Job, now: float) -> list[Outgoing]:
        log.info("job %s: cannot end by its deadline: DEADLINE", job.job_id)
        job.reason = REASON_DEADLINE
        out = self._finish(job, model.DEADLINE, now, exit_signal=1)  # (scontrol: ExitCode=0:1)
        job.start_time = now  # (sacct: Start = End, as Slurm records it)
        self._save(job)
        self._deadline_ids().discard(job.job_id)
        self.need_schedule = True
        return out

    # ------------------------------------------------------------------ timers
    def timeprio_tick(self, now: float) -> list[Outgoing]:
        """Pending jobs that can no longer end by their --deadline end DEADLINE."""
        ids = self._deadline_ids()
        out: list[Outgoing] = []
        for job_id in list(ids):
            job = self.jobs.get(job_id)
            if job is None or job.state in model.FINISHED_STATES:
                ids.discard(job_id)
                continue
            if job.state != model.PENDING or job.completing:
                continue  # (kept: a requeued job is pending again)
            if not self._can_end_in_time(job, now):
                out.extend(self._end_deadline(job, now))
        return out

    def _deadline_ids(self) -> set[int]:
        """The jobs with a --deadline not yet finished (built from the jobs once, after a restart)."""
        ids: set[int] | None = getattr(self, "_deadlines", None)
        if ids is None:
            ids = {j.job_id for j in self.jobs.values()
                   if j.spec.deadline is not None and j.state not in model.FINISHED_STATES}
            self._deadlines = ids
        return ids

    # ------------------------------------------------------------------ node failure
    def timeprio_keeps_running(self, job: Job, failed: str, now: float) -> bool:
        """-k/--no-kill: take ``failed`` out of the running job instead of ending it (True),
        unless it is the batch host or the job's only node, or the job is on its way out."""
        if not job.spec.no_kill or job.state != model.RUNNING or job.completing or job.cancel_state:
            return False
        if failed not in job.nodes or len(job.nodes) < 2 or (job.spec.batch and job.nodes[0] == failed):
            return False
        from plurm.corescheduler.scheduler import Allocation

        self.scheduler.release(job)
        i = job.nodes.index(failed)
        job.nodes = job.nodes[:i] + job.nodes[i + 1:]
        for name in ("cpus", "mem", "tasks", "gres_alloc"):
            values = getattr(job, name)
            if len(values) > i:
                setattr(job, name, values[:i] + values[i + 1:])
        if len(job.share_rows) > i:
            job.share_rows = job.share_rows[:i] + job.share_rows[i + 1:]
        self.scheduler.allocate(Allocation.of_job(job))
        log.info("job %s: node %s failed, removed from the job (--no-kill)", job.job_id, failed)
        self._save(job)
        return True


def _refused(who: Identity, why: str) -> None:
    log.info("job submission by uid %s refused: %s", who.uid, why)
