"""What both cgroup versions share: the errors, the limits a cgroup gets, file access that
turns OSError into typed errors, the kill loop, and ``join`` for a child before its exec.

Every method the daemon calls from its loop raises a ``CgroupError`` subclass, never a bare
OSError: a cgroup file that vanished under us (a job removed by another path, a controller
unmounted) is an event to log, not a crash of plurmd.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from plurm.grammar.hostlist import bitmap_ranges

log = logging.getLogger("plurmd")

# How often the polls (freezing, emptying) look again: short enough that a job's end is not
# delayed noticeably, long enough not to spin (the kernel's freezer takes microseconds for
# idle tasks, a few ms for busy ones).
POLL_S = 0.005


class CgroupError(Exception):
    """A cgroup operation failed; the message names the file and the reason."""


class Unavailable(CgroupError):
    """No usable cgroup hierarchy (not root, nothing mounted, a required controller
    missing); the message is one line, for plurmd's start-up WARNING."""


class CreateError(CgroupError):
    """A job's or step's cgroup could not be made or limited: the launch fails."""


class ParentGone(CreateError):
    """mkdir found no parent: a level above was just removed (v1's ``uid_<uid>`` when the
    user's last other job ended at that moment); making the chain again succeeds."""


class FreezeTimeout(CgroupError):
    """The freezer did not reach the state asked for in time (a task in uninterruptible
    sleep, for instance); the cgroup may be left FREEZING."""


@dataclass
class Limits:
    """What a job or a step is confined to; None (or empty) leaves that resource alone."""

    cpus: list[int] | None = None  # machine CPU ids for cpuset (None: not constrained)
    mems: str | None = None  # cpuset.mems (None: the parent's)
    ram_bytes: int | None = None  # hard memory limit (None: not constrained)
    swap_bytes: int | None = None  # swap beyond ram: v1 memsw = ram + swap (None: not constrained)
    denied_devices: list[tuple[str, int, int]] = field(default_factory=list)  # ("c"|"b", major, minor)
    # Slurm's soft limit, v1's memory.soft_limit_in_bytes: the allocation when AllowedRAMSpace
    # is above 100 %, else the hard limit (None: the hard limit).  v2 has nothing that means
    # the same (memory.high throttles the job at it), so v2 leaves it.
    soft_ram_bytes: int | None = None


