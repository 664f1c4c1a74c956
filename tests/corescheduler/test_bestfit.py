"""The placement kernel's best fit against what real Slurm 22.05 chose.

Each case is an experiment run on the anchor (four nodes n1-n4 of 4 CPUs and
2800 MB, DefMemPerCPU=256, select/cons_tres CR_Core_Memory): some nodes were
filled with `sbatch -w nX -nU` jobs, then a probe job was submitted and
`scontrol show job -d` gave its nodes and CPUs per node (docs/scheduling.md,
"Placement: best fit").  Both twins must choose the nodes Slurm chose and lay
the tasks out as it did (`-N2 -n4` on idle nodes: 3+1; `-N2-4 -n6`: 2+2+1+1).
"""

from __future__ import annotations

import importlib

import pytest

from plurm.corescheduler import _placement_py as pure

compiled = importlib.import_module("plurm.corescheduler._placement_c")
TWINS = [pytest.param(pure, id="pure"), pytest.param(compiled, id="compiled")]

MEM = 2800
PER_CPU = 256
UNIFORM = [1, 1, 1, 1]
N2_HEAVY = [1, 2, 1, 1]  # n2 Weight=2


def _check(kernel, free: list[int], opts: dict, nodes: list[int], slurm_cpus: list[int], **extra) -> None:
    chosen, cpus = _probe(kernel, free, **opts, **extra)
    assert (chosen, cpus) == (nodes, slurm_cpus)


def _probe(kernel, free: list[int], *, n: int = 1, nodes: tuple[int, int] = (1, 0), c: int = 1,
           per_node: int = 0, weights: list[int] = UNIFORM, free_mem: list[int] | None = None,
           required: list[int] = ()):
    """Run place() as the main pass would for `sbatch -N min[-max] -n n -c c`; return
    ([1-based node numbers], [CPUs per node])."""
    free_mem = free_mem or [MEM - (4 - f) * PER_CPU for f in free]
    pref = sorted(range(4), key=lambda i: (weights[i], i))
    order = [i for i in required] + [i for i in pref if i not in required]
    result = kernel.place(list(free), free_mem, [4, 4, 4, 4], order, nodes[0], nodes[1], n, c, per_node,
                          0, PER_CPU, 0, list(weights), None, len(required))
    assert result is not None
    chosen, tasks = result
    pairs = sorted(zip(chosen, tasks))
    return [i + 1 for i, _ in pairs], [t * c for _, t in pairs]


