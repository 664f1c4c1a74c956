"""The placement kernel: compiled and pure twins decide identically, and never oversubscribe."""

from __future__ import annotations

import importlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import plurm.corescheduler as core
from plurm.corescheduler import _placement_py as pure

compiled = importlib.import_module("plurm.corescheduler._placement_c")

clusters = st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 16), min_size=n, max_size=n),       # free cpus
    st.lists(st.integers(0, 8000), min_size=n, max_size=n),     # free memory
    st.lists(st.integers(1, 16), min_size=n, max_size=n),       # total cpus
    st.permutations(list(range(n)))))
requests = st.tuples(st.integers(1, 4), st.integers(0, 6), st.integers(1, 40), st.integers(1, 4),
                     st.integers(0, 4), st.sampled_from([0, 500, 3000]), st.sampled_from([0, 100, 900]),
                     st.booleans())


@settings(max_examples=300, deadline=None, derandomize=True)
@given(clusters, requests)
def test_compiled_and_pure_agree(cluster, request) -> None:
    free_cpus, free_mem, total, order = cluster
    total = [max(t, f) for t, f in zip(total, free_cpus)]
    args = (list(free_cpus), list(free_mem), total, list(order), *request[:-1], int(request[-1]))
    assert compiled.place(*args) == pure.place(*args)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(clusters, requests)
def test_never_oversubscribes(cluster, request) -> None:
    free_cpus, free_mem, total, order = cluster
    total = [max(t, f) for t, f in zip(total, free_cpus)]
    nodes_min, nodes_max, ntasks, cpt, per_node, mem_node, mem_cpu, exclusive = request
    result = pure.place(list(free_cpus), list(free_mem), total, list(order), nodes_min, nodes_max, ntasks, cpt,
                        per_node, mem_node, mem_cpu, int(exclusive))
    if result is None:
        return
    chosen, tasks = result
    # Fewer tasks than nodes asked: one node per task (as sbatch's "setting nnodes to N").
    assert len(set(chosen)) == len(chosen) >= min(nodes_min, ntasks)
    assert nodes_max <= 0 or len(chosen) <= nodes_max
    assert sum(tasks) >= ntasks and all(t >= 1 for t in tasks)
    for i, t in zip(chosen, tasks):
        assert t * cpt <= free_cpus[i]
        if mem_cpu:
            assert t * cpt * mem_cpu <= free_mem[i]
        elif mem_node:
            assert mem_node <= free_mem[i]
        if exclusive:
            assert free_cpus[i] == total[i]


def test_compiled_path_is_in_use_when_built() -> None:
    if not str(compiled.__file__).endswith(".py"):
        assert core.COMPILED or __import__("os").environ.get("PLURM_NO_EXTENSIONS")
    else:
        pytest.skip("the kernels were not compiled here")


# The main pass's mode: Weight per node (Slurm's best fit), required nodes first.
weighted = st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 16), min_size=n, max_size=n),       # free cpus
    st.lists(st.integers(0, 8000), min_size=n, max_size=n),     # free memory
    st.lists(st.integers(1, 16), min_size=n, max_size=n),       # total cpus
    st.lists(st.integers(1, 3), min_size=n, max_size=n),        # Weight
    st.permutations(list(range(n))),                            # nodes left out / required
    st.integers(0, n), st.integers(0, 2)))


def _weighted_args(cluster, request):
    free_cpus, free_mem, total, weight, perm, keep, nreq = cluster
    total = [max(t, f) for t, f in zip(total, free_cpus)]
    members = sorted(perm[:max(keep, 1)])
    nreq = min(nreq, len(members))
    required = perm[:nreq]
    order = list(required) + sorted((i for i in members if i not in required), key=lambda i: (weight[i], i))
    return (list(free_cpus), list(free_mem), total, order, *request[:-1], int(request[-1]), list(weight),
            None, nreq)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(weighted, requests)
def test_best_fit_compiled_and_pure_agree(cluster, request) -> None:
    args = _weighted_args(cluster, request)
    assert compiled.place(*args) == pure.place(*args)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(weighted, requests)
def test_best_fit_never_oversubscribes(cluster, request) -> None:
    args = _weighted_args(cluster, request)
    free_cpus, free_mem, total, order = args[:4]
    nodes_min, nodes_max, ntasks, cpt, per_node, mem_node, mem_cpu, exclusive = args[4:12]
    nreq = args[14]
    result = pure.place(*args)
    if result is None:
        return
    chosen, tasks = result
    assert len(set(chosen)) == len(chosen) >= min(nodes_min, ntasks)
    assert set(chosen) <= set(order) and set(order[:nreq]) <= set(chosen)
    assert nodes_max <= 0 or len(chosen) <= nodes_max
    assert all(t >= 1 for t in tasks)
    if per_node:
        assert all(t == per_node for t in tasks) and sum(tasks) >= ntasks
    else:
        assert sum(tasks) == ntasks
    for i, t in zip(chosen, tasks):
        assert t * cpt <= free_cpus[i]
        if mem_cpu:
            assert t * cpt * mem_cpu <= free_mem[i]
        elif mem_node:
            assert mem_node <= free_mem[i]
        if exclusive:
            assert free_cpus[i] == total[i]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(weighted, requests)
def test_best_fit_finds_room_when_first_fit_does(cluster, request) -> None:
    """Best fit never refuses a job that taking the nodes in order would place (a node
    maximum included: then the smallest nodes are left out in turn, as Slurm does)."""
    args = list(_weighted_args(cluster, request))
    args[14] = 0  # required nodes come first either way
    if pure.place(*args[:12]) is not None:
        assert pure.place(*args) is not None
