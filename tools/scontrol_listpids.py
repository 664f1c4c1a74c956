"""scontrol listpids [JOB[.STEP]] [NODE]: the processes of the steps on this host's nodes.

Slurm asks the slurmd of the node the command runs on (or NODE); plurm asks the plurmd of each
node whose NodeAddr or NodeHostname is this host (several nodes may share one host), or NODE's,
with ``step_stat`` (nodeagent/stepusage.py reads /proc there).  As scontrol 22.05.8 prints it:
``%-8s %-8s %-8s %-7s %-8s`` rows under ``PID      JOBID    STEPID   LOCALID GLOBALID``; a task's
first process carries its local and global ids, the others ``-``; a job without steps there is
``There are no steps for job J on node (null).`` and a missing step ``StepId=J.S does not exist
on node (null).`` on stderr (exit 1; ``(null)`` is Slurm's word when no node was named).
"""

from __future__ import annotations

HEADER = "PID      JOBID    STEPID   LOCALID GLOBALID\n"


def _row(*cells: object) -> str:
    return "%-8s %-8s %-8s %-7s %-8s\n" % tuple(str(c) for c in cells)


def format_pids(steps: list[dict]) -> str:
    """The rows for ``step_stat`` replies' steps (job, then numbered steps, then batch)."""
    def order(step: dict) -> tuple[int, int, int]:
        sid = str(step["step_id"])
        return step["job_id"], not sid.isdigit(), int(sid) if sid.isdigit() else 0

    out = []
    for step in sorted(steps, key=order):
        for task in step.get("tasks", []):
            for i, pid in enumerate(task.get("pids", [])):
                first = i == 0 and task.get("local_id") is not None
                out.append(_row(pid, step["job_id"], step["step_id"], task["local_id"] if first else "-",
                                task["global_id"] if first else "-"))
    return "".join(out)


def _local_names() -> set[str]:
    import socket

    names = {"localhost", "127.0.0.1", "::1"}
    try:
        host = socket.gethostname()
        names |= {host, host.split(".")[0], socket.gethostbyname(host)}
    except OSError:
        pass
    return names


def list_pids(request, rest: list[str]) -> tuple[str, str, int]:
    """(stdout, stderr, rc) of ``scontrol listpids rest``."""
    from plurm.wire.client import ClientError, Connection

    wanted = rest[0] if rest else ""
    node_arg = rest[1] if len(rest) > 1 else None
    job, dot, step_id = wanted.partition(".")
    if job and not job.isdigit():
        return "", f"Invalid job id specified for job {wanted}\n", 1
    try:
        nodes = request("node_info", {}).get("nodes", [])
    except ClientError as exc:
        return "", f"slurm_load_node error: {exc}\n", 1
    local = _local_names()
    if node_arg:
        chosen = [n for n in nodes if n["name"] == node_arg]
    else:
        chosen = [n for n in nodes if n.get("addr") in local or n.get("hostname") in local]
    steps: list[dict] = []
    for node in chosen:
        conn = Connection(None, host=node.get("addr", "127.0.0.1"), port=node.get("port", 0), timeout=5.0)
        try:
            steps += conn.request("step_stat", {"job_id": int(job or 0), "step_id": step_id}).get("steps", [])
        except ClientError:
            continue  # a node that does not answer has nothing to list
        finally:
            conn.close()
    where = node_arg or "(null)"
    if job and not steps:
        if dot:
            return HEADER, f"StepId={job}.{step_id} does not exist on node {where}.\n", 1
        return HEADER, f"There are no steps for job {job} on node {where}.\n", 1
    return HEADER + format_pids(steps), "", 0
