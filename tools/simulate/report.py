"""A run's outputs: jobs.csv, summary.json, the plots, and the side-by-side comparison.

matplotlib (the ``sim`` extra) is imported only when a plot is drawn, with the Agg
backend: the simulator runs on login nodes and in CI, where there is no display."""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Sequence
from typing import Any

from plurm.tools.simulate.metrics import (
    SimResult,
    binned,
    bounded_slowdown,
    queue_series,
    summary,
    utilization_series,
)

JOB_COLUMNS = ("job_id", "submit", "start", "end", "wait", "bounded_slowdown", "nodes")
COMPARE_ROWS = (
    ("jobs", "jobs", "{:.0f}"),
    ("utilization", "utilization", "{:.1%}"),
    ("wait_mean_s", "mean wait (s)", "{:.0f}"),
    ("wait_median_s", "median wait (s)", "{:.0f}"),
    ("wait_p95_s", "p95 wait (s)", "{:.0f}"),
    ("wait_max_s", "max wait (s)", "{:.0f}"),
    ("bounded_slowdown_mean", "mean bounded slowdown", "{:.2f}"),
    ("makespan_s", "makespan (s)", "{:.0f}"),
    ("jobs_per_s", "jobs simulated per s", "{:.0f}"),
)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.3f}"


def write_jobs_csv(path: str, result: SimResult) -> None:
    """One row per trace job, in trace order; a job that never ran has empty times."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(JOB_COLUMNS)
        for r in result.records:
            if r.start is None or r.end is None:
                writer.writerow([r.job_id, _num(r.submit), "", "", "", "", 0])
                continue
            wait = r.start - r.submit
            writer.writerow([r.job_id, _num(r.submit), _num(r.start), _num(r.end), _num(wait),
                             f"{bounded_slowdown(wait, r.end - r.start):.4f}", r.nodes])


def _clean(value: Any) -> Any:
    """JSON has no NaN: an undefined figure is null."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def write_summary(path: str, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(_clean(data), handle, indent=2, sort_keys=True)
        handle.write("\n")


def write_outputs(out_dir: str, result: SimResult, *, plots: bool = True, extra: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    """jobs.csv, summary.json and (unless ``plots`` is false) the PNG plots; returns the summary."""
    os.makedirs(out_dir, exist_ok=True)
    data = summary(result)
    data.update(extra or {})
    write_jobs_csv(os.path.join(out_dir, "jobs.csv"), result)
    write_summary(os.path.join(out_dir, "summary.json"), data)
    if plots:
        plot_run(out_dir, result, data["utilization"])  # PlotsUnavailable: after the files
    return data


# ---------------------------------------------------------------- plots

class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed: the files are written, the plots are not."""


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise PlotsUnavailable("no plots: matplotlib is not installed (pip install 'plurm[sim]', "
                               "or pass --no-plots)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _hours(times: Sequence[float]) -> list[float]:
    return [t / 3600.0 for t in times]


def _waits(result: SimResult) -> list[float]:
    return sorted(r.start - r.submit for r in result.finished)  # type: ignore[operator]


def _cdf(ax: Any, waits: list[float], label: str | None = None) -> None:
    if not waits:
        return
    # Waits span seconds to days: a log axis, with zero waits drawn at 1 s.
    xs = [max(w, 1.0) for w in waits]
    ys = [(k + 1) / len(xs) for k in range(len(xs))]
    ax.step(xs, ys, where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("wait (s, log; 0 drawn at 1 s)")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.01)
    ax.grid(True, alpha=0.3)


def plot_run(out_dir: str, result: SimResult, utilization: float | None = None, dpi: int = 80) -> list[str]:
    """utilization.png, queue.png, wait.png; returns their paths."""
    plt = _pyplot()
    paths = []
    times, util = binned(*utilization_series(result))
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.step(_hours(times), util, where="post", linewidth=0.8)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("CPUs allocated (mean per bin)")
    ax.set_ylim(0, 1.02)
    if utilization is not None:
        ax.set_title(f"utilization {utilization:.1%}" + (f" ({result.policy})" if result.policy else ""))
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    paths.append(os.path.join(out_dir, "utilization.png"))
    fig.savefig(paths[-1], dpi=dpi)
    plt.close(fig)
    times, queue = queue_series(result)
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.step(_hours(times), queue, where="post", linewidth=0.8)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("jobs waiting")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    paths.append(os.path.join(out_dir, "queue.png"))
    fig.savefig(paths[-1], dpi=dpi)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    _cdf(ax, _waits(result))
    ax.set_title("wait distribution (CDF)")
    fig.tight_layout()
    paths.append(os.path.join(out_dir, "wait.png"))
    fig.savefig(paths[-1], dpi=dpi)
    plt.close(fig)
    return paths


def plot_compare(path: str, results: Sequence[SimResult], dpi: int = 80) -> str:
    """One figure: the wait CDFs and the utilization and queue over time of every run."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for result in results:
        label = result.policy or "run"
        _cdf(axes[0], _waits(result), label)
        times, util = binned(*utilization_series(result))
        axes[1].step(_hours(times), util, where="post", linewidth=0.9, label=label)
        times, queue = queue_series(result)
        axes[2].step(_hours(times), queue, where="post", linewidth=0.7, label=label)
    axes[0].set_title("wait distribution (CDF)")
    axes[1].set(title="utilization (mean per bin)", xlabel="time (h)", ylabel="CPUs allocated", ylim=(0, 1.02))
    axes[2].set(title="queue", xlabel="time (h)", ylabel="jobs waiting")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- comparison

def compare_table(summaries: Sequence[dict[str, Any]], names: Sequence[str]) -> str:
    """A plain-text table, one column per run."""
    header = ["", *names]
    rows = [header]
    for key, label, fmt in COMPARE_ROWS:
        row = [label]
        for data in summaries:
            value = data.get(key)
            row.append("-" if value is None else fmt.format(value))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for k, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
