"""cgroup v1: one hierarchy per controller, Slurm 22.05's layout in each.

    <mount>/<controller>/<prefix>/uid_<uid>/job_<id>/step_<name>/

Controllers: ``freezer`` tracks the job (its cgroup.procs are the job's processes; it
freezes for SUSPEND and for the kill loop) and is required; ``memory`` (limits, OOM count,
peak) and ``cpuacct`` (CPU time) are always used for accounting when mounted; ``cpuset``
with ConstrainCores, ``devices`` with ConstrainDevices.  A controller the configuration
needs but the kernel lacks is logged once and its limit left off (``Hierarchy.missing``).

v1 details that matter: a new cpuset is empty and refuses tasks, so every level copies
cpus/mems from its parent before a child is made; ``memory.memsw.limit_in_bytes`` must
never be below ``memory.limit_in_bytes`` (the order of the two writes depends on which way
they move); the OOM killer counts a kill only in the victim's own cgroup (no propagation),
so a job's count is the sum over its directories.
"""

from __future__ import annotations

import os
import signal

from plurm.nodeagent.cgroups import base
from plurm.nodeagent.cgroups.base import CgroupError, CreateError, FreezeTimeout, Limits

TRACKING = "freezer"
ACCOUNTING = ("memory", "cpuacct")
_CHAIN_TRIES = 5  # makes of a job's chain racing the removal of its uid_<uid> level
_TICK_NS = 1_000_000_000 // (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


class V1Hierarchy(base.Hierarchy):
    version = 1

    def __init__(self, prefix: str, roots: dict[str, str], missing: dict[str, str]) -> None:
        # roots: controller -> <mount>/<prefix> (co-mounted controllers share one directory).
        self.prefix = prefix
        self.roots = roots
        self.missing = missing
        self._warned: set[str] = set()

    def describe(self) -> str:
        return ("cgroup/v1 " + ", ".join(f"{c}:{p}" for c, p in sorted(self.roots.items()))
                + (f" (missing: {', '.join(sorted(self.missing))})" if self.missing else ""))

    def job(self, uid: int, job_id: int) -> "V1Job":
        return V1Job(self, uid, job_id)

    def jobs(self) -> list[tuple[int, int]]:
        found: set[tuple[int, int]] = set()
        for root in set(self.roots.values()):
            for uid_dir in base.listdir(root):
                if not uid_dir.startswith("uid_") or not uid_dir[4:].isdigit():
                    continue
                for job_dir in base.listdir(os.path.join(root, uid_dir)):
                    if job_dir.startswith("job_") and job_dir[4:].isdigit():
                        found.add((int(uid_dir[4:]), int(job_dir[4:])))
        return sorted(found)

    def remove(self) -> bool:
        ok = True
        for root in set(self.roots.values()):
            for uid_dir in base.listdir(root):
                ok = base.rmdir(os.path.join(root, uid_dir)) and ok
            ok = base.rmdir(root) and ok
        return ok

    def warn_once(self, controller: str, what: str) -> None:
        if controller not in self._warned:
            self._warned.add(controller)
            base.log.warning("cgroup/v1 (%s): no %s controller (not mounted, or not asked for by "
                             "cgroup.conf): %s", self.prefix, controller, what)

    def dirs(self, rel: str, controllers: tuple[str, ...] | None = None) -> dict[str, str]:
        """controller -> directory of ``rel`` (relative to the prefix) for the controllers used."""
        return {c: os.path.join(p, rel) for c, p in self.roots.items()
                if controllers is None or c in controllers}


def _ensure_cpuset(path: str) -> None:
    """A v1 cpuset directory with cpus and mems (copied from its parent when empty)."""
    parent = os.path.dirname(path)
    for name in ("cpuset.cpus", "cpuset.mems"):
        if not base.read_or(os.path.join(path, name)).strip():
            value = base.read_or(os.path.join(parent, name)).strip()
            base.write(os.path.join(path, name), value or "\n", CreateError)


