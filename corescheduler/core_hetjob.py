"""Heterogeneous jobs (issue 14, item 7): one job made of components with different shapes.

A mixin of ``ClusterCore`` (corescheduler/core.py), pure in the same way (the clock is
``now``, the sender an ``Identity``).  As Slurm 22.05 (heterogeneous_jobs.html):

- **Ids**: the components get consecutive job ids N, N+1, ...; N, the first's, is the
  hetjob's (HetJobId, the leader); each component is shown as ``N+offset`` and named so by
  the commands (``scancel N+1``, ``squeue -j N+1``); N alone names every component.
- **Submission**: every component is validated before any is created, so a refused
  component refuses the whole job.  The batch script is component 0's (it runs on its
  first node); the other components are allocations that the script's sruns use.
- **Together or nothing**: ``_het_schedule`` (called by ``ClusterCore.schedule`` before its
  main pass) queues the hetjobs whose components are all eligible on the scheduler, and
  ``_het_start`` (after the pass) starts those the pass placed: all components at once
  (hetplace.py), or none, holding nothing.  The main pass tries a hetjob at its place in
  priority order: if it does not fit, the jobs behind it in its partitions wait for
  Priority; one behind a job still waiting for resources waits for Priority too.  As
  Slurm's, backfill plans a waiting hetjob: one start time for all its components, which
  no lower-priority job may delay, and starts it early when that time is now
  (backfill_hetjob.py); the jobs behind it run around that plan.
- **Ends**: component 0's end ends the hetjob (its script is the job's life): the other
  components still allocated end with its state and exit code.  Cancelling a pending
  component alone is refused, as Slurm refuses it; a running one other than 0 may be.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from plurm.corescheduler.effects import Outgoing
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.hetplace import HetGroup, Placed
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.scheduler import REASON_PRIORITY
from plurm.wire import model
from plurm.wire.model import Job, JobSpec

log = logging.getLogger("plurmctld")

# plurm's bound on a hetjob's components: one request must not make an unbounded number of jobs.
MAX_COMPONENTS = 128
# Slurm 22.05.8's words (tests/integration/reference/hetjob/array_refuse.txt, cancel_pending_component.txt).
ARRAY_REFUSED = "Invalid job array specification"
PENDING_COMPONENT = "Operation not permitted on individual component of heterogeneous job"


class HetJobs:
    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, Job]
        next_job_id: int
        scheduler: Any

        def _at(self, now: float) -> None: ...
        def _save(self, job: Job) -> None: ...
        def _start(self, job: Job, alloc: Any, now: float) -> list[Outgoing]: ...
        def _requeue(self, job: Job, now: float) -> None: ...
        def _finish(self, job: Job, state: str, end: float, exit_code: int = 0, exit_signal: int = 0
                    ) -> list[Outgoing]: ...
        def submit(self, spec: JobSpec, who: Identity, now: float, test_only: bool = False
                   ) -> tuple[Job, list[str]]: ...
        def terminate_body(self, job: Job) -> dict[str, Any]: ...

    # ------------------------------------------------------------------ submission
    def submit_hetjob(self, specs: list[JobSpec], who: Identity, now: float, test_only: bool = False
                      ) -> tuple[list[Job], list[str]]:
        """Submit components ``specs`` (in order) as one hetjob; the jobs, leader first."""
        self._at(now)
        if len(specs) > MAX_COMPONENTS:
            raise RequestError(f"Heterogeneous job has too many components (at most {MAX_COMPONENTS})",
                               "HetJobTooBig")
        if any(spec.array_indices or spec.array_spec for spec in specs):
            raise RequestError(ARRAY_REFUSED, "HetJobArray")
        leader_id = self.next_job_id
        for offset, spec in enumerate(specs):
            spec.het_job_id, spec.het_job_offset, spec.het_size = leader_id, offset, len(specs)
            if offset:  # the script runs once, in component 0
                spec.batch = False
                spec.script = None
        warnings: list[str] = []
        checked = [self.submit(spec, who, now, test_only=True) for spec in specs]  # all, before any is made
        for _, said in checked:
            warnings.extend(w for w in said if w not in warnings)
        if test_only:
            return [job for job, _ in checked], warnings
        jobs = [self.submit(spec, who, now)[0] for spec in specs]
        if [job.job_id for job in jobs] != list(range(leader_id, leader_id + len(jobs))):
            raise AssertionError(f"hetjob {leader_id}: component ids not consecutive")
        self._het_live().add(leader_id)
        log.info("hetjob %s: %d components submitted (%s)", leader_id, len(jobs),
                 ", ".join(str(job.job_id) for job in jobs))
        return jobs, warnings

    # ------------------------------------------------------------------ names
    def het_members(self, leader_id: int, size: int) -> list[Job]:
        """The components of hetjob ``leader_id`` still in memory, by offset."""
        found = []
        for offset in range(size):
            job = self.jobs.get(leader_id + offset)
            if job is not None and job.spec.het_job_id == leader_id and job.spec.het_job_offset == offset:
                found.append(job)
        return found

    def _het_find(self, spec: str) -> list[Job] | None:
        """``N+K``: component K of hetjob N; ``N`` of a hetjob's leader: every component;
        None: no hetjob name (ClusterCore.find_jobs goes on)."""
        base, plus, offset = spec.partition("+")
        if plus:
            try:
                leader_id, k = int(base), int(offset)
            except ValueError:
                raise RequestError("Invalid job id specified", "InvalidJobId") from None
            job = self.jobs.get(leader_id + k)
            if job is None or job.spec.het_job_id != leader_id or job.spec.het_job_offset != k:
                return []
            return [job]
        if not base.isdigit():
            return None
        leader = self.jobs.get(int(base))
        if leader is None or leader.spec.het_job_id != leader.job_id:
            return None
        return self.het_members(leader.job_id, leader.spec.het_size)

    def het_whole(self, action: Callable[[Job, float], list[Outgoing]]) -> Callable[[Job, float], list[Outgoing]]:
        """``action`` (scontrol suspend, resume) for a job, or for every component when the job is
        a hetjob's leader (Slurm suspends and resumes a hetjob whole); a component that cannot
        (it ended) is left as it is once component 0 could."""
        def whole(job: Job, now: float) -> list[Outgoing]:
            if job.spec.het_job_id != job.job_id:
                return action(job, now)
            out = action(job, now)
            for other in self.het_members(job.job_id, job.spec.het_size)[1:]:
                try:
                    out.extend(action(other, now))
                except RequestError as exc:
                    log.info("hetjob %s: component %s left as it is: %s", job.job_id, other.job_id, exc)
            return out
        return whole

    def het_cancel_check(self, spec: str, found: list[Job]) -> None:
        """scancel N+K of a pending hetjob: refused (only the whole job may be, while pending)."""
        if not any(job.state == model.PENDING and job.spec.het_job_id is not None for job in found):
            return
        if "+" in spec or not any(job.job_id == job.spec.het_job_id for job in found):  # (N+1's own id too)
            raise RequestError(PENDING_COMPONENT, "HetJobPending")

    # ------------------------------------------------------------------ scheduling
    def _het_live(self) -> set[int]:
        """Hetjobs with a component not ended yet (built once from the jobs: a restart)."""
        live = self.__dict__.get("_het_live_ids")
        if live is None:
            live = {job.spec.het_job_id for job in self.jobs.values()
                    if job.spec.het_job_id is not None and (job.state not in model.FINISHED_STATES or job.completing)}
            self.__dict__["_het_live_ids"] = live
        return live

    def _het_schedule(self, candidates: list[tuple[Job, Any]], now: float) -> list[Outgoing]:
        """Before a pass: end what component 0's end ended, take the hetjobs' components out
        of ``candidates`` (in place) and queue the hetjobs whose components are all
        eligible on the scheduler: the main pass tries each at its leader's place in
        priority order (hetplace.group_pass), and backfill plans the ones that wait for a
        common start of their components, which lower-priority jobs cannot take
        (backfill_hetjob.py).  ``_het_start`` reads the outcomes after the pass."""
        out = self._het_ends(now)
        groups = [HetGroup(self.scheduler.pass_key(members[0][0]), members)
                  for members in self._het_groups(candidates)]
        for group in groups:
            for job, _ in group.members:
                job.last_sched_eval = now
        self.scheduler.queue_groups(groups)
        return out

    def _het_groups(self, candidates: list[tuple[Job, Any]]) -> list[list[tuple[Job, Any]]]:
        """The hetjobs whose components are all candidates (all eligible), taken out of
        ``candidates``; the others' components are taken out too: all wait."""
        if not any(job.spec.het_job_id is not None for job, _ in candidates):
            return []
        by_leader: dict[int, list[tuple[Job, Any]]] = {}
        kept = []
        for job, demand in candidates:
            if job.spec.het_job_id is None:
                kept.append((job, demand))
            else:  # (candidates are in priority order: so are the groups)
                by_leader.setdefault(job.spec.het_job_id, []).append((job, demand))
        candidates[:] = kept
        groups = []
        for members in by_leader.values():
            members.sort(key=lambda member: member[0].spec.het_job_offset)
            if [job.spec.het_job_offset for job, _ in members] == list(range(members[0][0].spec.het_size)):
                groups.append(members)  # (else a component is held or waits: all wait)
        return sorted(groups, key=_rank)

    def _het_start(self, out: list[Outgoing], now: float) -> list[Outgoing]:
        """After the main pass (and backfill): start the hetjobs they placed (their
        allocations are taken), give the others their reason and planned start.
        Returns ``out`` with the starts."""
        for group in self.scheduler.take_groups():
            members = group.members
            outcome = group.outcome or Placed(None, REASON_PRIORITY)  # (a pass that did not reach it)
            if outcome.allocations is None:
                self._het_wait(members, outcome.reason, now)
                for job, _ in members:  # (a pass without a backfill cycle keeps the last plan, as for any job)
                    job.planned_start = group.planned_start if group.backfilled else job.planned_start
                continue
            started: list[Outgoing] = []
            for (job, _), alloc in zip(members, outcome.allocations):
                job.planned_start = None
                started.extend(self._start(job, alloc, now))
            components = [model_dict(job) for job, _ in members]
            for message in started:  # the batch script's environment names every component
                if message.msg_type == "launch_job":
                    message.body["job"]["het_components"] = components
            log.info("hetjob %s: its %d components start together", members[0][0].spec.het_job_id, len(members))
            out.extend(started)
        return out

    def _het_requeue(self, others: list[Job], now: float) -> list[Outgoing]:
        """Component 0 went back to the queue (scontrol requeue, a preemption, its node's
        failure): the components still allocated go back with it, so that they start
        together again; what runs on their nodes is ended."""
        out: list[Outgoing] = []
        for job in others:
            if job.state in (model.RUNNING, model.SUSPENDED) and not job.completing:
                body, nodes = self.terminate_body(job), list(job.nodes)
                self._requeue(job, now)
                out.extend(Outgoing(n, "terminate_job", body) for n in nodes)
                log.info("hetjob %s: component %s requeued with component 0", job.spec.het_job_id, job.job_id)
        return out

    def _het_wait(self, members: list[tuple[Job, Any]], reason: str, now: float) -> None:
        for job, _ in members:
            job.last_sched_eval = now
            if job.reason != reason:
                job.reason = reason
                self._save(job)

    def _het_ends(self, now: float) -> list[Outgoing]:
        """Components still allocated (or pending) of a hetjob whose component 0 ended."""
        live = self._het_live()
        out: list[Outgoing] = []
        for leader_id in list(live):
            leader = self.jobs.get(leader_id)
            members = self.het_members(leader_id, leader.spec.het_size) if leader is not None else []
            if leader is not None and leader.state == model.PENDING and not leader.completing:
                if len(members) < leader.spec.het_size or any(
                        job.state in model.FINISHED_STATES and not job.completing for job in members[1:]):
                    # a component is gone (ended alone, then component 0 was requeued): it can never start whole
                    log.warning("hetjob %s: a component has ended, the hetjob can never start: cancelled", leader_id)
                    for job in members:
                        if job.state == model.PENDING:
                            out.extend(self._finish(job, model.CANCELLED, now))
                    continue
                out.extend(self._het_requeue(members[1:], now))  # requeued: all go back together
                continue
            if leader is not None and leader.state not in model.FINISHED_STATES:
                continue
            for job in members[1:]:
                if job.state in (model.RUNNING, model.SUSPENDED):
                    state = leader.state if leader is not None else model.CANCELLED
                    out.extend(self._finish(job, state, now, leader.exit_code if leader else 0,
                                            leader.exit_signal if leader else 0))
                    out.extend(Outgoing(n, "terminate_job", self.terminate_body(job)) for n in job.nodes)
                elif job.state == model.PENDING:
                    out.extend(self._finish(job, model.CANCELLED, now))
            if all(job.state in model.FINISHED_STATES and not job.completing for job in members):
                live.discard(leader_id)
        return out


def _rank(members: list[tuple[Job, Any]]) -> tuple[int, int]:
    """A hetjob's place in the pass: its leader's priority, then id."""
    leader = members[0][0]
    return (-leader.priority, leader.job_id)


def model_dict(job: Job) -> dict[str, Any]:
    """What the batch environment needs of a component (common/environment.het_variables)."""
    spec = job.spec
    return {"job_id": job.job_id, "offset": spec.het_job_offset, "nodes": list(job.nodes), "cpus": list(job.cpus),
            "tasks": list(job.tasks), "mem": list(job.mem), "partition": job.partition,
            "spec": {"ntasks": spec.ntasks, "ntasks_per_node": spec.ntasks_per_node,
                     "cpus_per_task": spec.cpus_per_task, "mem_per_node": spec.mem_per_node,
                     "mem_per_cpu": spec.mem_per_cpu, "account": spec.account, "qos": spec.qos,
                     "name": spec.name, "nodes_min": spec.nodes_min}}
