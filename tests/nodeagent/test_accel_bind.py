"""srun --accel-bind on the node: ``g`` binds each task to the GPUs closest to its CPUs (as
--gpu-bind=closest, from the NUMA nodes the accelerator backend reports), on the synthetic
2-socket node of test_stepbind.py; an explicit --gpu-bind wins; n and v change nothing."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

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
MACHINE = list(range(8))
NUMA = {c: c // 4 for c in MACHINE}  # socket 0 (CPUs 0-3) is NUMA node 0, socket 1 node 1


@pytest.fixture
def accel(tmp_path: Path) -> NodeDevices:
    devices = NodeDevices(str(tmp_path / "slurm.conf"), "big", ["gpu:4"])
    devices.devices = [Device("NVIDIA", "H200", f"GPU-{i}", i, "nvml", numa_node=i // 2) for i in range(4)]
    return devices


def _gpus(binding: dict, launch: dict, accel: NodeDevices) -> list[list[int] | None]:
    conf = parse_slurm_conf_text(CONF.format(plugin="task/affinity", param="None"))
    plan = stepbind.plan(conf, conf.nodes["big"], "big", stepbind.with_accel_bind(dict(binding), launch), [0, 1],
                         list(range(8)), [0, 1, 2, 3], accel, allowed=MACHINE, numa=NUMA)
    return [t.get("gpus") for t in plan["tasks"]]


def test_g_binds_each_task_to_its_sockets_gpus(accel: NodeDevices) -> None:
    assert _gpus({"cpu_bind": "sockets"}, {"accel_bind": "gv"}, accel) == [[0, 1], [2, 3]]
    assert _gpus({"cpu_bind": "sockets"}, {}, accel) == [None, None]  # (every task sees the job's four)
    assert _gpus({"cpu_bind": "sockets"}, {"accel_bind": "nv"}, accel) == [None, None]
    assert _gpus({"cpu_bind": "sockets", "gpu_bind": "map_gpu:3,0"}, {"accel_bind": "g"}, accel) == [[3], [0]]


def test_plurmd_reads_it_from_the_launch_request(accel: NodeDevices) -> None:
    conf = parse_slurm_conf_text(CONF.format(plugin="task/affinity", param="None"))
    daemon = SimpleNamespace(jobs={}, confine=SimpleNamespace(held={}, confined=False, constrain=False), name="big",
                             node_conf=conf.nodes["big"], conf=conf, accel=accel)
    msg = SimpleNamespace(uid=0, job_id=1, step_id=0, job_gres={"gpu": [0, 1, 2, 3]}, binding={"cpu_bind": "sockets"},
                          task_ids=[0, 1], launch={"accel_bind": "g"})
    plan = stepbind.for_launch(daemon, msg, {"nodes": ["big"], "cpus": [8]})
    # (which GPUs: this host's CPUs and NUMA map decide; without --accel-bind none is chosen)
    assert len(plan["tasks"]) == 2 and all(t.get("gpus") for t in plan["tasks"])
