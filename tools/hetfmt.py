"""How the commands show a heterogeneous job's component (corescheduler/core_hetjob.py keeps
``het_job_id``, ``het_job_offset`` and ``het_size`` in its spec), as Slurm 22.05.8 shows it
(tests/integration/reference/hetjob/): ``N+K`` in squeue and sacct, ``HetJobId=N
HetJobOffset=K`` and ``HetJobIdSet=N-M`` in scontrol show job."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from typing import Any


def job_id(spec: dict[str, Any]) -> str | None:
    """``N+K`` for a component, None for any other job."""
    het = spec.get("het_job_id")
    return None if het is None else f"{het}+{spec.get('het_job_offset', 0)}"


def show_head(spec: dict[str, Any]) -> str:
    """What scontrol show job adds after JobId= for a component ("" for any other job)."""
    het = spec.get("het_job_id")
    return "" if het is None else f" HetJobId={het} HetJobOffset={spec.get('het_job_offset', 0)}"


def show_lines(spec: dict[str, Any]) -> list[str]:
    """scontrol show job's HetJobIdSet line of a component (none for any other job)."""
    het = spec.get("het_job_id")
    return [] if het is None else [f"HetJobIdSet={het}-{het + max(int(spec.get('het_size') or 1), 1) - 1}"]


def batch_flag(spec: dict[str, Any]) -> bool:
    """A batch job's, and every component's of a batch hetjob (they carry its script's name)."""
    return bool(spec.get("batch", True) or (spec.get("het_job_id") is not None and spec.get("command")))
