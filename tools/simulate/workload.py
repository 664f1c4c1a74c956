"""Generated workloads: the Lublin-Feitelson model of rigid parallel jobs, seeded.

U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers: modeling the
characteristics of rigid jobs", JPDC 63(11), 2003 (the "Lublin99" model).  Its structure:

* **size**: a job is serial with probability ``serial_prob``; otherwise log2 of its size is
  drawn from a *two-stage uniform* distribution (uniform on [ulow, umed] with probability
  ``uprob``, else on [umed, uhi], where uhi = log2(machine size) and umed = uhi - 2.5), and
  the size is rounded to a power of two with probability ``pow2_prob`` (else to an integer);
* **run time**: ln(run time) follows a *hyper-gamma* distribution (a mix of two gamma
  distributions, a short and a long mode) whose mixing weight depends on the size, so that
  big jobs run longer;
* **arrivals**: gamma inter-arrival times whose rate follows a *daily cycle* (few jobs at
  night, most during working hours).

The PyPI package ``parallelworkloads`` (a wrapper of the authors' C code) could not be used:
its 0.1.3 sdist (2022, the only release) ships no sources (only ``__init__.py``) and no
wheels.  This module is our own implementation of the model's structure with the paper's
batch-job constants as we know them (not checked against the authors' ``lublin99.c``, which
could not be obtained; every constant is a field of ``LublinModel``); it is not
bit-compatible with ``lublin99.c``.  Two
choices are ours and documented in docs/simulator.md: the size/run-time correlation is
scaled to the machine (the long mode's weight grows linearly with log2 size from 1 - pb
for serial jobs to 1 - (pb + pa) for a full-machine job), and the arrival rate is scaled
to reach a chosen offered load.  The model has no user estimates; ``req_time`` is the run
time over-estimated by a factor (uniform in [1, estimate_factor]) and rounded up to the
round values users type (15 min, 1 h, ...).  Users are drawn from a Zipf law (a few heavy
users), so fair-share policies have something to act on.

Everything comes from one ``random.Random(seed)``: the same arguments give the same trace.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass

from plurm.tools.simulate.swf import SwfHeader, SwfJob

# Arrival weight of each hour of the day (relative): the daily cycle's shape, low from
# midnight to 6 am, rising through the morning, a plateau in working hours.
DAILY_CYCLE = (0.45, 0.35, 0.28, 0.24, 0.22, 0.25, 0.38, 0.62, 0.98, 1.35, 1.58, 1.64,
               1.45, 1.52, 1.62, 1.60, 1.48, 1.28, 1.08, 0.95, 0.85, 0.76, 0.66, 0.55)
# Time limits users type, in seconds: a request is rounded up to one of these.
ROUND_LIMITS = (300, 900, 1800, 3600, 2 * 3600, 4 * 3600, 8 * 3600, 12 * 3600, 24 * 3600, 36 * 3600, 48 * 3600)


@dataclass(frozen=True)
class LublinModel:
    """The model's parameters (batch jobs of the paper by default)."""

    serial_prob: float = 0.2927
    pow2_prob: float = 0.7884
    ulow: float = 0.8       # log2 of the smallest parallel job (about 2)
    umed_offset: float = 2.5  # umed = uhi - umed_offset
    uprob: float = 0.875    # weight of the first stage [ulow, umed]
    a1: float = 4.2         # short mode of ln(run time): gamma(a1, b1)
    b1: float = 0.94
    a2: float = 312.0       # long mode: gamma(a2, b2)
    b2: float = 0.03
    pa: float = -0.69       # weight of the short mode: pb + pa * log2(size) / uhi
    pb: float = 0.78
    arrival_shape: float = 0.5  # gamma shape of the inter-arrival times (< 1: bursty)
    estimate_factor: float = 4.0
    max_run_s: float = 48 * 3600
    users: int = 24
    zipf: float = 1.1


def _size(rng: random.Random, m: LublinModel, uhi: float, max_procs: int) -> int:
    if max_procs <= 1 or rng.random() < m.serial_prob:
        return 1
    umed = max(m.ulow, uhi - m.umed_offset)
    u = rng.uniform(m.ulow, umed) if rng.random() < m.uprob else rng.uniform(umed, uhi)
    size = 2 ** round(u) if rng.random() < m.pow2_prob else round(2 ** u)
    return max(1, min(int(size), max_procs))


