#!/usr/bin/env python3
"""End-to-end benchmark of a Slurm-compatible cluster, driven only through its commands.

Runs the same workload as ../shared/slurm-anchor/bench.sh against whichever implementation
lives in --bin-dir (real Slurm: /usr/bin; plurm: the Python bin dir) and whatever cluster
SLURM_CONF (or the implementation's default) points to:

  (a) sbatch latency: LATENCY_RUNS single submissions of a trivial script, timed one by one
  (b) end-to-end: JOBS sequential sbatch calls, then poll squeue until none is left
      (then sacct median latency over the finished jobs, if sacct works there)
  (c) squeue/sinfo median latency, empty and with the cluster full (every CPU running a
      `sleep` array task) plus JOBS held (-H) jobs pending
  (d) --array=1-ARRAY: time for sbatch to accept it and until every task has left squeue

Prints `name value unit` lines (like bench.sh) or, with --json, one JSON object. Every wait
is bounded by --timeout; a phase that times out reports the value `timeout` (null in JSON)
and the run continues. The benchmark's jobs (named bench<pid>_*) are cancelled at the end.
Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

CMD_TIMEOUT_S = 60.0  # one client command; a hung daemon must not hang the benchmark


def note(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


@dataclass
class Result:
    metrics: dict[str, tuple[float | int | None, str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def add(self, name: str, value: float | int | None, unit: str) -> None:
        self.metrics[name] = (value, unit)

    def fail(self, msg: str) -> None:
        note(f"ERROR: {msg}")
        self.errors.append(msg)


class Cluster:
    """Runs the client commands of one implementation with a fixed environment."""

    def __init__(self, bin_dir: str, env: dict[str, str], poll_s: float) -> None:
        self.bin_dir = os.path.abspath(bin_dir)
        self.env = env
        self.poll_s = poll_s
        self.user = pwd.getpwuid(os.getuid()).pw_name

    def run(self, cmd: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        # Absolute path: plurm's and Slurm's commands share names and both may be on PATH.
        argv = [os.path.join(self.bin_dir, cmd), *args]
        p = subprocess.run(argv, env=self.env, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=CMD_TIMEOUT_S)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} -> rc {p.returncode}: {p.stderr.strip()[:500]}")
        return p

    def timed(self, cmd: str, *args: str) -> float:
        """Wall seconds of one successful command (fork+exec included, as in bench.sh)."""
        t0 = time.perf_counter()
        self.run(cmd, *args)
        return time.perf_counter() - t0

    def median_latency(self, reps: int, cmd: str, *args: str) -> float:
        return statistics.median(self.timed(cmd, *args) for _ in range(reps))

    def count(self, name: str, *extra: str) -> int:
        # -r: one line per array task. A failing squeue raises instead of reading as "0 left".
        out = self.run("squeue", "-h", "-r", "-u", self.user, "-n", name, "-o", "%i", *extra).stdout
        return sum(1 for line in out.splitlines() if line.strip())

    def wait_count(self, name: str, want: int, timeout_s: float, *extra: str) -> bool:
        """Poll until `count(name, *extra)` == want (want=0: all gone); False on timeout."""
        deadline = time.monotonic() + timeout_s
        while self.count(name, *extra) != want:
            if time.monotonic() >= deadline:
                return False
            time.sleep(self.poll_s)
        return True

    def sbatch(self, *args: str) -> None:
        self.run("sbatch", "-Q", "-o", "/dev/null", *args)

    def cancel(self, name: str) -> None:
        self.run("scancel", "-u", self.user, "-n", name, check=False)


def total_cpus(c: Cluster) -> int:
    # %C is "allocated/idle/other/total" for the whole partition line(s).
    out = c.run("sinfo", "-h", "-o", "%C").stdout.split()
    return sum(int(tok.split("/")[3]) for tok in out)


def bench(c: Cluster, jobs: int, array: int, latency_runs: int, reps: int, timeout_s: float,
          fill: int | None) -> Result:
    r = Result()
    tag = f"bench{os.getpid()}"
    names = {k: f"{tag}_{k}" for k in ("lat", "e2e", "fill", "held", "array")}
    with tempfile.TemporaryDirectory(prefix="plurm-bench-") as tmp:
        true_sh = os.path.join(tmp, "true.sh")
        sleep_sh = os.path.join(tmp, "sleep.sh")
        for path, body in ((true_sh, "true"), (sleep_sh, "sleep 600")):
            with open(path, "w") as f:
                f.write(f"#!/bin/sh\n{body}\n")
            os.chmod(path, 0o755)
        try:
            _phases(c, r, names, true_sh, sleep_sh, jobs, array, latency_runs, reps, timeout_s, fill)
        except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError, IndexError) as e:
            r.fail(f"aborted: {e}")
        finally:
            for name in names.values():
                try:
                    c.cancel(name)
                except (subprocess.TimeoutExpired, OSError) as e:
                    r.fail(f"cleanup of {name}: {e}")
    return r


def _phases(c: Cluster, r: Result, names: dict[str, str], true_sh: str, sleep_sh: str, jobs: int,
            array: int, latency_runs: int, reps: int, timeout_s: float, fill: int | None) -> None:
    nodes = len(set(c.run("sinfo", "-h", "-N", "-o", "%N").stdout.split()))
    cpus = total_cpus(c)
    # Finished jobs kept by the controller (MinJobAge) slow squeue down: report them.
    records = len(c.run("squeue", "-h", "-r", "-t", "all", "-o", "%i").stdout.split())
    foreign = len(c.run("squeue", "-h", "-r", "-o", "%i").stdout.split())
    if foreign:
        note(f"warning: {foreign} jobs already queued; figures will be skewed")
    note(f"{c.bin_dir}: {nodes} nodes, {cpus} CPUs, host {os.cpu_count()} cores")
    r.add("ctld_job_records_at_start", records, "jobs")
    r.add("nodes", nodes, "count")
    r.add("cpus", cpus, "count")

    # ---- (a) latency of single submissions (the jobs run meanwhile; drained before (b))
    if latency_runs > 0:
        note(f"(a) {latency_runs} single sbatch calls")
        ts = [c.timed("sbatch", "-Q", "-J", names["lat"], "-o", "/dev/null", true_sh)
              for _ in range(latency_runs)]
        r.add("sbatch_mean_latency", round(1000 * statistics.fmean(ts), 2), "ms")
        r.add("sbatch_median_latency", round(1000 * statistics.median(ts), 2), "ms")
        if not c.wait_count(names["lat"], 0, timeout_s):
            r.fail(f"(a) jobs not finished after {timeout_s:.0f}s")
            c.cancel(names["lat"])

    # ---- (b) submission rate and end-to-end throughput
    if jobs > 0:
        note(f"(b) submitting {jobs} jobs")
        t0 = time.perf_counter()
        for _ in range(jobs):
            c.sbatch("-J", names["e2e"], true_sh)
        t1 = time.perf_counter()
        done = c.wait_count(names["e2e"], 0, timeout_s)
        t2 = time.perf_counter()
        r.add("sbatch_submit_rate", round(jobs / (t1 - t0), 1), "jobs/s")
        r.add("sbatch_submit_mean_latency", round(1000 * (t1 - t0) / jobs, 2), "ms")
        if done:
            r.add("e2e_total_time", round(t2 - t0, 2), "s")
            r.add("e2e_throughput", round(jobs / (t2 - t0), 1), "jobs/s")
            r.add("e2e_drain_after_last_submit", round(t2 - t1, 2), "s")
        else:
            r.fail(f"(b) {c.count(names['e2e'])} of {jobs} jobs left after {timeout_s:.0f}s")
            for k, u in (("e2e_total_time", "s"), ("e2e_throughput", "jobs/s"),
                         ("e2e_drain_after_last_submit", "s")):
                r.add(k, None, u)
            c.cancel(names["e2e"])
            c.wait_count(names["e2e"], 0, min(timeout_s, 60.0))
        # sacct over the finished jobs, where accounting works (real Slurm with jobcomp: rc 1)
        if os.access(os.path.join(c.bin_dir, "sacct"), os.X_OK):
            if c.run("sacct", "-n", "-X", "-o", "JobID,State", check=False).returncode == 0:
                r.add("sacct_median_latency",
                      round(1000 * c.median_latency(reps, "sacct", "-n", "-X", "-o", "JobID,State"), 2), "ms")
            else:
                note("sacct fails here (accounting disabled?): no sacct figure")

    # ---- (c) query latency, empty then full (all CPUs busy + `jobs` held pending)
    note("(c) squeue/sinfo latency")
    r.add("squeue_empty_median_latency", round(1000 * c.median_latency(reps, "squeue"), 2), "ms")
    r.add("sinfo_empty_median_latency", round(1000 * c.median_latency(reps, "sinfo"), 2), "ms")
    nfill = cpus if fill is None else fill
    if nfill > 0:
        c.sbatch("-J", names["fill"], f"--array=1-{nfill}", "-n1", sleep_sh)
    for _ in range(jobs):
        c.sbatch("-H", "-J", names["held"], true_sh)
    if nfill > 0 and not c.wait_count(names["fill"], nfill, min(timeout_s, 60.0), "-t", "R"):
        note(f"warning: only {c.count(names['fill'], '-t', 'R')} of {nfill} fill tasks running")
    r.add("ctld_job_records", len(c.run("squeue", "-h", "-r", "-t", "all", "-o", "%i").stdout.split()), "jobs")
    r.add("queue_running", len(c.run("squeue", "-h", "-r", "-t", "R", "-o", "%i").stdout.split()), "jobs")
    r.add("queue_pending", len(c.run("squeue", "-h", "-r", "-t", "PD", "-o", "%i").stdout.split()), "jobs")
    r.add("squeue_full_median_latency", round(1000 * c.median_latency(reps, "squeue"), 2), "ms")
    r.add("sinfo_full_median_latency", round(1000 * c.median_latency(reps, "sinfo"), 2), "ms")
    r.add("squeue_full_lines", len(c.run("squeue").stdout.splitlines()), "lines")
    c.cancel(names["held"])
    c.cancel(names["fill"])
    for k in ("held", "fill"):
        if not c.wait_count(names[k], 0, min(timeout_s, 120.0)):
            r.fail(f"(c) {k} jobs still queued after scancel")

    # ---- (d) one job array
    if array > 0:
        note(f"(d) array 1-{array}")
        t0 = time.perf_counter()
        c.sbatch("-J", names["array"], f"--array=1-{array}", true_sh)
        t1 = time.perf_counter()
        done = c.wait_count(names["array"], 0, timeout_s)
        t2 = time.perf_counter()
        r.add("array_accept_time", round(1000 * (t1 - t0), 1), "ms")
        if done:
            r.add("array_complete_time", round(t2 - t0, 2), "s")
            r.add("array_throughput", round(array / (t2 - t0), 1), "tasks/s")
        else:
            r.fail(f"(d) {c.count(names['array'])} of {array} tasks left after {timeout_s:.0f}s")
            r.add("array_complete_time", None, "s")
            r.add("array_throughput", None, "tasks/s")
    note("done")


def build_env(pairs: list[str]) -> dict[str, str]:
    """os.environ plus KEY=VAL overrides; `KEY=` (empty value) removes KEY."""
    env = dict(os.environ)
    for pair in pairs:
        key, sep, val = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--env wants KEY=VAL, got {pair!r}")
        if val:
            env[key] = val
        else:
            env.pop(key, None)
    return env


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin-dir", required=True, help="directory holding sbatch, squeue, sinfo, scancel (, sacct)")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VAL",
                    help="set (or with an empty VAL unset) a variable for the commands; repeatable")
    ap.add_argument("--jobs", type=int, default=500, help="jobs for (b) and held jobs for (c)")
    ap.add_argument("--array", type=int, default=1000, help="array size for (d); 0 skips it")
    ap.add_argument("--latency-runs", type=int, default=40, help="single submissions for (a)")
    ap.add_argument("--reps", type=int, default=21, help="calls per median in (c)")
    ap.add_argument("--fill", type=int, default=None,
                    help="running sleep tasks for (c) (default: every CPU, from sinfo %%C)")
    ap.add_argument("--poll", type=float, default=0.2, help="squeue poll interval (s)")
    ap.add_argument("--timeout", type=float, default=300.0, help="give up on any one wait after this (s)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    a = ap.parse_args(argv)

    env = build_env(a.env)
    missing = [cmd for cmd in ("sbatch", "squeue", "sinfo", "scancel")
               if not os.access(os.path.join(a.bin_dir, cmd), os.X_OK)]
    if missing:
        print(f"e2e: not executable in {a.bin_dir}: {', '.join(missing)}", file=sys.stderr)
        return 2
    c = Cluster(a.bin_dir, env, a.poll)
    t_start = time.time()
    r = bench(c, a.jobs, a.array, a.latency_runs, a.reps, a.timeout, a.fill)
    if a.json:
        print(json.dumps({
            "bin_dir": c.bin_dir,
            "slurm_conf": env.get("SLURM_CONF"),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_start)),
            "params": {"jobs": a.jobs, "array": a.array, "latency_runs": a.latency_runs,
                       "reps": a.reps, "timeout_s": a.timeout},
            "metrics": {k: {"value": v, "unit": u} for k, (v, u) in r.metrics.items()},
            "errors": r.errors,
        }, indent=1))
    else:
        for k, (v, u) in r.metrics.items():
            print(f"{k} {'timeout' if v is None else v} {u}")
    return 1 if r.errors else 0


if __name__ == "__main__":
    sys.exit(main())
