"""What plurmd knows of its jobs, kept in the spool so that a restarted plurmd knows it too.

A batch job's run (one launch: the job id and its restart count) has a directory
``SPOOL/runs/JOB.RUN/`` (mode 0700, plurmd's user: the job's owner cannot forge it):

- ``job.json``, written by plurmd: when it started, its GPUs, its owner's uid (its cgroup's
  path), the CPU indices it holds on the node (nodeagent/confinement.py), its error file
  (for slurmstepd's out-of-memory line), the SIGKILL deadline after a terminate
  (wall-clock), and once it has ended the end report until a controller acknowledges it
  (then the directory goes);
- ``procs.json``, written by the run's supervisor (nodeagent/supervisor.py): its pid
  and start time, and the job's process group;
- ``status.json``, written by the supervisor when the script has ended: its wait
  status and resource usage.  Its presence is how plurmd learns of an end without being
  the parent.

A step (plurmstepd) has ``SPOOL/runs/stepJOB.STEP.json``: its pid, start time, owner
and kill deadline.  Every file is written atomically (a temporary file, then a
rename), so a plurmd killed at any point leaves old or new contents, never half.  No
fsync: the files need only outlive a process (a node that crashes loses its jobs too).
A process is named by its pid and its start time (``/proc/PID/stat``, clock ticks
since boot): a pid the kernel reused for another process is not mistaken for it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import time
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any

log = logging.getLogger("plurmd")

RUNS = "runs"
_RUN_DIR = re.compile(r"(\d+)\.(-?\d+)")  # JOB.RUN; run -1: an end reported for a run not named
_STEP_FILE = re.compile(r"step(\d+)\.(\d+)\.json")


class StateError(Exception):
    """A spool file that cannot be read as what it should be."""


# ----------------------------------------------------------------- files
def write_json(path: str, data: dict[str, Any]) -> None:
    """Replace ``path`` with ``data`` atomically."""
    tmp = f"{path}.tmp{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(data).encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)


@cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def _record(obj: Any) -> dict[str, Any]:
    """A record's fields as json.dumps takes them: a shallow dict (dataclasses.asdict deep-copies
    every list and dict first, a millisecond per job on plurmd's launch path: issue 17)."""
    return {name: getattr(obj, name) for name in _field_names(type(obj))}


def read_json(path: str) -> dict[str, Any] | None:
    """The file's object, None when it does not exist; StateError when it is not one."""
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StateError(f"{path}: {exc}") from None
    if not isinstance(data, dict):
        raise StateError(f"{path}: not an object")
    return data


def _int(data: dict[str, Any], key: str, path: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise StateError(f"{path}: {key} is not an integer: {value!r}")
    return value


# ----------------------------------------------------------------- processes
def _stat(pid: int) -> tuple[bytes, int] | None:
    """(state letter, start time in clock ticks after boot) of a process, None if none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text.rsplit(b")", 1)[-1].split()
    return (fields[0], int(fields[19])) if len(fields) >= 20 else None


def start_ticks(pid: int) -> int | None:
    """The process's start time, None when there is no such process (or it has ended: a
    zombie waits only for its parent's wait)."""
    stat = _stat(pid)
    return stat[1] if stat is not None and stat[0] != b"Z" else None


@dataclass(frozen=True)
class ProcRef:
    """A process as a pid and its start time."""

    pid: int
    ticks: int | None

    @classmethod
    def of(cls, pid: int) -> ProcRef:
        return cls(pid, start_ticks(pid))

    def alive(self) -> bool:
        return self.pid > 0 and self.ticks is not None and start_ticks(self.pid) == self.ticks

    def zombie(self) -> bool:
        """It has ended and waits for its parent's wait (this very process, not a reused pid)."""
        return self.pid > 0 and self.ticks is not None and _stat(self.pid) == (b"Z", self.ticks)


def kill_group(pgid: int, signum: int) -> None:
    """Signal a process group (a job's, a step's); a group already gone is no error."""
    if pgid <= 1:
        return  # never "every process" (-1) nor our own group (0)
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pgid, signum)
        except (ProcessLookupError, PermissionError):
            pass


