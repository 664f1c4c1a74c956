"""squeue -s / --steps: the running steps (batch and srun steps), as squeue 22.05.8 prints them.

The controller answers ``step_info`` with the steps and their jobs (a step's partition and
user are its job's).  ``format_steps`` is pure, so the table is tested without a controller.
Formats observed with squeue 22.05.8: the default ``%.15i %.8j %.9P %.8u %.9M %N``; the step
letters below; any other letter is an error line on stderr and is printed as written
(``%C``); a bare job id among ``--steps`` is ``Invalid job_step id: 12.??`` (exit 1).
"""

from __future__ import annotations

from collections.abc import Callable

from plurm.common.cli import Usage
from plurm.grammar.hostlist import compress
from plurm.tools.display import FormatField, ctime_line, format_elapsed, format_timestamp, parse_format, render
from plurm.tools.squeuefmt import STEP_FORMAT, Context, Options, error_text

Row = tuple[dict, dict]  # (step, its job)


def step_id_text(step: dict, job: dict) -> str:
    """``12.0``, ``12.batch``; an array task's steps are named by the array: ``10_3.0``."""
    if job.get("array_task_id") is not None and job.get("array_job_id"):
        return f"{job['array_job_id']}_{job['array_task_id']}.{step['step_id']}"
    return f"{step['job_id']}.{step['step_id']}"


def _used(step: dict, ctx: Context) -> str:
    return format_elapsed(max(0, int(ctx.now - (step.get("start_time") or ctx.now))))


# Letter -> (title, value); the value's bool says whether a width cuts it (as for jobs).
STEP_FIELDS: dict[str, tuple[str, Callable[[dict, dict, Context], tuple[str, bool]]]] = {
    "i": ("STEPID", lambda s, j, c: (step_id_text(s, j), True)),
    "j": ("NAME", lambda s, j, c: (s.get("name") or "(null)", True)),
    "P": ("PARTITION", lambda s, j, c: (j.get("partition", ""), True)),
    "u": ("USER", lambda s, j, c: (str(j.get("spec", {}).get("user", "")), True)),
    "U": ("UID", lambda s, j, c: (str(j.get("spec", {}).get("user_id", 0)), True)),
    "M": ("TIME", lambda s, j, c: (_used(s, c), True)),
    "l": ("TIME_LIMIT", lambda s, j, c: ("UNLIMITED", True)),  # a step has no limit of its own
    "N": ("NODELIST", lambda s, j, c: (compress(s.get("nodes") or []), False)),
    "S": ("START_TIME", lambda s, j, c: (format_timestamp(s.get("start_time"), c.environ), True)),
    "A": ("TASKS", lambda s, j, c: (str(s.get("ntasks", 1)), True)),
    "b": ("TRES_PER_JOB", lambda s, j, c: ("(null)", True)),
}


def step_fields(fmt: str) -> tuple[list[FormatField], list[str]]:
    """The parsed format and the error lines for letters steps do not have."""
    fields = parse_format(fmt)
    errors = [error_text(f"Invalid job step format specification: {f.key}")
              for f in fields if f.key is not None and f.key not in STEP_FIELDS]
    return fields, errors


def _line(fields: list[FormatField], row: Row | None, ctx: Context) -> str:
    values: list[tuple[str, bool]] = []
    for f in fields:
        if f.key is None:
            values.append(("", True))
        elif f.key not in STEP_FIELDS:
            values.append((f"%{f.key}", True))  # as squeue: the unknown token as written
        elif row is None:
            values.append((STEP_FIELDS[f.key][0], True))
        else:
            values.append(STEP_FIELDS[f.key][1](row[0], row[1], ctx))
    return render(fields, values) + "\n"


def check_step_ids(wanted: list[str]) -> None:
    """squeue --steps takes JOB.STEP items only."""
    for item in wanted:
        if "." not in item:
            raise Usage(error_text(f"Invalid job_step id: {item}.??"), 1, "stderr")


def select_steps(steps: list[dict], jobs: list[dict], opts: Options) -> list[Row]:
    by_id = {j["job_id"]: j for j in jobs}
    rows = [(s, by_id[s["job_id"]]) for s in steps if s["job_id"] in by_id]
    if opts.steps:
        wanted = set(opts.steps)
        rows = [r for r in rows if step_id_text(*r) in wanted or f"{r[0]['job_id']}.{r[0]['step_id']}" in wanted]
    if opts.users:
        users = set(opts.users)
        rows = [r for r in rows if str(r[1]["spec"].get("user")) in users or str(r[1]["spec"].get("user_id")) in users]
    if opts.partitions:
        rows = [r for r in rows if r[1].get("partition") in set(opts.partitions)]
    return rows


def format_steps(steps: list[dict], jobs: list[dict], opts: Options, ctx: Context) -> tuple[str, str]:
    """(stdout, stderr) of squeue -s for what the controller sent."""
    fields, errors = step_fields(opts.format or STEP_FORMAT)
    out = [ctime_line(ctx.now) if opts.long and not opts.noheader else ""]
    if not opts.noheader:
        out.append(_line(fields, None, ctx))
    for row in select_steps(steps, jobs, opts):
        out.append(_line(fields, row, ctx))
    return "".join(out), "".join(errors)


def run_steps(opts: Options) -> tuple[list[tuple[str, str]], int]:
    """One load and display of squeue -s: ([(stream, text)], exit code)."""
    import time

    from plurm.wire.client import ClientError, request

    try:
        check_step_ids(opts.steps or [])
    except Usage as exc:
        return [("err", exc.text)], exc.code
    job_ids = sorted({s.split(".")[0] for s in opts.steps or []} | set(opts.jobs))
    try:
        reply = request("step_info", {"job_ids": job_ids})
    except ClientError as exc:
        return [("err", f"slurm_get_job_steps error: {exc}\n")], 1
    ctx = Context(reply.get("now") or time.time())
    out, err = format_steps(reply.get("steps", []), reply.get("jobs", []), opts, ctx)
    return [("err", err), ("out", out)], 0
