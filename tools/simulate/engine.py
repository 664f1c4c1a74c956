"""The simulator's engine: the controller's scheduling core, driven in virtual time.

This is the only module that calls the core (plurm.corescheduler).  It builds a
``ClusterCore`` from a slurm.conf exactly as plurmctld does (``core_from_conf``), registers
every node as its plurmd would, and feeds it the trace's events at their times.  No
sockets, no state store (the core's persistence effects are dropped), no wall clock: the
clock is the trace's.

The loop jumps from event to event, never by a fixed step.  Events are submissions (the
trace's submit times), job ends (start + run time, when that is within the time limit)
and the core's own timers: a job's time limit (``tick`` sends it ``terminate_job``, and the
engine reports its end, as a plurmd does once the job is killed), the priority
recalculation (``next_priority_calc``, while jobs wait), a backfill cycle that a busy
moment postponed (``next_backfill`` while ``need_backfill``), and the purge of finished
jobs (at least once per MinJobAge).  At each event time, in the controller's order:
submissions, ends, then ``tick(now)`` when a timer is due, then ``schedule(now)`` if
``need_schedule``.  The controller ticks every half second; ticking only when a timer is
due gives the same decisions, because a tick with no timer due changes nothing.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from plurm.corescheduler.accounts import AssociationError
from plurm.corescheduler.configure import core_from_conf
from plurm.corescheduler.core import ClusterCore, RequestError
from plurm.corescheduler.identity import Identity
from plurm.tools.simulate.metrics import JobRecord, SimResult
from plurm.tools.simulate.swf import STATUS_FAILED, SwfJob
from plurm.wire import model
from plurm.wire.model import JobSpec

# Virtual time is EPOCH + the trace's seconds: a clock far from 0, so that no "time or
# default" in the core ever mistakes the trace's first second for "no time".
EPOCH = 1_000_000_000.0
END, LIMIT = 0, 1  # heap entry kinds: a job's natural end; its time limit (a tick is due)
MAX_PASSES_PER_EVENT = 3
UID_BASE = 10_000  # SWF user ids are small numbers: keep them clear of real accounts

ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class TraceJob:
    """What the engine needs of one trace job (from an SwfJob)."""

    job_id: int
    submit: float      # seconds from the trace's start
    procs: int
    run: float
    limit_min: int | None  # minutes; None: the partition's limit
    user: int = -1
    group: int = -1
    exit_code: int = 0

    @classmethod
    def from_swf(cls, job: SwfJob) -> "TraceJob":
        limit = int(math.ceil(job.req_time / 60.0)) if job.req_time > 0 else None
        return cls(job.job, float(job.submit), job.procs, max(float(job.run), 0.0), limit, job.user, job.group,
                   1 if job.status == STATUS_FAILED else 0)


def load_conf(path: str | None = None, text: str | None = None) -> Any:
    """A slurm.conf, read by plurm's own parser (plurm.grammar.slurmconf)."""
    from plurm.grammar.slurmconf import load_slurm_conf, parse_slurm_conf_text

    if path is not None:
        return load_slurm_conf(path)
    return parse_slurm_conf_text(text or "", "<simulate>")


def default_conf_text(nodes: int, cpus_per_node: int, memory_mb: int = 0) -> str:
    """A cluster of ``nodes`` x ``cpus_per_node`` with Slurm's default policies
    (sched/backfill, priority/basic, no preemption) and one partition with no time limit."""
    width = max(len(str(nodes)), 1)
    names = f"n[{1:0{width}d}-{nodes:0{width}d}]" if nodes > 1 else "n1"
    memory = f" RealMemory={memory_mb}" if memory_mb else ""
    return (
        "ClusterName=sim\n"
        "SlurmctldHost=localhost\n"
        "SelectType=select/cons_tres\n"
        "SchedulerType=sched/backfill\n"
        f"NodeName={names} CPUs={cpus_per_node}{memory} State=UNKNOWN\n"
        "PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
    )


