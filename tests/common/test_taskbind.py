"""common/taskbind.py: task placement computed on synthetic layouts (no daemons), and the texts
compared with what Slurm 22.05.8 printed (tests/integration/reference/binding/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from plurm.common import taskbind as tb

REF = Path(__file__).resolve().parents[1] / "integration" / "reference" / "binding"
BIG = tb.Layout(sockets=2, cores=4, threads=2)  # 16 CPUs: socket 0 is 0-7, core 0 is CPUs 0,1


def _env(name: str) -> dict[str, str]:
    """Task 0's SLURM_*_BIND* variables in a capture."""
    out = {}
    for line in (REF / f"{name}.txt").read_text().splitlines():
        m = re.fullmatch(r"(?:0: )?(SLURM_(?:CPU|MEM)_BIND\w*)=(.*)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


@pytest.mark.parametrize("name, option", [
    ("affinity.rank_verbose", "verbose,rank"), ("affinity.map_cpu", "verbose,map_cpu:1,0"),
    ("affinity.mask_cpu", "verbose,mask_cpu:0x2,0x1"), ("affinity.none_verbose", "verbose,none"),
    ("affinity.cores", "verbose,cores"), ("affinity.rank_ldom", "verbose,rank_ldom"),
    ("none.map_cpu", "verbose,map_cpu:1,0"), ("none.env_cpu_bind_verbose", "verbose"),
    ("none.env_cpu_bind_rank", "rank"),
])
def test_the_variables_srun_sets_are_slurms(name: str, option: str) -> None:
    assert tb.option_env(option, None) == _env(name)


@pytest.mark.parametrize("name, option", [("affinity.mem_bind_local", "verbose,local"),
                                          ("affinity.mem_bind_map", "verbose,map_mem:0"),
                                          ("none.env_mem_bind_prefer_local", "prefer,local"),
                                          ("none.env_mem_bind_mask_mem_0x1", "mask_mem:0x1"),
                                          ("none.env_mem_bind_none", "none")])
def test_the_mem_bind_variables_are_slurms(name: str, option: str) -> None:
    assert tb.option_env(None, option) == _env(name)


def test_parsing_lists_repeats_and_refusals() -> None:
    assert tb.parse_cpu_bind("q,map_cpu:0*2,3,0x4").values == (0, 0, 3, 4)
    assert tb.parse_cpu_bind("mask_cpu:f,0x10") == tb.CpuBind("mask_cpu", (15, 16), False)
    assert tb.parse_cpu_bind("verbose,cores") == tb.CpuBind("cores", (), True)
    for bad in ("map_cpu:x", "bogus", "map_cpu:0*99999"):
        with pytest.raises(tb.BindError):
            tb.parse_cpu_bind(bad)
    assert tb.parse_plugin_param("Cores,Verbose") == tb.PluginParam("cores", True, "")
    assert tb.parse_distribution("plane=4:block,Pack") == tb.Distribution("plane", 4, "block", "", "Pack")
    with pytest.raises(tb.BindError):
        tb.parse_distribution("plane=0")


def test_rank_map_mask_on_a_big_node() -> None:
    every = list(range(16))
    assert tb.cpu_masks(tb.parse_cpu_bind("rank"), BIG, every, 3).masks == [{0}, {1}, {2}]
    assert tb.cpu_masks(tb.parse_cpu_bind("rank"), BIG, every, 2, cpus_per_task=2).masks == [{0, 1}, {2, 3}]
    assert tb.cpu_masks(tb.parse_cpu_bind("map_cpu:9,1"), BIG, every, 3).masks == [{9}, {1}, {9}]
    assert tb.cpu_masks(tb.parse_cpu_bind("mask_cpu:0x3,0xc0"), BIG, every, 2).masks == [{0, 1}, {6, 7}]
    # A CPU the node lacks: that task fails (an empty mask), as 22.05.8's task_g_set_affinity does
    assert tb.cpu_masks(tb.parse_cpu_bind("map_cpu:16,0"), BIG, every, 2).masks == [set(), {0}]
    assert tb.cpu_masks(tb.parse_cpu_bind("rank_ldom"), BIG, every, 2).masks == [set(range(8)), set(range(8, 16))]
    assert tb.cpu_masks(tb.parse_cpu_bind("map_ldom:1"), BIG, every, 1).masks == [set(range(8, 16))]
    assert tb.cpu_masks(tb.parse_cpu_bind("mask_ldom:0x3"), BIG, every, 1).masks == [set(range(16))]
    assert tb.cpu_masks(tb.parse_cpu_bind("none"), BIG, every, 2).masks is None


def test_cores_sockets_threads_follow_the_second_level_distribution() -> None:
    every = list(range(16))
    cores = tb.parse_cpu_bind("cores")
    # default (cyclic): tasks alternate sockets, each gets a whole core (both its threads)
    assert tb.cpu_masks(cores, BIG, every, 4).masks == [{0, 1}, {8, 9}, {2, 3}, {10, 11}]
    # block: fill socket 0 first
    assert tb.cpu_masks(cores, BIG, every, 4, level2="block").masks == [{0, 1}, {2, 3}, {4, 5}, {6, 7}]
    threads = tb.parse_cpu_bind("threads")
    assert tb.cpu_masks(threads, BIG, every, 3, level2="block").masks == [{0}, {1}, {2}]
    assert tb.cpu_masks(threads, BIG, every, 2, cpus_per_task=2, level2="fcyclic").masks == [{0, 8}, {1, 9}]
    sockets = tb.parse_cpu_bind("sockets")
    assert tb.cpu_masks(sockets, BIG, every, 2).masks == [set(range(8)), set(range(8, 16))]
    # only the job's CPUs: a job holding core 2 of socket 0 and core 5 (socket 1)
    assert tb.cpu_masks(sockets, BIG, [4, 5, 10, 11], 2).masks == [{4, 5}, {10, 11}]
    assert tb.cpu_masks(cores, BIG, [4, 5, 10, 11], 2).masks == [{4, 5}, {10, 11}]


def test_default_binding_comes_from_task_plugin_param_only() -> None:
    plain = tb.cpu_masks(tb.CpuBind(), BIG, list(range(16)), 2)
    assert plain.masks is None and plain.word == ""  # 22.05.8 (affinity.default_n2): unbound
    by_param = tb.cpu_masks(tb.CpuBind(), BIG, list(range(16)), 2, param=tb.parse_plugin_param("Sockets"))
    assert by_param.masks == [set(range(8)), set(range(8, 16))]
    assert tb.cpu_masks(tb.parse_cpu_bind("none"), BIG, list(range(16)), 2,
                        param=tb.parse_plugin_param("Cores")).masks is None


def test_verbose_lines_are_slurms() -> None:
    text = (REF / "affinity.map_cpu.txt").read_text()
    result = tb.cpu_masks(tb.parse_cpu_bind("verbose,map_cpu:1,0"), tb.Layout(1, 4, 1), [0, 1, 2, 3], 2)
    pids = [int(p) for p in re.findall(r"\[(\d{3,})\]", text)]
    for t, pid in enumerate(pids):
        assert f"0: {tb.cpu_bind_line(result, 'n1', t, t, pid, result.masks[t])}" in text
    none = tb.CpuMasks(None, True, "NONE")
    assert tb.cpu_bind_line(none, "n1", 0, 0, 4629, set()) == "cpu-bind=NONE - n1, task  0  0 [4629]: mask 0x0\n"
    ldrank = tb.CpuMasks(None, True, "LDRANK")
    assert tb.cpu_bind_line(ldrank, "n1", 1, 1, 5084, {0, 1, 2, 3}) in (REF / "affinity.rank_ldom.txt").read_text()
    assert tb.cpu_bind_line(tb.CpuMasks(None, True, "MAP"), "n1", 0, 0, 5137, {0, 1}, failed=True) \
        in (REF / "affinity.map_cpu_bad.txt").read_text()
    mem = tb.parse_mem_bind("verbose,local")
    assert tb.mem_bind_line(mem, "vm", 0, 0, 5344, {0}) in (REF / "affinity.mem_bind_local.txt").read_text()
    gpu_text = (REF / "affinity.gpu_bind_single.txt").read_text()
    assert f"1: {tb.gpu_bind_line([1], [0, 1], '1')}" in gpu_text


def test_tasks_over_nodes_block_cyclic_plane() -> None:
    # The node counts are the allocation's (22.05.8: -N2 -n4 is 3,1 with -m cyclic too).
    assert tb.rank_layout(tb.parse_distribution("block"), [3, 1]) == [[0, 1, 2], [3]]
    assert tb.rank_layout(tb.parse_distribution("cyclic"), [3, 1]) == [[0, 2, 3], [1]]
    assert tb.rank_layout(tb.parse_distribution("plane=2"), [4, 2]) == [[0, 1, 4, 5], [2, 3]]
    assert tb.rank_layout(tb.parse_distribution("cyclic:block"), [2, 2, 2]) == [[0, 3], [1, 4], [2, 5]]
    assert tb.rank_layout(tb.parse_distribution(None), [2]) == [[0, 1]]


def test_mem_nodes_and_gpus_per_task() -> None:
    assert tb.mem_nodes(tb.parse_mem_bind("local"), [0, 1], [{1}, {0}]) == [{1}, {0}]
    assert tb.mem_nodes(tb.parse_mem_bind("rank"), [0, 1], [set(), set(), set()]) == [{0}, {1}, {0}]
    assert tb.mem_nodes(tb.parse_mem_bind("mask_mem:0x2"), [0, 1], [set()]) == [{1}]
    assert tb.mem_nodes(tb.parse_mem_bind("none"), [0], [set()]) is None
    with pytest.raises(tb.BindError, match="NUMA node"):
        tb.mem_nodes(tb.parse_mem_bind("map_mem:3"), [0], [set()])
    gpus = [4, 5, 6, 7]
    assert tb.task_gpus(tb.parse_gpu_bind("single:2"), gpus, 4) == [[4], [4], [5], [5]]
    assert tb.task_gpus(tb.parse_gpu_bind("map_gpu:1,0"), gpus, 3) == [[5], [4], [5]]
    assert tb.task_gpus(tb.parse_gpu_bind("mask_gpu:0x3,0xc"), gpus, 2) == [[4, 5], [6, 7]]
    assert tb.task_gpus(tb.parse_gpu_bind("per_task:2"), gpus, 2) == [[4, 5], [6, 7]]
    assert tb.task_gpus(tb.parse_gpu_bind("none"), gpus, 2) is None
    # closest: GPUs 4,5 on NUMA node 0, 6,7 on node 1; a GPU of unknown NUMA is close to all
    assert tb.task_gpus(tb.parse_gpu_bind("closest"), gpus, 2, [{0}, {1}], [0, 0, 1, 1]) == [[4, 5], [6, 7]]
    assert tb.task_gpus(tb.parse_gpu_bind("closest"), gpus, 1, [{1}], [0, None, 0, 0]) == [[5]]
    assert tb.parse_gpu_bind("verbose,closest") == tb.GpuBind("closest", (), True)
    for bad in ("single:0", "bogus", "map_gpu:x"):
        with pytest.raises(tb.BindError):
            tb.parse_gpu_bind(bad)
    with pytest.raises(tb.BindError, match="map_gpu 9"):
        tb.task_gpus(tb.parse_gpu_bind("map_gpu:9"), gpus, 1)


def test_sbatch_gives_its_steps_the_options_and_counts_gpus_per_socket() -> None:
    from plurm.tools.jobspec import build_spec, not_acted_on

    options = {"gpus-per-socket": "h200:1", "sockets-per-node": 2, "distribution": "cyclic",
               "mem-bind": "verbose,local", "gpu-bind": "single:1"}
    spec = build_spec(options, default_name="x", environ={}, batch=True)
    assert {"name": "gpu", "type": "h200", "count": 2, "per": "node"} in spec["gres_req"]
    env = spec["environment"]
    # tests/integration/reference/binding/sbatch.env_options.txt
    assert {k: env[k] for k in env if k.startswith(("SLURM_DIST", "SLURM_MEM", "SLURM_GPU_BIND"))} == {
        "SLURM_DISTRIBUTION": "cyclic", "SLURM_GPU_BIND": "single:1", "SLURM_MEM_BIND": "verbose,local",
        "SLURM_MEM_BIND_VERBOSE": "verbose"}
    assert not set(not_acted_on(spec)) & {"distribution", "mem-bind", "gpu-bind", "gpus-per-socket", "cpu-bind"}
    assert tb.gpus_per_socket_request("0", 1) == [] and tb.gpus_per_socket_request("x:y", 1) == []


def test_hostile_sizes_are_bounded() -> None:
    masks = tb.cpu_masks(tb.parse_cpu_bind("rank"), BIG, list(range(16)), 2, cpus_per_task=10**12).masks
    assert masks == [set(range(16)), set(range(16))]
    assert tb.cpu_masks(tb.parse_cpu_bind("mask_cpu:0x" + "f" * 400), BIG, list(range(16)), 1).masks == [set()]
    assert tb.rank_layout(tb.parse_distribution("plane=99999999999"), [2, 1]) == [[0, 1], [2]]


def test_plane_is_named_as_slurm_names_it() -> None:
    # reference/binding/none.dist_plane2_env.txt and sbatch.dist_plane2_env.txt
    assert tb.distribution_env("plane=2") == {"SLURM_DISTRIBUTION": "plane", "SLURM_DIST_PLANESIZE": "2"}
    assert tb.distribution_env("cyclic:block") == {"SLURM_DISTRIBUTION": "cyclic:block"}
    assert tb.batch_env({"distribution": "plane=2"}) == {"SLURM_DISTRIBUTION": "plane", "SLURM_DIST_PLANESIZE": "2"}
    environ = {"SLURM_DISTRIBUTION": "plane", "SLURM_DIST_PLANESIZE": "2"}
    tb.plane_from_env(environ)
    assert environ["SLURM_DISTRIBUTION"] == "plane=2"
    assert tb.rank_layout(tb.parse_distribution("plane"), [2, 1]) == [[0, 2], [1]]  # (no size: no stall)


def test_map_cpu_ids_are_decimal_as_in_22_05_8() -> None:
    from plurm.grammar.values import OptionValueError, parse_cpu_bind

    with pytest.raises(OptionValueError) as refused:
        parse_cpu_bind("q,map_cpu:0x1")
    said = (REF / "none.env_cpu_bind_q_map_cpu_0x1.txt").read_text().splitlines()
    assert refused.value.pre_errors == [said[1].removeprefix("srun: error: ")]
    assert str(refused.value).splitlines()[-1] == said[2]
    assert parse_cpu_bind("mask_cpu:0x2,0x1") == "mask_cpu:0x2,0x1"
