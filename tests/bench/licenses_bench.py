#!/usr/bin/env python3
"""Time one scheduling pass over a queue of jobs waiting for licenses (issue 14, licenses).

  python tests/bench/licenses_bench.py [--jobs 3000] [--rounds 3] [--json]

A 16-node core with ``Licenses=fluent:4,matlab:2,abaqus:8``, every license held by running
jobs, and ``--jobs`` pending jobs asking for one to three of them (time limits of 5 to 120
minutes).  One ``ClusterCore.schedule`` pass is timed (best of ``--rounds``, each on a fresh
core) in four ways: with the pass's cap on planned license starts (``PLAN_LIMIT``, 50: the
rest start only where their licenses stay free) and without it (every waiting job's start
planned, as before the cap), each on the compiled kernels and on the pure-Python twins
(``PLURM_NO_EXTENSIONS=1`` in a subprocess).  It prints the times and the ratios
uncapped/capped and pure/compiled, and checks that both caps start the same jobs now (the
cap changes plans, never who runs).  Standard library and plurm only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from typing import Any

T0 = 1_000_000.0
TOTALS = "fluent:4,matlab:2,abaqus:8"
LIMITS = [5, 10, 30, 60, 120]


def one_pass(jobs: int, seed: int, capped: bool) -> tuple[float, str]:
    """(seconds of one pass, a digest of the jobs it started) on a fresh core."""
    from plurm.corescheduler import core_licenses
    from plurm.corescheduler import licenses as lic
    from plurm.corescheduler.core import ClusterCore, CoreSettings
    from plurm.corescheduler.identity import Identity
    from plurm.corescheduler.service import Service
    from plurm.wire import protocol
    from plurm.wire.model import JobSpec, Node, Partition

    core_licenses.PLAN_LIMIT = 50 if capped else 10**9
    who = Identity(1001, 1001, "alice", frozenset({"alice"}))
    names = {f"n{i}": Node(name=f"n{i}", cpus=8, real_memory=16000, responding=True, boot_time=1.0)
             for i in range(1, 17)}
    core = ClusterCore(names, {"debug": Partition(name="debug", nodes=list(names), default=True)},
                       CoreSettings(cluster_name="bench"), now=T0)
    core.set_license_totals(lic.parse_configured(TOTALS))
    service = Service(core)

    def submit(now: float, licenses: str, minutes: int) -> None:
        spec = JobSpec(script="#!/bin/sh\nsleep 1\n", licenses=licenses, time_limit=minutes)
        service.submit(protocol.SubmitJob(spec=spec), who, now)

    for holder in ("fluent:4", "matlab:2", "abaqus:8"):
        submit(T0, holder, 60)
    core.schedule(T0 + 1)
    rng = random.Random(seed)
    for _ in range(jobs):
        wanted = rng.sample(["fluent", "matlab", "abaqus"], rng.randint(1, 3))
        submit(T0 + 2, ",".join(f"{name}:{rng.randint(1, 2)}" for name in wanted), rng.choice(LIMITS))
    started = time.perf_counter()
    core.schedule(T0 + 3)
    elapsed = time.perf_counter() - started
    running = sorted(j.job_id for j in core.jobs.values() if j.state == "RUNNING")
    return elapsed, hashlib.sha256(repr(running).encode()).hexdigest()[:16]


def measure(jobs: int, rounds: int) -> dict[str, Any]:
    """Best of ``rounds`` for each cap, in this process (its kernels chosen at first import)."""
    import plurm.corescheduler as kernels

    out: dict[str, Any] = {"compiled": bool(kernels.COMPILED)}
    for capped in (True, False):
        runs = [one_pass(jobs, seed, capped) for seed in range(rounds)]
        out["capped" if capped else "uncapped"] = {"best_s": min(r[0] for r in runs),
                                                   "digests": [r[1] for r in runs]}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.jobs, args.rounds)))
        return 0
    results = {}
    for kind, extra in (("compiled", {}), ("pure", {"PLURM_NO_EXTENSIONS": "1"})):
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--jobs", str(args.jobs),
                               "--rounds", str(args.rounds)], env=dict(os.environ, **extra),
                              capture_output=True, text=True, check=True)
        results[kind] = json.loads(proc.stdout.strip().splitlines()[-1])
    same = {tuple(results[k][cap]["digests"]) for k in results for cap in ("capped", "uncapped")}
    figures = {
        "jobs": args.jobs,
        "compiled_kernels": results["compiled"]["compiled"],
        "capped_compiled_s": results["compiled"]["capped"]["best_s"],
        "uncapped_compiled_s": results["compiled"]["uncapped"]["best_s"],
        "capped_pure_s": results["pure"]["capped"]["best_s"],
        "uncapped_pure_s": results["pure"]["uncapped"]["best_s"],
        "same_starts": len(same) == 1,
    }
    figures["uncapped_over_capped"] = figures["uncapped_compiled_s"] / figures["capped_compiled_s"]
    figures["pure_over_compiled"] = figures["capped_pure_s"] / figures["capped_compiled_s"]
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"{args.jobs} jobs waiting for licenses, one pass (best of {args.rounds}):")
        for cap in ("capped", "uncapped"):
            print(f"  {cap:>8}: compiled {figures[cap + '_compiled_s'] * 1000:8.1f} ms   "
                  f"pure {figures[cap + '_pure_s'] * 1000:8.1f} ms")
        print(f"  uncapped/capped (compiled) {figures['uncapped_over_capped']:.1f}x; "
              f"pure/compiled (capped) {figures['pure_over_compiled']:.2f}x; "
              f"same jobs started: {figures['same_starts']}")
    return 0 if figures["same_starts"] else 1


if __name__ == "__main__":
    sys.exit(main())