def policy_name(conf: Any) -> str:
    sched = (conf.get("SchedulerType") or "sched/backfill").lower()
    prio = (conf.get("PriorityType") or "priority/basic").lower()
    params = conf.get("SchedulerParameters") or ""
    return f"{sched}, {prio}" + (f", {params}" if params else "")


class Simulation:
    """One run of one trace on one slurm.conf."""

    def __init__(self, conf: Any, *, label: str | None = None) -> None:
        self.conf = conf
        self.core: ClusterCore = core_from_conf(conf, now=EPOCH)
        # No node fails in a simulation and no plurmd pings: every node registers at the
        # start and is never timed out.
        self.core.settings.slurmd_timeout = math.inf
        for name in list(self.core.nodes):
            self.core.node_register(name, {}, EPOCH)
        self.core.take_effects()
        self.label = label or policy_name(conf)
        self.total_cpus = sum(n.cpus for n in self.core.nodes.values())
        self._identities: dict[tuple[int, int], Identity] = {}

    # ------------------------------------------------------------------ inputs
    def _identity(self, user: int, group: int) -> Identity:
        """The SWF user as a plurm user, in an account named after its group (fair share
        acts on these associations)."""
        key = (user, group)
        who = self._identities.get(key)
        if who is None:
            name = f"u{user}" if user >= 0 else "u_unknown"
            account = f"g{group}" if group >= 0 else "swf"
            book = self.core.accounts
            try:
                if account not in book.accounts_by_name:
                    book.add_account(account)
                book.add_user(name, account)
            except AssociationError:
                pass  # already associated (a user seen in two groups keeps its first default)
            who = Identity(UID_BASE + max(user, 0), UID_BASE + max(group, 0), name, frozenset({account}))
            self._identities[key] = who
        return who

    @staticmethod
    def spec_of(job: TraceJob) -> JobSpec:
        return JobSpec(name=f"swf{job.job_id}", ntasks=job.procs, time_limit=job.limit_min, batch=True,
                       account=f"g{job.group}" if job.group >= 0 else "swf")

    # ------------------------------------------------------------------ the loop
    def run(self, jobs: Sequence[TraceJob], progress: ProgressFn | None = None) -> SimResult:
        core = self.core
        records = [JobRecord(j.job_id, j.submit, j.procs, j.run, j.limit_min * 60.0 if j.limit_min else None,
                             j.user) for j in jobs]
        order = sorted(range(len(jobs)), key=lambda k: jobs[k].submit)
        # Every user is associated before the first submission, as a site's sacctmgr set-up
        # would have it: fair share ranks a user who has not submitted yet too.
        for job in jobs:
            self._identity(job.user, job.group)
        result = SimResult(records, self.total_cpus, len(core.nodes), policy=self.label)
        of_core: dict[int, int] = {}      # core job id -> index in jobs
        started_at: dict[int, float] = {}  # running core job id -> its start (stale heap entries differ)
        heap: list[tuple[float, int, int, float]] = []  # (time, kind, core job id, start)
        pending = 0
        done = 0
        total = len(jobs)
        step = max(1, total // 200)
        next_sub = 0
        last_tick = EPOCH
        purge_every = max(core.settings.min_job_age, 1.0)

        def end_job(job_id: int, now: float, exit_code: int = 0, signal: int = 0) -> None:
            nonlocal done, pending
            started_at.pop(job_id, None)
            out = core.job_ended(job_id, exit_code, signal, now, now)
            job = core.jobs[job_id]
            rec = records[of_core[job_id]]
            if job.state == model.PENDING:  # requeued (a preemption): it waits again
                pending += 1
                rec.start, rec.nodes, rec.cpus = None, 0, 0
                return
            rec.end = now - EPOCH
            rec.state = job.state
            done += 1
            if progress is not None and done % step == 0:
                progress(done, total)
            handle(out, now)

        def handle(out: list[Any], now: float) -> int:
            """Act on the core's messages as the node daemons would; returns how many
            jobs ended (killed by the core) meanwhile."""
            nonlocal pending
            ending: list[int] = []
            for msg in out:
                if msg.msg_type == "launch_job":
                    job_id = msg.body["job_id"]
                    job = core.jobs[job_id]
                    rec = records[of_core[job_id]]
                    rec.start = now - EPOCH
                    rec.nodes, rec.cpus = len(job.nodes), sum(job.cpus)
                    pending -= 1
                    started_at[job_id] = now
                    natural = now + jobs[of_core[job_id]].run
                    if job.end_time is None or natural <= job.end_time:
                        heapq.heappush(heap, (natural, END, job_id, now))
                    else:  # it runs into its time limit: tick() will terminate it then
                        heapq.heappush(heap, (job.end_time, LIMIT, job_id, now))
                elif msg.msg_type == "terminate_job":
                    job = core.jobs.get(msg.body["job_id"])
                    # A job the core is killing (time limit, preemption): its plurmd would
                    # kill it and report the end; here that happens at once.
                    if job is not None and job.completing and job.job_id not in ending:
                        ending.append(job.job_id)
            for job_id in ending:
                end_job(job_id, now, 0, 9)
            return len(ending)

        while True:
            times = []
            if next_sub < total:
                times.append(EPOCH + jobs[order[next_sub]].submit)
            while heap and started_at.get(heap[0][2]) != heap[0][3]:
                heapq.heappop(heap)  # the job ended another way (killed, requeued)
            if heap:
                times.append(heap[0][0])
            running = bool(heap)
            if pending and (running or next_sub < total):
                times.append(core.next_priority_calc)
            if core.need_backfill and pending:
                times.append(core.next_backfill)
            if not times:
                break
            now = max(min(times), core.now)
            result.events += 1
            while next_sub < total and EPOCH + jobs[order[next_sub]].submit <= now:
                k = order[next_sub]
                next_sub += 1
                job = jobs[k]
                try:
                    submitted, _ = core.submit(self.spec_of(job), self._identity(job.user, job.group), now)
                except RequestError as exc:
                    reason = f"refused: {exc}"
                    result.skipped[reason] = result.skipped.get(reason, 0) + 1
                    records[k].state = "REFUSED"
                    continue
                of_core[submitted.job_id] = k
                pending += 1
            tick_due = now >= core.next_priority_calc or (core.need_backfill and now >= core.next_backfill) \
                or now - last_tick >= purge_every
            while heap and heap[0][0] <= now:
                _, kind, job_id, start = heapq.heappop(heap)
                if started_at.get(job_id) != start:
                    continue
                if kind == END:
                    end_job(job_id, now, jobs[of_core[job_id]].exit_code)
                else:
                    tick_due = True
            if tick_due:
                last_tick = now
                handle(core.tick(now), now)
            # A pass that preempts ends jobs at once (their plurmd would report it within
            # the turn): the freed resources get the next pass at the same time.
            for _ in range(MAX_PASSES_PER_EVENT):
                if not core.need_schedule:
                    break
                result.passes += 1
                if not handle(core.schedule(now), now):
                    break
            core.take_effects()  # persistence work for a controller: nothing to persist here
        # A job still waiting when nothing more can happen keeps no start; its reason says why.
        for job_id, k in of_core.items():
            if records[k].start is None and job_id in core.jobs:
                records[k].state = f"PENDING ({core.jobs[job_id].reason})"
        result.records = [r for r in records if r.state != "REFUSED"]
        return result


def simulate(conf: Any, jobs: Sequence[SwfJob], *, label: str | None = None, skipped: dict[str, int] | None = None,
             progress: ProgressFn | None = None) -> SimResult:
    """Run an SWF job list on a slurm.conf (a loaded SlurmConf)."""
    sim = Simulation(conf, label=label)
    result = sim.run([TraceJob.from_swf(j) for j in jobs], progress)
    for reason, count in (skipped or {}).items():
        result.skipped[reason] = result.skipped.get(reason, 0) + count
    return result
