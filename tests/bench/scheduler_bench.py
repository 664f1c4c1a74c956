#!/usr/bin/env python3
"""Time one full scheduling pass (main pass + backfill) on a big synthetic cluster.

  python tests/bench/scheduler_bench.py [--nodes 10000 --jobs 100000] [--json] [--profile]

Builds a busy cluster (nodes of a few sizes, overlapping CPU partitions, many
jobs already running with ends spread over the next two days) and a pending
queue (small and wide jobs, whole-node jobs, array tasks, time limits from 10
minutes to 2 days).  Then times, in a fresh process each:

* ``main``: Scheduler.schedule over the whole queue (sched/builtin);
* ``backfill_all``: the main pass, then plan_backfill over every pending job;
* ``backfill_500``: the main pass, then plan_backfill with bf_max_job_test=500
  (Slurm's default cap on the jobs one cycle looks at);
* ``priority``: priority/multifactor over every pending job at once (what each
  PriorityCalcPeriod does), with fair share and QOS factors per account;
* ``core``: the same queue through the whole scheduling core (``ClusterCore.schedule``:
  eligibility, the main pass, a backfill cycle with bf_max_job_test=500, preemption
  checks, starts with their launch messages), as the controller runs it.

on the compiled kernels and on the pure-Python twins (PLURM_NO_EXTENSIONS=1 in
a subprocess, since plurm.corescheduler chooses its kernels at first import),
and prints the times, the pure/compiled ratio, each run's peak RSS and a digest of
the decisions (starts, planned starts, reasons); it fails when the twins' digests differ.  With no
--nodes/--jobs it runs 10,000 nodes x 100,000 jobs and 1,000 x 10,000.
``--json`` prints one object: compiled_s, pure_s, ratio, peak_rss_mb (the first
case's full pass) and every figure under ``cases``.  ``--profile`` prints where
the compiled pass spends its time (cProfile).  Standard library and plurm only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
NOW = 1_800_000_000.0
LIMITS = [10, 30, 60, 120, 240, 720, 1440, 2880]  # minutes
SIZES = [(32, 128_000, 1), (64, 256_000, 2), (128, 512_000, 3)]  # cpus, MB, Weight


def build(nodes: int, jobs: int, seed: int) -> tuple[Any, list, list]:
    """(scheduler, running jobs, pending (job, demand) in priority order)."""
    from plurm.wire.model import Job, JobSpec, Node, Partition
    from plurm.corescheduler.scheduler import Allocation, Scheduler, demand_of

    rng = random.Random(seed)
    table = {}
    for i in range(nodes):
        cpus, mem, weight = SIZES[0] if i % 5 < 2 else SIZES[1] if i % 5 < 4 else SIZES[2]
        table[f"c{i:05d}"] = Node(name=f"c{i:05d}", cpus=cpus, real_memory=mem, weight=weight,
                                  responding=True)
    names = list(table)
    big = [n for n in names if table[n].cpus == 128]
    partitions = {
        "batch": Partition(name="batch", nodes=names[: nodes * 9 // 10], default=True,
                           max_time=4320, def_mem_per_cpu=2000),
        "big": Partition(name="big", nodes=big, max_time=4320, def_mem_per_cpu=3000),
        "debug": Partition(name="debug", nodes=names[nodes * 9 // 10:], max_time=120),
        "long": Partition(name="long", nodes=names[nodes // 2:], max_time=None),
    }
    sched = Scheduler(table, partitions, 1000)

    # Running work: pack every node to ~90% of its CPUs, mostly with one-node
    # jobs, some wide jobs over neighbouring nodes; ends spread over two days.
    running = []
    jid = 10_000_000
    i = 0
    while i < nodes:
        if rng.random() < 0.05 and i + 8 < nodes:
            width = rng.randint(2, 8)
            chosen = names[i:i + width]
            cpus = [table[n].cpus for n in chosen]
            i += width
        else:
            chosen = [names[i]]
            cpus = [max(1, int(table[names[i]].cpus * rng.choice([0.5, 0.75, 0.9, 1.0])))]
            i += 1
        for part in _split(cpus[0], rng) if len(chosen) == 1 else [cpus]:
            part_nodes = chosen
            mem = [c * 1000 for c in part]
            sched.allocate(Allocation(part_nodes, part, mem, part))
            limit = rng.choice(LIMITS)
            start = NOW - rng.uniform(0, limit * 60 * 0.95)
            jid += 1
            running.append(Job(job_id=jid, spec=JobSpec(), partition="batch", state="RUNNING",
                               time_limit=limit, start_time=start, nodes=part_nodes, cpus=part,
                               mem=mem, tasks=part))

    pending = []
    jid = 1
    while len(pending) < jobs:
        kind = rng.random()
        part = rng.choices(["batch", "big", "debug", "long"], [70, 10, 10, 10])[0]
        limit = rng.choice([x for x in LIMITS if partitions[part].max_time is None
                            or x <= partitions[part].max_time])
        count = 1
        if kind < 0.45:
            spec = JobSpec(ntasks=rng.choice([1, 1, 2, 4]), time_limit=limit)
        elif kind < 0.70:
            spec = JobSpec(ntasks=rng.choice([8, 16, 32]), time_limit=limit)
        elif kind < 0.80:
            n = rng.choice([2, 4, 8, 16])
            spec = JobSpec(nodes_min=n, nodes_max=n, ntasks_per_node=rng.choice([8, 16]),
                           time_limit=limit)
        elif kind < 0.98:
            spec = JobSpec(nodes_min=rng.choice([1, 2, 4]), exclusive=True, time_limit=limit)
        else:  # an array, expanded as tasks (about half of the queue)
            spec = JobSpec(ntasks=1, cpus_per_task=rng.choice([1, 2, 4]), time_limit=limit)
            count = rng.choice([10, 20, 50, 100])
        array_id = jid if count > 1 else None
        demand = demand_of(spec, partitions[part], 1000)
        for k in range(min(count, jobs - len(pending))):
            job = Job(job_id=jid, spec=spec, partition=part, time_limit=limit,
                      array_job_id=array_id, array_task_id=k if array_id else None)
            pending.append((job, demand))
            jid += 1
    return sched, running, pending


def _split(cpus: int, rng: random.Random) -> list[list[int]]:
    """Cut one node's busy CPUs into a few one-node jobs."""
    parts = []
    while cpus > 0:
        c = min(cpus, rng.choice([1, 2, 4, 8, 16, 32]))
        parts.append([c])
        cpus -= c
    return parts


