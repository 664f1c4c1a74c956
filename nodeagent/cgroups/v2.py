"""cgroup v2: one unified tree.

    <mount>/<prefix>/job_<id>/step_<name>/

Slurm 22.05's cgroup/v2 puts this under ``system.slice/slurmstepd.scope`` through systemd;
plurm talks to no systemd (as Slurm's ``IgnoreSystemd=yes``) and makes a plain tree under the
mount point.  Processes live only in the ``step_<name>`` leaves (v2's no-internal-process
rule: a directory that hands controllers to its children holds no process itself).

Core files work without any controller: ``cgroup.procs`` (tracking), ``cgroup.kill`` (the
kill, atomic against forks), ``cgroup.freeze`` (SUSPEND), ``cpu.stat`` (CPU time).  The
``memory`` and ``cpuset`` controllers are enabled in ``cgroup.subtree_control`` level by level
only where ``cgroup.controllers`` offers them; one the configuration needs but the kernel
does not offer here (a hybrid system that binds it to v1) is logged once and its limit left
off (``Hierarchy.missing``).  Devices on v2 are an eBPF program attached to the job's and the
step's directory (v2devices.py), once, when the directory is made.

The job's uid is not part of v2's path; it is kept in the job directory's ``trusted.plurm.uid``
extended attribute so that ``jobs()`` can say it after a restart.
"""

from __future__ import annotations

import os
import signal

from plurm.nodeagent.cgroups import base, v2devices
from plurm.nodeagent.cgroups.base import CgroupError, CreateError, FreezeTimeout, Limits

UID_XATTR = "trusted.plurm.uid"
ENABLE = ("cpuset", "memory")  # controllers plurm hands down when offered


class V2Hierarchy(base.Hierarchy):
    version = 2

    def __init__(self, mount: str, prefix: str, enabled: tuple[str, ...],
                 missing: dict[str, str]) -> None:
        self.mount = mount
        self.prefix = prefix
        self.root = os.path.join(mount, prefix)
        self.enabled = enabled
        self.missing = missing
        self._warned: set[str] = set()
        self._root_ready = False

    def describe(self) -> str:
        return (f"cgroup/v2 {self.root} (controllers: {' '.join(self.enabled) or 'none'}"
                + (f"; missing: {', '.join(sorted(self.missing))})" if self.missing else ")"))

    def warn_once(self, controller: str, what: str) -> None:
        if controller not in self._warned:
            self._warned.add(controller)
            base.log.warning("cgroup/v2 (%s): no %s controller: %s", self.root, controller, what)

    def job(self, uid: int, job_id: int) -> "V2Job":
        return V2Job(self, uid, job_id)

    def jobs(self) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for name in base.listdir(self.root):
            if name.startswith("job_") and name[4:].isdigit():
                out.append((_uid_of(os.path.join(self.root, name)), int(name[4:])))
        return sorted(out, key=lambda pair: pair[1])

    def remove(self) -> bool:
        self._root_ready = False
        return base.rmdir(self.root)

    def ensure_root(self) -> None:
        if self._root_ready:
            return
        base.mkdir(self.root)
        try:
            _enable(self.mount, self.enabled)
            _enable(self.root, self.enabled)
        except CreateError as exc:
            # The mount point is not the real root and holds processes (a container's cgroup
            # namespace): v2 refuses to hand controllers down from there.  Jobs still get
            # tracking, kill, freeze and devices; the limits are left off, said once.
            for controller in self.enabled:
                self.missing[controller] = f"cannot be enabled ({exc}): left off"
                self.warn_once(controller, self.missing[controller])
            self.enabled = ()
        self._root_ready = True


def _uid_of(path: str) -> int:
    try:
        return int(os.getxattr(path, UID_XATTR))
    except (OSError, ValueError):
        return -1


def _enable(path: str, controllers: tuple[str, ...]) -> None:
    if not controllers:
        return
    have = set(base.read_or(os.path.join(path, "cgroup.subtree_control")).split())
    todo = [c for c in controllers if c not in have]
    if todo:
        base.write(os.path.join(path, "cgroup.subtree_control"), " ".join(f"+{c}" for c in todo),
                   CreateError)


