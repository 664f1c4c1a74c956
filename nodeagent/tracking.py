"""The jobs and steps a plurmd watches, whether it started them or adopted them.

A run started by this plurmd has its supervisor as a child (``child``: reaped with
``poll``); one adopted from the spool after a restart has not (its parent is init or a
subreaper), and is watched by pid and start time.  Either way the end is read from the
supervisor's status file (nodeagent/jobstate.py), never from a wait status of ours.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import dataclass, field

from plurm.nodeagent import jobstate
from plurm.nodeagent.launch import Child
from plurm.nodeagent.jobstate import ProcRef, RunRecord, StepRecord
from plurm.nodeagent.stepusage import Gauge

log = logging.getLogger("plurmd")


@dataclass
class RunningJob:
    """One run of a batch job on this node (its batch host)."""

    job_id: int
    restarts: int
    started: float
    run_dir: str
    pgid: int  # the job's process group: what signals and kills hit
    supervisor: ProcRef
    child: Child | None = None  # the supervisor, while it is our child
    gpus: list[int] = field(default_factory=list)  # this node's gpu units of the job
    kill_at: float | None = None  # wall clock: SIGKILL then (KillWait after a terminate)
    uid: int = -1  # its owner: with the job id, its cgroup's path (confinement.py)
    cpus: list[int] = field(default_factory=list)  # the node's CPU indices it holds
    err_path: str = ""  # its error file
    # Not kept in the spool (a restarted plurmd starts them afresh): the memory limit its
    # cgroup has, its usage samples so far, whether the freeze policy froze it.
    mem_limit: int | None = None
    gauge: Gauge = field(default_factory=lambda: Gauge())
    frozen: bool = False
    # Its sbatch --acctg-freq=task=N (None: JobAcctGatherFrequency) and its next sample then
    # (time.monotonic()): nodeagent/batch_freq.py, nodeagent/sampling.py.
    acct_every: float | None = None
    acct_next: float = float("inf")

    @property
    def key(self) -> tuple[int, int]:
        return self.job_id, self.restarts

    def supervised(self) -> bool:
        """Whether its supervisor still runs (it exits right after writing the status)."""
        if self.child is not None:
            return self.child.poll() is None
        return _alive(self.supervisor)

    def record(self) -> RunRecord:
        return RunRecord(self.job_id, self.restarts, self.started, list(self.gpus), self.kill_at, uid=self.uid,
                         cpus=list(self.cpus), err_path=self.err_path)

    def save(self) -> None:
        self.record().save(self.run_dir)


@dataclass
class RunningStep:
    """A step's plurmstepd on this node."""

    record: StepRecord
    child: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        return self.record.pid

    def alive(self) -> bool:
        if self.child is not None:
            return self.child.poll() is None
        return _alive(self.record.proc)


def _alive(proc: ProcRef) -> bool:
    """An adopted process still runs; one that ended is reaped if it is our child after all
    (plurmd re-executed itself, as `scontrol reboot` of a shared host does: same pid, no
    Popen object left), so that no zombie stays."""
    if proc.alive():
        return True
    if proc.zombie():
        try:
            os.waitpid(proc.pid, os.WNOHANG)
        except ChildProcessError:
            pass  # not ours: init or a subreaper reaps it
    return False


@dataclass
class Adopted:
    """What a plurmd that ran before left in the spool."""

    jobs: list[RunningJob] = field(default_factory=list)
    ended: list[tuple[str, RunRecord]] = field(default_factory=list)  # reported or to report
    unstarted: list[tuple[str, RunRecord]] = field(default_factory=list)  # no supervisor ever ran
    steps: list[RunningStep] = field(default_factory=list)


def adopt(spool: str) -> Adopted:
    """Runs and steps recorded in the spool: those still running are watched again, those that
    ended (while no plurmd watched) are found ended by the first look at their status."""
    found = Adopted()
    for path, record in jobstate.scan_runs(spool):
        if record.end is not None:
            found.ended.append((path, record))
            continue
        try:
            procs = jobstate.read_procs(path)
        except jobstate.StateError as exc:
            log.error("spool: %s", exc)
            procs = None
        if procs is None:
            found.unstarted.append((path, record))
            continue
        found.jobs.append(RunningJob(record.job_id, record.restarts, record.started, path, procs.pgid,
                                     procs.supervisor, None, record.gpus, record.kill_at, record.uid, record.cpus,
                                     record.err_path))
        log.info("adopted job %s (run %s, process group %s)", record.job_id, record.restarts, procs.pgid)
    for step in jobstate.scan_steps(spool):
        if step.proc.alive():
            found.steps.append(RunningStep(step))
            log.info("adopted step %s.%s (pid %s)", step.job_id, step.step_id, step.pid)
        else:
            step.forget(spool)
    return found


def remove_run(run_dir: str) -> None:
    """A run whose end a controller acknowledged: nothing of it is needed any more."""
    shutil.rmtree(run_dir, ignore_errors=True)
    if os.path.exists(run_dir):
        log.error("spool: could not remove %s", run_dir)