def one_pass(variant: str, nodes: int, jobs: int, seed: int) -> dict[str, Any]:
    """Build, then time one pass of ``variant`` in this process."""
    from plurm import corescheduler
    from plurm.corescheduler import backfill

    t0 = time.perf_counter()
    sched, running, pending = build(nodes, jobs, seed)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    if variant == "priority":
        policy, shape, queue = _priority_case(sched, pending)
        t0 = time.perf_counter()
        values = policy.priorities(queue, NOW, shape)
        starts, result = [], None
    elif variant == "main":
        starts = sched.schedule(pending, NOW)
        result = None
    elif variant == "core":
        core = _core_case(sched, running, pending)
        t0 = time.perf_counter()
        core.schedule(NOW)
        elapsed = time.perf_counter() - t0
        return {"variant": variant, "nodes": nodes, "jobs": jobs, "running": len(running), "seconds": elapsed,
                "build_s": build_s, "starts": sum(1 for job, _ in pending if job.state == "RUNNING"), "planned": sum(
                    1 for job, _ in pending if job.planned_start is not None), "tested": 0,
                "compiled": bool(corescheduler.COMPILED) and backfill.profile_compiled(),
                "digest": _core_digest(pending),
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    else:
        test = len(pending) if variant == "backfill_all" else 500
        params = backfill.BackfillParams(max_job_test=test)
        starts, result = backfill.schedule_with_backfill(sched, pending, running, NOW, params)
    elapsed = time.perf_counter() - t0
    digest = _digest(values) if variant == "priority" else _decisions_digest(starts, result, pending)
    return {
        "variant": variant, "nodes": nodes, "jobs": jobs, "running": len(running), "digest": digest,
        "seconds": elapsed, "build_s": build_s, "starts": len(starts),
        "planned": len(result.planned_start) if result else 0,
        "tested": result.tested if result else 0,
        "compiled": bool(corescheduler.COMPILED) and backfill.profile_compiled(),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _core_case(sched: Any, running: list, pending: list) -> Any:
    """A ClusterCore holding the built cluster: running jobs, then the queue by priority."""
    from plurm.corescheduler.backfill import BackfillParams
    from plurm.corescheduler.core import ClusterCore, CoreSettings

    for k, (job, _) in enumerate(pending):
        job.priority = len(pending) - k  # the queue's order, as its priorities
        job.spec.batch = False  # allocations: no batch step records in the pass
    for job in running:
        sched.release(job)  # the core allocates what it is given as running
    settings = CoreSettings(default_mem_per_cpu=1000, backfill=BackfillParams(max_job_test=500))
    return ClusterCore(sched.nodes, sched.partitions, settings, jobs=running + [job for job, _ in pending],
                       now=NOW)


def _core_digest(pending: list) -> str:
    return _digest([(job.job_id, job.state, job.reason, job.nodes, job.cpus, job.mem, job.tasks,
                     job.planned_start) for job, _ in pending])


def _decisions_digest(starts: list, result: Any, pending: list) -> str:
    """One hash of what the pass decided: each start (job, task, nodes, CPUs, memory, tasks),
    each planned start and every pending job's reason.  Two runs, two twins or two commits
    decide the same exactly when their digests are equal."""
    rows: list[Any] = [("start", s.job.job_id, s.job.array_task_id, s.allocation.nodes, s.allocation.cpus,
                        s.allocation.mem, s.allocation.tasks) for s in starts]
    if result is not None:
        rows += sorted(("plan", job_id, at) for job_id, at in result.planned_start.items())
    rows += [("reason", job.job_id, job.array_task_id, job.reason) for job, _ in pending]
    return _digest(rows)


def _digest(rows: list) -> str:
    import hashlib

    return hashlib.sha256(repr(rows).encode()).hexdigest()[:16]


def _priority_case(sched: Any, pending: list) -> tuple[Any, Any, list]:
    """A multifactor policy, the cluster's shape and the queue's jobs (array tasks once each)."""
    from plurm.corescheduler.priority import ClusterShape, MultifactorPriority

    policy = MultifactorPriority({"PriorityWeightAge": "1000", "PriorityWeightFairshare": "10000",
                                  "PriorityWeightJobSize": "1000", "PriorityWeightPartition": "1000",
                                  "PriorityWeightQOS": "1000", "PriorityMaxAge": "7-0"})
    shares = {account: (k + 1) / 10 for k, account in enumerate("abcdefghi")}
    shape = ClusterShape(len(sched.nodes), sum(sched.total_cpus),
                         {name: k + 1 for k, name in enumerate(sched.partitions)},
                         fairshare=lambda job: shares[job.spec.account or "a"],
                         qos=lambda job: 0.5)
    jobs = []
    for k, (job, _) in enumerate(pending):
        job.eligible_time = NOW - (k % 1000) * 600.0
        jobs.append(job)
    return policy, shape, jobs


def run_child(variant: str, nodes: int, jobs: int, seed: int, pure: bool, limit_s: float
              ) -> dict[str, Any] | None:
    env = dict(os.environ)
    if pure:
        env["PLURM_NO_EXTENSIONS"] = "1"
    else:
        env.pop("PLURM_NO_EXTENSIONS", None)
    argv = [sys.executable, os.path.abspath(__file__), "--child", variant, "--nodes", str(nodes),
            "--jobs", str(jobs), "--seed", str(seed)]
    try:
        p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, text=True, timeout=limit_s)
    except subprocess.TimeoutExpired:
        print(f"  {variant} {'pure' if pure else 'compiled'}: over {limit_s:.0f}s, skipped",
              file=sys.stderr)
        return None
    if p.returncode != 0:
        print(f"  {variant}: child failed (rc {p.returncode})", file=sys.stderr)
        return None
    return json.loads(p.stdout)


def profile(nodes: int, jobs: int, seed: int, variant: str) -> None:
    import cProfile
    import pstats

    from plurm.corescheduler import backfill

    sched, running, pending = build(nodes, jobs, seed)
    test = len(pending) if variant == "backfill_all" else 500
    prof = cProfile.Profile()
    prof.enable()
    if variant == "main":
        sched.schedule(pending, NOW)
    else:
        backfill.schedule_with_backfill(sched, pending, running, NOW,
                                        backfill.BackfillParams(max_job_test=test))
    prof.disable()
    pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(18)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--jobs", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--variants", default="main,backfill_500,backfill_all,priority")
    ap.add_argument("--no-pure", action="store_true", help="skip the pure-Python runs")
    ap.add_argument("--timeout", type=float, default=900, help="per run, seconds")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--profile", metavar="VARIANT", help="cProfile one variant, in process")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one_pass(args.child, args.nodes, args.jobs, args.seed)))
        return 0
    cases = [(10_000, 100_000), (1_000, 10_000)]
    if args.nodes or args.jobs:
        cases = [(args.nodes, args.jobs)]
    cases = [(n or 10_000, j or 100_000) for n, j in cases]
    if args.profile:
        for nodes, jobs in cases:
            print(f"== cProfile {args.profile}, {nodes} nodes x {jobs} jobs")
            profile(nodes, jobs, args.seed, args.profile)
        return 0
    rows: list[dict[str, Any]] = []
    for nodes, jobs in cases:
        for variant in args.variants.split(","):
            row: dict[str, Any] = {"nodes": nodes, "jobs": jobs, "variant": variant}
            comp = run_child(variant, nodes, jobs, args.seed, False, args.timeout)
            pure = None if args.no_pure else run_child(variant, nodes, jobs, args.seed, True,
                                                       args.timeout)
            row["compiled_s"] = comp["seconds"] if comp else None
            row["pure_s"] = pure["seconds"] if pure else None
            row["ratio"] = (row["pure_s"] / row["compiled_s"]
                            if row["pure_s"] and row["compiled_s"] else None)
            row["peak_rss_mb"] = comp["peak_rss_mb"] if comp else None
            row["pure_peak_rss_mb"] = pure["peak_rss_mb"] if pure else None
            for key in ("running", "starts", "planned", "tested", "build_s", "compiled", "digest"):
                row[key] = (comp or pure or {}).get(key)
            keys = ("starts", "planned", "tested", "digest")
            if comp and pure and any(comp[k] != pure[k] for k in keys):
                row["mismatch"] = True  # the two paths must decide identically
            rows.append(row)
            if not args.json:
                print(_line(row), flush=True)
    if args.json:
        full = next((r for r in rows if r["variant"] == "backfill_all"), rows[0])
        print(json.dumps({"compiled_s": full["compiled_s"], "pure_s": full["pure_s"],
                          "ratio": full["ratio"], "peak_rss_mb": full["peak_rss_mb"],
                          "cases": rows}))
    return 1 if any(r.get("mismatch") for r in rows) else 0


def _line(row: dict[str, Any]) -> str:
    def f(v: Any, spec: str = ".3f") -> str:
        return "-" if v is None else format(v, spec)

    return (f"{row['nodes']:>6} nodes {row['jobs']:>7} jobs {row['variant']:<13} "
            f"compiled {f(row['compiled_s'])} s  pure {f(row['pure_s'])} s  "
            f"ratio {f(row['ratio'], '.1f')}  rss {f(row['peak_rss_mb'], '.0f')} MB  "
            f"(running {row['running']}, started {row['starts']}, planned {row['planned']}, "
            f"tested {row['tested']}, compiled={row['compiled']}, decisions {row['digest']})")


if __name__ == "__main__":
    sys.exit(main())
