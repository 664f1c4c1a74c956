"""srun ``--debugger-test`` on the node: the step's tasks start stopped, their pids go to srun.

22.05's slurmstepd starts each task stopped before it runs its program (as a parallel debugger
needs, to attach to every rank before it runs), and srun prints the pids and executables (its
MPIR process table) and, with --debugger-test, ends the step.  Here each task's shell, after
its directory, TaskProlog and --task-prolog (launch.TASK_SH), runs this module's wrapper: it
checks that the program exists as TASK_SH would, stops itself (SIGSTOP), and only on SIGCONT
execs the program.  The pid is the task's own: every shell on the way execs, none forks.

Once all the node's tasks are stopped (or have ended: a TaskProlog that failed), plurmstepd
sends srun one ``debugger_tasks`` message over the step's signed channel; srun prints the table
and kills the tasks (tools/srun_debugger.py).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from typing import Any

# $1 the program, then its arguments.  (The check is TASK_SH's: TASK_SH itself checks this
# shell, which always exists.)
STOP_SH = r'''command -v -- "$1" >/dev/null 2>&1 || {
  printf 'slurmstepd: error: execve(): %s: No such file or directory\n' "$1" >&2; exit 2; }
kill -STOP $$
exec "$@"
'''

# How long plurmstepd waits for its tasks to stop: their TaskProlog and --task-prolog run first
# (a slow one on a loaded host); a task not stopped by then is reported as not stopped.
STOP_WAIT_S = 60.0
POLL_S = 0.02


class DebuggerTest:
    """One step's --debugger-test on this node."""

    def __init__(self) -> None:
        self.executables: dict[int, str] = {}  # rank -> the program as srun was given it

    @classmethod
    def of(cls, launch_opts: dict[str, Any]) -> DebuggerTest | None:
        """The step's --debugger-test (None: srun did not ask for it)."""
        return cls() if launch_opts.get("debugger_test") is True else None

    def wrap(self, rank: int, argv: list[str]) -> list[str]:
        """Task ``rank``'s command, made to stop itself before its program runs."""
        self.executables[rank] = argv[0] if argv else ""
        return ["/bin/sh", "-c", STOP_SH, "slurmstepd", *argv]

    def report(self, procs: dict[int, subprocess.Popen], send: Callable[[str, dict], None], node_id: int) -> None:
        """Wait for the started tasks to stop, then tell srun their pids (one message)."""
        states = wait_stopped({rank: proc.pid for rank, proc in procs.items()})
        send("debugger_tasks", {"node_id": node_id, "tasks": [
            {"task": rank, "pid": procs[rank].pid, "executable": self.executables.get(rank, ""),
             "stopped": states.get(rank) == "stopped"} for rank in sorted(procs)]})


def wait_stopped(pids: dict[int, int], limit_s: float = STOP_WAIT_S) -> dict[int, str]:
    """Each task's state once it has stopped or ended ("stopped", "ended"; "running": still
    neither after ``limit_s``).  Nothing is reaped (WNOWAIT): plurmstepd's wait4 reads the
    exit and its usage later, as for any task."""
    states: dict[int, str] = {}
    deadline = time.monotonic() + limit_s
    while True:
        for rank, pid in pids.items():
            if rank in states:
                continue
            try:
                info = os.waitid(os.P_PID, pid, os.WSTOPPED | os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # (reaped elsewhere: it has ended)
                states[rank] = "ended"
                continue
            if info is not None:
                states[rank] = "stopped" if info.si_code == os.CLD_STOPPED else "ended"
        if len(states) == len(pids) or time.monotonic() >= deadline:
            return {rank: states.get(rank, "running") for rank in pids}
        time.sleep(POLL_S)