def _events(path: str) -> dict[str, int]:
    return base.keyed(base.read_or(os.path.join(path, "cgroup.events")))


def _apply(hierarchy: V2Hierarchy, path: str, limits: Limits, new: bool) -> None:
    if limits.cpus is not None or limits.mems is not None:
        if "cpuset" in hierarchy.enabled:
            if limits.cpus is not None:
                base.write(os.path.join(path, "cpuset.cpus"), base.cpulist(limits.cpus), CreateError)
            if limits.mems is not None:
                base.write(os.path.join(path, "cpuset.mems"), limits.mems, CreateError)
        else:
            hierarchy.warn_once("cpuset", "CPUs not constrained")
    if limits.ram_bytes is not None:
        if "memory" in hierarchy.enabled:
            base.write(os.path.join(path, "memory.max"), str(limits.ram_bytes), CreateError)
            if limits.swap_bytes is not None:  # v2's swap.max is already "beyond ram"
                swap_file = os.path.join(path, "memory.swap.max")
                if os.path.exists(swap_file):
                    base.write(swap_file, str(limits.swap_bytes), CreateError)
                else:
                    hierarchy.warn_once("memory.swap", "swap not constrained")
        else:
            hierarchy.warn_once("memory", "memory not constrained")
    if limits.denied_devices:
        if "devices" in hierarchy.missing:
            hierarchy.warn_once("devices", "devices not constrained")
        elif new:  # a second program on a re-create would only repeat the first
            v2devices.deny(path, limits.denied_devices)


def _int(text: str) -> int:
    try:
        return int(text.strip() or 0)
    except ValueError:
        return 0  # "max"


def _usage(path: str) -> dict[str, int]:
    out = dict.fromkeys(base.USAGE_KEYS, 0)
    cpu = base.keyed(base.read_or(os.path.join(path, "cpu.stat")))
    out["cpu_total_ns"] = cpu.get("usage_usec", 0) * 1000
    out["cpu_user_ns"] = cpu.get("user_usec", 0) * 1000
    out["cpu_system_ns"] = cpu.get("system_usec", 0) * 1000
    out["mem_current_bytes"] = _int(base.read_or(os.path.join(path, "memory.current")))
    out["max_rss_bytes"] = _int(base.read_or(os.path.join(path, "memory.peak")))  # kernel >= 5.19
    out["rss_bytes"] = base.keyed(base.read_or(os.path.join(path, "memory.stat"))).get("anon", 0)
    return out


def _procs_below(path: str) -> set[int]:
    pids: set[int] = set()
    for directory in base.subdirs_deepest_first(path):
        pids |= base.read_pids(os.path.join(directory, "cgroup.procs"))
    return pids


def _remove_tree(path: str) -> bool:
    ok = True
    for directory in base.subdirs_deepest_first(path):
        ok = base.rmdir(directory) and ok
    return ok


def _kill(path: str, signum: int, timeout: float) -> bool:
    """Kill everything below ``path``: cgroup.kill (kernel 5.14+) for SIGKILL, else the frozen
    signal loop."""
    if not os.path.isdir(path):
        return True
    empty = lambda: not _events(path).get("populated", 0)  # noqa: E731
    kill_file = os.path.join(path, "cgroup.kill")
    if signum == signal.SIGKILL and os.path.exists(kill_file):
        try:
            base.write(kill_file, "1")
        except CgroupError:
            if not os.path.isdir(path):
                return True
            raise
        done = base.wait_until(empty, timeout)
        # A frozen (suspended) cgroup dies frozen; thaw it, as v1's kill loop leaves it.
        if base.read_or(os.path.join(path, "cgroup.freeze")).strip() == "1":
            _freeze(path, "0", 1.0)
        return done
    return base.frozen_kill_loop(lambda: _freeze(path, "1", 1.0), lambda: _freeze(path, "0", 1.0),
                                 lambda: _procs_below(path), signum, timeout)


def _freeze(path: str, value: str, timeout: float) -> None:
    base.write(os.path.join(path, "cgroup.freeze"), value)
    want = int(value)
    if not base.wait_until(lambda: _events(path).get("frozen", 0) == want, timeout):
        raise FreezeTimeout(f"{path}: cgroup.events still not frozen {want} after {timeout:g}s")


