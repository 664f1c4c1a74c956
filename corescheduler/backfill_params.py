"""sched/backfill's SchedulerParameters (slurm.conf), as the backfill cycle reads them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackfillParams:
    """SchedulerParameters of sched/backfill (Slurm's names and defaults)."""

    window_min: int = 1440  # bf_window: how far ahead to plan, minutes
    resolution_s: int = 60  # bf_resolution: granularity of the plan, seconds
    max_job_test: int = 500  # bf_max_job_test: jobs tested per cycle
    max_job_start: int = 0  # bf_max_job_start: jobs started per cycle (0: no limit)
    max_job_array_resv: int = 20  # bf_max_job_array_resv: reserved tasks per array
    bf_continue: bool = False  # resume a cycle after a yield instead of restarting it
    interval_s: int = 30  # bf_interval: seconds between cycles (the controller's clock, not ours)
    # Sans-IO stand-in for bf_yield_interval: return to the caller (with a
    # cursor) after testing this many jobs, so the controller can serve
    # requests; 0 runs the whole cycle in one call.
    yield_jobs: int = 0

    @classmethod
    def from_scheduler_parameters(cls, text: str | None) -> BackfillParams:
        """Parse slurm.conf's SchedulerParameters (unknown words are other plugins')."""
        names = {"bf_window": "window_min", "bf_resolution": "resolution_s",
                 "bf_max_job_test": "max_job_test", "bf_max_job_start": "max_job_start",
                 "bf_max_job_array_resv": "max_job_array_resv", "bf_interval": "interval_s"}
        values: dict[str, object] = {}
        for word in (text or "").split(","):
            key, _, value = word.strip().partition("=")
            if key == "bf_continue":
                values["bf_continue"] = True
            elif key in names and value.strip().lstrip("-").isdigit():
                values[names[key]] = int(value)
        params = cls(**values)  # type: ignore[arg-type]
        if params.window_min < 1 or params.resolution_s < 1 or params.max_job_test < 1:
            raise ValueError(f"invalid backfill parameters: {text}")
        return params
