"""What a step's processes use now, read from /proc by plurmd (sstat, scontrol listpids).

A step's processes are those of its process group: the batch script leads its group; an srun
step's plurmstepd leads its group and each of its children is one task (its descendants in
the group belong to that task).  Per task: resident and virtual memory (KiB, summed over the
task's processes, as jobacct_gather/linux does), major page faults, CPU seconds (user and
system, with those of reaped children), and bytes read and written (rchar/wchar of
/proc/PID/io).  SLURM_LOCALID and SLURM_PROCID come from the task's environment, which
plurmstepd set.  A process that ends while it is read is skipped: the numbers are a sample.

``Gauge`` keeps a step's samples over its life, for accounting (sacct MaxRSS, AveRSS,
MaxVMSize, AveVMSize): plurmd samples its batch runs, plurmstepd its tasks, every
JobAcctGatherFrequency.  MaxRSS is the largest task's RSS over the samples (and the task
that had it), AveRSS the mean over samples and tasks, as jobacct_gather/linux reports them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE_KB = (os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096) // 1024


@dataclass
class Proc:
    pid: int
    ppid: int
    pgrp: int
    rss_kb: int
    vsize_kb: int
    majflt: int
    cpu_s: float
    read: int = 0
    write: int = 0


@dataclass
class TaskUsage:
    local_id: int | None  # None: a process of the step that is not a task's root
    global_id: int | None
    pids: list[int] = field(default_factory=list)
    rss_kb: int = 0
    vsize_kb: int = 0
    pages: int = 0
    cpu_s: float = 0.0
    read: int = 0
    write: int = 0

    def as_dict(self) -> dict:
        return {"local_id": self.local_id, "global_id": self.global_id, "pids": self.pids,
                "rss_kb": self.rss_kb, "vsize_kb": self.vsize_kb, "pages": self.pages,
                "cpu_s": round(self.cpu_s, 2), "read": self.read, "write": self.write}


def read_proc(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read().decode(errors="replace")
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields start after the last ')'.
    rest = raw[raw.rfind(")") + 2:].split()
    if len(rest) < 22:
        return None
    ppid, pgrp, majflt = int(rest[1]), int(rest[2]), int(rest[9])
    cpu = (int(rest[11]) + int(rest[12]) + int(rest[13]) + int(rest[14])) / _TICKS
    proc = Proc(pid, ppid, pgrp, int(rest[21]) * _PAGE_KB, int(rest[20]) // 1024, majflt, cpu)
    try:
        with open(f"/proc/{pid}/io") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key == "rchar":
                    proc.read = int(value)
                elif key == "wchar":
                    proc.write = int(value)
    except (OSError, ValueError):
        pass
    return proc


def group_processes(pgrp: int) -> list[Proc]:
    procs = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            proc = read_proc(int(name))
            if proc is not None and proc.pgrp == pgrp:
                procs.append(proc)
    return procs


def _task_ids(pid: int) -> tuple[int | None, int | None]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            env = dict(item.split(b"=", 1) for item in handle.read().split(b"\0") if b"=" in item)
        return int(env.get(b"SLURM_LOCALID", b"")), int(env.get(b"SLURM_PROCID", b""))
    except (OSError, ValueError):
        return None, None


def _add(task: TaskUsage, proc: Proc) -> None:
    task.pids.append(proc.pid)
    task.rss_kb += proc.rss_kb
    task.vsize_kb += proc.vsize_kb
    task.pages += proc.majflt
    task.cpu_s += proc.cpu_s
    task.read += proc.read
    task.write += proc.write


def batch_usage(pgid: int) -> list[TaskUsage]:
    """The batch step: one task (local 0, global 0), every process of the script's group."""
    procs = sorted(group_processes(pgid), key=lambda p: p.pid != pgid)  # the leader first
    task = TaskUsage(0, 0)
    for proc in procs:
        _add(task, proc)
    return [task] if procs else []


def step_usage(stepd_pid: int) -> list[TaskUsage]:
    """An srun step: one TaskUsage per child of plurmstepd (the tasks), each with its
    descendants in the step's group; plurmstepd itself is not counted (as slurmstepd is not)."""
    procs = {p.pid: p for p in group_processes(stepd_pid)}
    roots = sorted(pid for pid, p in procs.items() if p.ppid == stepd_pid)
    tasks: dict[int, TaskUsage] = {}
    for root in roots:
        local, global_id = _task_ids(root)
        tasks[root] = TaskUsage(local, global_id)
    for proc in procs.values():
        if proc.pid == stepd_pid:
            continue
        top = proc.pid
        seen = 0
        while top in procs and procs[top].ppid != stepd_pid and seen < 64:  # up to the task's root
            top = procs[top].ppid
            seen += 1
        if top in tasks:
            _add(tasks[top], proc)
    for root, task in tasks.items():
        task.pids.sort(key=lambda pid: (pid != root, pid))  # the task's root first
    return sorted(tasks.values(), key=lambda t: (t.local_id is None, t.local_id or 0))


