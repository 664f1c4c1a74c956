#!/usr/bin/env python3
"""Bulk submission through the Python API against single submissions and sbatch processes
(issue 17 item 5: >= 10,000 jobs/s accepted and durable).

  python tests/bench/bulk_submit_bench.py [--jobs 10000] [--sbatch 200] [--conf SLURM_CONF] [--json]

Without ``--conf`` it starts a 2-node local cluster of its own (``plurm cluster up`` in a
temporary folder) and stops it after.  Every job is held (``--hold``: nothing runs), so the
figures are the controller's acceptance: a reply comes only after the store committed the
job (group commit, corescheduler/controller.py), so accepted means durable.  In one run:

* ``bulk``: ``--jobs`` prepared (a small environment each: PATH, HOME, USER, SLURM_CONF) submissions in one ``Client.submit_many`` call (one message,
  one turn, one commit), with idempotency keys; also the time to ``prepare`` them (sbatch's
  parser, client side) and the two together;
* ``single``: ``--jobs`` ``Client.submit`` calls over one connection, each its own request
  and commit (keys too);
* ``sbatch``: ``--sbatch`` sequential ``sbatch --hold --wrap true`` processes;

then checks that the controller holds every job it accepted and prints jobs/s and the
ratios bulk/single and bulk/sbatch.  Standard library and plurm only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def _cmd(name: str) -> list[str]:
    path = BIN / name
    return [str(path)] if path.exists() else [sys.executable, "-m", f"plurm.tools.{name}"]


def measure(conf: str, jobs: int, sbatch_runs: int) -> dict[str, float]:
    from plurm import api

    env = dict(os.environ, SLURM_CONF=conf)
    # The jobs' environment: a small one (sbatch --export=NONE sends none at all), so that the
    # figures are the controller's, not the copying of this shell's variables 10,000 times.
    small = {k: env[k] for k in ("PATH", "HOME", "USER", "SLURM_CONF") if k in env}
    tag = f"b{os.getpid()}"
    figures: dict[str, float] = {}
    with api.Client(conf, timeout=120) as client:
        t0 = time.perf_counter()
        first = api.prepare(wrap="true", args=["--hold", "-J", f"{tag}bulk"], environ=small)
        bodies = [dict(first, key=f"{tag}-bulk-{i}") for i in range(jobs)]  # one job shape, many keys
        t1 = time.perf_counter()
        parsed_each = [api.prepare(wrap="true", args=["--hold", "-J", f"{tag}p"], environ=small)
                       for _ in range(min(jobs, 1000))]  # sbatch's parser per job: its cost apart
        t2 = time.perf_counter()
        results = client.submit_many(bodies)
        t3 = time.perf_counter()
        assert all(r.error is None for r in results), [r.error for r in results if r.error][:3]
        figures["bulk_jobs_per_s"] = jobs / (t3 - t2)
        figures["bulk_with_copy_jobs_per_s"] = jobs / (t3 - t2 + t1 - t0)
        figures["prepare_each_ms"] = (t2 - t1) / len(parsed_each) * 1000

        t0 = time.perf_counter()
        for i in range(jobs):
            body = dict(first, key=f"{tag}-single-{i}")
            client.request("submit_job", body)
        t1 = time.perf_counter()
        figures["single_jobs_per_s"] = jobs / (t1 - t0)

        t0 = time.perf_counter()
        for _ in range(sbatch_runs):
            subprocess.run(_cmd("sbatch") + ["--hold", "-J", f"{tag}sb", "--wrap", "true", "-o", "/dev/null"],
                           env=env, check=True, capture_output=True)
        t1 = time.perf_counter()
        figures["sbatch_jobs_per_s"] = sbatch_runs / (t1 - t0)

        held = {j["spec"]["name"] for j in client.list_jobs(names=[f"{tag}bulk", f"{tag}sb"])}
        count = len(client.list_jobs(names=[f"{tag}bulk"]))  # (the single ones share the name)
        assert count == 2 * jobs and f"{tag}sb" in held, (count, jobs)
        client.request("cancel_job", {"names": [f"{tag}bulk", f"{tag}sb"]})  # tidy: what this run held
    figures["bulk_over_single"] = figures["bulk_jobs_per_s"] / figures["single_jobs_per_s"]
    figures["bulk_over_sbatch"] = figures["bulk_jobs_per_s"] / figures["sbatch_jobs_per_s"]
    figures["jobs"] = jobs
    figures["sbatch_runs"] = sbatch_runs
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--sbatch", type=int, default=200)
    parser.add_argument("--conf", help="an up cluster's slurm.conf (default: start one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.conf:
        figures = measure(args.conf, args.jobs, args.sbatch)
    else:
        with tempfile.TemporaryDirectory(prefix="bulkbench") as tmp:
            directory = Path(tmp) / "cluster"
            subprocess.run(_cmd("plurm") + ["cluster", "up", "--dir", str(directory), "--nodes", "2"],
                           check=True, capture_output=True)
            try:
                figures = measure(str(directory / "slurm.conf"), args.jobs, args.sbatch)
            finally:
                subprocess.run(_cmd("plurm") + ["cluster", "down", "--dir", str(directory)], capture_output=True)
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"bulk: one submit_many of {args.jobs} jobs      {figures['bulk_jobs_per_s']:10.0f} jobs/s")
        print(f"bulk incl. building the bodies              {figures['bulk_with_copy_jobs_per_s']:10.0f} jobs/s")
        print(f"prepare (sbatch's parser) per job           {figures['prepare_each_ms']:10.3f} ms")
        print(f"single: {args.jobs} submit calls, one connection {figures['single_jobs_per_s']:10.0f} jobs/s")
        print(f"sbatch: {args.sbatch} processes                    {figures['sbatch_jobs_per_s']:10.1f} jobs/s")
        print(f"ratio bulk/single {figures['bulk_over_single']:.1f}x, bulk/sbatch {figures['bulk_over_sbatch']:.0f}x")
    return 0


def test_bulk_submit_bench() -> None:  # (pytest -m bench tests/bench/bulk_submit_bench.py)
    assert main(["--jobs", "10000", "--sbatch", "100"]) == 0


try:
    import pytest

    test_bulk_submit_bench = pytest.mark.bench(test_bulk_submit_bench)
except ImportError:  # (a script first: the standard library suffices)
    pass

if __name__ == "__main__":
    sys.exit(main())
