"""Prolog, Epilog and TaskProlog (slurm.conf), as slurmd and slurmstepd run them.

- ``Prolog`` runs on the job's node as the user plurmd runs as (root, normally)
  before the job's first process; a failing Prolog drains the node ("Prolog
  error") and the job does not start.
- ``Epilog`` runs likewise after the job's processes on the node have ended; a
  failing Epilog drains the node ("Epilog error").
- ``TaskProlog`` runs as the job's owner before each task (and the batch
  script), in the task's environment and directory.  Lines of its standard
  output ``export NAME=value`` set a variable of the task, ``unset NAME``
  removes one, ``print ...`` writes the rest of the line to the task's
  standard output (https://slurm.schedmd.com/prolog_epilog.html).  A failing
  TaskProlog cancels the task.

Prolog and Epilog get no search path and none of plurmd's environment: only
the job's variables (SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_UID, ...,
SLURMD_NODENAME, SLURM_SCRIPT_CONTEXT=prolog_slurmd|epilog_slurmd).  A value
may be a glob (``/etc/slurm/prolog.d/*``): the files run in name order and the
first failure stops them.

The Epilog runs once per job per node, also across a plurmd restart: the environment a
job's Epilog will get is kept in ``SPOOL/epilogs/JOB.json`` from its Prolog on (with
whether the controller has said the job is over, for nodes that ran only its steps),
and removed once the Epilog has run.  A plurmd killed while an Epilog runs runs it
again when it comes back (at least once rather than perhaps not at all).
"""

from __future__ import annotations

import glob
import logging
import os
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from plurm.common import environment
from plurm.grammar.hostlist import compress
from plurm.nodeagent import jobstate

log = logging.getLogger("plurmd")

PROLOG_REASON = "Prolog error"  # the drain reasons slurmctld records (sinfo -R)
EPILOG_REASON = "Epilog error"


@dataclass
class NodeScripts:
    """The node's Prolog/Epilog/TaskProlog settings, and the jobs whose Prolog ran here."""

    prolog: str | None = None
    epilog: str | None = None
    task_prolog: str | None = None
    task_epilog: str | None = None  # TaskEpilog: run by plurmstepd after each task (nodeagent/stepd_launch.py)
    timeout: float | None = None  # PrologEpilogTimeout; None: wait as long as they take
    epilogs: dict[int, dict[str, str]] = field(default_factory=dict)  # job id -> its Epilog's environment
    due: set[int] = field(default_factory=set)  # steps-only jobs the controller has ended: Epilog when idle
    state_dir: str | None = None  # where epilogs and due are kept (SPOOL/epilogs); None: in memory only

    @classmethod
    def from_conf(cls, conf: Any) -> NodeScripts:
        timeout = conf.get("PrologEpilogTimeout")
        try:
            seconds = float(timeout) if timeout else None
        except ValueError:
            seconds = None
        return cls(prolog=conf.get("Prolog") or None, epilog=conf.get("Epilog") or None,
                   task_prolog=conf.get("TaskProlog") or None, task_epilog=conf.get("TaskEpilog") or None,
                   timeout=seconds if seconds and seconds < 65534 else None)

    @classmethod
    def of(cls, daemon: Any) -> NodeScripts:
        """The node daemon's settings, read from its slurm.conf once."""
        scripts = getattr(daemon, "_node_scripts", None)
        if scripts is None:
            scripts = cls.from_conf(daemon.conf)
            scripts.load(os.path.join(daemon.spool, "epilogs"))
            daemon._node_scripts = scripts
        return scripts

    def load(self, state_dir: str) -> None:
        """The Epilogs a plurmd that ran before this one left due."""
        self.state_dir = state_dir
        os.makedirs(state_dir, mode=0o700, exist_ok=True)
        for entry in sorted(os.listdir(state_dir)):
            stem, dot, ext = entry.partition(".")
            if ext != "json" or not stem.isdigit():
                continue
            try:
                data = jobstate.read_json(os.path.join(state_dir, entry)) or {}
            except jobstate.StateError as exc:
                log.error("spool: ignoring Epilog record: %s", exc)
                continue
            env = data.get("env")
            if isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
                self.epilogs[int(stem)] = env
                if data.get("due"):
                    self.due.add(int(stem))
            else:
                log.error("spool: ignoring Epilog record %s: no environment", entry)

    def _path(self, job_id: int) -> str | None:
        return os.path.join(self.state_dir, f"{job_id}.json") if self.state_dir else None

    def _keep(self, job_id: int) -> None:
        path = self._path(job_id)
        if path is not None and job_id in self.epilogs and (self.prolog or self.epilog):
            jobstate.write_json(path, {"env": self.epilogs[job_id], "due": job_id in self.due})

    def mark_due(self, job_id: int) -> None:
        """The controller ended a job whose steps ran here: its Epilog once they are gone."""
        if job_id in self.epilogs and job_id not in self.due:
            self.due.add(job_id)
            self._keep(job_id)


    def run_prolog(self, job: dict[str, Any], node: str, conf_path: str, where: dict[str, Any],
                   binding: Callable[[str, list[int]], dict[str, str]] | None = environment.default_binding
                   ) -> str | None:
        """Before the job's first process here: None when it may start; else the node is drained."""
        env = script_environment(job, node, "prolog_slurmd", binding=binding, **where)
        self.epilogs[job["job_id"]] = {**env, "SLURM_SCRIPT_CONTEXT": "epilog_slurmd"}
        self._keep(job["job_id"])
        failure = run(self.prolog, env, self.timeout, "prolog")
        if failure is not None:
            log.error("job %s: %s; draining %s", job["job_id"], failure, node)
            drain(conf_path, node, PROLOG_REASON)
        return failure

    def run_epilog(self, job_id: int, node: str, conf_path: str) -> str | None:
        """After the job's processes here have ended (once per job); a failure drains the node."""
        env = self.epilogs.pop(job_id, None)
        self.due.discard(job_id)
        if env is None:
            return None
        failure = run(self.epilog, env, self.timeout, "epilog")
        path = self._path(job_id)
        if path is not None:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        if failure is not None:
            log.error("job %s: %s; draining %s", job_id, failure, node)
            drain(conf_path, node, EPILOG_REASON)
        return failure


