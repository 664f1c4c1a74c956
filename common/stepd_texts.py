"""slurmstepd's words that reach a job's user, shared by the node daemon (a batch job's error
file) and srun (an interactive step's stderr), so that both say exactly what 22.05.8 says."""

from __future__ import annotations

# Kernel OOM kills in a step's cgroup (tests/integration/reference/cgroup/cg.oom_batch_stderr.txt,
# cg.oom_srun.stderr.txt): srun prints it after its "task N: Out Of Memory" lines.
_OOM = ("slurmstepd-{node}: error: Detected {count} oom-kill event(s) in StepId={job_id}.{step}. "
        "Some of your processes may have been killed by the cgroup out-of-memory handler.\n")


def oom_message(count: int, job_id: int | str, step: int | str, node: str) -> str:
    return _OOM.format(count=count, job_id=job_id, step=step, node=node)