# (free CPUs n1..n4, sbatch options, nodes Slurm chose, CPUs per node Slurm gave)
# Options: n = -n, nodes = -N min[-max] (max 0: not given), c = -c, required = -w (0-based).
UNIFORM_CASES = [
    ([4, 4, 1, 4], dict(n=1), [3], [1]),
    ([4, 2, 1, 3], dict(n=1), [3], [1]),
    ([4, 2, 0, 3], dict(n=3), [4], [3]),
    ([4, 2, 1, 3], dict(n=2, nodes=(2, 2)), [1, 2], [1, 1]),
    ([4, 2, 1, 3], dict(n=6), [1, 2], [4, 2]),
    ([4, 2, 1, 3], dict(n=4, nodes=(2, 2)), [1, 2], [3, 1]),
    ([4, 2, 1, 3], dict(n=5), [1, 2], [4, 1]),
    ([4, 2, 2, 4], dict(n=1), [2], [1]),
    ([4, 3, 4, 3], dict(n=2), [2], [2]),
    ([1, 4, 4, 2], dict(n=2, nodes=(2, 2)), [1, 2], [1, 1]),
    ([1, 4, 2, 3], dict(n=5), [1, 2], [1, 4]),
    ([1, 4, 2, 3], dict(n=4), [2], [4]),
    ([2, 0, 3, 3], dict(n=5), [3, 4], [3, 2]),
    ([4, 0, 1, 1], dict(n=2, nodes=(2, 2)), [3, 4], [1, 1]),
    ([4, 0, 1, 1], dict(n=5), [1, 3], [4, 1]),
    ([4, 1, 0, 4], dict(n=1), [4], [1]),
    ([4, 1, 0, 3], dict(n=1), [4], [1]),
    ([4, 2, 0, 3], dict(n=2), [4], [2]),
    ([3, 0, 2, 0], dict(c=2), [1], [2]),
    ([2, 0, 2, 0], dict(n=1), [1], [1]),
    ([2, 2, 3, 4], dict(n=3), [3], [3]),
    ([4, 0, 2, 1], dict(n=5), [1, 4], [4, 1]),
    ([4, 0, 2, 1], dict(n=5, nodes=(2, 2)), [1, 4], [4, 1]),
    ([4, 0, 2, 1], dict(n=2, nodes=(2, 2)), [3, 4], [1, 1]),
    ([1, 4, 3, 4], dict(n=2, nodes=(2, 2)), [1, 2], [1, 1]),
    ([4, 0, 2, 1], dict(n=3), [3, 4], [2, 1]),
    ([4, 0, 2, 1], dict(n=3, nodes=(1, 1)), [1], [3]),
    ([4, 0, 3, 2], dict(n=5, nodes=(2, 2)), [3, 4], [3, 2]),
    ([4, 0, 3, 2], dict(n=5), [3, 4], [3, 2]),
    ([4, 0, 3, 2], dict(n=6, nodes=(2, 2), required=[3]), [1, 4], [4, 2]),
    ([4, 4, 4, 4], dict(n=4, nodes=(2, 2)), [1, 2], [3, 1]),
    ([4, 4, 4, 4], dict(n=6, nodes=(2, 2)), [1, 2], [4, 2]),
    ([4, 4, 4, 4], dict(n=6, nodes=(3, 3)), [1, 2, 3], [4, 1, 1]),
    ([4, 4, 4, 4], dict(n=6, nodes=(2, 4)), [1, 2, 3, 4], [2, 2, 1, 1]),
    ([4, 4, 4, 4], dict(n=3, nodes=(2, 2), c=2), [1, 2], [4, 2]),
    ([4, 4, 4, 4], dict(n=5, nodes=(1, 2)), [1, 2], [4, 1]),
    ([4, 0, 4, 4], dict(n=3, nodes=(2, 3)), [1, 3, 4], [1, 1, 1]),
]

WEIGHTED_CASES = [
    ([4, 4, 1, 4], dict(n=1), [1], [1]),
    ([1, 4, 0, 0], dict(n=2), [1, 2], [1, 1]),
    ([4, 4, 4, 4], dict(n=2, nodes=(2, 2)), [3, 4], [1, 1]),
    ([4, 4, 4, 4], dict(n=1), [1], [1]),
    ([4, 4, 4, 4], dict(n=6, nodes=(1, 3)), [1, 3, 4], [1, 3, 2]),
    ([4, 4, 4, 4], dict(n=2, nodes=(1, 3)), [1, 3], [1, 1]),
    ([2, 1, 0, 4], dict(n=3), [4], [3]),
    ([2, 1, 0, 4], dict(n=3, nodes=(1, 1)), [4], [3]),
]


@pytest.mark.parametrize("kernel", TWINS)
@pytest.mark.parametrize(("free", "opts", "nodes", "slurm_cpus"), UNIFORM_CASES)
def test_as_slurm_chose(kernel, free, opts, nodes, slurm_cpus) -> None:
    _check(kernel, free, opts, nodes, slurm_cpus)


@pytest.mark.parametrize("kernel", TWINS)
@pytest.mark.parametrize(("free", "opts", "nodes", "slurm_cpus"), WEIGHTED_CASES)
def test_as_slurm_chose_with_weights(kernel, free, opts, nodes, slurm_cpus) -> None:
    _check(kernel, free, opts, nodes, slurm_cpus, weights=N2_HEAVY)


@pytest.mark.parametrize("kernel", TWINS)
def test_memory_limits_what_a_node_holds(kernel) -> None:
    # n1: 3 CPUs but 256 MB free (one task's worth); n3: 2 CPUs: n1 is the tighter fit.
    free_mem = [256, 2800 - 1024, 2800 - 512, 2800 - 1024]
    _check(kernel, [3, 0, 2, 0], {}, [1], [1], free_mem=free_mem)


@pytest.mark.parametrize("kernel", TWINS)
def test_node_maximum_drops_the_smallest_nodes(kernel) -> None:
    # `-N2 -n6` on free 4,0,3,2: the set n3-n4 (5 CPUs) cannot hold it in two nodes;
    # Slurm then leaves out the smallest node and takes n1 and n3 (3+3).
    assert _probe(kernel, [4, 0, 3, 2], n=6, nodes=(2, 2))[0] == [1, 3]
    assert _probe(kernel, [4, 0, 3, 2], n=6, nodes=(1, 2))[0] == [1, 3]


