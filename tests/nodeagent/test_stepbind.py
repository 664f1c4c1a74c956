"""nodeagent/stepbind.plan: a node's binding plan from a real slurm.conf and the devices an
accelerator backend reports (accel.model.Device records with their NUMA nodes), on a
synthetic node bigger than this host: 2 sockets x 2 cores x 2 threads, two NUMA nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from plurm.accel.model import Device
from plurm.grammar.slurmconf import parse_slurm_conf_text
from plurm.nodeagent import stepbind
from plurm.nodeagent.devices import NodeDevices

CONF = """ClusterName=c
SlurmctldHost=h(127.0.0.1)
TaskPlugin={plugin}
TaskPluginParam={param}
NodeName=big CPUs=8 Sockets=2 CoresPerSocket=2 ThreadsPerCore=2 Gres=gpu:4
PartitionName=p Nodes=big Default=YES
"""
MACHINE = list(range(8))  # the host's CPUs as plurmd's affinity has them
NUMA = {c: c // 4 for c in MACHINE}  # socket 0 (CPUs 0-3) is NUMA node 0, socket 1 node 1


def _plan(binding: dict, tasks: int, plugin: str = "task/affinity", param: str = "None", gpus: list[int] = [],
          accel: object = None) -> dict:
    conf = parse_slurm_conf_text(CONF.format(plugin=plugin, param=param))
    return stepbind.plan(conf, conf.nodes["big"], "big", binding, list(range(tasks)), list(range(8)), gpus, accel,
                         allowed=MACHINE, numa=NUMA)


@pytest.fixture
def accel(tmp_path: Path) -> NodeDevices:
    devices = NodeDevices(str(tmp_path / "slurm.conf"), "big", ["gpu:4"])
    devices.devices = [Device("NVIDIA", "H200", f"GPU-{i}", i, "nvml", numa_node=i // 2) for i in range(4)]
    return devices


def test_cores_cyclic_over_sockets_and_the_numa_nodes_they_bring() -> None:
    plan = _plan({"cpu_bind": "verbose,cores", "mem_bind": "local"}, 4)
    assert [t["cpus"] for t in plan["tasks"]] == [[0, 1], [4, 5], [2, 3], [6, 7]]
    assert [t["mems"] for t in plan["tasks"]] == [[0], [1], [0], [1]]
    assert plan["tasks"][1]["cpu_line"] == {"word": "MASK", "unit": "cores", "mask": [4, 5]}
    assert "error" not in plan


def test_without_task_affinity_nothing_is_bound_but_gpus(accel: NodeDevices) -> None:
    plan = _plan({"cpu_bind": "rank", "mem_bind": "local", "gpu_bind": "single:1"}, 2, plugin="task/none",
                 gpus=[0, 1], accel=accel)
    assert [t.get("cpus") for t in plan["tasks"]] == [None, None]
    assert [t.get("mems") for t in plan["tasks"]] == [None, None]
    assert [t["gpus"] for t in plan["tasks"]] == [[0], [1]]
    assert [t["env"]["CUDA_VISIBLE_DEVICES"] for t in plan["tasks"]] == ["0", "1"]


def test_task_plugin_param_sets_the_default(accel: NodeDevices) -> None:
    plan = _plan({}, 2, param="Sockets,Verbose")
    assert [t["cpus"] for t in plan["tasks"]] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert plan["tasks"][0]["cpu_line"]["unit"] == "sockets"
    assert [t.get("cpus") for t in _plan({"cpu_bind": "none"}, 2, param="Sockets")["tasks"]] == [None, None]


def test_gpu_closest_follows_the_backends_numa_nodes(accel: NodeDevices) -> None:
    plan = _plan({"cpu_bind": "sockets", "gpu_bind": "verbose,closest"}, 2, gpus=[0, 1, 2, 3], accel=accel)
    assert [t["gpus"] for t in plan["tasks"]] == [[0, 1], [2, 3]]
    assert plan["tasks"][1]["lines"] == [
        "gpu-bind: usable_gres=0xc; bit_alloc=0xf; local_inx=0; global_list=2,3; local_list=2,3\n"]


def test_what_the_node_cannot_do_is_said_not_crashed(accel: NodeDevices) -> None:
    bad_cpu = _plan({"cpu_bind": "map_cpu:9,0"}, 2)
    assert bad_cpu["tasks"][0]["fail"] == "task_g_set_affinity: Invalid argument"
    assert bad_cpu["tasks"][1]["cpus"] == [0]
    bad_mem = _plan({"mem_bind": "map_mem:5"}, 1)
    assert bad_mem["error"].startswith("slurmstepd-big: error: task/affinity: --mem-bind: NUMA node(s) [5]")
    bad_gpu = _plan({"gpu_bind": "map_gpu:7"}, 1, gpus=[0], accel=accel)
    assert "gres/gpu: task 0: map_gpu 7" in bad_gpu["error"]
    assert stepbind.task_words(bad_cpu, bad_cpu["tasks"][0], "big", 0, 0, 4242) == (
        "slurmstepd-big: error: task_g_set_affinity: Invalid argument\n", "")
    assert stepbind.task_words(bad_cpu, bad_cpu["tasks"][1], "big", 1, 1, 4243) == ("", "")
    assert stepbind.task_place({"tasks": "junk"}, 0) == {} and stepbind.task_place({}, 3) == {}


def test_sysfs_numa_nodes_are_read(tmp_path: Path) -> None:
    for node, cpus in ((0, "0-1,4"), (1, "2-3")):
        (tmp_path / f"node{node}").mkdir()
        (tmp_path / f"node{node}" / "cpulist").write_text(cpus + "\n")
    (tmp_path / "possible").write_text("0-1\n")
    assert stepbind.numa_of_cpus(str(tmp_path)) == {0: 0, 1: 0, 4: 0, 2: 1, 3: 1}


def test_a_mask_outside_the_jobs_cpuset_fails_that_task() -> None:
    conf = parse_slurm_conf_text(CONF.format(plugin="task/cgroup,task/affinity", param="None"))
    args = (conf, conf.nodes["big"], "big", {"cpu_bind": "map_cpu:1,6"}, [0, 1], [0, 1], [])
    confined = stepbind.plan(*args, allowed=MACHINE, numa=NUMA, cpuset=True)
    assert [t.get("fail") for t in confined["tasks"]] == [None, "task_g_set_affinity: Invalid argument"]
    assert confined["tasks"][0]["cpus"] == [1]
    # unconfined (no cpuset), a task may go to any of the node's CPUs
    assert [t["cpus"] for t in stepbind.plan(*args, allowed=MACHINE, numa=NUMA)["tasks"]] == [[1], [6]]


# --gres-flags: the job's CPUs on a node come first from its GPUs' NUMA nodes (cons_tres's GPU-to-core
# affinity); disable-binding drops the preference, enforce-binding logs when the local CPUs run short.

def _confine(tmp_path: Path, cpus: int = 8):
    from plurm.nodeagent.confinement import Confinement

    confine = Confinement(None, None, False, "", "slurm", cpus, [], str(tmp_path))
    confine.allowed = MACHINE  # (the synthetic 8-CPU host, whatever this one has)
    return confine


def _job(*flags: str) -> dict:
    return {"job_id": 7, "spec": {"gres_flags": list(flags)}}


def test_a_job_gets_the_cpus_of_its_gpus_numa_node_first(tmp_path: Path, accel: NodeDevices) -> None:
    confine = _confine(tmp_path)
    near = stepbind.gpu_local_cpus(confine, accel, _job(), [2, 3], 2, set(), numa=NUMA)
    assert near == {4, 5, 6, 7}  # GPUs 2 and 3 are on NUMA node 1
    assert confine.pick_cpus(2, set(), near) == [4, 5]
    assert confine.pick_cpus(2, {4, 5, 6}, near) == [0, 7]  # one local CPU left, then the lowest other
    assert confine.pick_cpus(2, set(), None) == [0, 1]  # (no GPU: the lowest, as before)


def test_disable_binding_and_gpus_of_unknown_numa_node_have_no_preference(tmp_path: Path,
                                                                          accel: NodeDevices) -> None:
    confine = _confine(tmp_path)
    assert stepbind.gpu_local_cpus(confine, accel, _job("disable-binding"), [2], 1, set(), numa=NUMA) is None
    assert stepbind.gpu_local_cpus(confine, accel, _job(), [], 1, set(), numa=NUMA) is None
    accel.devices = [Device("NVIDIA", "H200", f"GPU-{i}", i, "nvml") for i in range(4)]
    assert stepbind.gpu_local_cpus(confine, accel, _job("enforce-binding"), [2], 1, set(), numa=NUMA) is None


def test_enforce_binding_logs_when_the_local_cpus_run_short(tmp_path: Path, accel: NodeDevices,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    confine = _confine(tmp_path)
    with caplog.at_level("WARNING", logger="plurmd"):
        near = stepbind.gpu_local_cpus(confine, accel, _job("enforce-binding"), [0], 6, {1}, numa=NUMA)
    assert near == {0, 1, 2, 3}
    assert "enforce-binding: 3 of its 6 CPUs are local to its GPUs (NUMA 0)" in caplog.text
    assert confine.pick_cpus(6, {1}, near) == [0, 2, 3, 4, 5, 6]
