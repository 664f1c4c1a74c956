"""Helpers for the simulator's tests: SWF lines from numbers, slurm.conf text, a run."""

from __future__ import annotations

from plurm.tools.simulate import engine, swf

HEADER = "; MaxNodes: {nodes}\n; MaxProcs: {procs}\n"


def swf_line(job: int, submit: float, procs: int, run: float, req_time: float, user: int = 1, group: int = 1,
             status: int = 1) -> str:
    """One SWF line with the fields the simulator reads (the rest unknown, -1)."""
    return f"{job} {submit:g} -1 {run:g} {procs} -1 -1 {procs} {req_time:g} -1 {status} {user} {group} -1 -1 -1 -1 -1"


def conf_text(nodes: int, cpus: int, extra: str = "") -> str:
    return engine.default_conf_text(nodes, cpus).replace("SchedulerType=sched/backfill\n", "") + extra


def simulate_rows(conf: str, rows: list[str]) -> dict[int, tuple[float | None, float | None]]:
    """job number -> (start, end), in seconds from the trace's start."""
    trace = swf.parse_swf(rows)
    result = engine.simulate(engine.load_conf(text=conf), trace.jobs)
    return {r.job_id: (r.start, r.end) for r in result.records}
