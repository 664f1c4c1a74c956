"""Node and step events: registration, pings, liveness, node failure, drains, job steps.

A mixin of ``ClusterCore`` (corescheduler/core.py), pure in the same way: the clock
is ``now``, the sender an ``Identity``; node daemons' reports come in as plain data.

Node failure, after Slurm 22.05 (measured on the real one: tests/reliability/):

- a node silent for a third of SlurmdTimeout is flagged not responding (``idle*``: no new
  job starts on it); silent for SlurmdTimeout it is DOWN, reason "Not responding"
  (``down*``), and the current run of each of its jobs has failed: a batch job that may
  be requeued (``--requeue``, or JobRequeue=1 and no ``--no-requeue``) goes back to the
  queue with its id, one restart more and BeginTime cred_expire + 1 s ahead, and
  accounting keeps the failed run as NODE_FAIL; any other job ends NODE_FAIL (0:0);
- a node's reports (register, ping) list the runs it has (job id -> restart count): a
  run that must not run (older than the job's, ended, or the job is elsewhere now) is
  killed there, that run only; a batch job missing from its node fails as above;
- the node comes back as ReturnToService says (``_heard_from``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import msgspec

from plurm.corescheduler import effects as fx
from plurm.corescheduler import step_resources
from plurm.corescheduler.effects import Outgoing
from plurm.corescheduler.core_ends import OOM_EXIT, step_usage
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.scheduler import REASON_BEGIN_TIME
from plurm.wire import model
from plurm.wire.model import Job, Node, StepRecord

log = logging.getLogger("plurmctld")


class NodeEvents:
    if TYPE_CHECKING:  # provided by ClusterCore
        jobs: dict[int, Job]
        nodes: dict[str, Node]
        steps: dict[tuple[int, str], StepRecord]
        node_seen: dict[str, float]
        node_registered: set[str]
        missing_since: dict[int, float]
        stale_told: dict[tuple[str, int, int], float]
        _liveness_due: float
        _effects: list[fx.Effect]
        accounts: Any
        settings: Any
        need_schedule: bool

        def _at(self, now: float) -> None: ...
        def _save(self, job: Job) -> None: ...
        def _save_step(self, step: StepRecord) -> None: ...
        def owned_job(self, job_id: int, who: Any) -> Job: ...
        def _finish(self, job: Job, state: str, end: float, exit_code: int = 0,
                    exit_signal: int = 0) -> list[Outgoing]: ...
        def _requeue(self, job: Job, now: float) -> None: ...
        def terminate_body(self, job: Job) -> dict[str, Any]: ...

    # ------------------------------------------------------------------ steps
    def step_create(self, job_id: int, who: Identity, now: float, name: str, ntasks: int | None, nodes_min: int | None,
                    cpus_per_task: int | None, nodelist: list[str], overcommit: bool = False, *,
                    relative: int | None = None, exact: bool = False, whole: bool = False, overlap: bool = False,
                    resv_ports: int | None = None, interactive: bool = False) -> dict[str, Any]:
        """A step of a running job (srun).  ``relative``: it starts at that node of the job
        (-r); ``exact``: it holds only its tasks' CPUs, so that steps share nodes; ``whole``:
        it waits for whole free nodes; ``overlap``: it holds nothing and waits for nothing;
        ``resv_ports``: ports to reserve from MpiParams=ports (None: as many as its busiest
        node's tasks + 1 when the pool is set); ``interactive``: salloc's interactive step
        (step id "interactive", one task on the first node, holding nothing).  A step that
        fits the job but not beside its running steps now is refused with code StepBusy:
        srun retries (step_resources.py)."""
        self._at(now)
        job = self.owned_job(job_id, who)
        if job.state != model.RUNNING:
            raise RequestError("Job/step already completing or completed", "AlreadyDone")
        claims = self._step_claims()
        claims.forget_gone(set(self.steps))
        cpt = cpus_per_task or job.spec.cpus_per_task or 1
        names, job_cpus = list(job.nodes), list(job.cpus)
        if relative:
            if relative >= len(names):
                raise RequestError("Requested node configuration is not available", "ConfigUnavailable")
            names, job_cpus = names[relative:], job_cpus[relative:]
        if nodelist:
            keep = [i for i, n in enumerate(names) if n in nodelist]
            if len(keep) != len(set(nodelist)):
                raise RequestError("Requested node configuration is not available", "ConfigUnavailable")
            names, job_cpus = [names[i] for i in keep], [job_cpus[i] for i in keep]
        if interactive:
            overlap, ntasks, nodes_min = True, ntasks or 1, nodes_min or 1
            if (job_id, "interactive") in self.steps:
                raise RequestError("Duplicate job step id", "DuplicateStep")
        ntasks = ntasks or (sum(job.tasks) if not (nodelist or relative) else (nodes_min or len(names)))
        count = nodes_min or min(len(names), ntasks)
        if count > len(names):
            raise RequestError("Requested node configuration is not available", "ConfigUnavailable")
        overcommit = overcommit or job.spec.overcommit  # -O (the step's srun, or the job's): more tasks than CPUs
        held = claims.held_cpus(job_id)
        try:
            names, capacity, holds = step_resources.place(names, job_cpus, held, count, ntasks, cpt,
                                                          "default" if overlap else "exact" if exact else
                                                          "whole" if whole else "default",
                                                          overcommit)
        except step_resources.StepBusy as busy:
            raise RequestError(busy.reason, "StepBusy") from None
        if (ntasks > sum(capacity) and not overcommit) or ntasks < count:
            raise RequestError("More processors requested than permitted", "TooManyProcessors")
        tasks = [1] * count
        left = ntasks - count
        for i in range(count):
            extra = min(left, capacity[i] - 1)
            tasks[i] += extra
            left -= extra
        for i in range(left if overcommit else 0):  # -O: the tasks beyond the CPUs, dealt in turn
            tasks[i % count] += 1
        ports = self._step_ports(claims, resv_ports, tasks)
        if interactive:
            step_id: int = step_resources.INTERACTIVE_STEP_ID
            key = "interactive"
        else:
            step_id = job.next_step_id
            key = str(step_id)
            job.next_step_id += 1
            self._save(job)
        cpus = [t * cpt for t in tasks] if holds == "tasks" else [job.cpus[job.nodes.index(n)] for n in names]
        claims.add((job_id, key), step_resources.Claim(names, [0] * count if overlap else cpus, ports))
        step = StepRecord(job_id=job_id, step_id=key, name=name or "step", nodes=names, ntasks=ntasks,
                          cpus=sum(cpus) if whole else sum(t * cpt for t in tasks), start_time=now)
        self.steps[(job_id, key)] = step
        self._save_step(step)
        addrs = [{"name": n, "addr": self.nodes[n].addr, "port": self.nodes[n].port} for n in names]
        reply = {"job_id": job_id, "step_id": step_id, "nodes": names, "tasks": tasks, "addrs": addrs,
                 "cpus_per_task": cpt}
        if ports:
            reply["resv_ports"] = step_resources.port_ranges(ports)
        return reply

    def step_no_allocate(self, who: Identity, now: float, ntasks: int | None, nodelist: list[str],
                         cpus_per_task: int | None) -> dict[str, Any]:
        """srun -Z: an operator's step on the named nodes with no job in the queue (nothing is
        recorded, as 22.05's leaves no trace in squeue or sacct).  Its job id lies beyond any
        real one (step_resources.NO_ALLOCATE_JOB_BASE); the caller checked the privilege."""
        self._at(now)
        names: list[str] = []
        for name in nodelist:
            if name not in self.nodes:
                raise RequestError("Invalid node name specified", "InvalidNode")
            if name not in names:
                names.append(name)
        if not names:
            raise RequestError("Requested node configuration is not available", "ConfigUnavailable")
        ntasks = max(ntasks or len(names), len(names))
        tasks = [ntasks // len(names) + (1 if i < ntasks % len(names) else 0) for i in range(len(names))]
        counter = self.__dict__.get("_no_allocate_next", 0)
        self.__dict__["_no_allocate_next"] = (counter + 1) % 0x10000
        job_id = step_resources.NO_ALLOCATE_JOB_BASE + counter
        addrs = [{"name": n, "addr": self.nodes[n].addr, "port": self.nodes[n].port} for n in names]
        cpus = [self.nodes[n].cpus for n in names]
        log.info("srun -Z by uid %s: step %s.0 on %s", who.uid, job_id, ",".join(names))
        return {"job_id": job_id, "step_id": 0, "nodes": names, "tasks": tasks, "addrs": addrs,
                "cpus_per_task": cpus_per_task or 1, "no_allocate": True,
                "allocation": {"nodes": names, "cpus": cpus, "mem": [self.nodes[n].real_memory for n in names],
                               "gres_alloc": [{} for _ in names]}}

    def _step_claims(self) -> step_resources.StepClaims:
        """What the running steps hold (in memory only: see step_resources.py)."""
        claims = self.__dict__.get("_step_claims_book")
        if claims is None:
            claims = self.__dict__["_step_claims_book"] = step_resources.StepClaims()
        return claims

    def _step_ports(self, claims: step_resources.StepClaims, wanted: int | None, tasks: list[int]) -> list[int]:
        """--resv-ports: the step's ports from MpiParams=ports=P1-P2 (22.05: without a count,
        the busiest node's tasks + 1 whenever the pool is set)."""
        pool = step_resources.port_pool(getattr(self.settings, "mpi_params", ""))
        count = wanted if wanted is not None else (max(tasks) + 1 if pool else 0)
        if count <= 0:
            return []
        if pool is None:
            raise RequestError("Requires more ports than can be reserved", "PortsUnavailable")
        try:
            return claims.reserve_ports(pool, count)
        except ValueError as exc:
            raise RequestError(str(exc), "PortsUnavailable") from None
        except step_resources.StepBusy as busy:
            raise RequestError(busy.reason, "StepBusy") from None

    def step_complete(self, job_id: int, step_id: int, exit_code: int, exit_signal: int, now: float,
                      oom_kills: int = 0, usage: dict[str, Any] | None = None) -> None:
        """srun's report of its step's end: the worst task's status, the kernel's OOM kills
        on the step's nodes (the step is OUT_OF_MEMORY, 0:125, as Slurm records it) and
        its usage (sacct MaxRSS, TotalCPU, ...)."""
        self._at(now)
        key = "interactive" if step_id == step_resources.INTERACTIVE_STEP_ID else str(step_id)
        self._step_claims().release((job_id, key))
        step = self.steps.pop((job_id, key), None)
        if step is None:
            return
        step.end_time = now
        step.exit_code, step.exit_signal = exit_code, exit_signal
        step.usage = step_usage(usage, step.nodes[0] if len(step.nodes) == 1 else None)
        job = self.jobs.get(job_id)
        if job is not None and job.cancel_state:
            step.state = job.cancel_state
        elif oom_kills > 0:
            step.state = model.OUT_OF_MEMORY
            step.exit_code, step.exit_signal = OOM_EXIT
        else:
            step.state = model.FAILED if exit_code or exit_signal else model.COMPLETED
        if job is not None and (step.exit_code << 8 | step.exit_signal) > \
                (job.derived_exit_code << 8 | job.derived_exit_signal):
            # Slurm's derived exit code: the highest status of the job's srun steps, compared
            # as wait statuses (an exit code outranks a signal; SIG_OOM shows as 0:125).
            job.derived_exit_code, job.derived_exit_signal = step.exit_code, step.exit_signal
            self._save(job)
        self._save_step(step)

    # ------------------------------------------------------------------ nodes
    def node_register(self, name: str, info: dict[str, Any], now: float) -> list[Outgoing]:
        self._at(now)
        node = self.nodes.get(name)
        if node is None:
            raise RequestError(f"Node {name} is not in slurm.conf", "InvalidNode")
        node.boot_time = info.get("boot_time") or node.boot_time
        node.slurmd_start_time = info.get("slurmd_start_time") or node.slurmd_start_time
        for attr in ("os", "arch", "version", "cpu_load", "free_mem"):
            if info.get(attr) is not None:
                setattr(node, attr, info[attr])
        self._heard_from(node, now, registered=True)
        node.devices = list(info.get("devices") or [])
        node.gpu_cpus = list(info.get("gpu_cpus") or [])
        problems = info.get("gres_problems") or []
        if problems:
            # As Slurm: a node whose devices fall short of its configuration is drained.
            self._drain(node, "; ".join(problems), now)
        self.node_registered.add(name)
        self.need_schedule = True
        return self._reconcile(name, _runs_of(info.get("runs")), set(info.get("running_jobs") or []), now)

    def _drain(self, node: Node, reason: str, now: float) -> None:
        if node.drain and node.reason == reason:
            return
        log.warning("draining node %s: %s", node.name, reason)
        node.drain = True
        node.reason = reason
        node.reason_time = now
        node.reason_user = self.settings.slurm_user
        self.need_schedule = True

    def node_ping(self, name: str, running: list[int], cpu_load: float | None, free_mem: int | None,
                  now: float, unhealthy: dict[str, str] | None = None,
                  runs: dict[int, int] | None = None) -> list[Outgoing]:
        self._at(now)
        node = self.nodes.get(name)
        if node is None:
            return []
        self.node_seen[name] = now
        self._liveness_due = min(self._liveness_due, now + self._quiet_s())
        if name not in self.node_registered:
            return [Outgoing(name, "please_register", {})]
        node.cpu_load, node.free_mem = cpu_load, free_mem
        if unhealthy:
            self._drain(node, "; ".join(f"gpu {uuid}: {why}" for uuid, why in sorted(unhealthy.items())), now)
        self._heard_from(node, now, registered=False)
        return self._reconcile(name, _runs_of(runs), set(running), now)

    def _heard_from(self, node: Node, now: float, registered: bool) -> None:
        """A node's daemon spoke (registered or pinged): it responds, and a DOWN node comes
        back as ReturnToService says (slurm.conf(5)): 0 never by itself (scontrol update
        State=RESUME), 1 if it was DOWN for not responding (Slurm's test: its reason is
        "Not responding"), 2 any DOWN node once it registers or answers after silence."""
        self.node_seen[node.name] = now
        self._liveness_due = min(self._liveness_due, now + self._quiet_s())
        was_silent = not node.responding
        if was_silent:
            log.info("node %s now responding", node.name)
            node.responding = True
            self.need_schedule = True
        if not node.down:
            return
        rts = self.settings.return_to_service
        if (rts == 1 and node.reason == NOT_RESPONDING) or (rts == 2 and (registered or was_silent)):
            log.info("node %s returned to service", node.name)
            node.down = False
            if not node.drain:
                node.reason = node.reason_time = node.reason_user = None
            self.need_schedule = True

    def _reconcile(self, name: str, runs: dict[int, int], running: set[int], now: float) -> list[Outgoing]:
        """What a node's report says against what the controller knows (``runs``: job id ->
        the run, i.e. the restart count it was launched with; ``running``: job ids, from a
        node daemon that does not say which run).

        - A copy that must not run is killed on that node, that run only
          (``terminate_job`` with ``restarts``): an older run of a job requeued meanwhile,
          a job that has ended, or one that now runs elsewhere.  A job never runs twice.
        - A batch job the controller believes runs here, missing from the report for
          ``node_fail_grace_s``, has failed with its node (requeued if it may be)."""
        out: list[Outgoing] = []
        for job_id, run in runs.items():
            job = self.jobs.get(job_id)
            if job is not None and self._is_current_run(job, name, run):
                if job.completing:
                    out.extend(self._terminate_again(job, name, run, now))
                else:
                    self.stale_told.pop((name, job_id, run), None)
                continue
            told = self.stale_told.get((name, job_id, run))
            if told is not None and now - told < self.settings.kill_wait + self.settings.slurmd_timeout:
                continue  # told already: it is on its way out (KillWait)
            self.stale_told[(name, job_id, run)] = now
            log.warning("node %s runs job %s run %s, which must not run (%s): killing it", name, job_id, run,
                        "no such job" if job is None else f"job {job.state} at run {job.restarts}"
                        f"{' on ' + ','.join(job.nodes) if job.nodes else ''}")
            out.append(Outgoing(name, "terminate_job", {"job_id": job_id, "kill_wait": self.settings.kill_wait,
                                                        "batch_host": name, "restarts": run}))
        for (node_name, job_id, run) in [k for k in self.stale_told if k[0] == name and k[1] not in runs]:
            del self.stale_told[(node_name, job_id, run)]  # gone from the node: done
        for job in list(self.jobs.values()):
            if not job.spec.batch or not job.nodes or job.nodes[0] != name:
                continue
            if job.state != model.RUNNING and not job.completing:
                continue
            present = runs.get(job.job_id) == job.restarts if job.job_id in runs else job.job_id in running
            if present or (job.start_time or now) > now - self.settings.node_fail_grace_s:
                self.missing_since.pop(job.job_id, None)
                continue
            first = self.missing_since.setdefault(job.job_id, now)
            if now - first >= self.settings.node_fail_grace_s:
                log.warning("job %s vanished from node %s: NODE_FAIL", job.job_id, name)
                out.extend(self._end_failed_run(job, name, now))
        return out

    def _terminate_again(self, job: Job, name: str, run: int, now: float) -> list[Outgoing]:
        """A job on its way out (cancelled, timed out, requeued) that its node still runs:
        the terminate was lost (the node's daemon was down when it was sent) unless KillWait
        and a few pings have not passed yet since it was first seen."""
        key = (name, job.job_id, run)
        told = self.stale_told.setdefault(key, now)
        if now - told < self.settings.kill_wait + 3 * PING_EVERY_S:
            return []
        self.stale_told[key] = now
        log.warning("node %s still runs job %s (%s): terminating it again", name, job.job_id, job.state)
        return [Outgoing(name, "terminate_job", dict(self.terminate_body(job), restarts=run))]

    @staticmethod
    def _is_current_run(job: Job, name: str, run: int) -> bool:
        return (run == job.restarts and name in job.nodes
                and (job.state in (model.RUNNING, model.SUSPENDED) or job.completing))

    def _quiet_s(self) -> float:
        """Silence after which a node is flagged not responding (``*``: no new job starts
        on it), before SlurmdTimeout sets it DOWN.  As Slurm's pings, every third of
        SlurmdTimeout; at least three of plurmd's pings (PING_EVERY_S apart)."""
        timeout = self.settings.slurmd_timeout
        return min(timeout, max(timeout / 3, 3 * PING_EVERY_S))

    def _check_node_liveness(self, now: float) -> list[Outgoing]:
        """A node silent for a third of SlurmdTimeout is flagged not responding; silent for
        SlurmdTimeout it is DOWN (reason "Not responding") and its jobs have failed.

        Walks the nodes only once the earliest deadline has come: a node's last sighting
        only moves forward, so the earliest deadline of the last walk is a lower bound."""
        if now <= self._liveness_due:
            return []
        out: list[Outgoing] = []
        timeout, quiet = self.settings.slurmd_timeout, self._quiet_s()
        due = float("inf")
        for name, node in self.nodes.items():
            if node.down and not node.responding:
                continue  # declared already: only its daemon's word changes that
            if getattr(node, "reboot", "") == "issued":
                continue  # rebooting: ResumeTimeout is its deadline (core_nodeadmin.py)
            seen = self.node_seen.get(name, now)
            if now - seen > timeout:
                out.extend(self._node_silent(node, now))
                continue
            if now - seen > quiet and node.responding:
                log.warning("node %s not responding", name)
                node.responding = False
            due = min(due, seen + (quiet if node.responding else timeout))
        self._liveness_due = due
        return out

    def _node_silent(self, node: Node, now: float) -> list[Outgoing]:
        """SlurmdTimeout passed without a word from the node: DOWN, and its jobs' runs have
        failed there (Slurm's "Nodes n1 not responding, setting DOWN")."""
        log.error("node %s not responding for %.0f s: setting DOWN", node.name, now - self.node_seen.get(node.name, now))
        node.responding = False
        if not node.down:
            node.down = True
            if not node.reason:
                node.reason, node.reason_time, node.reason_user = NOT_RESPONDING, now, self.settings.slurm_user
        self.need_schedule = True
        out: list[Outgoing] = []
        for job in list(self.jobs.values()):
            if node.name in job.nodes and (job.state in (model.RUNNING, model.SUSPENDED) or job.completing):
                out.extend(self._end_failed_run(job, node.name, now))
        return out

    def _end_failed_run(self, job: Job, failed: str, now: float) -> list[Outgoing]:
        """The current run of ``job`` failed with node ``failed``.  A job already on its way
        out ends as it was going to (a cancel, a time limit; a requeue goes back to the
        queue); a batch job that may be requeued (--requeue, or JobRequeue=1 without
        --no-requeue) is, keeping its id, one restart more; any other ends NODE_FAIL.
        Its other nodes are told to kill that run."""
        if self.timeprio_keeps_running(job, failed, now):  # -k/--no-kill: it runs on without it (core_timeprio.py)
            return []
        body = dict(self.terminate_body(job), restarts=job.restarts)
        others = [n for n in job.nodes if n != failed]
        if job.completing or job.cancel_state:
            if job.cancel_state == "REQUEUE":  # (its end will not be reported: close its steps)
                self._close_steps(job, now)
            out = self._finish(job, job.cancel_state or model.NODE_FAIL, now)
        elif job.spec.batch and job.spec.requeue:
            log.info("requeue job %s due to failure of node %s", job.job_id, failed)
            self._requeue_failed_run(job, now)
            out = []
        else:
            log.info("killing job %s on failed node %s", job.job_id, failed)
            out = self._finish(job, model.NODE_FAIL, now)
        return out + [Outgoing(n, "terminate_job", body) for n in others]

    def _requeue_failed_run(self, job: Job, now: float) -> None:
        """Back to the queue after its node failed, as Slurm 22.05 does (measured,
        tests/reliability/reference/node_failure): the failed run is kept for sacct -D
        (``earlier_runs``: NODE_FAIL 0:0, its batch step CANCELLED); the job keeps its id, counts one restart,
        gets a new SubmitTime, and may not start again for AuthInfo=cred_expire + 1 s
        (BeginTime), as after scontrol requeue."""
        self._close_steps(job, now)
        failed = model.EarlierRun(submit_time=job.submit_time, start_time=job.start_time, end_time=now,
                                  nodes=list(job.nodes), cpus=list(job.cpus), state=model.NODE_FAIL)
        self.missing_since.pop(job.job_id, None)
        if job.start_time is not None and job.spec.account:  # the failed run's CPU time counts, as any run's
            self.accounts.add_usage(job.spec.account, job.spec.user, sum(job.cpus) * max(0.0, now - job.start_time),
                                    now)
        count = len(job.earlier_runs)
        self._requeue(job, now)
        if len(job.earlier_runs) > count:  # (_requeue kept the run: it is the failed one)
            job.earlier_runs[-1] = msgspec.structs.replace(job.earlier_runs[-1], state=model.NODE_FAIL)
        else:
            job.earlier_runs.append(failed)
        job.submit_time = now
        job.eligible_time = None  # (Slurm's EligibleTime is the new run's: its BeginTime)
        if job.spec.begin_time is None or job.spec.begin_time <= now:
            # A copy: the tasks of an array share one spec in memory.
            job.spec = msgspec.structs.replace(job.spec, begin_time=now + self.settings.cred_expire + 1)
        job.reason = REASON_BEGIN_TIME
        self._save(job)


    def _close_steps(self, job: Job, now: float) -> None:
        for key in [k for k in self.steps if k[0] == job.job_id]:
            step = self.steps.pop(key)
            step.end_time, step.state = now, model.CANCELLED
            self._save_step(step)


NOT_RESPONDING = "Not responding"
PING_EVERY_S = 2.0  # plurmd's ping interval (nodeagent/daemon.py PING_INTERVAL_S)


def _runs_of(value: Any) -> dict[int, int]:
    """A report's ``runs`` (job id -> run), whatever shape the decoder left the keys in."""
    runs: dict[int, int] = {}
    for key, run in (value or {}).items():
        try:
            runs[int(key)] = int(run)
        except (TypeError, ValueError):
            log.warning("node report: bad run %r -> %r ignored", key, run)
    return runs
