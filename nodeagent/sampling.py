"""plurmd's look at its running batch jobs every JobAcctGatherFrequency: usage, and the freeze policy.

Each turn reads the processes of each run (its cgroup's when confined, else its process
group's) from /proc (nodeagent/stepusage.py): the samples make the batch step's MaxRSS,
AveRSS and MaxVMSize for accounting (``RunningJob.gauge``).  Then the freeze policies
(nodeagent/freezepolicy.py, built-in and plugins') see a ``Sample`` of the job; a "freeze"
verdict freezes the job's cgroup (SIGSTOP to its process groups when unconfined: weaker, a
process may have left them), logs a WARNING with the cause and tells the controller
(``job_frozen``), which marks it suspended until ``scontrol resume`` or ``scancel``.
Steps sample themselves (plurmstepd); the policy looks at batch runs only.

The accelerators' health checks and usage samples run here too, in a thread each (their
probes take a while; the loop goes on): ``AccelWork``.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Iterable
from typing import Any, Callable

from plurm.nodeagent import batch_freq, gpu_report, jobstate, launch, stepusage
from plurm.common.stepd_texts import oom_message
from plurm.nodeagent.confinement import Confinement
from plurm.nodeagent.tracking import RunningJob

log = logging.getLogger("plurmd")


def load_policies(conf_path: str) -> Any:
    """The freeze policies (None: none could be loaded; jobs are never frozen then)."""
    try:
        from plurm.nodeagent.freezepolicy import Policies

        return Policies.load(conf_path)
    except ImportError:
        return None
    except Exception as exc:  # a bad plurm.conf: plurmd runs, without a policy, and says why
        log.error("freeze policy not loaded: %s", exc)
        return None


class Sampler:
    def __init__(self, confine: Confinement, every_s: float, policies: Any,
                 send: Callable[[str, dict[str, Any]], None], node: str) -> None:
        self.confine = confine
        self.every_s = every_s
        self.policies = policies
        self.send = send
        self.node = node
        self.next_at = time.monotonic() + min(every_s, 1.0) if every_s > 0 else float("inf")
        self.turn_at = self.next_at  # slurm.conf's turn (next_at: the next wake, a job's own sample may be sooner)
        self.gpu_files = sorted({f for f in confine.gpu_files if f})

    def pids(self, job: RunningJob) -> tuple[set[int], set[int]]:
        """(the batch step's processes, all the job's here): its cgroups', else its process
        group's (the steps' tasks are in their plurmstepd's groups then, not seen)."""
        if self.confine.confined and job.uid >= 0:
            return (self.confine.pids(job.uid, job.job_id, "batch"), self.confine.pids(job.uid, job.job_id))
        group = stepusage.group_pids(job.pgid)
        return group, group

    def due(self) -> bool:
        return time.monotonic() >= self.next_at

    def track(self, job: RunningJob, own_every: float | None) -> None:
        """A job started here with its own --acctg-freq task interval (None: slurm.conf's)."""
        if own_every is not None:
            job.acct_every, job.acct_next = own_every, batch_freq.first_at(own_every, time.monotonic())
            self.next_at = min(self.next_at, job.acct_next)

    def sample(self, jobs: list[RunningJob]) -> None:
        now = time.monotonic()
        turn = now >= self.turn_at  # slurm.conf's: the jobs without their own interval, and the policies
        if turn:
            self.turn_at = now + self.every_s if self.every_s > 0 else float("inf")
        for job in jobs:
            own = job.acct_every is not None and now >= job.acct_next  # its own interval's sample is due
            if own:
                job.acct_next = now + job.acct_every if job.acct_every else float("inf")
            if job.kill_at is not None or job.frozen:
                continue  # ending, or frozen: nothing to learn, nothing to act on
            gauge = own or (turn and job.acct_every is None)
            if not (gauge or (turn and self.policies)):
                continue
            batch, every = self.pids(job)
            batch_tasks = stepusage.pids_usage(batch)
            if gauge:
                job.gauge.add(batch_tasks)
            if turn and self.policies:  # (falsy when no policy is on: no samples built at all)
                # Unconfined, the batch step's processes are the job's: read once.
                tasks = batch_tasks if every is batch else stepusage.pids_usage(every)
                if tasks:
                    self._observe(job, every, tasks[0].rss_kb * 1024)
        self.next_at = min([self.turn_at] + [j.acct_next for j in jobs if j.acct_every is not None])

    def _observe(self, job: RunningJob, pids: set[int], rss_bytes: int) -> None:
        from plurm.nodeagent.freezepolicy import Sample

        files = self.confine.gpu_files
        mine = [files[i] for i in job.gpus if i < len(files) and files[i]]
        opened = stepusage.opened_devices(pids, set(self.gpu_files)) if self.policies.wants_open_devices else []
        sample = Sample(job.job_id, job.uid, time.monotonic(), rss_bytes, job.mem_limit, mine, opened,
                        self.gpu_files)
        verdict = self.policies.observe(sample)
        if verdict is None or verdict.action != "freeze":
            return
        log.warning("job %s frozen by the freeze policy: %s", job.job_id, verdict.cause)
        self.freeze(job, True)
        job.frozen = True
        self.send("job_frozen", {"node": self.node, "job_id": job.job_id, "restarts": job.restarts,
                                 "cause": verdict.cause})

    def freeze(self, job: RunningJob, frozen: bool) -> None:
        """The job's cgroup frozen or thawed; its process group stopped or continued without one."""
        if not (self.confine.confined and job.uid >= 0 and self.confine.freeze(job.uid, job.job_id, frozen)):
            jobstate.kill_group(job.pgid, signal.SIGSTOP if frozen else signal.SIGCONT)

    def resumed(self, job: RunningJob) -> None:
        if job.frozen and self.policies is not None:
            self.policies.forget(job.job_id, resumed=True)
        job.frozen = False

    def ended(self, job_id: int) -> None:
        if self.policies is not None:
            self.policies.forget(job_id)

    def batch_end(self, job: RunningJob, newer: bool) -> tuple[int, dict[str, float]]:
        """The run's batch step has ended: its cgroup emptied and removed (unless a ``newer``
        run of the job is here: the cgroup is that one's now), OOM kills told in the job's error
        file as slurmstepd does; (OOM kills, usage) for its end report."""
        self.ended(job.job_id)
        if newer:
            return 0, {}
        oom, usage = batch_usage(self.confine, job)
        if oom:
            log.warning("job %s: %d OOM kill(s) in its batch step", job.job_id, oom)
            text = oom_message(oom, job.job_id, "batch", self.node)
            if job.err_path and not launch.append_as_owner(job.err_path, text, job.uid):
                log.error("job %s: could not write the OOM message to %s", job.job_id, job.err_path)
        return oom, usage


