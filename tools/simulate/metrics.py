"""What a simulated schedule measures: per-job waits and slowdowns, and the cluster's
utilization and queue over time.  Pure functions of the job records."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

BSLD_THRESHOLD_S = 10.0  # bounded slowdown: run times under 10 s count as 10 s (Feitelson's tau)


@dataclass(slots=True)
class JobRecord:
    """One trace job's fate.  Times are seconds from the trace's start; start and end are
    None for a job that never ran (refused at submission, or never scheduled)."""

    job_id: int           # the trace's job number
    submit: float
    procs: int            # processors asked for
    run: float            # the trace's run time
    limit_s: float | None  # the time limit it was submitted with
    user: int = -1
    start: float | None = None
    end: float | None = None
    nodes: int = 0
    cpus: int = 0         # CPUs allocated (sum over its nodes)
    state: str = "PENDING"

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.submit

    @property
    def ran(self) -> float | None:
        return None if self.start is None or self.end is None else self.end - self.start


def bounded_slowdown(wait: float, ran: float, threshold: float = BSLD_THRESHOLD_S) -> float:
    return max(1.0, (wait + ran) / max(ran, threshold))


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linear between the closest ranks (numpy's default)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass
class SimResult:
    """Everything one run produced; the engine fills it, report.py writes it."""

    records: list[JobRecord]
    total_cpus: int
    total_nodes: int
    policy: str = ""
    skipped: dict[str, int] = field(default_factory=dict)  # trace jobs not simulated: why -> count
    events: int = 0         # distinct event times the engine stepped through
    passes: int = 0         # scheduling passes (core.schedule calls)
    wall_s: float = 0.0     # wall-clock time of the run (measured by the caller)
    peak_rss_mb: float = 0.0

    @property
    def finished(self) -> list[JobRecord]:
        return [r for r in self.records if r.start is not None and r.end is not None]


def summary(result: SimResult) -> dict[str, Any]:
    done = result.finished
    waits = [r.start - r.submit for r in done]  # type: ignore[operator]
    bslds = [bounded_slowdown(r.start - r.submit, r.end - r.start) for r in done]  # type: ignore[operator]
    first = min((r.submit for r in result.records), default=0.0)
    last = max((r.end for r in done), default=first)  # type: ignore[type-var]
    makespan = max(last - first, 0.0)
    used = sum(r.cpus * (r.end - r.start) for r in done)  # type: ignore[operator]
    capacity = result.total_cpus * makespan
    skipped = dict(result.skipped)
    for r in result.records:
        if r.start is None:  # state "PENDING (Reason)": the core's reason
            key = "never_started" + (r.state[len("PENDING"):] if r.state.startswith("PENDING") else "")
            skipped[key] = skipped.get(key, 0) + 1
    states: dict[str, int] = {}
    for r in done:
        states[r.state] = states.get(r.state, 0) + 1
    return {
        "policy": result.policy,
        "jobs": len(done),
        "skipped": sum(skipped.values()),
        "skipped_by_reason": skipped,
        "states": states,
        "nodes": result.total_nodes,
        "cpus": result.total_cpus,
        "utilization": used / capacity if capacity > 0 else 0.0,
        "makespan_s": makespan,
        "wait_mean_s": sum(waits) / len(waits) if waits else 0.0,
        "wait_median_s": percentile(waits, 50) if waits else 0.0,
        "wait_p95_s": percentile(waits, 95) if waits else 0.0,
        "wait_max_s": max(waits, default=0.0),
        "bounded_slowdown_mean": sum(bslds) / len(bslds) if bslds else 0.0,
        "bounded_slowdown_threshold_s": BSLD_THRESHOLD_S,
        "wall_s": result.wall_s,
        "jobs_per_s": len(done) / result.wall_s if result.wall_s > 0 else None,
        "events": result.events,
        "passes": result.passes,
        "peak_rss_mb": result.peak_rss_mb,
    }


def step_series(changes: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """(times, values) of a step function from (time, delta) changes, one point per time."""
    changes.sort(key=lambda c: c[0])
    times: list[float] = []
    values: list[float] = []
    level = 0.0
    for t, delta in changes:
        level += delta
        if times and times[-1] == t:
            values[-1] = level
        else:
            times.append(t)
            values.append(level)
    return times, values


def utilization_series(result: SimResult) -> tuple[list[float], list[float]]:
    """Fraction of the cluster's CPUs allocated, over time."""
    changes: list[tuple[float, float]] = []
    for r in result.finished:
        changes.append((r.start, r.cpus))  # type: ignore[arg-type]
        changes.append((r.end, -r.cpus))  # type: ignore[arg-type]
    times, busy = step_series(changes)
    total = max(result.total_cpus, 1)
    return times, [b / total for b in busy]


def queue_series(result: SimResult) -> tuple[list[float], list[float]]:
    """Jobs waiting (submitted, not started), over time."""
    changes: list[tuple[float, float]] = []
    for r in result.records:
        changes.append((r.submit, 1))
        if r.start is not None:
            changes.append((r.start, -1))
    return step_series(changes)


def binned(times: list[float], values: list[float], bins: int = 120) -> tuple[list[float], list[float]]:
    """A step function's time-weighted mean over ``bins`` equal intervals of its span
    (left edges, means): readable where the raw steps are a blur."""
    if len(times) < 2 or times[-1] <= times[0]:
        return list(times), list(values)
    start, end = times[0], times[-1]
    width = (end - start) / bins
    edges = [start + i * width for i in range(bins)] + [end]
    sums = [0.0] * bins
    index = 0
    for k in range(len(times) - 1):
        a, b, v = times[k], times[k + 1], values[k]
        # Walk the bins this step covers by index (edges are fixed numbers: no float drift).
        while index < bins - 1 and edges[index + 1] <= a:
            index += 1
        j = index
        while a < b:
            edge = min(b, edges[j + 1]) if j < bins - 1 else b
            sums[j] += v * (edge - a)
            a = edge
            j += 1
    return edges[:-1], [total / width for total in sums]
