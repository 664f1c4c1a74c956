"""srun in a heterogeneous job: ``--het-group=K`` picks the component whose allocation a step uses.

Inside a hetjob's batch script the job's components are SLURM_JOB_ID_HET_GROUP_K (set by the
node daemon from the controller's records: common/environment.het_variables); a step runs in
component 0 unless --het-group names another.  What plurm does not do yet, and says so with
exit 1 rather than running something else: a step over several components at once
(``--het-group=0,1``, or ``srun A : B`` inside or outside an allocation), which Slurm runs
as one MPI-style step across the components.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from collections.abc import Mapping
    from typing import Any

SEVERAL = ("srun: error: plurm runs a step in one heterogeneous job component at a time: "
           "use one srun per component (--het-group=K)")


def _groups(value: str) -> list[int] | None:
    """--het-group's list: "1", "0,2", "0-1"; None when it is not one."""
    out: list[int] = []
    for part in value.split(","):
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            return None
        out.extend(range(int(lo), int(hi if dash else lo) + 1))
    return sorted(set(out)) or None


def component_job(options: Mapping[str, Any], environ: Mapping[str, str], components: int
                  ) -> tuple[str | None, str | None]:
    """(the job id the step runs in, or None for srun's usual choice; an error line, or None)."""
    value = options.get("het-group")
    if components > 1:
        return None, SEVERAL
    if value is None or value is True:
        return None, None
    groups = _groups(str(value))
    if groups is None:
        return None, f"srun: error: Invalid --het-group value: {value}"
    if len(groups) > 1:
        return None, SEVERAL
    size = int(environ.get("SLURM_HET_SIZE") or 1)
    group = groups[0]
    if group >= size:
        return None, (f"srun: error: Attempt to run a job step with het group value of {group}, "
                      f"but the job allocation has maximum value of {size - 1}")
    return environ.get(f"SLURM_JOB_ID_HET_GROUP_{group}"), None


# srun's options that it reads from the allocation's variables when the command line does not
# give them: in a component, that component's (…_HET_GROUP_K), not component 0's.
_FROM_COMPONENT = (("ntasks", "SLURM_NTASKS"), ("cpus-per-task", "SLURM_CPUS_PER_TASK"),
                   ("nodes", "SLURM_JOB_NUM_NODES"))


def component_options(options: dict[str, Any], given: set[str], environ: Mapping[str, str]) -> None:
    """--het-group=K: the step's defaults from component K's variables (in place)."""
    groups = _groups(str(options.get("het-group") or ""))
    if not groups:
        return
    for key, name in _FROM_COMPONENT:
        if key in given:
            continue
        value = environ.get(f"{name}_HET_GROUP_{groups[0]}")
        if value is None or not value.isdigit():
            options.pop(key, None)
        else:
            options[key] = [int(value), int(value)] if key == "nodes" else int(value)