def _make_chain(root: str, rel_parts: list[str], controller: str) -> str:
    """mkdir each level of ``rel_parts`` under ``root``; cpusets get their cpus/mems, new
    memory levels a hierarchical accounting."""
    path = root
    for part in [""] + rel_parts:
        path = os.path.join(path, part) if part else path
        made = base.mkdir(path)
        if controller == "cpuset":
            _ensure_cpuset(path)
        elif controller == "memory" and made:
            _use_hierarchy(path)
    return path


def _use_hierarchy(path: str) -> None:
    # Kernels before 5.x default to flat memory accounting, where a job's limit would not
    # cover its steps; newer ones are always hierarchical and refuse the write (harmless).
    flag = os.path.join(path, "memory.use_hierarchy")
    if base.read_or(flag).strip() == "0":
        try:
            base.write(flag, "1")
        except CgroupError as exc:
            base.log.debug("cgroup/v1: %s", exc)


def _apply(hierarchy: V1Hierarchy, dirs: dict[str, str], limits: Limits) -> None:
    """Write ``limits`` into one level's directories (the job's or a step's)."""
    if limits.cpus is not None or limits.mems is not None:
        if "cpuset" in dirs:
            if limits.cpus is not None:
                base.write(os.path.join(dirs["cpuset"], "cpuset.cpus"), base.cpulist(limits.cpus),
                           CreateError)
            if limits.mems is not None:
                base.write(os.path.join(dirs["cpuset"], "cpuset.mems"), limits.mems, CreateError)
        else:
            hierarchy.warn_once("cpuset", "CPUs not constrained")
    if limits.ram_bytes is not None:
        if "memory" in dirs:
            _memory_limits(dirs["memory"], limits)
        else:
            hierarchy.warn_once("memory", "memory not constrained")
    if limits.denied_devices:
        if "devices" in dirs:
            for kind, major, minor in limits.denied_devices:
                base.write(os.path.join(dirs["devices"], "devices.deny"), f"{kind} {major}:{minor} rwm",
                           CreateError)
        else:
            hierarchy.warn_once("devices", "devices not constrained")


def _memory_limits(path: str, limits: Limits) -> None:
    assert limits.ram_bytes is not None
    ram = limits.ram_bytes
    soft = limits.soft_ram_bytes if limits.soft_ram_bytes is not None else ram
    memsw_file = os.path.join(path, "memory.memsw.limit_in_bytes")
    memsw = ram + limits.swap_bytes if limits.swap_bytes is not None else None
    base.write(os.path.join(path, "memory.soft_limit_in_bytes"), str(min(soft, ram)), CreateError)
    if memsw is not None and not os.path.exists(memsw_file):
        base.log.warning("cgroup/v1: %s has no memory.memsw (swapaccount=0): swap not constrained",
                         path)
        memsw = None
    # memsw >= limit at every moment: lowering writes the limit first, raising memsw first.
    try:
        base.write(os.path.join(path, "memory.limit_in_bytes"), str(ram), CreateError)
    except CreateError:
        if memsw is None:
            raise
        base.write(memsw_file, str(memsw), CreateError)
        base.write(os.path.join(path, "memory.limit_in_bytes"), str(ram), CreateError)
    if memsw is not None:
        base.write(memsw_file, str(memsw), CreateError)


def _oom_kills(memory_dir: str) -> int:
    return base.keyed(base.read_or(os.path.join(memory_dir, "memory.oom_control"))).get("oom_kill", 0)