# ----------------------------------------------------------------- records
@dataclass
class RunRecord:
    """plurmd's part of a batch run's state (job.json)."""

    job_id: int
    restarts: int
    started: float
    gpus: list[int] = field(default_factory=list)
    kill_at: float | None = None  # wall-clock SIGKILL deadline after a terminate
    end: dict[str, Any] | None = None  # the end report, until acknowledged
    epilog_done: bool = False
    uid: int = -1  # the job's owner (-1: not known, an older record)
    cpus: list[int] = field(default_factory=list)  # the node's CPU indices it holds (confinement.py)
    err_path: str = ""  # its error file (slurmstepd's OOM line goes there)

    def save(self, run_dir: str) -> None:
        write_json(os.path.join(run_dir, "job.json"), _record(self))

    @classmethod
    def load(cls, run_dir: str) -> RunRecord:
        path = os.path.join(run_dir, "job.json")
        data = read_json(path)
        if data is None:
            raise StateError(f"{path}: missing")
        started = data.get("started")
        kill_at = data.get("kill_at")
        end = data.get("end")
        gpus = data.get("gpus", [])
        if not isinstance(started, (int, float)) or not (kill_at is None or isinstance(kill_at, (int, float))):
            raise StateError(f"{path}: bad times")
        if not (end is None or isinstance(end, dict)) or not (isinstance(gpus, list)
                                                               and all(isinstance(g, int) for g in gpus)):
            raise StateError(f"{path}: bad end report or gpus")
        cpus, uid, err_path = data.get("cpus", []), data.get("uid", -1), data.get("err_path", "")
        if not (isinstance(cpus, list) and all(isinstance(c, int) for c in cpus) and isinstance(uid, int)
                and isinstance(err_path, str)):
            raise StateError(f"{path}: bad cpus, uid or err_path")
        return cls(_int(data, "job_id", path), _int(data, "restarts", path), float(started), list(gpus),
                   None if kill_at is None else float(kill_at), end, bool(data.get("epilog_done")), uid,
                   list(cpus), err_path)


@dataclass(frozen=True)
class Procs:
    """The supervisor's part (procs.json): who to watch, which group to signal."""

    supervisor: ProcRef
    pgid: int


def read_procs(run_dir: str) -> Procs | None:
    path = os.path.join(run_dir, "procs.json")
    data = read_json(path)
    if data is None:
        return None
    ticks = data.get("ticks")
    return Procs(ProcRef(_int(data, "pid", path), ticks if isinstance(ticks, int) else None),
                 _int(data, "pgid", path))


def read_status(run_dir: str) -> tuple[int, float] | None:
    """(wait status as Popen.returncode has it, end time) once the script has ended."""
    path = os.path.join(run_dir, "status.json")
    data = read_json(path)
    if data is None:
        return None
    end = data.get("end_time")
    return _int(data, "status", path), float(end) if isinstance(end, (int, float)) else 0.0


