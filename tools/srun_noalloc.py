"""srun -Z/--no-allocate: run the tasks on the -w nodes without a job in the queue.

22.05.8 (tests/integration/reference/srun-client/capture2.txt): only root and SlurmUser may;
srun says "do not allocate resources" first; without -w it refuses at once; for anyone else
the launch is refused ("Application launch failed: Access/permission denied", exit 210).
The controller checks the privilege and signs the launch (corescheduler/core_nodes.py
step_no_allocate); it records nothing, so no squeue or sacct line shows the step.
"""

from __future__ import annotations

import os
import sys
from typing import Any

REFUSED_EXIT = 210  # 22.05.8's srun -Z as a user


def check(options: dict[str, Any]) -> None:
    """-Z without -w: 22.05.8's refusal (raised as srun_step.StepOptionError)."""
    from plurm.tools.srun_step import StepOptionError

    if options.get("no-allocate") and not options.get("nodelist"):
        raise StepOptionError("srun: error: must specify a node list with -Z, --no-allocate.")


def create(conn: Any, options: dict[str, Any], command: list[str], name: str) -> tuple[dict[str, Any],
                                                                                      dict[str, Any]] | int:
    """The step on the -w nodes and the job srun pretends it is in; or srun's exit code."""
    from plurm.wire.client import ClientError

    print("srun: do not allocate resources", file=sys.stderr, flush=True)
    try:
        step = conn.request("step_create", {
            "job_id": 0, "name": name, "ntasks": options.get("ntasks"), "no_allocate": True,
            "nodelist": list(options.get("nodelist") or []), "cpus_per_task": options.get("cpus-per-task")})
    except ClientError as exc:
        if exc.code == "AccessDenied":
            print(f"srun: error: Application launch failed: {exc}", file=sys.stderr)
            print("srun: Job step aborted", file=sys.stderr)
            return REFUSED_EXIT
        print(f"srun: error: {exc}", file=sys.stderr)
        return 1
    import pwd

    user = pwd.getpwuid(os.getuid()).pw_name if _known(os.getuid()) else str(os.getuid())
    job = {"job_id": step["job_id"], "nodes": list(step["nodes"]), "tasks": list(step["tasks"]),
           "cpus": [], "mem": [], "gres_alloc": [], "partition": "", "state": "RUNNING", "no_allocate": True,
           "spec": {"name": os.path.basename(command[0]), "user": user, "user_id": os.getuid(),
                    "group_id": os.getgid(), "work_dir": os.getcwd(), "ntasks": sum(step["tasks"])}}
    return job, step


def _known(uid: int) -> bool:
    import pwd

    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True
