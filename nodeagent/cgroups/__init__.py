"""Confining a job to what it was given: cgroups as Slurm 22.05's proctrack/cgroup and
task/cgroup lay them out (v1 and v2), for plurmd, its supervisors and plurmstepd.

The facade: ``read_conf`` (cgroup.conf), ``open_hierarchy`` (which version, where, which
controllers), then per job ``Hierarchy.job(uid, job_id)`` -> ``JobCgroup`` (create with
``Limits``, kill everything, freeze, remove) and its ``StepCgroup``s (``attach``, ``join`` in
a root child's preexec_fn, OOM count, usage).  Everything raises ``CgroupError`` subclasses.

    conf = cgroups.read_conf("/etc/slurm/slurm.conf")
    hierarchy = cgroups.open_hierarchy(conf, "slurm")
    job = hierarchy.job(uid, job_id)
    job.create(conf.limits(cpus=[2, 3], alloc_ram_bytes=mem_mb << 20))
    step = job.step("batch")
    step.create(cgroups.Limits())
    Popen(..., preexec_fn=...)  # as root: join(step.join_paths()), then become the owner
    ...
    job.kill_all(); step.oom_kills(); step.usage(); job.remove()

Layouts: v1.py and v2.py.  Without root there is no hierarchy (``Unavailable``): plurmd then
tracks process groups and says so.
"""

from __future__ import annotations

import os

from plurm.nodeagent.cgroups import mounts
from plurm.nodeagent.cgroups.base import (
    USAGE_KEYS,
    CgroupError,
    CreateError,
    FreezeTimeout,
    Hierarchy,
    JobCgroup,
    Limits,
    StepCgroup,
    Unavailable,
    cpulist,
    join,
    parse_cpulist,
)
from plurm.nodeagent.cgroups.conf import CgroupConf, ConfError, conf_file, parse_conf, read_conf
from plurm.nodeagent.cgroups.v1 import open_v1
from plurm.nodeagent.cgroups.v2 import open_v2

__all__ = ["USAGE_KEYS", "CgroupConf", "CgroupError", "ConfError", "CreateError", "FreezeTimeout",
           "Hierarchy", "JobCgroup", "Limits", "StepCgroup", "Unavailable", "conf_file", "cpulist",
           "join", "open_hierarchy", "parse_conf", "parse_cpulist", "read_conf"]


def open_hierarchy(conf: CgroupConf, prefix: str, mounts_file: str = mounts.MOUNTS) -> Hierarchy:
    """The hierarchy plurmd's jobs go in, under ``prefix`` (``slurm`` or ``slurm_<NodeName>``).

    ``autodetect``: v2 when CgroupMountpoint itself is a cgroup2 mount (a pure v2 system),
    else v1 when v1 controllers are mounted below it.  Nothing is created yet.  Raises
    Unavailable with a one-line reason (not root, nothing mounted, no freezer on v1)."""
    if not prefix or "/" in prefix or prefix in (".", ".."):
        raise CgroupError(f"invalid cgroup prefix {prefix!r}")
    if os.geteuid() != 0:
        raise Unavailable("not running as root: cgroups need root")
    found = mounts.cgroup_mounts(mounts_file)
    v2 = mounts.v2_mount(found, conf.mountpoint)
    v1 = mounts.v1_controllers(found, conf.mountpoint)
    plugin = conf.plugin
    if plugin == "autodetect":
        if v2 is not None and os.path.exists(os.path.join(v2, "cgroup.controllers")):
            plugin = "cgroup/v2"
        elif any(c in v1 for c in ("freezer", "memory", "cpuset")):
            plugin = "cgroup/v1"
        else:
            raise Unavailable(f"no cgroup hierarchy mounted at {conf.mountpoint}")
    if plugin == "cgroup/v2":
        if v2 is None:
            raise Unavailable(f"CgroupPlugin=cgroup/v2 but {conf.mountpoint} is not a cgroup2 mount")
        return open_v2(v2, prefix, conf.wanted())
    if not v1:
        raise Unavailable(f"CgroupPlugin=cgroup/v1 but no v1 controller is mounted under "
                          f"{conf.mountpoint}")
    return open_v1(prefix, v1, conf.wanted())
