"""The Lublin-Feitelson generator: seeded and deterministic, and its distributions sane."""

from __future__ import annotations

import math
import statistics

import pytest

from plurm.tools.simulate import swf, workload


def test_same_seed_same_trace_other_seed_other_trace():
    a = workload.generate(500, 1024, seed=7, max_nodes=128)
    b = workload.generate(500, 1024, seed=7, max_nodes=128)
    c = workload.generate(500, 1024, seed=8, max_nodes=128)
    assert a == b
    assert a[1] != c[1]
    assert swf.format_swf(*a) == swf.format_swf(*b)


@pytest.fixture(scope="module")
def jobs():
    return workload.generate(6000, 1024, seed=3, load=0.8, max_nodes=128)[1]


def test_sizes(jobs):
    sizes = [j.alloc_procs for j in jobs]
    assert min(sizes) >= 1 and max(sizes) <= 1024
    serial = sum(s == 1 for s in sizes) / len(sizes)
    assert abs(serial - workload.LublinModel().serial_prob) < 0.03
    parallel = [s for s in sizes if s > 1]
    pow2 = sum(s & (s - 1) == 0 for s in parallel) / len(parallel)
    assert pow2 > workload.LublinModel().pow2_prob - 0.05  # rounding to an integer sometimes lands on one too
    # Two-stage uniform on log2: most parallel jobs are below umed = log2(1024) - 2.5 = 7.5.
    below = sum(math.log2(s) <= 7.5 for s in parallel) / len(parallel)
    assert 0.8 < below < 0.95


def test_run_times_and_their_correlation_with_size(jobs):
    runs = [j.run for j in jobs]
    assert min(runs) >= 1 and max(runs) <= workload.LublinModel().max_run_s
    # Hyper-gamma on ln(run time): a short mode (tens of seconds) and a long one (hours).
    short = sum(r < 300 for r in runs) / len(runs)
    long_ = sum(r > 3600 for r in runs) / len(runs)
    assert short > 0.2 and long_ > 0.2
    serial = statistics.median(j.run for j in jobs if j.alloc_procs == 1)
    big = statistics.median(j.run for j in jobs if j.alloc_procs >= 64)
    assert big > 2 * serial


def test_requests_cover_the_run_time(jobs):
    assert all(j.req_time >= j.run for j in jobs)
    assert all(j.req_procs == j.alloc_procs for j in jobs)


def test_arrivals_follow_the_daily_cycle_and_the_load(jobs):
    submits = [j.submit for j in jobs]
    assert submits[0] == 0 and submits == sorted(submits)
    hours = [int(t // 3600) % 24 for t in submits]
    night = sum(h < 6 for h in hours)
    day = sum(10 <= h < 16 for h in hours)
    assert day > 3 * night
    work = sum(j.alloc_procs * j.run for j in jobs)
    offered = work / (1024 * submits[-1])
    assert abs(offered - 0.8) < 0.08


def test_users_follow_a_zipf_law(jobs):
    counts: dict[int, int] = {}
    for j in jobs:
        counts[j.user] = counts.get(j.user, 0) + 1
    ranked = sorted(counts.values(), reverse=True)
    assert ranked[0] > 4 * ranked[-1]
    assert all(j.group == 1 + (j.user - 1) % 4 for j in jobs)


def test_bad_arguments():
    with pytest.raises(ValueError):
        workload.generate(0, 16)
    with pytest.raises(ValueError):
        workload.generate(10, 16, load=0)
