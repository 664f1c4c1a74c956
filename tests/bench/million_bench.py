#!/usr/bin/env python3
"""A million jobs in the controller (issue 17 item 3): memory, submission, squeue, sacct at that
size, beside the real Slurm with slurmdbd at the size it can hold.

  python tests/bench/million_bench.py [--jobs 1000000] [--finished 0.5] [--plurm-conf SLURM_CONF]
                                      [--slurm-jobs 9000] [--no-slurm] [--json]

Without ``--plurm-conf`` it starts a 2-node local cluster of its own (``plurm cluster up`` in a
temporary folder, ``MinJobAge`` as given by ``--min-job-age``) and stops it after.

The mix (``--jobs`` N, ``--finished`` F): first ``F*N`` jobs are submitted held with
``plurm.api.submit_many`` (10,000 per call) and each call's jobs cancelled at once (one
``cancel_job`` naming them): CANCELLED records the core finishes honestly, written to the
accounting table by the same commit as any cancel; they leave the controller's memory after
MinJobAge. Then ``(1-F)*N`` jobs are submitted held and stay queued.  Measured, in one run:

* the controller's resident memory (psutil, RSS of plurmctld) before, after the fill, and after the
  finished records' MinJobAge (``--min-job-age`` seconds; 0 skips the wait), and bytes per job;
* submission at that size: ``--sbatch`` sequential ``sbatch --hold`` processes (mean ms) and one
  more ``submit_many`` of 10,000 (jobs/s);
* ``squeue`` (every job listed, to /dev/null) and ``squeue -j ID`` (mean of ``--reps``);
* ``sacct -j ID`` of a finished job and ``sacct -S T1 -E T2`` over one cancel batch's window
  (mean of ``--reps``, rows counted).

The real Slurm (``PATH=/usr/sbin:/usr/bin:/sbin:/bin``, slurmdbd + MariaDB) gets the same steps
at the size its MaxJobCount allows: ``--slurm-jobs`` held ``sbatch`` jobs named ``scale_*`` for
squeue and sbatch, then cancelled (so slurmdbd holds that many more finished records) for
sacct; every job it submitted is cancelled at the end.  Ratios are plurm/Slurm time (lower is
plurm faster) from this one run; the sizes differ, and the table says so.
Standard library, psutil and plurm.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
SLURM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
CHUNK = 10_000


def _cmd(name: str) -> list[str]:
    path = BIN / name
    return [str(path)] if path.exists() else [sys.executable, "-m", f"plurm.tools.{name}"]


def _timed(argv: list[str], env: dict[str, str], reps: int) -> tuple[float, int]:
    """Mean wall time (ms) of ``reps`` runs of argv, and the lines the last one printed."""
    times, lines = [], 0
    for _ in range(reps):
        t0 = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, check=False)
        times.append((time.perf_counter() - t0) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"{argv}: rc {done.returncode}: {done.stderr.decode()[:300]}")
        lines = done.stdout.count(b"\n")
    return statistics.mean(times), lines


def _window(t1: float, t2: float) -> list[str]:
    fmt = "%Y-%m-%dT%H:%M:%S"
    # (whole seconds: both sacct read local time to the second; widen by one on each side)
    return ["-S", time.strftime(fmt, time.localtime(t1 - 1)), "-E", time.strftime(fmt, time.localtime(t2 + 1))]


def _rss(pid: int) -> int:
    import psutil

    return int(psutil.Process(pid).memory_info().rss)


def _ctld_pid(conf: str) -> int:
    for line in Path(conf).read_text().splitlines():
        if line.startswith("SlurmctldPidFile="):
            return int(Path(line.split("=", 1)[1].strip()).read_text().split()[0])
    raise RuntimeError(f"{conf}: no SlurmctldPidFile")


def _submit_all(client: Any, body: dict[str, Any], count: int) -> list[int]:
    """``count`` copies of body by submit_many; entries refused as busy (admission.py) retried."""
    ids: list[int] = []
    todo = count
    from plurm.wire.client import ClientError

    for _ in range(600):
        try:
            results = client.submit_many([body] * todo)
        except ClientError as exc:  # the whole message refused as busy: nothing recorded, retry
            if "temporarily unavailable" not in str(exc):
                raise
            time.sleep(0.2)
            continue
        ids.extend(r.job_id for r in results if r.error is None and r.job_id is not None)
        errors = [r.error for r in results if r.error is not None]
        if any("temporarily unavailable" not in str(e) for e in errors):
            raise RuntimeError(f"submit_many: {errors[:3]}")
        todo = len(errors)
        if not todo:
            return ids
        time.sleep(0.2)
    raise RuntimeError(f"submit_many: {todo} still refused as busy")


def measure_plurm(conf: str, jobs: int, finished: float, min_job_age: float, sbatch_runs: int,
                  reps: int) -> dict[str, Any]:
    from plurm import api

    env = dict(os.environ, SLURM_CONF=conf)
    small = {k: env[k] for k in ("PATH", "HOME", "USER", "SLURM_CONF") if k in env}
    tag = f"scale{os.getpid()}"
    pid = _ctld_pid(conf)
    fig: dict[str, Any] = {"jobs": jobs, "rss_start": _rss(pid)}
    n_done = int(jobs * finished)
    n_queued = jobs - n_done
    body = api.prepare(wrap="true", args=["--hold", "-J", f"{tag}_f", "-o", "/dev/null"], environ=small)
    queued_body = dict(body, spec=dict(body["spec"], name=f"{tag}_q"))
    windows: list[tuple[float, float]] = []
    finished_ids: list[int] = []
    t_fill = time.perf_counter()
    with api.Client(conf, timeout=600) as client:
        batches = list(range(0, n_done, CHUNK))
        middle = len(batches) // 2
        for k, start in enumerate(batches):
            count = min(CHUNK, n_done - start)
            if k == middle:
                time.sleep(2.5)  # the middle batch's window holds that batch alone (whole seconds)
            t1 = time.time()
            ids = [str(i) for i in _submit_all(client, body, count)]
            client.request("cancel_job", {"job_ids": ids})
            windows.append((t1, time.time()))
            finished_ids.append(int(ids[len(ids) // 2]))
            if k == middle:
                time.sleep(2.5)
        fig["fill_finished_s"] = time.perf_counter() - t_fill
        t_q = time.perf_counter()
        queued_ids: list[int] = []
        for start in range(0, n_queued, CHUNK):
            count = min(CHUNK, n_queued - start)
            queued_ids.append(_submit_all(client, queued_body, count)[-1])
        fig["fill_queued_s"] = time.perf_counter() - t_q
        fig["fill_jobs_per_s"] = jobs / (time.perf_counter() - t_fill)
        time.sleep(2)  # a tick and a pass after the last batch
        fig["rss_filled"] = _rss(pid)
        # Finished records stay in memory for MinJobAge after their end (0: not known, count all).
        now = time.time()
        fig["in_memory_filled"] = n_queued + sum(
            min(CHUNK, n_done - k * CHUNK) for k, (_t1, t2) in enumerate(windows)
            if not min_job_age or now - t2 <= min_job_age)
        fig.update(_plurm_queries(client, env, tag, finished_ids, windows, queued_ids, sbatch_runs, reps))
        if min_job_age > 0 and n_done:
            wait = max(0.0, windows[-1][1] + min_job_age + 3 - time.time())
            time.sleep(wait)
            fig["rss_after_purge"] = _rss(pid)
            fig["in_memory_after_purge"] = n_queued + fig.get("extra_queued", 0)
            fig.update({f"{k}_after_purge": v for k, v in _plurm_sacct(env, finished_ids, windows, reps).items()})
        client.request("cancel_job", {"names": [f"{tag}_q", f"{tag}_s"]})
    fig["bytes_per_job_filled"] = (fig["rss_filled"] - fig["rss_start"]) / max(1, fig["in_memory_filled"])
    if "rss_after_purge" in fig:
        fig["bytes_per_queued_job"] = (fig["rss_after_purge"] - fig["rss_start"]) / max(1, fig["in_memory_after_purge"])
    return fig


def _plurm_queries(client: Any, env: dict[str, str], tag: str, finished_ids: list[int],
                   windows: list[tuple[float, float]], queued_ids: list[int], sbatch_runs: int,
                   reps: int) -> dict[str, Any]:
    fig: dict[str, Any] = {}
    t0 = time.perf_counter()
    for _ in range(sbatch_runs):
        subprocess.run(_cmd("sbatch") + ["--hold", "-J", f"{tag}_s", "-o", "/dev/null", "--wrap", "true"],
                       env=env, check=True, capture_output=True)
    fig["sbatch_ms"] = (time.perf_counter() - t0) / max(1, sbatch_runs) * 1000
    t0 = time.perf_counter()
    extra = _submit_all(client, client_body(client, tag), CHUNK)
    fig["submit_many_jobs_per_s"] = CHUNK / (time.perf_counter() - t0)
    fig["extra_queued"] = sbatch_runs + CHUNK
    fig["squeue_ms"], fig["squeue_lines"] = _timed(_cmd("squeue"), env, max(1, reps // 3))
    probe = str(queued_ids[len(queued_ids) // 2]) if queued_ids else str(extra[0])
    fig["squeue_j_ms"], _ = _timed(_cmd("squeue") + ["-j", probe], env, reps)
    fig.update(_plurm_sacct(env, finished_ids, windows, reps))
    return fig


def client_body(client: Any, tag: str) -> dict[str, Any]:
    from plurm import api

    env = {k: os.environ[k] for k in ("PATH", "HOME", "USER") if k in os.environ}
    return api.prepare(wrap="true", args=["--hold", "-J", f"{tag}_q", "-o", "/dev/null"], environ=env)


def _plurm_sacct(env: dict[str, str], finished_ids: list[int], windows: list[tuple[float, float]],
                 reps: int) -> dict[str, Any]:
    if not finished_ids:
        return {}
    fig: dict[str, Any] = {}
    probe = finished_ids[len(finished_ids) // 2]  # (the middle batch's)
    fig["sacct_j_ms"], fig["sacct_j_lines"] = _timed(_cmd("sacct") + ["-X", "-n", "-j", str(probe)], env, reps)
    t1, t2 = windows[len(windows) // 2]
    fig["sacct_window_ms"], fig["sacct_window_lines"] = _timed(
        _cmd("sacct") + ["-X", "-n", "-a", *_window(t1, t2)], env, max(1, reps // 3))
    return fig


def measure_slurm(jobs: int, sbatch_runs: int, reps: int) -> dict[str, Any]:
    """The real Slurm: ``jobs`` held jobs (squeue, sbatch at that size), then cancelled (sacct)."""
    env = dict(os.environ, PATH=SLURM_PATH)
    name = f"scale_{os.getpid()}"
    fig: dict[str, Any] = {"jobs": jobs}
    ids: list[str] = []
    try:
        t0 = time.perf_counter()
        for _ in range(jobs):
            done = subprocess.run(["sbatch", "--parsable", "--hold", "-J", name, "-o", "/dev/null", "--wrap", "true"],
                                  env=env, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                fig["fill_error"] = done.stderr.strip()[:200]
                break
            ids.append(done.stdout.strip().split(";")[0])
        fig["jobs"] = len(ids)
        fig["fill_jobs_per_s"] = len(ids) / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(sbatch_runs):
            done = subprocess.run(["sbatch", "--parsable", "--hold", "-J", name, "-o", "/dev/null", "--wrap", "true"],
                                  env=env, capture_output=True, text=True, check=True)
            ids.append(done.stdout.strip())
        fig["sbatch_ms"] = (time.perf_counter() - t0) / max(1, sbatch_runs) * 1000
        fig["squeue_ms"], fig["squeue_lines"] = _timed(["squeue"], env, max(1, reps // 3))
        fig["squeue_j_ms"], _ = _timed(["squeue", "-j", ids[len(ids) // 2]], env, reps)
        t1 = time.time()
        subprocess.run(["scancel", "-n", name], env=env, check=False)
        t2 = time.time()
        time.sleep(5)  # slurmdbd takes the records from slurmctld's queue
        fig["sacct_j_ms"], fig["sacct_j_lines"] = _timed(["sacct", "-X", "-n", "-j", ids[len(ids) // 2]], env, reps)
        fig["sacct_window_ms"], fig["sacct_window_lines"] = _timed(
            ["sacct", "-X", "-n", "-a", *_window(t1, t2)], env, max(1, reps // 3))
        fig["sacct_records"] = _timed(["sacct", "-X", "-n", "-a", "-S", "2020-01-01", "-E", "now", "-o", "jobid"],
                                      env, 1)[1]
    finally:
        subprocess.run(["scancel", "-n", name], env=env, check=False, capture_output=True)
    return fig


ROWS = [("sbatch --hold, one job", "sbatch_ms", "ms"), ("squeue, every job", "squeue_ms", "ms"),
        ("squeue -j ID", "squeue_j_ms", "ms"), ("sacct -j ID", "sacct_j_ms", "ms"),
        ("sacct -S -E (one batch's window)", "sacct_window_ms", "ms")]


def report(plurm: dict[str, Any], slurm: dict[str, Any] | None) -> str:
    lines = [(f"plurm: {plurm['jobs']:,} jobs ({plurm['in_memory_filled']:,} in memory after the fill, the rest "
              f"only in accounting), filled at {plurm['fill_jobs_per_s']:,.0f} jobs/s"),
             (f"plurmctld RSS: start {plurm['rss_start'] / 2**20:,.0f} MiB, "
              f"filled {plurm['rss_filled'] / 2**20:,.0f} MiB ({plurm['bytes_per_job_filled']:,.0f} B per job in memory)")]
    if "rss_after_purge" in plurm:
        lines.append(f"plurmctld RSS after MinJobAge: {plurm['rss_after_purge'] / 2**20:,.0f} MiB "
                     f"({plurm['bytes_per_queued_job']:,.0f} B per queued job)")
    lines.append(f"submit_many of {CHUNK:,} at that size: {plurm['submit_many_jobs_per_s']:,.0f} jobs/s")
    if slurm:
        lines.append(f"Slurm: {slurm['jobs']:,} held jobs (MaxJobCount), "
                     f"{slurm.get('sacct_records', 0):,} jobs eligible since 2020 in slurmdbd (held ones never were); "
                     f"{slurm.get('fill_error', '')}")
    lines.append(f"{'':36} {'plurm':>10} {'Slurm':>10} {'ratio':>7}")
    for label, key, unit in ROWS:
        mine = plurm.get(key)
        theirs = (slurm or {}).get(key)
        ratio = f"{mine / theirs:6.2f}x" if mine and theirs else ""
        extra = ""
        if key.endswith(("squeue_ms", "window_ms", "sacct_j_ms")):
            lines_key = key.replace("_ms", "_lines")
            extra = f"  (rows {plurm.get(lines_key)} / {(slurm or {}).get(lines_key)})"
        lines.append(f"{label:36} {mine or 0:8.1f}{unit} {theirs or 0:8.1f}{unit} {ratio:>7}{extra}")
    for key in ("sacct_j_ms_after_purge", "sacct_window_ms_after_purge"):
        if key in plurm:
            lines.append(f"plurm {key}: {plurm[key]:.1f} ms")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--finished", type=float, default=0.5, help="fraction finished (cancelled) jobs")
    parser.add_argument("--plurm-conf", help="an up cluster's slurm.conf (default: start one)")
    parser.add_argument("--min-job-age", type=float, default=30, help="MinJobAge of the cluster started")
    parser.add_argument("--slurm-jobs", type=int, default=9000)
    parser.add_argument("--no-slurm", action="store_true")
    parser.add_argument("--sbatch", type=int, default=20)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--from-json", help="print the table of an earlier --json run's output file")
    args = parser.parse_args(argv)
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        print(report(saved["plurm"], saved["slurm"]))
        return 0
    slurm = None if args.no_slurm else measure_slurm(args.slurm_jobs, args.sbatch, args.reps)
    if args.plurm_conf:
        plurm = measure_plurm(args.plurm_conf, args.jobs, args.finished, 0, args.sbatch, args.reps)
    else:
        with tempfile.TemporaryDirectory(prefix="millionbench") as tmp:
            directory = Path(tmp) / "cluster"
            subprocess.run(_cmd("plurm") + ["cluster", "up", "--dir", str(directory), "--nodes", "2"],
                           check=True, capture_output=True)
            try:
                conf = directory / "slurm.conf"
                text = conf.read_text()
                conf.write_text(text.replace("MinJobAge=300", f"MinJobAge={int(args.min_job_age)}"))
                subprocess.run(_cmd("scontrol") + ["reconfigure"], env=dict(os.environ, SLURM_CONF=str(conf)),
                               check=True, capture_output=True)
                plurm = measure_plurm(str(conf), args.jobs, args.finished, args.min_job_age, args.sbatch,
                                      args.reps)
            finally:
                subprocess.run(_cmd("plurm") + ["cluster", "down", "--dir", str(directory)], capture_output=True,
                               check=False)
    if args.json:
        print(json.dumps({"plurm": plurm, "slurm": slurm}))
    else:
        print(report(plurm, slurm))
    return 0


if __name__ == "__main__":
    sys.exit(main())