@pytest.mark.parametrize("kernel", TWINS)
def test_without_weights_first_fit_as_before(kernel) -> None:
    # The 12-argument call (backfill's) keeps the first-fit choice; tasks as Slurm lays them.
    assert kernel.place([4, 2, 1, 3], [9999] * 4, [4] * 4, [0, 1, 2, 3], 1, 0, 1, 1, 0, 0, 0, 0) == ([0], [1])
    assert kernel.place([4, 4, 4, 4], [9999] * 4, [4] * 4, [0, 1, 2, 3], 2, 2, 4, 1, 0, 0, 0, 0) == (
        [0, 1], [3, 1])
    assert kernel.place([4, 4, 4, 4], [9999] * 4, [4] * 4, [0, 1, 2, 3], 2, 4, 6, 1, 0, 0, 0, 0) == (
        [0, 1], [4, 2])  # first fit stops at the first nodes that hold the job


# Tasks per node on the real Slurm 22.05.8 (same anchor, 2026-11-29): SLURM_TASKS_PER_NODE,
# `scontrol show job -d` CPU_IDs and `srun -l` ranks agreed in every case; free CPUs per node
# (a node with fewer had `sbatch -w nX -nU` jobs), options, nodes, CPUs per node.
IDLE = [4, 4, 4, 4]
TASK_LAYOUT_CASES = [
    (IDLE, dict(n=2, nodes=(2, 2)), [1, 2], [1, 1]),
    (IDLE, dict(n=3, nodes=(2, 2)), [1, 2], [2, 1]),
    (IDLE, dict(n=4, nodes=(2, 2)), [1, 2], [3, 1]),
    (IDLE, dict(n=5, nodes=(2, 2)), [1, 2], [4, 1]),
    (IDLE, dict(n=6, nodes=(2, 2)), [1, 2], [4, 2]),
    (IDLE, dict(n=7, nodes=(2, 2)), [1, 2], [4, 3]),
    (IDLE, dict(n=8, nodes=(2, 2)), [1, 2], [4, 4]),
    (IDLE, dict(n=3, nodes=(3, 3)), [1, 2, 3], [1, 1, 1]),
    (IDLE, dict(n=4, nodes=(3, 3)), [1, 2, 3], [2, 1, 1]),
    (IDLE, dict(n=5, nodes=(3, 3)), [1, 2, 3], [3, 1, 1]),
    (IDLE, dict(n=6, nodes=(3, 3)), [1, 2, 3], [4, 1, 1]),
    (IDLE, dict(n=7, nodes=(3, 3)), [1, 2, 3], [4, 2, 1]),
    (IDLE, dict(n=9, nodes=(3, 3)), [1, 2, 3], [4, 4, 1]),
    (IDLE, dict(n=5, nodes=(4, 4)), [1, 2, 3, 4], [2, 1, 1, 1]),
    (IDLE, dict(n=6, nodes=(4, 4)), [1, 2, 3, 4], [3, 1, 1, 1]),
    (IDLE, dict(n=9, nodes=(4, 4)), [1, 2, 3, 4], [4, 3, 1, 1]),
    (IDLE, dict(n=13, nodes=(4, 4)), [1, 2, 3, 4], [4, 4, 4, 1]),
    (IDLE, dict(n=3, nodes=(2, 2), c=2), [1, 2], [4, 2]),
    (IDLE, dict(n=4, nodes=(2, 2), c=2), [1, 2], [4, 4]),
    (IDLE, dict(n=4, nodes=(3, 3), c=2), [1, 2, 3], [4, 2, 2]),
    (IDLE, dict(n=5, nodes=(1, 2)), [1, 2], [4, 1]),
    (IDLE, dict(n=4, nodes=(2, 3)), [1, 2, 3], [2, 1, 1]),
    (IDLE, dict(n=5, nodes=(2, 3)), [1, 2, 3], [3, 1, 1]),
    (IDLE, dict(n=7, nodes=(2, 3)), [1, 2, 3], [3, 3, 1]),
    (IDLE, dict(n=3, nodes=(2, 4)), [1, 2, 3], [1, 1, 1]),
    (IDLE, dict(n=5, nodes=(2, 4)), [1, 2, 3, 4], [2, 1, 1, 1]),
    (IDLE, dict(n=6, nodes=(2, 4)), [1, 2, 3, 4], [2, 2, 1, 1]),
    (IDLE, dict(n=7, nodes=(2, 4)), [1, 2, 3, 4], [3, 2, 1, 1]),
    (IDLE, dict(n=8, nodes=(2, 4)), [1, 2, 3, 4], [3, 3, 1, 1]),
    (IDLE, dict(n=9, nodes=(2, 4)), [1, 2, 3, 4], [4, 3, 1, 1]),
    (IDLE, dict(n=10, nodes=(2, 4)), [1, 2, 3, 4], [4, 3, 2, 1]),
    (IDLE, dict(n=6, nodes=(3, 4)), [1, 2, 3, 4], [3, 1, 1, 1]),
    (IDLE, dict(n=6, nodes=(1, 4)), [1, 2, 3, 4], [2, 2, 1, 1]),
    (IDLE, dict(n=6, nodes=(2, 4), c=2), [1, 2, 3, 4], [4, 4, 2, 2]),
    (IDLE, dict(n=5), [1, 2], [4, 1]),
    (IDLE, dict(n=6), [1, 2], [4, 2]),
    (IDLE, dict(n=9), [1, 2, 3], [4, 4, 1]),
    ([2, 4, 4, 4], dict(n=4, nodes=(2, 2)), [1, 2], [2, 2]),
    ([2, 4, 4, 4], dict(n=5, nodes=(2, 2)), [1, 2], [2, 3]),
    ([2, 4, 4, 4], dict(n=5, nodes=(3, 3)), [1, 2, 3], [2, 2, 1]),
    ([1, 4, 4, 4], dict(n=4, nodes=(2, 2)), [1, 2], [1, 3]),
    ([1, 4, 4, 4], dict(n=7, nodes=(3, 4)), [1, 2, 3, 4], [1, 3, 2, 1]),
    ([1, 4, 4, 4], dict(n=6, nodes=(2, 4)), [1, 2, 3, 4], [1, 3, 1, 1]),
    ([4, 1, 4, 4], dict(n=5, nodes=(2, 2)), [1, 2], [4, 1]),
    ([4, 1, 4, 4], dict(n=7, nodes=(2, 4)), [1, 2, 3, 4], [3, 1, 2, 1]),
    ([4, 1, 4, 4], dict(n=6), [1, 2, 3], [4, 1, 1]),
]


