"""A confined task is in its step's cgroup before anything of it runs, whatever its owner does.

The owner may signal their own processes: a task that waits for plurmstepd by stopping itself
(SIGSTOP) can be continued by another process of theirs (SIGCONT, or ptrace) before it was put
in its cgroup, and fork outside it.  These tests continue the task as early as the owner
could and look where its command ran.  Real cgroups, as root, as user nobody.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurm.nodeagent import cgroups, launch
from plurm.nodeagent.cgroups import mounts
from plurm.nodeagent.stepd_io import TaskIo, start_task

ROOT = os.geteuid() == 0
NOBODY = 65534
V2_MOUNT = next((m.path for m in mounts.cgroup_mounts() if m.fstype == "cgroup2"), None)


def _conf(version: int) -> cgroups.CgroupConf:
    if version == 1:
        return cgroups.CgroupConf(plugin="cgroup/v1")
    assert V2_MOUNT
    return cgroups.CgroupConf(plugin="cgroup/v2", mountpoint=V2_MOUNT)


@pytest.fixture(params=[1, 2], ids=["v1", "v2"])
def step(request: pytest.FixtureRequest) -> Iterator[cgroups.StepCgroup]:
    if not ROOT:
        pytest.skip("cgroups and a switch to another user need root")
    if request.param == 2 and V2_MOUNT is None:
        pytest.skip("no cgroup2 file system mounted")
    try:
        pwd.getpwuid(NOBODY)
    except KeyError:
        pytest.skip("no user nobody (65534)")
    hierarchy = cgroups.open_hierarchy(_conf(request.param), f"plurmtest_entry_{os.getpid()}")
    job = hierarchy.job(NOBODY, 41)
    job.create(cgroups.Limits())
    step = job.step("0")
    step.create(cgroups.Limits())
    yield step
    job.thaw()
    job.kill_all(timeout=10)
    assert job.remove()
    hierarchy.remove()


@pytest.fixture
def out() -> Iterator[Path]:
    """A directory of nobody's that nobody can reach (pytest's tmp_path is root's, 0700)."""
    path = Path(tempfile.mkdtemp(prefix="plurmtest_entry_"))
    os.chown(path, NOBODY, NOBODY)
    yield path
    shutil.rmtree(path)


def _owner() -> launch.Owner:
    return launch.owner_of(NOBODY, NOBODY, {})


def _step_path(step: cgroups.StepCgroup) -> str:
    """The step's path as /proc/PID/cgroup shows it (under the mount point)."""
    path = os.path.dirname(step.join_paths()[-1])
    mount = max((m.path for m in mounts.cgroup_mounts() if path.startswith(m.path + "/")), key=len)
    return path[len(mount):]


def test_a_task_continued_by_its_owner_at_once_still_runs_in_its_cgroup(step: cgroups.StepCgroup,
                                                                        out: Path) -> None:
    started = start_task(["/bin/sh", "-c", f"cat /proc/self/cgroup >{out}/cg; id -u >{out}/uid"],
                         {"PATH": "/usr/bin:/bin"}, str(out), _owner(), None,
                         TaskIo(stdin="null", stdout="null", stderr="null"), **_confined(step))
    held = getattr(started, "held", False)
    if held:  # (the stop-self hold: the owner's SIGCONT comes once it stopped, before the attach)
        assert started.held_stopped()
    try:  # another process of the owner's continues the task as early as it can
        os.kill(started.proc.pid, signal.SIGCONT)
    except ProcessLookupError:
        pass
    code = started.proc.wait(timeout=30)
    if held:
        started.release()
    assert code == 0
    assert (out / "uid").read_text().strip() == str(NOBODY)
    seen = (out / "cg").read_text()
    assert any(line.endswith(":" + _step_path(step)) for line in seen.splitlines()), seen


def _confined(step: cgroups.StepCgroup) -> dict:
    """start_task's arguments for a confined task (as plurmstepd passes them)."""
    import inspect

    if "join" in inspect.signature(start_task).parameters:
        return {"join": step.join_paths()}
    return {"hold": True}