def _usage(dirs: dict[str, str]) -> dict[str, int]:
    out = dict.fromkeys(base.USAGE_KEYS, 0)
    memory = dirs.get("memory")
    if memory:
        out["max_rss_bytes"] = _int(base.read_or(os.path.join(memory, "memory.max_usage_in_bytes")))
        out["mem_current_bytes"] = _int(base.read_or(os.path.join(memory, "memory.usage_in_bytes")))
        stat = base.keyed(base.read_or(os.path.join(memory, "memory.stat")))
        out["rss_bytes"] = stat.get("total_rss", stat.get("rss", 0))
    cpuacct = dirs.get("cpuacct")
    if cpuacct:
        out["cpu_total_ns"] = _int(base.read_or(os.path.join(cpuacct, "cpuacct.usage")))
        user = base.read_or(os.path.join(cpuacct, "cpuacct.usage_user"))
        system = base.read_or(os.path.join(cpuacct, "cpuacct.usage_sys"))
        if user and system:  # ns, kernels since 4.7
            out["cpu_user_ns"], out["cpu_system_ns"] = _int(user), _int(system)
        else:  # USER_HZ ticks
            stat = base.keyed(base.read_or(os.path.join(cpuacct, "cpuacct.stat")))
            out["cpu_user_ns"] = stat.get("user", 0) * _TICK_NS
            out["cpu_system_ns"] = stat.get("system", 0) * _TICK_NS
    return out


def _int(text: str) -> int:
    try:
        return int(text.strip() or 0)
    except ValueError:
        return 0


def _procs_below(path: str) -> set[int]:
    pids: set[int] = set()
    for directory in base.subdirs_deepest_first(path):
        pids |= base.read_pids(os.path.join(directory, "cgroup.procs"))
    return pids


class V1Job(base.JobCgroup):
    def __init__(self, hierarchy: V1Hierarchy, uid: int, job_id: int) -> None:
        self.h = hierarchy
        self.uid = uid
        self.job_id = job_id
        self.rel = os.path.join(f"uid_{uid}", f"job_{job_id}")
        self.paths = hierarchy.dirs(self.rel)

    def __repr__(self) -> str:
        return f"V1Job({self.paths.get(TRACKING)!r})"

    def create(self, limits: Limits) -> None:
        for controller, root in self.h.roots.items():
            for attempt in range(_CHAIN_TRIES):
                try:
                    _make_chain(root, [f"uid_{self.uid}", f"job_{self.job_id}"], controller)
                    break
                except base.ParentGone:  # the user's level went with their last other job
                    if attempt == _CHAIN_TRIES - 1:
                        raise
        _apply(self.h, self.paths, limits)

    def exists(self) -> bool:
        return os.path.isdir(self.paths[TRACKING])

    def step(self, name: str) -> "V1Step":
        return V1Step(self, name)

    def steps(self) -> list[str]:
        return [d[5:] for d in base.listdir(self.paths[TRACKING]) if d.startswith("step_")]

    def pids(self) -> set[int]:
        return _procs_below(self.paths[TRACKING])

    def oom_kills(self) -> int:
        memory = self.paths.get("memory")
        if not memory:
            return 0
        return sum(_oom_kills(d) for d in base.subdirs_deepest_first(memory))

    def memory_bytes(self) -> int:
        memory = self.paths.get("memory")
        return _int(base.read_or(os.path.join(memory, "memory.usage_in_bytes"))) if memory else 0

    def usage(self) -> dict[str, int]:
        """The whole job's usage (v1 charges and CPU time are hierarchical)."""
        return _usage(self.paths)

    def kill_all(self, signum: int = signal.SIGKILL, timeout: float = 5.0) -> bool:
        if not self.exists():
            return True
        try:
            return base.frozen_kill_loop(lambda: self.freeze(1.0), lambda: self.thaw(1.0),
                                         self.pids, signum, timeout)
        except CgroupError as exc:  # the freezer went away: signal without it
            base.log.warning("cgroup kill of job %d without the freezer: %s", self.job_id, exc)
            base.signal_pids(self.pids(), signum)
            return base.wait_until(lambda: not self.pids(), timeout)

    def freeze(self, timeout: float = 10.0) -> None:
        _set_freezer(self.paths[TRACKING], "FROZEN", timeout)

    def thaw(self, timeout: float = 10.0) -> None:
        _set_freezer(self.paths[TRACKING], "THAWED", timeout)

    def frozen(self) -> bool:
        return base.read_or(os.path.join(self.paths[TRACKING], "freezer.state")).strip() == "FROZEN"

    def remove(self) -> bool:
        ok = True
        for path in set(self.paths.values()):
            for directory in base.subdirs_deepest_first(path):
                ok = base.rmdir(directory) and ok
        if ok:  # the user's level, when no other job of theirs is there (a race is harmless)
            for path in set(self.paths.values()):
                try:
                    os.rmdir(os.path.dirname(path))
                except OSError:
                    pass
        return ok