class V2Job(base.JobCgroup):
    def __init__(self, hierarchy: V2Hierarchy, uid: int, job_id: int) -> None:
        self.h = hierarchy
        self.uid = uid
        self.job_id = job_id
        self.path = os.path.join(hierarchy.root, f"job_{job_id}")

    def __repr__(self) -> str:
        return f"V2Job({self.path!r})"

    def create(self, limits: Limits) -> None:
        self.h.ensure_root()
        new = base.mkdir(self.path)
        try:
            os.setxattr(self.path, UID_XATTR, str(self.uid).encode())
        except OSError as exc:  # not fatal: jobs() says uid -1
            base.log.debug("cgroup/v2: no xattr on %s: %s", self.path, exc.strerror)
        _enable(self.path, self.h.enabled)
        _apply(self.h, self.path, limits, new)

    def exists(self) -> bool:
        return os.path.isdir(self.path)

    def step(self, name: str) -> "V2Step":
        return V2Step(self, name)

    def steps(self) -> list[str]:
        return [d[5:] for d in base.listdir(self.path) if d.startswith("step_")]

    def pids(self) -> set[int]:
        return _procs_below(self.path)

    def oom_kills(self) -> int:
        # v2's memory.events counts the kills of the whole subtree.
        return base.keyed(base.read_or(os.path.join(self.path, "memory.events"))).get("oom_kill", 0)

    def memory_bytes(self) -> int:
        return _int(base.read_or(os.path.join(self.path, "memory.current")))

    def usage(self) -> dict[str, int]:
        return _usage(self.path)

    def kill_all(self, signum: int = signal.SIGKILL, timeout: float = 5.0) -> bool:
        return _kill(self.path, signum, timeout)

    def freeze(self, timeout: float = 10.0) -> None:
        _freeze(self.path, "1", timeout)

    def thaw(self, timeout: float = 10.0) -> None:
        _freeze(self.path, "0", timeout)

    def frozen(self) -> bool:
        return bool(_events(self.path).get("frozen", 0))

    def remove(self) -> bool:
        return _remove_tree(self.path)


class V2Step(base.StepCgroup):
    def __init__(self, job: V2Job, name: str) -> None:
        self.job = job
        self.name = name
        self.path = os.path.join(job.path, f"step_{name}")

    def __repr__(self) -> str:
        return f"V2Step({self.path!r})"

    def create(self, limits: Limits) -> None:
        _apply(self.job.h, self.path, limits, base.mkdir(self.path))

    def join_paths(self) -> list[str]:
        return [os.path.join(self.path, "cgroup.procs")]

    def pids(self) -> set[int]:
        return _procs_below(self.path)

    def oom_kills(self) -> int:
        return base.keyed(base.read_or(os.path.join(self.path, "memory.events"))).get("oom_kill", 0)

    def usage(self) -> dict[str, int]:
        return _usage(self.path)

    def kill_all(self, signum: int = signal.SIGKILL, timeout: float = 5.0) -> bool:
        return _kill(self.path, signum, timeout)

    def remove(self) -> bool:
        return _remove_tree(self.path)


def open_v2(mount: str, prefix: str, wanted: dict[str, str]) -> V2Hierarchy:
    """``wanted``: the constraining controllers the configuration asks for, with what each
    constrains; memory is also wanted for accounting."""
    offered = set(base.read_or(os.path.join(mount, "cgroup.controllers")).split())
    needed = dict(wanted)
    needed.setdefault("memory", "no memory accounting (MaxRSS, OOM count)")
    enabled = tuple(c for c in ENABLE if c in needed and c in offered)
    missing = {c: what for c, what in needed.items() if c not in enabled and c != "devices"}
    if "devices" in needed:
        reason = v2devices.probe()
        if reason:
            missing["devices"] = f"{needed['devices']} ({reason})"
    hierarchy = V2Hierarchy(mount, prefix, enabled, missing)
    for controller, what in missing.items():
        hierarchy.warn_once(controller, what)
    return hierarchy
