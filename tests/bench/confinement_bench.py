#!/usr/bin/env python3
"""What confinement costs: the same job arrays on a local cluster confined by cgroups and on one
tracked by process groups only, in one run (root only: nothing can be confined otherwise).

Both clusters are `plurm cluster up` clusters of the same shape in temporary directories; the
confined one is the root default (ProctrackType=proctrack/cgroup, TaskPlugin=task/cgroup,
cgroup.conf's ConstrainCores/RAMSpace/Devices), the other gets ProctrackType=proctrack/pgid and
TaskPlugin=task/none written over it before it starts.  Each submits `--array=1-N` of `true`
and waits until every task has left squeue; the clusters run one after the other, never at
once.  Then the cgroup library alone: a job's create + attach + kill_all + remove, on v1 and
on the v2 mount when there is one.  Prints `name value unit` lines and the ratios.

    python tests/bench/confinement_bench.py [--tasks 500] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _run(conf: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, SLURM_CONF=str(conf))
    return subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=120, check=False)


def _array_throughput(directory: Path, confined: bool, tasks: int) -> float:
    subprocess.run(["plurm", "cluster", "up", "--dir", str(directory), "--nodes", "4", "--cpus-per-node", "4"],
                   capture_output=True, text=True, timeout=120, check=True)
    conf = directory / "slurm.conf"
    if not confined:  # rewritten and restarted: the same cluster with process groups only
        subprocess.run(["plurm", "cluster", "down", "--dir", str(directory)], capture_output=True, timeout=120, check=True)
        text = conf.read_text().replace("ProctrackType=proctrack/cgroup", "ProctrackType=proctrack/pgid")
        conf.write_text(text.replace("TaskPlugin=task/cgroup,task/affinity", "TaskPlugin=task/none"))
        subprocess.run(["plurm", "cluster", "up", "--dir", str(directory)], capture_output=True, timeout=120, check=True)
    try:
        start = time.monotonic()
        sub = _run(conf, "sbatch", "--parsable", f"--array=1-{tasks}", "-o", "/dev/null", "--wrap", "true")
        if sub.returncode != 0:
            raise SystemExit(f"sbatch failed: {sub.stderr}")
        while _run(conf, "squeue", "-h", "-o", "%i").stdout.strip():
            time.sleep(0.05)
        return tasks / (time.monotonic() - start)
    finally:
        subprocess.run(["plurm", "cluster", "down", "--dir", str(directory)], capture_output=True, timeout=120)


def _library_ms(mountpoint: str, plugin: str, jobs: int) -> float | None:
    from plurm.nodeagent import cgroups

    conf = cgroups.CgroupConf(plugin=plugin, mountpoint=mountpoint, constrain_cores=True, constrain_ram=True)
    try:
        hierarchy = cgroups.open_hierarchy(conf, f"plurmbench_{os.getpid()}")
    except cgroups.Unavailable as exc:
        print(f"bench: {plugin} at {mountpoint}: {exc}", file=sys.stderr)
        return None
    limits = cgroups.Limits(cpus=sorted(os.sched_getaffinity(0))[:1], ram_bytes=64 << 20)
    start = time.monotonic()
    for job_id in range(1, jobs + 1):
        job = hierarchy.job(os.getuid(), job_id)
        job.create(limits)
        step = job.step("batch")
        step.create(limits)
        proc = subprocess.Popen(["sleep", "30"])
        step.attach(proc.pid)
        job.kill_all()
        proc.wait()
        job.remove()
    elapsed = time.monotonic() - start
    hierarchy.remove()
    return elapsed * 1000 / jobs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--library-jobs", type=int, default=100)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench: confinement needs root", file=sys.stderr)
        return 1
    rates: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        for confined in (False, True):
            with tempfile.TemporaryDirectory(prefix="plurm-confbench-") as tmp:
                rates[confined].append(_array_throughput(Path(tmp) / "c", confined, args.tasks))
    best = {k: max(v) for k, v in rates.items()}
    print(f"array_throughput_unconfined {best[False]:.0f} tasks/s")
    print(f"array_throughput_confined {best[True]:.0f} tasks/s")
    print(f"ratio_confined_over_unconfined {best[True] / best[False]:.2f}")
    v1 = _library_ms("/sys/fs/cgroup", "cgroup/v1", args.library_jobs)
    v2 = _library_ms("/sys/fs/cgroup/unified", "cgroup/v2", args.library_jobs) \
        if os.path.exists("/sys/fs/cgroup/unified/cgroup.procs") else None
    for name, value in (("v1", v1), ("v2", v2)):
        if value is not None:
            print(f"cgroup_job_cycle_{name} {value:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