def _set_freezer(path: str, state: str, timeout: float) -> None:
    state_file = os.path.join(path, "freezer.state")
    base.write(state_file, state)
    # FREEZING: some task has not stopped yet; the kernel finishes on its own, we poll.
    if not base.wait_until(lambda: base.read_text(state_file).strip() == state, timeout):
        raise FreezeTimeout(f"{state_file}: still {base.read_or(state_file).strip()} after {timeout:g}s")


class V1Step(base.StepCgroup):
    def __init__(self, job: V1Job, name: str) -> None:
        self.job = job
        self.name = name
        self.paths = job.h.dirs(os.path.join(job.rel, f"step_{name}"))

    def __repr__(self) -> str:
        return f"V1Step({self.paths.get(TRACKING)!r})"

    def create(self, limits: Limits) -> None:
        for controller, path in self.paths.items():
            _make_chain(path, [], controller)
        _apply(self.job.h, self.paths, limits)

    def join_paths(self) -> list[str]:
        # The tracking controller first: once a task is there, kill_all finds it.
        order = sorted(set(self.paths.values()), key=lambda p: p != self.paths[TRACKING])
        return [os.path.join(p, "cgroup.procs") for p in order]

    def pids(self) -> set[int]:
        return _procs_below(self.paths[TRACKING])

    def oom_kills(self) -> int:
        memory = self.paths.get("memory")
        return sum(_oom_kills(d) for d in base.subdirs_deepest_first(memory)) if memory else 0

    def usage(self) -> dict[str, int]:
        return _usage(self.paths)

    def kill_all(self, signum: int = signal.SIGKILL, timeout: float = 5.0) -> bool:
        path = self.paths[TRACKING]
        if not os.path.isdir(path):
            return True
        try:
            return base.frozen_kill_loop(lambda: _set_freezer(path, "FROZEN", 1.0),
                                         lambda: _set_freezer(path, "THAWED", 1.0),
                                         self.pids, signum, timeout)
        except CgroupError:
            base.signal_pids(self.pids(), signum)
            return base.wait_until(lambda: not self.pids(), timeout)

    def remove(self) -> bool:
        ok = True
        for path in set(self.paths.values()):
            for directory in base.subdirs_deepest_first(path):
                ok = base.rmdir(directory) and ok
        return ok


def open_v1(prefix: str, controllers: dict[str, str], wanted: dict[str, str]) -> V1Hierarchy:
    """``controllers``: name -> mount directory (mounts.v1_controllers); ``wanted``: the
    constraining controllers the configuration asks for, with what each constrains."""
    if TRACKING not in controllers:
        raise base.Unavailable("cgroup/v1: no freezer hierarchy mounted (it tracks the jobs)")
    used = (TRACKING,) + ACCOUNTING + tuple(wanted)
    roots = {c: os.path.join(controllers[c], prefix) for c in used if c in controllers}
    missing = {c: what for c, what in wanted.items() if c not in controllers}
    for controller in ACCOUNTING:
        if controller not in controllers:
            missing.setdefault(controller, f"no {'memory' if controller == 'memory' else 'CPU'} accounting")
    hierarchy = V1Hierarchy(prefix, roots, missing)
    for controller, what in missing.items():
        hierarchy.warn_once(controller, what)
    return hierarchy
