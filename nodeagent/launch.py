"""Starting a job's processes on a node: the batch script, and step daemons.

The batch script is written to the node's spool directory and executed
directly, so the kernel honours its ``#!`` line, in a session of its own
(its process group is what cancel and time limits signal).  Steps run under
``python -m plurm.nodeagent.stepd``, which owns the tasks and their I/O.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from typing import Any

from plurm.wire import protocol
from plurm.common import environment
from plurm.nodeagent import filenames


class LaunchError(Exception):
    pass


def _as_user(uid: int, gid: int):
    """preexec_fn that drops to the job's user when plurmd runs as root."""
    if os.getuid() != 0 or uid == 0:
        return None

    def switch() -> None:
        name = pwd.getpwuid(uid).pw_name
        os.initgroups(name, gid)
        os.setgid(gid)
        os.setuid(uid)

    return switch


def _open_for(path: str, mode: str, uid: int, gid: int):
    """Open a job's output file; a root plurmd hands a new file to the job's user."""
    existed = os.path.exists(path)
    handle = open(path, mode + "b")
    if os.getuid() == 0 and uid != 0 and not existed:
        os.fchown(handle.fileno(), uid, gid)
    return handle


def output_paths(msg: protocol.LaunchJob, node_name: str) -> tuple[str, str, str]:
    job = msg.job
    spec = job["spec"]
    is_array = job.get("array_job_id") is not None
    common = dict(job_id=msg.job_id, job_name=spec.get("name", ""), user=spec.get("user", ""),
                  array_job_id=job.get("array_job_id"), array_task_id=job.get("array_task_id"))
    out = filenames.expand(msg.stdout or filenames.default_output(is_array), **common)
    err = filenames.expand(msg.stderr, **common) if msg.stderr else out
    inp = filenames.expand(msg.stdin or "/dev/null", **common)
    return (filenames.resolve(out, msg.work_dir), filenames.resolve(err, msg.work_dir),
            filenames.resolve(inp, msg.work_dir))


def start_batch(msg: protocol.LaunchJob, node_name: str, spool: str, where: dict[str, Any],
                binding: Any = environment.default_binding) -> subprocess.Popen:
    job_dir = os.path.join(spool, f"job{msg.job_id:05d}")
    os.makedirs(job_dir, exist_ok=True)
    script_path = os.path.join(job_dir, "slurm_script")
    with open(script_path, "w", encoding="utf-8") as handle:
        handle.write(msg.script)
    os.chmod(script_path, 0o755)
    if os.getuid() == 0 and msg.uid != 0:
        os.chown(job_dir, msg.uid, msg.gid)
        os.chown(script_path, msg.uid, msg.gid)
    env = environment.batch_environment(msg.job, msg.environment, node_name, binding=binding, **where)
    # SLURM_TASK_PID is the script's own pid: exec keeps the pid of the process
    # plurmd forks, so a tiny sh wrapper sets it and execs the script.
    out_path, err_path, in_path = output_paths(msg, node_name)
    mode = "a" if msg.open_mode == "append" else "w"
    try:
        stdout = _open_for(out_path, mode, msg.uid, msg.gid)
        stderr = stdout if err_path == out_path else _open_for(err_path, mode, msg.uid, msg.gid)
        stdin = open(in_path, "rb")
    except OSError as exc:
        raise LaunchError(f"cannot open {exc.filename}: {exc.strerror}") from None
    cwd = msg.work_dir if os.path.isdir(msg.work_dir) else "/tmp"
    try:
        proc = subprocess.Popen(["/bin/sh", "-c", 'SLURM_TASK_PID=$$; export SLURM_TASK_PID; exec "$0" "$@"',
                                 script_path, *msg.args], cwd=cwd, env=env, stdin=stdin, stdout=stdout,
                                stderr=stderr, start_new_session=True, close_fds=True,
                                preexec_fn=_as_user(msg.uid, msg.gid))
    except OSError as exc:
        stderr.write(f"slurmstepd: error: execve(): {script_path}: {exc.strerror}\n".encode())
        raise LaunchError(str(exc)) from None
    finally:
        stdout.close()
        if stderr is not stdout:
            stderr.close()
        stdin.close()
    return proc


def start_stepd(msg: protocol.LaunchTasks, node_name: str, spool: str, key_path: str) -> subprocess.Popen:
    payload = json.dumps({"msg": protocol.to_builtins(msg), "node": node_name, "key_path": key_path})
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    proc = subprocess.Popen([sys.executable, "-m", "plurm.nodeagent.stepd"], stdin=subprocess.PIPE,
                            cwd=spool, env=env, start_new_session=True, close_fds=True,
                            preexec_fn=_as_user(msg.uid, msg.gid))
    assert proc.stdin is not None
    proc.stdin.write(payload.encode())
    proc.stdin.close()
    return proc