class AccelWork:
    """Accelerator health checks and usage samples of the running jobs, in a thread at a time."""

    def __init__(self, accel: Any, usage: dict[int, Any], health_every_s: float, usage_every_s: float) -> None:
        self.accel = accel
        self.usage = usage
        self.health_every_s, self.usage_every_s = health_every_s, usage_every_s
        self.thread: threading.Thread | None = None
        self.next_health = time.monotonic() + health_every_s
        self.next_usage = time.monotonic() + min(usage_every_s, 1.0)
        self.report = gpu_report.GpuReport(accel)  # every device's reading, for the next ping (/metrics)

    def turn(self, jobs: Iterable[RunningJob]) -> None:
        if not self.accel.devices or (self.thread is not None and self.thread.is_alive()):
            return
        now = time.monotonic()
        if now >= self.next_health:
            self.next_health = now + self.health_every_s
            self._start(self.accel.check_health, (), "accel-health")
        elif now >= self.next_usage:
            self.next_usage = now + self.usage_every_s
            held = {job.job_id: list(job.gpus) for job in jobs if job.gpus}
            self._start(self.report.read, (held, self.usage), "accel-usage")  # (and the jobs' samples)

    def _start(self, target: Callable[..., Any], args: tuple, name: str) -> None:
        self.thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self.thread.start()


def batch_usage(confine: Confinement, job: RunningJob) -> tuple[int, dict[str, float]]:
    """The batch step's end on this node: what is left of the job killed (its cgroup), then
    its OOM kills and usage (JobEnded.oom_kills, .usage).  CPU from the cgroup when it has
    one, else from the supervisor's wait4; MaxRSS from the samples, or wait4's peak when it is
    larger (a job shorter than the sampling interval).  The cgroup's own peak is not used: it
    counts the page cache (a job that writes a large file would show it as RSS), and Slurm's
    jobacct_gather/cgroup reports RSS from memory.stat's samples too."""
    rusage = jobstate.read_rusage(job.run_dir)
    cpu = {k: rusage[k] for k in ("user_cpu_s", "system_cpu_s") if k in rusage}
    oom = 0
    if confine.confined and job.uid >= 0:
        oom, used = confine.finish_batch(job.uid, job.job_id)
        if used.get("cpu_total_ns"):
            cpu = {"user_cpu_s": used.get("cpu_user_ns", 0) / 1e9, "system_cpu_s": used.get("cpu_system_ns", 0) / 1e9}
    return oom, job.gauge.usage(cpu, int(rusage.get("max_rss_kb", 0)))