@pytest.mark.parametrize("kernel", TWINS)
@pytest.mark.parametrize(("free", "opts", "nodes", "slurm_cpus"), TASK_LAYOUT_CASES)
def test_tasks_per_node_as_slurm_lays_them(kernel, free, opts, nodes, slurm_cpus) -> None:
    _check(kernel, free, opts, nodes, slurm_cpus)


@pytest.mark.parametrize("kernel", TWINS)
def test_exclusive_takes_idle_nodes_and_spreads_tasks(kernel) -> None:
    result = kernel.place([4, 3, 4, 4], [9999] * 4, [4] * 4, [0, 1, 2, 3], 2, 2, 4, 1, 0, 0, 0, 1, [1] * 4)
    assert result == ([2, 3], [2, 2])  # n3-n4: the set of idle nodes that holds it (n1 alone cannot)


@pytest.mark.parametrize("kernel", TWINS)
def test_node_id_gives_adjacency_for_positions(kernel) -> None:
    # Backfill-style arrays indexed by position: node_id maps a position to its node.
    free = [1, 1, 4]  # positions 0,1,2 are nodes 0, 2, 3
    args = (free, [9999] * 3, [4] * 3, [0, 1, 2], 1, 0, 5, 1, 0, 0, 0, 0, [1] * 3)
    # Sets by node adjacency: {node 0} = 1, {nodes 2,3} = 5: the latter, walked from its start.
    assert kernel.place(*args, [0, 2, 3]) == ([1, 2], [1, 4])
    # Without node_id the positions are the nodes: one set of 6, walked from its start.
    assert kernel.place(*args) == ([0, 1, 2], [1, 1, 3])
