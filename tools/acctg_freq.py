"""A job's --acctg-freq (sbatch, salloc) reaches its steps the way Slurm's does: through the
job's environment.  Slurm puts the job's value into SLURM_ACCTG_FREQ (env_array_for_job for
salloc, sbatch's exported environment for the batch script), and srun reads SLURM_ACCTG_FREQ
as its --acctg-freq default (srun(1), INPUT ENVIRONMENT VARIABLES; grammar/options.py has the
row), so every srun inside the job samples its step at the job's task=N unless it says
otherwise.  The value is the parsed one written back (type=N,...), which srun parses again."""

from __future__ import annotations

from typing import Any

# The commands whose job carries its --acctg-freq to its steps (srun's own applies to its step).
_JOB_COMMANDS = ("sbatch", "salloc")


def job_variables(prog: str, options: dict[str, Any]) -> dict[str, str]:
    """SLURM_ACCTG_FREQ for the job's environment when ``prog`` (sbatch, salloc) was given
    --acctg-freq; nothing otherwise."""
    freq = options.get("acctg-freq")
    if prog not in _JOB_COMMANDS or not isinstance(freq, dict) or not freq:
        return {}
    return {"SLURM_ACCTG_FREQ": ",".join(f"{kind}={int(every)}" for kind, every in freq.items())}
