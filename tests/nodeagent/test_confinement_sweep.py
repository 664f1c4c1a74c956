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
