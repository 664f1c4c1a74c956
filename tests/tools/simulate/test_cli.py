"""`plurm simulate` end to end, as a user runs it: a subprocess of `python -m plurm.tools.plurm`."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

from simhelpers import HEADER, swf_line


def plurm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "plurm.tools.plurm", "simulate", *args], capture_output=True,
                          text=True, timeout=120)


def test_simulate_a_trace(tiny_trace, tmp_path):
    out = tmp_path / "out"
    proc = plurm(str(tiny_trace), "--out", str(out), "--no-plots")
    assert proc.returncode == 0, proc.stderr
    assert "mean bounded slowdown" in proc.stdout and "utilization" in proc.stdout
    assert "jobs\n" not in proc.stderr  # no progress bar when stderr is not a terminal
    with open(out / "jobs.csv", newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 5
    assert json.loads((out / "summary.json").read_text())["skipped"] == 1


def test_progress_when_asked(tiny_trace, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "plurm.tools.plurm", "simulate", str(tiny_trace), "--out",
                           str(tmp_path / "o"), "--no-plots", "--progress"], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert b"\r" in proc.stderr and b"5/5 jobs" in proc.stderr  # redrawn in place


def test_a_malformed_trace_names_its_line(tmp_path):
    bad = tmp_path / "bad.swf"
    bad.write_text(HEADER.format(nodes=2, procs=8) + swf_line(1, 0, 4, 10, 60) + "\n1 2 3\n")
    proc = plurm(str(bad), "--out", str(tmp_path / "o"))
    assert proc.returncode == 1
    assert f"{bad}:4: expected 18 fields, found 3" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_bad_slurm_conf_is_an_error_not_a_crash(tiny_trace, tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n1 CPUs=notanumber\n")
    proc = plurm(str(tiny_trace), "--conf", str(conf), "--out", str(tmp_path / "o"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "slurm.conf" in proc.stderr


def test_jobs_that_cannot_run_are_counted_with_their_reason(tmp_path):
    trace = tmp_path / "t.swf"
    trace.write_text(HEADER.format(nodes=2, procs=8) + swf_line(1, 0, 4, 10, 60) + "\n" + swf_line(2, 0, 64, 10, 60)
                     + "\n")
    out = tmp_path / "o"
    proc = plurm(str(trace), "--out", str(out), "--no-plots")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs"] == 1 and summary["skipped"] == 1
    # 64 CPUs on an 8-CPU cluster: the core accepts the job, which waits for ever.
    assert summary["skipped_by_reason"] == {"never_started (PartitionConfig)": 1}