def cpulist(cpus: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2,5"``: the kernel's list format (Slurm's bit_fmt's too)."""
    return bitmap_ranges(cpus)


def listdir(path: str) -> list[str]:
    """The directories in ``path`` (child cgroups), sorted; none when it cannot be read."""
    try:
        return sorted(e.name for e in os.scandir(path) if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def parse_cpulist(text: str) -> list[int]:
    """``"0-2,5"`` -> ``[0, 1, 2, 5]``; an empty list for an empty file."""
    out: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


# ============================================================== files

def read_text(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError as exc:
        raise CgroupError(f"{path}: {exc.strerror or exc}") from None


def read_or(path: str, default: str = "") -> str:
    """The file's text, or ``default`` when it cannot be read (a controller not there)."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError:
        return default


def write(path: str, value: str, error: type[CgroupError] = CgroupError) -> None:
    """One write() of the whole value: cgroup files take one value per write call."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        raise _gone_or(error, exc)(f"{path}: {exc.strerror or exc}") from None
    try:
        os.write(fd, value.encode())
    except OSError as exc:
        raise _gone_or(error, exc)(f"cannot write {value!r} to {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _gone_or(error: type[CgroupError], exc: OSError) -> type[CgroupError]:
    # ENOENT/ENODEV while making a cgroup: its directory was removed under us (ParentGone).
    if issubclass(error, CreateError) and exc.errno in (errno.ENOENT, errno.ENODEV):
        return ParentGone
    return error


def keyed(text: str) -> dict[str, int]:
    """``"key value"`` lines (memory.stat, cpu.stat, memory.events, cpuacct.stat)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        try:
            out[key] = int(value)
        except ValueError:
            continue
    return out


def read_pids(path: str) -> set[int]:
    """The pids in a cgroup.procs file; an empty set when the cgroup is gone."""
    return {int(word) for word in read_or(path).split() if word.isdigit()}


def mkdir(path: str) -> bool:
    """Make one cgroup directory; True when it was made now, False when it was there."""
    try:
        os.mkdir(path)
        return True
    except FileExistsError:
        return False
    except FileNotFoundError:
        raise ParentGone(f"cannot create {path}: its parent is gone") from None
    except OSError as exc:
        raise CreateError(f"cannot create {path}: {exc.strerror or exc}") from None


def rmdir(path: str) -> bool:
    """Remove one cgroup directory; True when it is gone, False while it has processes or
    children (EBUSY, ENOTEMPTY).  A directory already gone is gone."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError as exc:
        if exc.errno in (errno.EBUSY, errno.ENOTEMPTY):
            return False
        raise CgroupError(f"cannot remove {path}: {exc.strerror or exc}") from None
    return True


def subdirs_deepest_first(path: str) -> list[str]:
    """Every cgroup directory below ``path`` (children before their parents), ``path`` last."""
    out: list[str] = []
    for root, _, _ in os.walk(path, topdown=False):
        out.append(root)
    return out


def signal_pids(pids: set[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass
        except OSError as exc:  # EPERM cannot happen as root; log rather than stop the kill
            log.warning("cgroup kill: cannot signal pid %d: %s", pid, exc.strerror)


def wait_until(predicate: Callable[[], bool], timeout: float) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` passes; the first looks come quickly
    (a killed or frozen task usually settles within a millisecond), then every POLL_S."""
    deadline = time.monotonic() + timeout
    pause = POLL_S / 16
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, POLL_S)


def frozen_kill_loop(freeze: Callable[[], None], thaw: Callable[[], None],
                     pids: Callable[[], set[int]], signum: int, timeout: float) -> bool:
    """Signal every process of a cgroup while it is frozen, thaw, and repeat until it is empty.

    Frozen tasks cannot fork, so the pids read once the freeze holds are all there are; a
    fatal signal takes effect when they thaw.  A process that forked between two rounds is
    caught by the next (its child inherits the cgroup).  Other signals: one round.  True when
    the cgroup is empty at the end."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            freeze()
        except FreezeTimeout:
            pass  # a task in D state: signal what is there anyway, it dies when it wakes
        found = pids()
        signal_pids(found, signum)
        thaw()
        if signum != signal.SIGKILL:
            return not pids()
        if not found:
            return True
        left = deadline - time.monotonic()
        if wait_until(lambda: not pids(), min(0.05, max(left, 0.0))):
            return True
        if time.monotonic() >= deadline:
            return False


# ============================================================== joining

def join(paths: list[str]) -> None:
    """Move the calling process into each cgroup.procs file of ``paths`` (writes "0": "me").

    Safe in a ``preexec_fn`` between fork and exec: only os.open, os.write and os.close, no
    allocation-heavy work, no locks, no logging.  An OSError propagates (subprocess reports a
    failed preexec_fn to the parent: the launch fails rather than the task running unconfined).

    Only for a child that is still root then: subprocess runs ``preexec_fn`` after it switched
    to ``user=``/``group=``, and a job's user may not write root's cgroup.procs (EACCES).  A
    task of a user's joins in a preexec_fn that becomes the user itself afterwards
    (launch.Owner.popen_kwargs), never by a child that became the user first and waits to be
    moved (``attach``): any other process of the user's may continue it (SIGCONT, ptrace).
    """
    for path in paths:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)


# ============================================================== the interface

USAGE_KEYS = ("max_rss_bytes", "cpu_user_ns", "cpu_system_ns", "cpu_total_ns", "rss_bytes",
              "mem_current_bytes")


class StepCgroup(ABC):
    """One step's cgroup (``step_batch``, ``step_extern``, ``step_0``, ...) of a job."""

    name: str

    @abstractmethod
    def create(self, limits: Limits) -> None:
        """Make the step's directories (the job's must exist) and apply ``limits``; idempotent.
        Raises CreateError."""

    @abstractmethod
    def join_paths(self) -> list[str]:
        """The cgroup.procs files a new task writes itself into (see ``join``)."""

    def attach(self, pid: int) -> None:
        """Move a running process (all its threads) into the step."""
        for path in self.join_paths():
            write(path, str(pid))

    @abstractmethod
    def pids(self) -> set[int]:
        """The step's processes now (zombies are not listed)."""

    @abstractmethod
    def oom_kills(self) -> int:
        """How many processes the kernel's OOM killer killed inside the step."""

    @abstractmethod
    def usage(self) -> dict[str, int]:
        """``USAGE_KEYS``: peak memory (page cache included, as the kernel counts it), CPU
        times in ns, current anonymous memory and current charge; 0 where no controller
        gives it."""

    @abstractmethod
    def kill_all(self, signum: int = signal.SIGKILL, timeout: float = 5.0) -> bool:
        """Signal every process of the step (the job's other steps are left alone)."""

    @abstractmethod
    def remove(self) -> bool:
        """rmdir the step in every controller; False while it still has processes."""


class JobCgroup(ABC):
    """A job's cgroup on this node; its steps are below it.  Paths only until ``create``."""

    uid: int
    job_id: int

    @abstractmethod
    def create(self, limits: Limits) -> None:
        """Make the job's directories (and the levels above) and apply ``limits``; idempotent.
        Raises CreateError: the launch fails."""

    @abstractmethod
    def exists(self) -> bool: ...

    @abstractmethod
    def step(self, name: str) -> StepCgroup: ...

    @abstractmethod
    def steps(self) -> list[str]:
        """The names of the steps present on disk (``batch``, ``0``, ...)."""

    @abstractmethod
    def pids(self) -> set[int]:
        """Every process of the job, in all its steps."""

    @abstractmethod
    def oom_kills(self) -> int:
        """OOM kills in the whole job, all steps together."""

    @abstractmethod
    def memory_bytes(self) -> int:
        """The job's memory charge now (0 without a memory controller): for the samples of the
        freeze policy."""

    @abstractmethod
    def kill_all(self, signum: int = signal.SIGKILL, timeout: float = 5.0) -> bool:
        """Kill every process of the job, daemonized and forking ones included; True when the
        job's cgroup is empty afterwards."""

    @abstractmethod
    def freeze(self, timeout: float = 10.0) -> None:
        """Stop every process of the job (SUSPEND, the freeze policy); raises FreezeTimeout."""

    @abstractmethod
    def thaw(self, timeout: float = 10.0) -> None: ...

    @abstractmethod
    def frozen(self) -> bool: ...

    @abstractmethod
    def remove(self) -> bool:
        """rmdir the steps, then the job (then v1's empty ``uid_<uid>``); False while busy."""


class Hierarchy(ABC):
    """The cgroup tree plurmd puts its jobs in, under one prefix (``slurm``, ``slurm_<node>``)."""

    version: int
    prefix: str
    # Controllers a constraint of the configuration needs but this kernel does not offer
    # here, with what is then left unconstrained (logged once, at open).
    missing: dict[str, str]

    @abstractmethod
    def job(self, uid: int, job_id: int) -> JobCgroup: ...

    @abstractmethod
    def jobs(self) -> list[tuple[int, int]]:
        """(uid, job_id) of the job cgroups present under the prefix (uid -1 when unknown)."""

    @abstractmethod
    def remove(self) -> bool:
        """rmdir the prefix's own levels when no job is left (tests, a node taken out)."""

    @abstractmethod
    def describe(self) -> str:
        """One line for the log: version, where, which controllers."""
