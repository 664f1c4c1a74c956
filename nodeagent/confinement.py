"""Confining a node's jobs: cgroups where slurm.conf and the host allow it, else process groups.

plurmd decides once, at start (``Confinement.load``), from slurm.conf and cgroup.conf
(nodeagent/cgroups reads the latter):

- **cgroups** when ``ProctrackType`` is ``proctrack/cgroup`` (Slurm 22.05's default) or
  ``TaskPlugin`` holds ``task/cgroup``, plurmd runs as root, and ``open_hierarchy`` accepts
  the host's hierarchy.  Every job then has a cgroup of its own, and each of its steps one
  below it (``step_batch``, ``step_<n>``: Slurm's layout); every process of the job is in
  it, so that the end of the job kills all of them, daemonized ones too (``kill_all``).
  Constraints come with ``task/cgroup`` only, each as cgroup.conf's ``Constrain*`` key says:
  the job's CPUs (cpuset), its memory (the allocation x AllowedRAMSpace%, at least
  MinRAMSpace, at most MaxRAMPercent of the node's RealMemory; soft limit the allocation;
  swap per ConstrainSwapSpace/AllowedSwapSpace), its GPUs (the device files of the node's
  other GPUs denied).  With ``task/cgroup`` but another ProctrackType plurm tracks
  with cgroups all the same (a cgroup that holds the job's processes is what its end kills);
  Slurm would kill by its proctrack plugin's means.
- **process groups** otherwise (not root, ``proctrack/pgid`` or ``proctrack/linuxproc``, no
  usable hierarchy): today's behaviour, jobs unconfined; one WARNING at start says why.
  A cgroup.conf that does not parse stops plurmd instead (as it stops slurmd): a typo must
  not run the jobs without the limits it was meant to set.

CPUs: the controller sends counts only (``cpus`` per node of the job record), so plurmd picks
the indices, the lowest free ones among 0..CPUs-1 of the node, and maps index ``i`` to the
machine CPU ``allowed[i % len(allowed)]`` (``allowed``: plurmd's own affinity, sorted), since
several virtual nodes of a local cluster share a host's CPUs.  A step's cpuset is its job's on
the node (Slurm gives each step its own cores of the job's).

The cgroup prefix is ``slurm``, or ``slurm_<NodeName>_<tag>`` when several NodeNames of
slurm.conf share this node's address or host name (several plurmd on one host, as Slurm's
multiple-slurmd build has ``slurm_<NodeName>``); the tag, 8 hex digits of the spool
directory's path, keeps two local clusters on one host (both with a node n1) out of each
other's cgroups, and stays the same across restarts of a plurmd.  Every job cgroup plurmd creates is also marked in its spool (``cgroups/UID.JOB``),
so that after a restart it removes those of jobs it no longer has, and never another daemon's
under a prefix it happens to share.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import zlib
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("plurmd")

DEFAULT_PROCTRACK = "proctrack/cgroup"  # Slurm 22.05's default
MIB = 1024 * 1024


def _nth_int(values: Any, i: int, default: int) -> int:
    """``values[i]`` as an int, ``default`` when the list is short or the value no number (a
    credential of another version's, not a reason to fail the launch)."""
    if isinstance(values, list) and i < len(values) and isinstance(values[i], (int, float)) \
            and not isinstance(values[i], bool):
        return int(values[i])
    return default


class ConfinementError(Exception):
    """A job's cgroup could not be made: its launch fails."""


@dataclass
class Setup:
    """Where the tasks of a step go, and what plurmstepd needs to find its cgroup again."""

    join_paths: list[str]
    conf: dict[str, Any]
    prefix: str
    uid: int
    job_id: int
    step: str

    def payload(self) -> dict[str, Any]:
        return {"join": self.join_paths, "conf": self.conf, "prefix": self.prefix, "uid": self.uid,
                "job_id": self.job_id, "step": self.step}


def step_cgroup(payload: dict[str, Any]) -> Any:
    """plurmstepd's view of its step's cgroup (Setup.payload), None when the step has none."""
    if not payload:
        return None
    from plurm.nodeagent import cgroups

    hierarchy = cgroups.open_hierarchy(cgroups.CgroupConf(**payload["conf"]), payload["prefix"])
    return hierarchy.job(payload["uid"], payload["job_id"]).step(payload["step"])


def acct_frequency(conf: Any) -> float:
    """JobAcctGatherFrequency's task interval in seconds (``30``, ``task=30,energy=0``: the
    syntax of --acctg-freq); 0: off; a value that does not parse: Slurm's default, 30."""
    from plurm.grammar.values import OptionValueError, parse_acctg_freq

    try:
        return float(parse_acctg_freq((conf.get("JobAcctGatherFrequency") or "30").strip()).get("task", 30))
    except OptionValueError:
        return 30.0


def cgroup_prefix(node_name: str, spool: str, shares_host: bool) -> str:
    """The top cgroup of a plurmd's jobs (the module's docstring says why the tag)."""
    if not shares_host:
        return "slurm"
    return f"slurm_{node_name}_{zlib.crc32(os.path.realpath(spool).encode()):08x}"


class Confinement:
    """One plurmd's way of holding its jobs: a cgroup hierarchy, or None (process groups)."""

    def __init__(self, hierarchy: Any, cgconf: Any, constrain: bool, why: str, prefix: str, node_cpus: int,
                 gpu_files: list[str | None], spool: str, node_ram_mb: int = 0) -> None:
        self.hierarchy = hierarchy
        self.cgconf = cgconf
        self.constrain = constrain
        self.why = why
        self.prefix = prefix
        self.node_cpus = max(1, node_cpus)
        # MaxRAMPercent's base: the node's RealMemory; unset (Slurm's 1 MB) the machine's RAM, as
        # slurmd would see it (1 MB would cap every job there, under MinRAMSpace).
        self.node_ram_mb = node_ram_mb if node_ram_mb > 1 else \
            os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // MIB
        self.allowed = sorted(os.sched_getaffinity(0))
        self.gpu_files = gpu_files
        self.marks = os.path.join(spool, "cgroups")
        self.held: dict[tuple[int, int], list[int]] = {}  # steps-only jobs' CPU indices (not kept on restart)

    @property
    def confined(self) -> bool:
        return self.hierarchy is not None

    @classmethod
    def load(cls, conf: Any, conf_path: str, node_name: str, gpu_files: list[str | None],
             spool: str) -> Confinement:
        node = conf.nodes[node_name]
        proctrack = (conf.get("ProctrackType") or DEFAULT_PROCTRACK).strip().lower()
        tasks = [t.strip().lower() for t in (conf.get("TaskPlugin") or "task/none").split(",")]
        constrain = "task/cgroup" in tasks
        shared = [n for n in conf.nodes.values() if n.addr == node.addr or n.hostname == node.hostname]
        prefix = cgroup_prefix(node_name, spool, len(shared) > 1)
        hierarchy, cgconf, why = None, None, ""
        if proctrack != "proctrack/cgroup" and not constrain:
            why = f"ProctrackType={proctrack} and no task/cgroup in TaskPlugin"
        elif os.geteuid() != 0:
            why = "plurmd does not run as root"
        else:
            try:
                from plurm.nodeagent import cgroups

                cgconf = cgroups.read_conf(conf_path)
                hierarchy = cgroups.open_hierarchy(cgconf, prefix)
            except ImportError as exc:
                why = f"no cgroup support ({exc})"
            except cgroups.ConfError as exc:  # the administrator's to fix: never jobs without the limits meant
                raise ConfinementError(str(exc)) from exc
            except Exception as exc:  # Unavailable: the host has no usable hierarchy; one line, then process groups
                why = str(exc) or type(exc).__name__
                hierarchy = None
        if hierarchy is None:
            log.warning("node %s: jobs run unconfined (process groups): %s", node_name, why)
        else:
            log.info("node %s: jobs in cgroup v%s under %s%s", node_name, hierarchy.version, prefix,
                     " with task/cgroup constraints" if constrain else "")
        return cls(hierarchy, cgconf, constrain, why, prefix, node.cpus, gpu_files, spool, node.real_memory)

    # ------------------------------------------------------------ what a job gets
    def pick_cpus(self, count: int, used: set[int], near: set[int] | None = None) -> list[int]:
        """The lowest ``count`` indices of 0..CPUs-1 not in ``used`` (then used ones, if the
        node is oversubscribed: a job never gets fewer than it asked for); those in ``near``
        (the CPUs local to the job's GPUs, nodeagent/stepbind.gpu_local_cpus) first."""
        order = sorted(range(self.node_cpus), key=lambda i: near is not None and i not in near)
        free = [i for i in order if i not in used]
        busy = [i for i in order if i in used]
        return sorted((free + busy)[:max(1, min(count, self.node_cpus))])

    def machine_cpus(self, indices: list[int]) -> list[int]:
        return sorted({self.allowed[i % len(self.allowed)] for i in indices})

    def limits(self, cpu_indices: list[int], mem_mb: int, gpus: list[int]) -> Any:
        """The job's Limits on this node (cgroup.conf's arithmetic: nodeagent/cgroups); none
        without task/cgroup.  ``mem_mb`` 0 (no memory allocated): MaxRAMPercent of the node's."""
        from plurm.nodeagent import cgroups

        if not self.constrain or self.cgconf is None:
            return cgroups.Limits()
        return self.cgconf.limits(cpus=self.machine_cpus(cpu_indices) if cpu_indices else None,
                                  alloc_ram_bytes=mem_mb * MIB, total_ram_bytes=self.node_ram_mb * MIB,
                                  denied_devices=self.denied_devices(gpus))

    def denied_devices(self, gpus: list[int]) -> list[tuple[str, int, int]]:
        """The device numbers of this node's GPU files that are not the job's."""
        denied: list[tuple[str, int, int]] = []
        mine = {self.gpu_files[i] for i in gpus if i < len(self.gpu_files)}
        for path in self.gpu_files:
            if not path or path in mine:
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                entry = ("c" if stat.S_ISCHR(st.st_mode) else "b", os.major(st.st_rdev), os.minor(st.st_rdev))
                if entry not in denied:
                    denied.append(entry)
        return denied

    # ------------------------------------------------------------ a job's cgroup
    def job(self, uid: int, job_id: int) -> Any:
        return None if self.hierarchy is None else self.hierarchy.job(uid, job_id)

    def _mark(self, uid: int, job_id: int) -> None:
        """The spool's note of a job cgroup made here: which hierarchy, so that a teardown
        without plurmd (``kill_marked``) finds it too."""
        from dataclasses import asdict

        os.makedirs(self.marks, mode=0o700, exist_ok=True)
        with open(os.path.join(self.marks, f"{uid}.{job_id}"), "w") as handle:
            json.dump({"conf": asdict(self.cgconf), "prefix": self.prefix}, handle)

    def _unmark(self, uid: int, job_id: int) -> None:
        try:
            os.unlink(os.path.join(self.marks, f"{uid}.{job_id}"))
        except FileNotFoundError:
            pass

    def marked(self) -> set[tuple[int, int]]:
        found: set[tuple[int, int]] = set()
        try:
            names = os.listdir(self.marks)
        except FileNotFoundError:
            return found
        for name in names:
            uid, _, job = name.partition(".")
            if uid.isdigit() and job.isdigit():
                found.add((int(uid), int(job)))
        return found

    def start_batch(self, uid: int, job_id: int, limits: Any) -> list[str]:
        """The job's cgroup and its step_batch; the files the shell's pid is written into."""
        job = self.job(uid, job_id)
        if job is None:
            return []
        self._claim(job, uid, job_id)
        try:
            self._mark(uid, job_id)
            job.create(limits)
            if job.frozen():  # (a leftover of an earlier run of the job, frozen when it went)
                job.thaw()
            step = job.step("batch")
            step.create(limits)
            return list(step.join_paths())
        except Exception as exc:
            self._clean(uid, job_id)
            raise ConfinementError(f"cannot create the job's cgroup: {exc}") from exc

    def step_job_limits(self, alloc: Any, node: str, used: set[int], uid: int, job_id: int) -> Any:
        """The limits of a job whose first process on this node is a step: from its allocation
        as the step credential carries it (the controller's word: nodes, cpus, mem, gres_alloc
        per node); no limits when the credential has none.  Its CPU indices are held here
        (``held``) until its cgroup goes."""
        from plurm.common import environment
        from plurm.nodeagent import cgroups

        nodes = alloc.get("nodes") if isinstance(alloc, dict) else None
        if not isinstance(nodes, list) or node not in nodes:
            return cgroups.Limits()
        i = nodes.index(node)
        cpus = self.pick_cpus(_nth_int(alloc.get("cpus"), i, 1), used | self.held_cpus())
        self.held[(uid, job_id)] = cpus
        try:  # (GPUs that cannot be read: none, every GPU of the node denied)
            gpus = [g for g in environment.allocated_gpus(alloc, i) if isinstance(g, int)]
        except (AttributeError, TypeError, KeyError):
            gpus = []
        return self.limits(cpus, _nth_int(alloc.get("mem"), i, 0), gpus)

    def held_cpus(self) -> set[int]:
        return {c for cpus in self.held.values() for c in cpus}

    def start_step(self, uid: int, job_id: int, step_id: int, job_here: bool, job_limits: Any = None) -> Setup | None:
        """step_<n> under the job's cgroup; the job's cgroup is made (with ``job_limits``) when
        no other process of the job is here yet."""
        from dataclasses import asdict

        job = self.job(uid, job_id)
        if job is None:
            return None
        from plurm.nodeagent import cgroups

        if not job_here:
            self._claim(job, uid, job_id)
        try:
            self._mark(uid, job_id)
            if not job_here:
                job.create(job_limits if job_limits is not None else cgroups.Limits())
            step = job.step(str(step_id))
            step.create(cgroups.Limits())
            return Setup(list(step.join_paths()), asdict(self.cgconf), self.prefix, uid, job_id, str(step_id))
        except Exception as exc:
            if not job_here:  # its job cgroup, mark and held CPUs are this step's alone
                self.release(uid, job_id)
            raise ConfinementError(f"cannot create the step's cgroup: {exc}") from exc

    def _claim(self, job: Any, uid: int, job_id: int) -> None:
        """A job cgroup that exists already and is not one this plurmd made: an empty leftover
        (a cluster torn down without its plurmd) is removed; one with processes belongs to
        another daemon under the same prefix (two clusters, or a real slurmd, naming a node
        alike on this host) and is never used, nor touched."""
        try:
            if not job.exists() or (uid, job_id) in self.marked():
                return
            if job.pids():
                raise ConfinementError(f"the cgroup of job {job_id} under {self.prefix} holds another daemon's "
                                       f"processes (a second cluster or slurmd with node names like this one's "
                                       f"on this host?)")
            job.thaw()
            job.remove()
        except ConfinementError:
            raise
        except Exception as exc:
            raise ConfinementError(f"cannot take over the leftover cgroup of job {job_id}: {exc}") from exc

    def finish_batch(self, uid: int, job_id: int) -> tuple[int, dict[str, int]]:
        """The batch shell has ended: kill what is left of the job (its steps' tasks too, as a
        job's end does), then (OOM kills, usage) of step_batch; the cgroup goes."""
        job = self.job(uid, job_id)
        if job is None:
            return 0, {}
        oom, usage = 0, {}
        try:
            job.thaw()
        except Exception as exc:
            log.warning("job %s: thawing its cgroup: %s", job_id, exc)
        try:
            if not job.kill_all(9):
                log.error("job %s: processes left in its cgroup after kill_all", job_id)
        except Exception as exc:
            log.error("job %s: killing its cgroup: %s", job_id, exc)
        try:
            step = job.step("batch")
            oom, usage = step.oom_kills(), step.usage()
        except Exception as exc:
            log.warning("job %s: reading its batch step's cgroup: %s", job_id, exc)
        self._clean(uid, job_id)
        return oom, usage

    def release(self, uid: int, job_id: int) -> None:
        """A job with no batch run here whose last step ended: its cgroup goes (kill what is left)."""
        self.held.pop((uid, job_id), None)
        job = self.job(uid, job_id)
        if job is None:
            return
        try:
            job.kill_all(9)
        except Exception as exc:
            log.error("job %s: killing its cgroup: %s", job_id, exc)
        self._clean(uid, job_id)

    def close(self) -> None:
        """plurmd stops: the prefix goes when no job of this plurmd's has a cgroup (jobs that
        run on keep theirs, and the next plurmd adopts them)."""
        if self.hierarchy is not None and not self.marked():
            try:
                self.hierarchy.remove()
            except Exception:
                pass  # another daemon's job under the same prefix keeps it

    def _clean(self, uid: int, job_id: int) -> None:
        job = self.job(uid, job_id)
        try:
            removed = job.remove()
        except Exception as exc:
            log.error("job %s: removing its cgroup: %s", job_id, exc)
            removed = False
        if removed:
            self._unmark(uid, job_id)
            self.close()  # the last job here: no empty slurm* level left behind
        else:
            log.error("job %s: its cgroup is still busy; left for the next clean-up", job_id)

    def freeze(self, uid: int, job_id: int, frozen: bool) -> bool:
        """Freeze or thaw the job's cgroup; False when it has none here."""
        job = self.job(uid, job_id)
        if job is None:
            return False
        try:
            job.freeze() if frozen else job.thaw()
        except Exception as exc:
            log.error("job %s: %s its cgroup: %s", job_id, "freezing" if frozen else "thawing", exc)
        return True

    def pids(self, uid: int, job_id: int, step: str | None = None) -> set[int]:
        """The job's processes here (every step's), or those of one step (``batch``)."""
        job = self.job(uid, job_id)
        if job is None:
            return set()
        try:
            return set(job.pids() if step is None else job.step(step).pids())
        except Exception:
            return set()

    def sweep(self, known: set[tuple[int, int]]) -> list[tuple[int, int]]:
        """Kill and remove the cgroups this plurmd made (its spool's marks) for jobs it no longer
        has (``known``: its runs and steps); another daemon's under the same prefix stay."""
        if self.hierarchy is None:
            return []
        swept = []
        for uid, job_id in sorted(self.marked()):
            if (uid, job_id) in known:
                continue
            try:  # (its own path, not hierarchy.jobs(): v2 reads the uid back from an xattr, -1 without)
                present = self.hierarchy.job(uid, job_id).exists()
            except Exception as exc:
                log.error("job %s: looking for its cgroup under %s: %s", job_id, self.prefix, exc)
                continue
            if present:
                log.warning("job %s: its cgroup outlived the job here; killed and removed", job_id)
                self.release(uid, job_id)
            else:
                self._unmark(uid, job_id)
            swept.append((uid, job_id))
        return swept


def kill_marked(spool: str) -> int:
    """Kill and remove every job cgroup the spool's marks name (a cluster torn down while
    plurmd is not running: its jobs' daemonized processes go too).  Returns how many went."""
    marks = os.path.join(spool, "cgroups")
    try:
        names = os.listdir(marks)
    except FileNotFoundError:
        return 0
    done = 0
    for name in names:
        uid, _, job_id = name.partition(".")
        path = os.path.join(marks, name)
        try:
            with open(path) as handle:
                data = json.load(handle)
            from plurm.nodeagent import cgroups

            hierarchy = cgroups.open_hierarchy(cgroups.CgroupConf(**data["conf"]), data["prefix"])
            job = hierarchy.job(int(uid), int(job_id))
            if not job.exists():
                os.unlink(path)
                continue
            job.thaw()
            job.kill_all(9)
            if job.remove():
                os.unlink(path)
                done += 1
        except Exception as exc:  # an unreadable mark, a hierarchy gone: logged, the rest go on
            log.error("cgroups: %s: %s", path, exc)
    return done