def read_rusage(run_dir: str) -> dict[str, float]:
    """The script's resource usage as its supervisor's wait4 had it ({}: none recorded)."""
    try:
        data = read_json(os.path.join(run_dir, "status.json")) or {}
    except StateError:
        return {}
    usage = data.get("rusage")
    if not isinstance(usage, dict):
        return {}
    return {k: float(v) for k, v in usage.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


@dataclass
class StepRecord:
    """A step's plurmstepd (stepJOB.STEP.json)."""

    job_id: int
    step_id: int
    pid: int
    ticks: int | None
    uid: int
    kill_at: float | None = None

    @property
    def proc(self) -> ProcRef:
        return ProcRef(self.pid, self.ticks)

    def path(self, spool: str) -> str:
        return os.path.join(runs_dir(spool), f"step{self.job_id}.{self.step_id}.json")

    def save(self, spool: str) -> None:
        write_json(self.path(spool), _record(self))

    def forget(self, spool: str) -> None:
        try:
            os.unlink(self.path(spool))
        except FileNotFoundError:
            pass

    @classmethod
    def load(cls, path: str) -> StepRecord:
        data = read_json(path)
        if data is None:
            raise StateError(f"{path}: missing")
        ticks, kill_at = data.get("ticks"), data.get("kill_at")
        return cls(_int(data, "job_id", path), _int(data, "step_id", path), _int(data, "pid", path),
                   ticks if isinstance(ticks, int) else None, _int(data, "uid", path),
                   float(kill_at) if isinstance(kill_at, (int, float)) else None)


# ----------------------------------------------------------------- the spool
def node_spool(conf: Any, conf_path: str, node: str) -> str:
    """The node's SlurmdSpoolDir (%n its name, %h the host), else SPOOL/NODE beside slurm.conf."""
    import socket

    spool = conf.get("SlurmdSpoolDir") or os.path.join(os.path.dirname(conf_path), "spool", "%n")
    return spool.replace("%n", node).replace("%h", socket.gethostname())


def runs_dir(spool: str) -> str:
    path = os.path.join(spool, RUNS)
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def run_dir(spool: str, job_id: int, restarts: int, create: bool = True) -> str:
    if not create:
        return os.path.join(spool, RUNS, f"{job_id}.{restarts}")
    path = os.path.join(spool, RUNS, f"{job_id}.{restarts}")
    try:  # one mkdir where the parents exist (makedirs: three calls each time, three times a job)
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
    except FileNotFoundError:
        runs_dir(spool)
        os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def scan_runs(spool: str) -> list[tuple[str, RunRecord]]:
    """Every run recorded in the spool, by job id and run; unreadable ones are logged and left."""
    found: list[tuple[str, RunRecord]] = []
    base = runs_dir(spool)
    for entry in sorted(os.listdir(base)):
        if not _RUN_DIR.fullmatch(entry):
            continue
        path = os.path.join(base, entry)
        try:
            found.append((path, RunRecord.load(path)))
        except StateError as exc:
            log.error("spool: ignoring run %s: %s", entry, exc)
    return found


def scan_steps(spool: str) -> list[StepRecord]:
    found: list[StepRecord] = []
    base = runs_dir(spool)
    for entry in sorted(os.listdir(base)):
        if _STEP_FILE.fullmatch(entry):
            try:
                found.append(StepRecord.load(os.path.join(base, entry)))
            except StateError as exc:
                log.error("spool: ignoring step record %s: %s", entry, exc)
    return found


def kill_recorded(spool: str) -> list[int]:
    """SIGKILL every job process group and supervisor the spool records as alive (a cluster
    being torn down: stopping plurmd no longer stops its jobs).  Returns the groups killed."""
    if not os.path.isdir(os.path.join(spool, RUNS)):
        return []
    killed: list[int] = []
    supervisors: list[ProcRef] = []
    for path, _record in scan_runs(spool):
        try:
            procs = read_procs(path)
        except StateError as exc:
            log.error("spool: %s", exc)
            continue
        if procs is not None and procs.supervisor.alive():
            kill_group(procs.pgid, signal.SIGKILL)
            killed.append(procs.pgid)
            supervisors.append(procs.supervisor)
    for step in scan_steps(spool):
        if step.proc.alive():
            kill_group(step.pid, signal.SIGKILL)
            killed.append(step.pid)
    # A supervisor reports its job's end and exits at once; one that does not is killed too.
    deadline = time.monotonic() + 5.0
    while any(p.alive() for p in supervisors) and time.monotonic() < deadline:
        time.sleep(0.02)
    for proc in supervisors:
        if proc.alive():
            kill_group(proc.pid, signal.SIGKILL)
    if os.path.isdir(os.path.join(spool, "cgroups")):  # confined jobs: what left their groups too
        from plurm.nodeagent.confinement import kill_marked

        kill_marked(spool)
    return killed
