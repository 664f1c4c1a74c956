"""A step task's standard streams on its node: pipes to plurmstepd, files, or a pseudo-terminal.

srun decides (tools/srun_io.py) and sends the plan in the launch request (``LaunchTasks.io``);
this module turns it into each task's redirections.  Files are opened by the task's own shell
after the switch to the job's owner (as the batch script's are, launch.BATCH_SH), never by
plurmstepd, which runs as root.  A ``--pty`` task gets the slave side of a pseudo-terminal as
its three streams and, through ``setsid -c``, as its controlling terminal, so its line
discipline turns srun's forwarded Ctrl-C into SIGINT and its window size is srun's.
"""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import termios
from dataclasses import dataclass
from typing import Any

from plurm.common import rlimits
from plurm.nodeagent import filenames, launch

# $1 stdin file (""), $2 stdout file (""), $3 its mode, $4 stderr file ("", "&1"), $5 its mode;
# then launch.TASK_SH's own arguments.  "" keeps what plurmstepd gave (a pipe, /dev/null, a pty).
IO_SH = r'''__plurm_in=$1 __plurm_out=$2 __plurm_om=$3 __plurm_err=$4 __plurm_em=$5
shift 5
if [ -n "$__plurm_in" ]; then command exec <"$__plurm_in" || {
  printf 'slurmstepd: error: Could not open stdin file %s\n' "$__plurm_in" >&2; exit 1; }; fi
if [ -n "$__plurm_out" ]; then
  if [ "$__plurm_om" = append ]; then command exec >>"$__plurm_out"; else command exec >"$__plurm_out"; fi || {
    printf 'slurmstepd: error: Could not open stdout file %s\n' "$__plurm_out" >&2; exit 1; }
fi
if [ "$__plurm_err" = '&1' ]; then command exec 2>&1
elif [ -n "$__plurm_err" ]; then
  if [ "$__plurm_em" = append ]; then command exec 2>>"$__plurm_err"; else command exec 2>"$__plurm_err"; fi || {
    printf 'slurmstepd: error: Could not open stderr file %s\n' "$__plurm_err" >&2; exit 1; }
fi
unset __plurm_in __plurm_out __plurm_om __plurm_err __plurm_em
'''


@dataclass
class TaskIo:
    """One task's streams: "pipe" (plurmstepd's), "null", or a file path (opened by the task)."""

    stdin: str = "null"
    stdout: str = "pipe"
    stderr: str = "pipe"  # or "&1": with stdout's file
    out_append: bool = False
    err_append: bool = False
    pty: bool = False
    winsize: tuple[int, int] = (0, 0)

    @classmethod
    def of(cls, io: dict[str, Any], *, rank: int, node_id: int, job_id: int, work_dir: str,
           shared: set[str]) -> TaskIo:
        """This task's part of srun's plan ({}: an older srun: pipes out, nothing in)."""
        if not io:
            return cls()
        names = dict(io.get("names") or {})
        names.setdefault("job_id", job_id)
        names.setdefault("job_name", "")
        names.setdefault("user", "")

        def path(pattern: str) -> str:
            try:
                expanded = filenames.expand(pattern, job_id=int(names["job_id"]), job_name=str(names["job_name"]),
                                            user=str(names["user"]), array_job_id=names.get("array_job_id"),
                                            array_task_id=names.get("array_task_id"),
                                            step=str(names.get("step", "0")), node_id=node_id, task_id=rank)
            except (KeyError, TypeError, ValueError):
                expanded = pattern
            return filenames.resolve(expanded, work_dir)

        def mode(entry: Any) -> tuple[str, Any]:
            if isinstance(entry, (list, tuple)) and len(entry) == 2 and isinstance(entry[0], str):
                return entry[0], entry[1]
            return "pipe", None

        result = cls(pty=bool(io.get("pty")) and rank == 0)
        kind, detail = mode(io.get("stdin"))
        if kind == "pipe" and isinstance(detail, list) and rank in detail:
            result.stdin = "pipe"
        elif kind == "file" and isinstance(detail, str):
            result.stdin = path(detail)
        for stream in ("stdout", "stderr"):
            kind, detail = mode(io.get(stream))
            if kind == "null" or (kind == "pipe" and isinstance(detail, int) and detail != rank):
                value = "null"  # srun shows one task's stream (-o N): the others' go nowhere
            elif kind == "file" and isinstance(detail, str):
                value = path(detail)
                # Several tasks of this node writing one file: the first truncates, the rest append.
                setattr(result, "out_append" if stream == "stdout" else "err_append", value in shared)
                shared.add(value)
            elif kind == "same" and stream == "stderr":
                value = "&1"
            else:
                value = "pipe"
            setattr(result, stream, value)
        size = io.get("winsize")
        if isinstance(size, list) and len(size) == 2 and all(isinstance(v, int) and 0 <= v < 65536 for v in size):
            result.winsize = (size[0], size[1])
        return result


@dataclass
class Started:
    proc: subprocess.Popen
    master: int | None = None  # the pseudo-terminal's master side (--pty)
    stdin_fd: int | None = None  # the task's stdin pipe, when srun forwards its input


