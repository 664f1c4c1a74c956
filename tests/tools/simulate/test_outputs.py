"""The run's files: jobs.csv's columns, summary.json's figures, the plots, a comparison."""

from __future__ import annotations

import csv
import json

import pytest

from plurm.tools.simulate import cli, metrics

SUMMARY_KEYS = {"utilization", "wait_mean_s", "wait_median_s", "wait_p95_s", "bounded_slowdown_mean", "makespan_s",
                "jobs_per_s", "jobs", "skipped"}


def test_jobs_csv_and_summary(tiny_trace, tmp_path):
    out = tmp_path / "out"
    assert cli.main([str(tiny_trace), "--out", str(out), "--no-plots", "--no-progress"]) == 0
    with open(out / "jobs.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["job_id", "submit", "start", "end", "wait", "bounded_slowdown", "nodes"]
    by_id = {int(r["job_id"]): r for r in rows}
    assert set(by_id) == {1, 2, 3, 4, 5}  # job 6 was cancelled before it ran
    # Default cluster: the header's 2 nodes x (8 / 2) CPUs; sched/backfill.
    assert by_id[1]["start"] == "0" and by_id[1]["end"] == "100" and by_id[1]["nodes"] == "2"
    # Job 2 (4 CPUs from 10) starts when job 1 ends; waited 90 s for a 50 s run.
    assert by_id[2]["start"] == "100" and by_id[2]["wait"] == "90"
    assert float(by_id[2]["bounded_slowdown"]) == pytest.approx(140 / 50)
    summary = json.loads((out / "summary.json").read_text())
    assert SUMMARY_KEYS <= set(summary)
    assert summary["jobs"] == 5 and summary["skipped"] == 1
    assert summary["skipped_by_reason"] == {"cancelled_before_start": 1}
    waits = sorted(float(r["wait"]) for r in rows)
    assert summary["wait_mean_s"] == pytest.approx(sum(waits) / 5)
    assert summary["wait_median_s"] == pytest.approx(waits[2])
    procs = {1: 8, 2: 4, 3: 2, 4: 4, 5: 1}
    used = sum(procs[j] * (float(r["end"]) - float(r["start"])) for j, r in by_id.items())
    last_end = max(float(r["end"]) for r in rows)
    assert summary["makespan_s"] == last_end
    assert summary["utilization"] == pytest.approx(used / (8 * last_end))


def test_plots_are_written(tiny_trace, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    assert cli.main([str(tiny_trace), "--out", str(out), "--no-progress"]) == 0
    for name in ("utilization.png", "queue.png", "wait.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_two_policies(tiny_trace, tmp_path, capsys):
    from simhelpers import conf_text

    a, b = tmp_path / "builtin.conf", tmp_path / "backfill.conf"
    a.write_text(conf_text(2, 4, "SchedulerType=sched/builtin\n"))
    b.write_text(conf_text(2, 4, "SchedulerType=sched/backfill\n"))
    out = tmp_path / "cmp"
    assert cli.main([str(tiny_trace), "--compare", str(a), str(b), "--out", str(out), "--no-plots",
                     "--no-progress"]) == 0
    table = capsys.readouterr().out
    assert "builtin" in table and "backfill" in table and "mean bounded slowdown" in table
    data = json.loads((out / "compare.json").read_text())
    assert set(data["runs"]) == {"builtin", "backfill"}
    assert (out / "builtin" / "jobs.csv").exists() and (out / "backfill" / "summary.json").exists()
    # Backfill lets job 3 (2 CPUs) and job 5 run beside job 2: no job waits longer.
    assert data["runs"]["backfill"]["wait_mean_s"] <= data["runs"]["builtin"]["wait_mean_s"]


def test_generated_workload_and_saved_trace(tmp_path):
    out, saved = tmp_path / "gen", tmp_path / "gen.swf"
    assert cli.main(["--generate", "50", "--nodes", "8", "--cpus-per-node", "4", "--seed", "2",
                     "--save-trace", str(saved), "--out", str(out), "--no-plots", "--no-progress"]) == 0
    assert "; MaxNodes: 8" in saved.read_text() and "; MaxProcs: 32" in saved.read_text()
    assert json.loads((out / "summary.json").read_text())["jobs"] == 50


def test_argument_errors(tiny_trace, tmp_path, capsys):
    assert cli.main(["--out", str(tmp_path)]) == 2
    assert "give a trace or --generate" in capsys.readouterr().err
    assert cli.main([str(tiny_trace), "--generate", "5", "--out", str(tmp_path)]) == 2
    assert cli.main([str(tmp_path / "missing.swf"), "--out", str(tmp_path)]) == 1
    assert "missing.swf" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main([str(tiny_trace), "--conf", "a.conf", "--compare", "a.conf", "b.conf"])


def test_percentile_and_bounded_slowdown():
    assert metrics.percentile([1, 2, 3, 4], 50) == 2.5
    assert metrics.percentile([5], 95) == 5
    assert metrics.bounded_slowdown(0, 100) == 1.0
    assert metrics.bounded_slowdown(90, 1) == pytest.approx(9.1)  # a 1 s run counts as 10 s
    assert metrics.bounded_slowdown(90, 50) == pytest.approx(140 / 50)


def test_binned_means_of_a_step_function():
    assert metrics.binned([0, 10, 20], [1.0, 0.0, 0.0], bins=4) == ([0.0, 5.0, 10.0, 15.0], [1.0, 1.0, 0.0, 0.0])
    edges, means = metrics.binned([0, 3, 20], [1.0, 2.0, 0.0], bins=4)
    assert means == pytest.approx([1.4, 2.0, 2.0, 2.0])
    # Many steps over bins whose edges are not exact in binary: each step lands once.
    times = [k * 0.1 for k in range(1001)]
    edges, means = metrics.binned(times, [1.0] * 1001, bins=7)
    assert means == pytest.approx([1.0] * 7)


def test_without_matplotlib_the_files_are_still_written(tiny_trace, tmp_path, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    out = tmp_path / "out"
    assert cli.main([str(tiny_trace), "--out", str(out), "--no-progress"]) == 0
    assert "matplotlib is not installed" in capsys.readouterr().err
    assert (out / "jobs.csv").exists() and (out / "summary.json").exists()
    assert not (out / "utilization.png").exists()


@pytest.mark.parametrize("header, args, nodes, cpus", [
    ("; MaxNodes: 4\n; MaxProcs: 32\n", [], 4, 32),            # the header's shape: 4 x 8
    ("; MaxProcs: 12\n", [], 12, 12),                            # no MaxNodes: one CPU per node
    ("", [], 6, 6),                                              # no header: the widest job's size
    ("; MaxNodes: 4\n; MaxProcs: 32\n", ["--nodes", "2", "--cpus-per-node", "3"], 2, 6),
])
def test_the_default_cluster_follows_the_header(tmp_path, header, args, nodes, cpus):
    from simhelpers import swf_line

    trace = tmp_path / "t.swf"
    trace.write_text(header + swf_line(1, 0, 6, 10, 60) + "\n" + swf_line(2, 5, 1, 10, 60) + "\n")
    out = tmp_path / "o"
    assert cli.main([str(trace), "--out", str(out), "--no-plots", "--no-progress", *args]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["nodes"], summary["cpus"]) == (nodes, cpus)