def script_environment(job: dict[str, Any], node_name: str, context: str, *, cluster: str, conf_path: str,
                       binding: Callable[[str, list[int]], dict[str, str]] | None = environment.default_binding,
                       **_where: Any) -> dict[str, str]:
    """What slurmd gives its Prolog and Epilog: the job's identity, and no search path."""
    spec = job.get("spec", {})
    nodes: list[str] = job.get("nodes", [])
    env = {
        "SLURMD_NODENAME": node_name,
        "SLURM_CLUSTER_NAME": cluster,
        "SLURM_CONF": conf_path,
        "SLURM_JOBID": str(job["job_id"]),
        "SLURM_JOB_ID": str(job["job_id"]),
        "SLURM_JOB_UID": str(spec.get("user_id", 0)),
        "SLURM_JOB_GID": str(spec.get("group_id", 0)),
        "SLURM_JOB_USER": spec.get("user", ""),
        "SLURM_JOB_PARTITION": job.get("partition", ""),
        "SLURM_JOB_NODELIST": compress(nodes),
        "SLURM_SCRIPT_CONTEXT": context,
    }
    if spec.get("constraint"):
        env["SLURM_JOB_CONSTRAINTS"] = spec["constraint"]
    if job.get("array_job_id") is not None:
        env["SLURM_ARRAY_JOB_ID"] = str(job["array_job_id"])
        env["SLURM_ARRAY_TASK_ID"] = str(job.get("array_task_id"))
    if node_name in nodes:
        env.update(environment.gpu_variables(job, nodes.index(node_name), binding=binding))
    return env


def _programs(spec: str) -> list[str]:
    if any(c in spec for c in "*?["):
        return sorted(glob.glob(spec))
    return [spec]


def run(spec: str | None, env: dict[str, str], timeout: float | None = None, what: str = "prolog") -> str | None:
    """Run a Prolog or Epilog (every file of a glob); None when all succeed, else why not."""
    if not spec:
        return None
    for program in _programs(spec):
        try:
            done = subprocess.run([program], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, cwd="/", timeout=timeout, close_fds=True)
        except subprocess.TimeoutExpired:
            return f"{what} {program} timed out after {timeout:g} s"
        except OSError as exc:
            return f"{what} {program}: {exc.strerror}"
        if done.stdout:
            log.info("%s %s: %s", what, program, done.stdout.decode("utf-8", "replace").rstrip())
        if done.returncode:
            how = f"signal {-done.returncode}" if done.returncode < 0 else f"status {done.returncode}"
            return f"{what} {program} failed: {how}"
    return None


