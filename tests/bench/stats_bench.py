#!/usr/bin/env python3
"""What the diagnostic counters and a /metrics scrape cost the controller, in one run.

* ``stats_hook``: the per-request hook the controller runs around each handler (two
  ``perf_counter`` calls and ``Stats.rpc``), ns per request;
* ``submit_in_core``: one ``Service.submit`` of a small job, in-process (the handler's own work
  for the commonest request), µs; ``hook_share`` is the hook's cost as a share of it;
* ``aggregates_<N>``: ``stats.aggregates`` over N queued jobs on 64 nodes (what each /metrics
  scrape and each sdiag costs the controller's loop), ms, and per job, ns.

Prints ``name value unit`` lines.  Imports plurm.  Run: ``python tests/bench/stats_bench.py``.
"""

from __future__ import annotations

import time

from plurm.corescheduler import stats
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import protocol
from plurm.wire.model import JobSpec, Node, Partition

WHO = Identity(1001, 1001, "alice", frozenset({"alice"}))


def _core(nodes: int = 64) -> tuple[ClusterCore, Service]:
    table = {f"n{i}": Node(name=f"n{i}", cpus=32, real_memory=64000, responding=True, boot_time=1.0)
             for i in range(nodes)}
    core = ClusterCore(table, {"debug": Partition(name="debug", nodes=list(table), default=True)},
                       CoreSettings(cluster_name="bench"), now=1000.0)
    return core, Service(core)


def hook_ns(calls: int = 200_000) -> float:
    s = stats.Stats(0.0)
    began = time.perf_counter()
    for i in range(calls):
        t0 = time.perf_counter()
        s.rpc("job_info", i & 63, time.perf_counter() - t0)
    return (time.perf_counter() - began) / calls * 1e9


def submit_us(calls: int = 5_000) -> float:
    core, service = _core()
    message = protocol.SubmitJob(spec=JobSpec(script="#!/bin/sh\ntrue\n", hold=True))
    began = time.perf_counter()
    for _ in range(calls):
        service.submit(message, WHO, 1000.0)
        core.take_effects()
    return (time.perf_counter() - began) / calls * 1e6


def aggregates_ms(jobs: int) -> float:
    core, service = _core()
    message = protocol.SubmitJob(spec=JobSpec(script="#!/bin/sh\ntrue\n", hold=True))
    for _ in range(jobs):
        service.submit(message, WHO, 1000.0)
    core.take_effects()
    best = float("inf")
    for _ in range(3):
        began = time.perf_counter()
        stats.aggregates(core, str)
        best = min(best, time.perf_counter() - began)
    return best * 1e3


def main() -> int:
    hook = hook_ns()
    submit = submit_us()
    print(f"stats_hook {hook:.0f} ns")
    print(f"submit_in_core {submit:.1f} us")
    print(f"hook_share {hook / (submit * 1000) * 100:.2f} %")
    for jobs in (10_000, 100_000):
        ms = aggregates_ms(jobs)
        print(f"aggregates_{jobs} {ms:.1f} ms")
        print(f"aggregates_per_job_{jobs} {ms * 1e6 / jobs:.0f} ns")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
