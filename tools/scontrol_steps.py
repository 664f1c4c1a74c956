"""scontrol show step(s) [JOB[.STEP]]: the running steps, as scontrol 22.05.8 prints them.

Observed with scontrol 22.05.8: each step is a block of six lines and a blank one (``-o``: one
line); the batch step has CPUs=0, TRES=(null) and no Dist; an srun step has its CPUs, its
TRES (cpu, mem, node) and its Dist (Cyclic, or Block for more tasks than nodes).  A job that does not exist is
``slurm_get_job_steps error: Invalid job id specified`` (exit 1); a step that does not exist
is ``Job step J.S not found`` on stdout (exit 1); no steps at all: ``No job steps in the system``.
Pure: the records in, the text out.
"""

from __future__ import annotations

from plurm.grammar.hostlist import compress
from plurm.tools.showfmt import iso, mem_exact
from plurm.tools.squeuesteps import step_id_text


def _tres(step: dict, job: dict) -> str:
    if step["step_id"] == "batch":
        return "(null)"
    nodes = step.get("nodes") or []
    # Memory: the job's per CPU on the step's nodes, times the step's CPUs (Slurm's default
    # step memory, DefMemPerCPU x CPUs, seen as mem=256M for one task).
    per_cpu = [m / c for m, c in zip(job.get("mem") or [], job.get("cpus") or []) if c]
    mem = int(round((per_cpu[0] if per_cpu else 0) * step.get("cpus", 1)))
    parts = [f"cpu={step.get('cpus', 1)}"]
    if mem:
        parts.append(f"mem={mem_exact(mem)}")
    parts.append(f"node={len(nodes)}")
    return ",".join(parts)


def _dist(step: dict) -> str:
    """Slurm's default task distribution (plurm has no srun -m): cyclic when there are no more
    tasks than nodes, block otherwise (22.05.8: srun -n2 on 2 nodes Cyclic, on 1 node Block)."""
    return "Cyclic" if step.get("ntasks", 1) <= max(1, len(step.get("nodes") or [])) else "Block"


def format_step(step: dict, job: dict, oneliner: bool = False) -> str:
    batch = step["step_id"] == "batch"
    nodes = step.get("nodes") or []
    lines = [
        f"StepId={step_id_text(step, job)} UserId={job.get('spec', {}).get('user_id', 0)} "
        f"StartTime={iso(step.get('start_time'))} TimeLimit=UNLIMITED",
        f"State={step.get('state', 'RUNNING')} Partition={job.get('partition', '')} NodeList={compress(nodes)}",
        f"Nodes={len(nodes)} CPUs={0 if batch else step.get('cpus', 1)} Tasks={step.get('ntasks', 1)} "
        f"Name={step.get('name') or '(null)'} Network=(null)",
        f"TRES={_tres(step, job)}",
        "ResvPorts=(null)",
        "CPUFreqReq=Default" + ("" if batch else f" Dist={_dist(step)}"),
        # plurm does not learn srun's host and pid: Slurm's value for "none".
        "SrunHost:Pid=(null):0",
    ]
    if oneliner:
        return " ".join(lines) + "\n"
    return lines[0] + "\n" + "".join(f"   {line}\n" for line in lines[1:]) + "\n"


def select(steps: list[dict], jobs: list[dict], wanted: str | None) -> tuple[list[tuple[dict, dict]], str | None]:
    """The (step, job) pairs to show and, when nothing matches, Slurm's stdout line."""
    by_id = {j["job_id"]: j for j in jobs}
    rows = [(s, by_id[s["job_id"]]) for s in steps if s["job_id"] in by_id]
    if wanted is None:
        return rows, None if rows else "No job steps in the system\n"
    job, dot, step = wanted.partition(".")
    if dot:
        rows = [r for r in rows if str(r[0]["step_id"]) == step]
    if not rows:
        return [], f"Job step {job}.{step if dot else '0'} not found\n"
    return rows, None


def show_steps(request, rest: list[str], oneliner: bool) -> tuple[str, str, int]:
    """(stdout, stderr, rc) of ``scontrol show step(s) [rest]``; ``request`` sends a message."""
    from plurm.wire.client import ClientError

    wanted = rest[0] if rest else None
    job_ids = [wanted.partition(".")[0]] if wanted else []
    try:
        if job_ids:  # a job that does not exist is an error; one without steps is not
            request("job_info", {"job_ids": job_ids, "all_states": True})
        reply = request("step_info", {"job_ids": job_ids})
    except ClientError as exc:
        return "", f"slurm_get_job_steps error: {exc}\n", 1
    rows, missing = select(reply.get("steps", []), reply.get("jobs", []), wanted)
    if missing is not None:
        return missing, "", 1 if wanted else 0
    return "".join(format_step(s, j, oneliner) for s, j in rows), "", 0