def pids_usage(pids: set[int]) -> list[TaskUsage]:
    """The batch step from a set of processes (its cgroup's): one task, like batch_usage."""
    task = TaskUsage(0, 0)
    for pid in sorted(pids):
        proc = read_proc(pid)
        if proc is not None:
            _add(task, proc)
    return [task] if task.pids else []


def group_pids(pgrp: int) -> set[int]:
    return {p.pid for p in group_processes(pgrp)}


def opened_devices(pids: set[int], devices: set[str]) -> list[str]:
    """Which of ``devices`` (paths) the processes hold open (their /proc/PID/fd links)."""
    if not devices:
        return []
    found: set[str] = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target in devices:
                found.add(target)
    return sorted(found)


class Gauge:
    """A step's memory over its samples; ``usage`` gives the keys of JobEnded.usage.  Per task
    the largest RSS and VM size any sample saw; MaxRSS is the largest of those (with its task),
    AveRSS their mean over the tasks, as Slurm reports them (for one task AveRSS = MaxRSS:
    tests/integration/reference/cgroup/cg.usage_sacct_P.txt)."""

    def __init__(self) -> None:
        self.samples = 0
        self.rss: dict[int, int] = {}  # task (global rank) -> its largest RSS, KiB
        self.vmsize: dict[int, int] = {}
        self.last_rss_kb = 0  # the whole step's, in the latest sample

    def add(self, tasks: list[TaskUsage]) -> None:
        if not tasks:
            return
        self.samples += 1
        for i, task in enumerate(tasks):
            rank = task.global_id if task.global_id is not None else i
            self.rss[rank] = max(self.rss.get(rank, 0), task.rss_kb)
            self.vmsize[rank] = max(self.vmsize.get(rank, 0), task.vsize_kb)
        self.last_rss_kb = sum(t.rss_kb for t in tasks)

    def usage(self, cpu: dict[str, float], peak_rss_kb: int = 0) -> dict[str, float]:
        """The accounting figures: these samples, ``cpu`` (user_cpu_s, system_cpu_s), and a
        peak RSS measured otherwise (wait4's) when it is larger than any sample saw (a job
        shorter than the sampling interval; Slurm shows 0 then)."""
        usage: dict[str, float] = {}
        if self.samples:
            rss_task = max(self.rss, key=lambda r: (self.rss[r], -r))
            vm_task = max(self.vmsize, key=lambda r: (self.vmsize[r], -r))
            usage.update(max_rss_kb=self.rss[rss_task], max_rss_task=rss_task,
                         ave_rss_kb=sum(self.rss.values()) // len(self.rss), max_vmsize_kb=self.vmsize[vm_task],
                         max_vmsize_task=vm_task, ave_vmsize_kb=sum(self.vmsize.values()) // len(self.vmsize))
        if peak_rss_kb > usage.get("max_rss_kb", 0):
            usage["max_rss_kb"] = int(peak_rss_kb)
            usage.setdefault("max_rss_task", 0)
            if len(self.rss) <= 1:
                usage["ave_rss_kb"] = int(peak_rss_kb)
        for key in ("user_cpu_s", "system_cpu_s"):
            if key in cpu:
                usage[key] = round(float(cpu[key]), 3)
        return usage

def step_stat(daemon: Any, uid: int, job_id: int, step_id: str) -> dict[str, Any]:
    """sstat / scontrol listpids: each step's tasks on the daemon's node, read from /proc now;
    a user sees the steps of their own jobs only (``daemon``: the NodeDaemon, for its runs,
    steps, node name and daemon uids)."""
    wanted: list[tuple[int, str, int, str]] = []  # (job, step, group leader, kind)
    for job in daemon.jobs.values():
        wanted.append((job.job_id, "batch", job.pgid, "batch"))
    for (jid, sid), step in daemon.steps.items():
        wanted.append((jid, str(sid), step.pid, "step"))
    steps = []
    for jid, sid, leader, kind in wanted:
        if (job_id and jid != job_id) or (step_id and sid != step_id):
            continue
        try:
            owner = os.stat(f"/proc/{leader}").st_uid
        except OSError:
            continue  # ended
        if uid not in daemon.daemon_uids and uid != owner:
            continue
        tasks = batch_usage(leader) if kind == "batch" else step_usage(leader)
        steps.append({"job_id": jid, "step_id": sid, "tasks": [t.as_dict() for t in tasks]})
    return {"node": daemon.name, "steps": steps}