def _run_time(rng: random.Random, m: LublinModel, size: int, uhi: float) -> int:
    short_weight = m.pb + m.pa * (math.log2(size) / uhi if uhi > 0 else 0.0)
    short_weight = min(1.0, max(0.0, short_weight))
    if rng.random() < short_weight:
        log_run = rng.gammavariate(m.a1, m.b1)
    else:
        log_run = rng.gammavariate(m.a2, m.b2)
    return int(max(1.0, min(math.exp(log_run), m.max_run_s)))


def _request(rng: random.Random, m: LublinModel, run: int) -> int:
    wanted = run * rng.uniform(1.0, m.estimate_factor)
    index = bisect.bisect_left(ROUND_LIMITS, wanted)
    if index < len(ROUND_LIMITS):
        return ROUND_LIMITS[index]
    return int(math.ceil(wanted / 3600.0) * 3600)


def _arrivals(rng: random.Random, count: int, span_s: float, shape: float) -> list[int]:
    """``count`` submit times over about ``span_s`` seconds, following the daily cycle.

    Gamma gaps are drawn in "cycle time" (where the rate is constant) and mapped back to
    clock time through the cumulative arrival weight, so an hour of weight 1.6 gets four
    times the arrivals of an hour of weight 0.4."""
    weights = DAILY_CYCLE
    mean_w = sum(weights) / len(weights)
    cum = [0.0]
    for w in weights:
        cum.append(cum[-1] + w / mean_w * 3600.0)  # cycle seconds at the end of each hour
    day = cum[-1]  # 86400
    gaps = [rng.gammavariate(shape, 1.0 / shape) for _ in range(count)]
    scale = span_s / max(sum(gaps), 1e-9)
    times: list[int] = []
    cycle = 0.0
    for gap in gaps:
        cycle += gap * scale
        days, within = divmod(cycle, day)
        hour = min(bisect.bisect_right(cum, within) - 1, 23)
        frac = (within - cum[hour]) / (cum[hour + 1] - cum[hour])
        times.append(int(days * 86400 + (hour + frac) * 3600))
    first = times[0] if times else 0
    return [t - first for t in times]  # the trace starts with its first submission


def generate(jobs: int, max_procs: int, *, seed: int = 1, load: float = 0.85, max_nodes: int | None = None,
             model: LublinModel | None = None) -> tuple[SwfHeader, list[SwfJob]]:
    """A trace of ``jobs`` jobs for a machine of ``max_procs`` processors.

    ``load`` is the offered load: the jobs' processor-seconds over the machine's over the
    span of the arrivals (above 1 the queue grows without bound)."""
    if jobs < 1 or max_procs < 1:
        raise ValueError("a workload needs at least one job and one processor")
    if not 0 < load:
        raise ValueError("the offered load must be positive")
    m = model or LublinModel()
    rng = random.Random(seed)
    uhi = math.log2(max_procs) if max_procs > 1 else 0.0
    sizes = [_size(rng, m, uhi, max_procs) for _ in range(jobs)]
    runs = [_run_time(rng, m, size, uhi) for size in sizes]
    requests = [_request(rng, m, run) for run in runs]
    ranks = [1.0 / (k + 1) ** m.zipf for k in range(max(m.users, 1))]
    users = rng.choices(range(1, len(ranks) + 1), weights=ranks, k=jobs)
    work = sum(s * r for s, r in zip(sizes, runs))
    span = work / (load * max_procs)
    submits = _arrivals(rng, jobs, span, m.arrival_shape)
    out = [
        SwfJob(job=k + 1, submit=submits[k], wait=-1, run=runs[k], alloc_procs=sizes[k], avg_cpu=-1, used_mem=-1,
               req_procs=sizes[k], req_time=requests[k], req_mem=-1, status=1, user=users[k],
               group=1 + (users[k] - 1) % 4, executable=-1, queue=1, partition=1, preceding=-1, think=-1)
        for k in range(jobs)
    ]
    header = SwfHeader(max_nodes=max_nodes or max_procs, max_procs=max_procs, unix_start_time=0,
                       fields={"Version": "2.2", "Computer": "plurm simulate (Lublin-Feitelson model)",
                               "Note": f"generated: jobs={jobs} seed={seed} load={load}"})
    return header, out
