"""sbatch's and srun's ``--propagate[=NAME,...]``: their soft limits into the job's environment.

The names come from the option, else slurm.conf's PropagateResourceLimits (default ALL) less
PropagateResourceLimitsExcept (common/rlimits.py says how the node applies them).
"""

from __future__ import annotations

from typing import Any

from plurm.common import rlimits


class PropagateError(Exception):
    """The command stops: ``line`` (its lines) says why (exit 1)."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def submit_variables(prog: str, option: Any, conf: str | None) -> dict[str, str]:
    """``SLURM_RLIMIT_<NAME>`` for the job's (step's) environment; PropagateError for a bad
    --propagate list (a bad slurm.conf list falls back to ALL)."""
    limits = excepted = None
    if conf:
        from plurm.wire.client import ClientError, conf_values

        try:  # (one reading of slurm.conf: this runs on every sbatch and srun)
            limits, excepted = conf_values(conf, "PropagateResourceLimits", "PropagateResourceLimitsExcept")
        except ClientError:
            pass
    try:
        names = rlimits.chosen(option, limits, excepted)
    except rlimits.LimitsError as exc:
        if option is not None and option is not False:
            # 22.05.8's two lines (run on the anchor), exit 1
            raise PropagateError(f"{prog}: error: {exc}\n{prog}: error: --propagate={option} is not valid.") from None
        names = list(rlimits.NAMES)
    return rlimits.variables(names)