def drain(conf_path: str, node: str, reason: str) -> threading.Thread:
    """Ask the controller to drain this node (as `scontrol update state=drain` does), in a thread."""

    def send() -> None:
        from plurm.wire.client import ClientError, Connection, read_settings

        try:
            conn = Connection(read_settings(conf_path), timeout=10.0)
            try:
                conn.request("update_node", {"nodes": [node], "state": "DRAIN", "reason": reason})
            finally:
                conn.close()
        except (ClientError, OSError) as exc:
            log.error("could not drain %s (%s): %s", node, reason, exc)

    thread = threading.Thread(target=send, name="drain", daemon=True)
    thread.start()
    return thread


# What a task prolog's output does to the shell that starts the task (the TaskProlog's
# and srun --task-prolog's): names are checked (no assignment through a malformed line);
# values are taken as they are, never evaluated.  Every helper variable is unset after.
_APPLY_SH = r'''  while IFS= read -r __plurm_l; do
    case $__plurm_l in
    "export "*)
      __plurm_v=${__plurm_l#export }
      __plurm_n=${__plurm_v%%=*}
      case $__plurm_n in
      ''|[0-9]*|*[!A-Za-z0-9_]*) ;;
      *) [ "$__plurm_n" = "$__plurm_v" ] || command export "$__plurm_n=${__plurm_v#*=}" ;;
      esac ;;
    "unset "*)
      __plurm_n=${__plurm_l#unset }
      case $__plurm_n in
      ''|[0-9]*|*[!A-Za-z0-9_]*) ;;
      *) command unset "$__plurm_n" ;;
      esac ;;
    "print "*) printf '%s\n' "${__plurm_l#print }" ;;
    esac
  done <<__PLURM_END__
$__plurm_o
__PLURM_END__
fi
unset __plurm_tp __plurm_o __plurm_l __plurm_v __plurm_n
'''

# The TaskProlog, inside the shell that starts a task as its owner (launch.py): it runs
# the program named by $__plurm_tp and applies its output to this shell before the exec.
TASK_PROLOG_SH = r'''
if [ -n "$__plurm_tp" ]; then
  __plurm_o=$(SLURM_SCRIPT_CONTEXT=prolog_task "$__plurm_tp") || {
    __plurm_s=$?
    printf 'slurmstepd: error: TaskProlog failed status=%d\n' "$__plurm_s" >&2
    exit "$__plurm_s"
  }
''' + _APPLY_SH

# srun --task-prolog, after the TaskProlog (nodeagent/stepd_launch.py): $__plurm_utp, run as
# the task's owner; 22.05's words when it cannot be run (exit 1) or fails (its status).
USER_TASK_PROLOG_SH = r'''
if [ -n "$__plurm_utp" ]; then
  __plurm_tp=$__plurm_utp
  if ! [ -f "$__plurm_tp" ] || ! [ -x "$__plurm_tp" ]; then
    if [ -e "$__plurm_tp" ]; then __plurm_r='Permission denied'; else __plurm_r='No such file or directory'; fi
    printf 'slurmstepd-%s: error: run_command: user task_prolog can not be executed (%s) %s\n' "$SLURMD_NODENAME" "$__plurm_tp" "$__plurm_r" >&2
    printf 'slurmstepd-%s: error: user task_prolog did not exit normally. reason: Run command failed - configuration error\n' "$SLURMD_NODENAME" >&2
    printf 'slurmstepd-%s: error: --task-prolog failed status=1\n' "$SLURMD_NODENAME" >&2
    exit 1
  fi
  __plurm_o=$(SLURM_SCRIPT_CONTEXT=prolog_task "$__plurm_tp") || {
    __plurm_s=$?
    printf 'slurmstepd-%s: error: --task-prolog failed status=%d\n' "$SLURMD_NODENAME" "$__plurm_s" >&2
    exit "$__plurm_s"
  }
''' + _APPLY_SH.replace("unset __plurm_tp ", "unset __plurm_tp __plurm_utp __plurm_r ")
