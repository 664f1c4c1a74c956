"""A batch job's own task sampling interval: its sbatch --acctg-freq=task=N, over slurm.conf's
JobAcctGatherFrequency (sbatch(1): "This can be used to override the JobAcctGatherFrequency
parameter"; Slurm's batch launch carries the job's value to the batch step).  0 samples nothing
while the script runs ("accounting information is collected only at job termination"): the
batch step's MaxRSS/MaxVMSize, which only samples see, stay empty.  The value comes from the
controller's job record (the option as sbatch kept it, ``spec.other_options``); one that does
not parse is logged and the node's interval applies.  (The job's steps get the value through
SLURM_ACCTG_FREQ in the job's environment: tools/acctg_freq.py.)"""

from __future__ import annotations

import logging
from typing import Any

from plurm.grammar.values import OptionValueError, parse_acctg_freq

log = logging.getLogger("plurmd")

_MOST_S = 86400  # a day at most, as a step's (nodeagent/stepd.py)


def batch_every(job: dict[str, Any]) -> float | None:
    """The job's task=N in seconds, or None: it gave none (the node's interval applies)."""
    spec = job.get("spec") if isinstance(job, dict) else None
    other = spec.get("other_options") if isinstance(spec, dict) else None
    text = other.get("acctg-freq") if isinstance(other, dict) else None
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        task = parse_acctg_freq(text.strip()[:200]).get("task")
    except OptionValueError:
        log.warning("job %s: --acctg-freq=%r does not parse: JobAcctGatherFrequency applies", job.get("job_id"),
                    text[:200])
        return None
    if task is None or not 0 <= task <= _MOST_S:
        return None
    return float(task)


def first_at(every: float, now: float) -> float:
    """When the first sample of a job sampled every ``every`` s falls: after a second at most,
    as the node's and a step's; never for 0."""
    return now + min(every, 1.0) if every > 0 else float("inf")