def start_task(argv: list[str], env: dict[str, str], work_dir: str, owner: launch.Owner,
               task_prolog: str | None, io: TaskIo, join: list[str] | None = None,
               cpus: list[int] | None = None, mems: list[int] | None = None, mems_prefer: bool = False,
               pass_fds: tuple[int, ...] = (), user_prolog: str | None = None,
               limits: list[tuple[int, int]] | None = None) -> Started:
    """One task of a step, as its owner, with the streams ``io`` says; ``join``: its step's
    cgroup.procs files, which it enters before it becomes its owner (launch.Owner.popen_kwargs);
    ``cpus``/``mems``: its CPU mask and NUMA nodes (nodeagent/stepbind.py), set after that;
    ``pass_fds``: descriptors it inherits (its PMI_FD, nodeagent/stepd_pmi.py); ``user_prolog``:
    srun --task-prolog, run after ``task_prolog`` (slurm.conf's TaskProlog)."""
    files = ["" if io.stdin in ("pipe", "null") else io.stdin,
             "" if io.stdout in ("pipe", "null") else io.stdout, "append" if io.out_append else "truncate",
             "" if io.stderr in ("pipe", "null") else io.stderr, "append" if io.err_append else "truncate"]
    command = ["/bin/sh", "-c", IO_SH + launch.TASK_SH, "slurmstepd", *files, work_dir, task_prolog or "",
               user_prolog or "", *argv]
    if io.pty:
        master, slave = os.openpty()
        try:
            set_winsize(master, list(io.winsize))
            if owner.switch:
                os.fchown(slave, owner.uid, -1)  # the task's own terminal, as a login's
            # setsid -c: a session of its own with the terminal as its controlling one (exec, no fork:
            # a child of Popen is no group leader), so Ctrl-C on it is SIGINT to the task.
            proc = subprocess.Popen(["setsid", "-c", *command], cwd="/", env=env, stdin=slave, stdout=slave,
                                    stderr=slave, close_fds=True, pass_fds=pass_fds, restore_signals=True,
                                    **rlimits.preexec(_bound(owner.popen_kwargs(join), cpus, mems, mems_prefer),
                                                      limits or []))
        except OSError:
            os.close(master)
            raise
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        return Started(proc, master)

    stdin = subprocess.PIPE if io.stdin == "pipe" else subprocess.DEVNULL
    # A file is opened by the task's shell over the pipe given here (which then closes): until
    # then, its errors reach srun through the pipe.
    stdout = subprocess.DEVNULL if io.stdout == "null" else subprocess.PIPE
    stderr = subprocess.DEVNULL if io.stderr == "null" else subprocess.PIPE
    proc = subprocess.Popen(command, cwd="/", env=env, stdin=stdin, stdout=stdout, stderr=stderr, close_fds=True,
                            pass_fds=pass_fds, restore_signals=True,
                            **rlimits.preexec(_bound(owner.popen_kwargs(join), cpus, mems, mems_prefer), limits or []))
    stdin_fd = None
    if proc.stdin is not None:  # a bare descriptor, closed by Stdin at srun's end of input
        stdin_fd = os.dup(proc.stdin.fileno())
        proc.stdin.close()
        proc.stdin = None
        os.set_blocking(stdin_fd, False)
    return Started(proc, stdin_fd=stdin_fd)


def _bound(kwargs: dict[str, Any], cpus: list[int] | None, mems: list[int] | None,
           prefer: bool = False) -> dict[str, Any]:
    """Popen's arguments with the task's binding applied in the child, after whatever else
    runs there (entering a cgroup resets the CPU mask to its cpuset)."""
    if not cpus and not mems:
        return kwargs
    from plurm.nodeagent import stepbind

    if mems:
        stepbind.prepare_mempolicy()
    # (Without a preexec_fn of its own Popen switches user after ours: a task's own mask and
    # memory policy survive setuid either way.)
    before = kwargs.pop("preexec_fn", None)

    def child() -> None:
        if before is not None:
            before()
        stepbind.apply_in_child(cpus, mems, prefer)

    return {**kwargs, "preexec_fn": child}


def set_winsize(fd: int, size: Any) -> None:
    if isinstance(size, list) and len(size) == 2 and all(isinstance(v, int) and 0 <= v < 65536 for v in size):
        try:
            fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
        except OSError:
            pass


class Stdin:
    """A task's stdin from srun: written without blocking (a task that does not read must not
    stop the step's output), closed at srun's end of input."""

    def __init__(self, fd: int, close_on_eof: bool = True) -> None:
        self.fd = fd
        self.orig = fd  # the descriptor it had (for the poller, once closed)
        self.buffer = bytearray()
        self.eof = False
        self.close_on_eof = close_on_eof

    def write(self, data: bytes, eof: bool) -> None:
        if self.fd < 0:
            return
        self.buffer += data
        self.eof = self.eof or eof
        self.flush()

    def flush(self) -> None:
        while self.fd >= 0 and self.buffer:
            try:
                written = os.write(self.fd, self.buffer)
            except BlockingIOError:
                return
            except OSError:  # the task closed its stdin or ended: what is left goes nowhere
                self.buffer.clear()
                break
            del self.buffer[:written]
        if self.fd >= 0 and self.eof and not self.buffer and self.close_on_eof:
            os.close(self.fd)
            self.fd = -1
