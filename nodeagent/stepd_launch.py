"""srun's node-side launch options in plurmstepd (LaunchTasks.launch, tools/srun_launch.py).

- ``--multi-prog``: each task's command from srun's parsed records (common/multiprog.py).
- ``--bcast``: the executable (and its libraries) written as the owner before any task
  starts (nodeagent/bcast.py); the tasks run the copy, LD_LIBRARY_PATH first on the libraries.
  A node that cannot write it starts no task: its words on srun's stderr, each task exit 1.
- ``--task-prolog``: run by each task's shell after slurm.conf's TaskProlog (prolog.py's
  USER_TASK_PROLOG_SH); ``--task-epilog``, then slurm.conf's TaskEpilog (when plurmd passes it:
  launch.start_stepd's ``task_epilog``): run here, as the owner, in the task's environment and
  directory, once the task has ended, killed with what it started after EPILOG_TIMEOUT_S.
- ``--slurmd-debug=N``: this process's log level for the step, stderr level N+2 (22.05: 2 is
  verbose); its lines go to srun's stderr (on the node's first task, as plurmstepd's other
  words), the ones 22.05's slurmstepd writes at that level for what plurmstepd also does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

from plurm.common import multiprog
from plurm.nodeagent import bcast, launch

LEVELS = ("quiet", "fatal", "error", "info", "verbose", "debug", "debug2", "debug3")
VERBOSE, DEBUG, DEBUG2 = 4, 5, 6
EPILOG_TIMEOUT_S = 10.0  # "a few seconds" (man srun); loaded CI hosts start a shell slowly


class NodeOptions:
    """One step's launch options on this node."""

    def __init__(self, msg: dict[str, Any], payload: dict[str, Any], node: str,
                 send: Callable[[str, dict], None]) -> None:
        launch_opts = msg.get("launch")
        self.opts: dict[str, Any] = launch_opts if isinstance(launch_opts, dict) else {}
        self.msg, self.node, self.send = msg, node, send
        self.owner = launch.Owner.from_payload(payload["owner"])
        self.task_ids: list[int] = list(msg.get("task_ids") or [])
        level = self.opts.get("slurmd_debug")
        self.level = level + 2 if isinstance(level, int) and not isinstance(level, bool) and 0 <= level <= 5 else 2
        self.copy: str | None = None  # --bcast: this node's copy of the executable
        self.libs: str | None = None
        self.envs: dict[int, dict[str, str]] = {}
        conf_epilog = payload.get("task_epilog")  # slurm.conf's TaskEpilog, after srun's
        self.epilogs = [p for p in (self.opts.get("task_epilog"), conf_epilog) if isinstance(p, str) and p]

    # ------------------------------------------------------------ --slurmd-debug
    def say(self, level: int, text: str) -> None:
        if level <= self.level and self.task_ids:
            word = "" if level <= VERBOSE else f"{LEVELS[level]}: " + (" " if level == DEBUG else "")
            self.send("task_output", {"task": self.task_ids[0], "stream": 2,
                                      "data": f"slurmstepd-{self.node}: {word}{text}\n"})

    # ------------------------------------------------------------ the step
    def begin(self) -> bool:
        """Before the tasks: the debug header, --bcast's files.  False: no task may start
        (srun was told why, and of each task's end)."""
        self.say(VERBOSE, f"debug levels are stderr='{LEVELS[min(self.level, 7)]}', logfile='info', syslog='fatal'")
        self.say(DEBUG, f"IO handler started pid={os.getpid()}")
        self.say(VERBOSE, f"starting {len(self.task_ids)} tasks")
        spec = self.opts.get("bcast")
        if not isinstance(spec, dict):
            return True
        try:
            target = bcast.destination(spec, int(self.msg["job_id"]), int(self.msg["step_id"]), self.node)
            self.libs = bcast.install(spec, target, self.owner.popen_kwargs())
            self.copy = target
            return True
        except bcast.BcastError as exc:
            self.send("srun_words", {"tasks": self.task_ids, "lines": [
                f"srun: error: REQUEST_FILE_BCAST({self.node}): {exc}",
                f"srun: fatal: Failed to broadcast '{spec.get('source', '')}'. Step launch aborted."]})
            for rank in self.task_ids:
                self.send("task_exit", {"task": rank, "exit_code": 1, "signal": 0})
            self.send("node_done", {"node": self.node})
            return False

    def task_argv(self, rank: int, argv: list[str]) -> list[str] | None:
        """The task's command: its --multi-prog line, the --bcast copy; None: it has none."""
        if "multi_prog" in self.opts:
            return multiprog.task_argv(self.opts["multi_prog"], rank, list(argv[1:]))
        if self.copy is not None and argv:
            return [self.copy, *argv[1:]]
        return argv

    def refuse(self, rank: int) -> None:
        """A task with no program (a --multi-prog record srun should have refused)."""
        self.send("task_output", {"task": rank, "stream": 2,
                                  "data": f"slurmstepd-{self.node}: error: No executable program specified for this task\n"})
        self.send("task_exit", {"task": rank, "exit_code": 1, "signal": 0})

    def task_env(self, rank: int, env: dict[str, str]) -> None:
        """--send-libs' folder first on LD_LIBRARY_PATH; the environment kept for the epilog."""
        if self.libs is not None:
            before = env.get("LD_LIBRARY_PATH")
            env["LD_LIBRARY_PATH"] = f"{self.libs}:{before}" if before else self.libs
        self.envs[rank] = dict(env)

    @property
    def user_prolog(self) -> str | None:
        value = self.opts.get("task_prolog")
        return value if isinstance(value, str) and value else None

    def started(self, rank: int, local_id: int, pid: int) -> None:
        self.say(VERBOSE, f"task {rank} ({pid}) started {time.strftime('%Y-%m-%dT%H:%M:%S')}")
        self.say(DEBUG2, f"adding task {local_id} pid {pid} on node {self.msg.get('node_id', 0)} to jobacct")

    def ended(self, rank: int, local_id: int, pid: int, status: int) -> None:
        """A task reaped (``status`` as Popen.returncode has it): its --task-epilog, its line."""
        self.say(DEBUG2, f"removing task {local_id} pid {pid} from jobacct")
        if status >= 0:
            self.say(VERBOSE, f"task {rank} ({pid}) exited with exit code {status}.")
        else:
            self.say(VERBOSE, f"task {rank} ({pid}) exited. Killed by signal {-status}.")
        self.epilog(rank)

    def finish(self) -> None:
        self.say(DEBUG, "Waiting for IO")
        self.say(DEBUG, "Closing debug channel")

    def epilog(self, rank: int) -> None:
        """srun --task-epilog, then slurm.conf's TaskEpilog, for task ``rank``."""
        for program in self.epilogs:
            self._run_epilog(rank, program)

    def _run_epilog(self, rank: int, program: str) -> None:
        env = dict(self.envs.get(rank) or self.msg.get("environment") or {})
        work_dir = str(self.msg.get("work_dir") or "/")
        try:
            proc = subprocess.Popen([program], env=env, cwd=work_dir if os.path.isdir(work_dir) else "/",
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    close_fds=True, start_new_session=True, **self.owner.popen_kwargs())
        except (OSError, subprocess.SubprocessError) as exc:
            self.say(2, f"error: user task_epilog can not be executed ({program}) "
                        f"{getattr(exc, 'strerror', None) or exc}")
            return
        try:
            proc.wait(EPILOG_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # with what it started (its own session)
            except OSError:
                pass
            proc.wait()
