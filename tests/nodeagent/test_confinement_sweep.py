"""plurmd's restart sweep (Confinement.sweep): every job cgroup its spool marks for a job it no
longer has is killed and removed.  Real cgroups, as root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from plurm.nodeagent import cgroups
from plurm.nodeagent.cgroups import mounts
from plurm.nodeagent.cgroups.v2 import UID_XATTR
from plurm.nodeagent.confinement import Confinement, ConfinementError

V2_MOUNT = next((m.path for m in mounts.cgroup_mounts() if m.fstype == "cgroup2"), None)


@pytest.fixture(params=[1, 2], ids=["v1", "v2"])
def confine(request: pytest.FixtureRequest, tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip("cgroups need root (plurm runs jobs unconfined without it)")
    if request.param == 2 and V2_MOUNT is None:
        pytest.skip("no cgroup2 file system mounted")
    conf = (cgroups.CgroupConf(plugin="cgroup/v1") if request.param == 1 else
            cgroups.CgroupConf(plugin="cgroup/v2", mountpoint=V2_MOUNT))
    prefix = f"plurmtest_sweep_{os.getpid()}"
    hierarchy = cgroups.open_hierarchy(conf, prefix)
    confine = Confinement(hierarchy, conf, False, "", prefix, 1, [], str(tmp_path))
    yield confine
    for uid, job_id in hierarchy.jobs():
        job = hierarchy.job(uid, job_id)
        job.thaw()
        job.kill_all(timeout=10)
        job.remove()
    hierarchy.remove()


def test_a_marked_cgroup_whose_uid_cannot_be_read_back_is_still_swept(confine: Confinement) -> None:
    """v2 keeps the job's uid in an xattr (its path has none); one that is gone (a file system
    without trusted xattrs) must not make the sweep forget a job cgroup that holds processes."""
    paths = confine.start_batch(1000, 77, cgroups.Limits())
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             preexec_fn=lambda: cgroups.join(paths))
    try:
        job = confine.job(1000, 77)
        if confine.hierarchy.version == 2:
            os.removexattr(job.path, UID_XATTR)
        assert child.pid in job.pids()
        assert confine.sweep(set()) == [(1000, 77)]
        assert child.wait(timeout=30) == -9
        assert not job.exists() and confine.marked() == set()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_bad_cgroup_conf_stops_plurmd_rather_than_running_jobs_unconfined(tmp_path: Path) -> None:
    """A typo in cgroup.conf is the administrator's to fix (slurmd stops on it too): jobs run on
    with none of the memory, CPU and GPU limits they meant otherwise, one WARNING aside."""
    if os.geteuid() != 0:
        pytest.skip("confinement is considered only as root")
    from plurm.grammar.slurmconf import load_slurm_conf

    conf_path = tmp_path / "slurm.conf"
    conf_path.write_text("ClusterName=t\nSlurmctldHost=localhost\nTaskPlugin=task/cgroup\n"
                         "NodeName=n1 NodeAddr=127.0.0.1 CPUs=1 RealMemory=100\nPartitionName=p Nodes=n1\n")
    (tmp_path / "cgroup.conf").write_text("ConstrainRAMSpace=perhaps\n")
    with pytest.raises(ConfinementError, match="ConstrainRAMSpace"):
        Confinement.load(load_slurm_conf(str(conf_path)), str(conf_path), "n1", [], str(tmp_path))


@pytest.mark.parametrize("alloc", [
    {"nodes": "n1", "cpus": [1], "mem": [100]},  # a string: "n1" in it, str.index a character's
    {"nodes": ["n1"], "cpus": ["two"], "mem": [100]},
    {"nodes": ["n1"], "cpus": [1], "mem": [None]},
    {"nodes": ["n1"], "cpus": {"n1": 1}, "mem": 5},
    {"nodes": ["n1"], "cpus": [1], "mem": [100], "gres_alloc": "gpu:junk"},
    {"nodes": ["n1"], "cpus": [1], "mem": [100], "gres_alloc": [{"gpu": "x"}]},
    None, [], {"nodes": None},
])
def test_an_odd_job_allocation_in_a_step_credential_gives_no_limits_not_a_crash(confine: Confinement,
                                                                                 alloc: object) -> None:
    limits = confine.step_job_limits(alloc, "n1", set(), 1000, 78)
    assert isinstance(limits, cgroups.Limits)
    confine.release(1000, 78)


@pytest.mark.parametrize("mem_mb", [0, 1, 100])
def test_a_node_without_realmemory_does_not_cap_jobs_at_one_megabyte(tmp_path: Path, mem_mb: int) -> None:
    """RealMemory unset is Slurm's 1 (MB): MaxRAMPercent of that made every confined job's
    limit 1 MiB, under MinRAMSpace, and the kernel OOM-killed it at its start.  The node's
    RAM is then the machine's."""
    conf = cgroups.CgroupConf(constrain_ram=True)
    confine = Confinement(None, conf, True, "", "slurm", 1, [], str(tmp_path), node_ram_mb=1)
    limits = confine.limits([0], mem_mb, [])
    assert limits.ram_bytes >= max(conf.min_ram_mb, mem_mb) * 1024 * 1024
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert limits.ram_bytes <= physical
    set_ram = Confinement(None, conf, True, "", "slurm", 1, [], str(tmp_path), node_ram_mb=2000)
    assert set_ram.limits([0], 0, []).ram_bytes == 2000 * 1024 * 1024  # (no allocation: the node's RealMemory)


def test_a_step_whose_cgroup_cannot_be_made_leaves_no_job_cgroup_behind(tmp_path: Path) -> None:
    """The job's first process here is that step (no batch run): its failed launch removes the
    job cgroup it made, its spool mark and the CPUs held for it (they stayed until a restart).
    (v1: a CPU the machine lacks fails the cpuset write; v2 has no cpuset controller here.)"""
    if os.geteuid() != 0:
        pytest.skip("cgroups need root (plurm runs jobs unconfined without it)")
    if not os.path.isdir("/sys/fs/cgroup/cpuset"):
        pytest.skip("no cgroup v1 cpuset controller mounted")
    conf = cgroups.CgroupConf(plugin="cgroup/v1", constrain_cores=True)
    prefix = f"plurmtest_stepfail_{os.getpid()}"
    hierarchy = cgroups.open_hierarchy(conf, prefix)
    confine = Confinement(hierarchy, conf, True, "", prefix, 1, [], str(tmp_path))
    try:
        confine.held[(1000, 79)] = [0]  # (as step_job_limits holds them)
        with pytest.raises(ConfinementError):
            confine.start_step(1000, 79, 0, False, cgroups.Limits(cpus=[4095]))
        assert not confine.job(1000, 79).exists()
        assert confine.marked() == set() and confine.held_cpus() == set()
    finally:
        confine.job(1000, 79).remove()
        hierarchy.remove()
