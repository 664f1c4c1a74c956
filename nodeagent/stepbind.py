"""Each task's CPUs, NUMA nodes and GPUs on this node: --cpu-bind, --mem-bind, --gpu-bind.

plurmd computes the plan when it launches a step (``plan``), from srun's options
(LaunchTasks.binding), slurm.conf (the node's Sockets/CoresPerSocket/ThreadsPerCore,
TaskPlugin, TaskPluginParam), the job's CPUs here and the accelerator backends' NUMA
data; plurmstepd applies it to each task between fork and exec (``apply_in_child``:
after the task entered its step's cgroup, whose cpuset would otherwise reset the mask)
and writes the verbose lines on the task's stderr, as Slurm's slurmstepd does.

As Slurm: CPU and memory binding are task/affinity's (TaskPlugin without it: the tasks run
on all the CPUs they are allowed, and srun's options only show in the environment);
GPU binding is the gres plugin's and works with any TaskPlugin.  Abstract CPU ``i`` of the
node (common/taskbind.py's numbering) is machine CPU ``allowed[i % len(allowed)]``, the
mapping confinement.py uses for cpusets (several virtual nodes may share a host's CPUs).
A request the node cannot honour (map_cpu:7 on a 4-CPU node) leaves the tasks unbound with
an error line on their stderr, and a line in plurmd's log.
"""

from __future__ import annotations

import glob
import logging
import os
from typing import Any

from plurm.common import taskbind
from plurm.common.taskbind import BindError

log = logging.getLogger("plurmd")

SYS_NODES = "/sys/devices/system/node"


def numa_of_cpus(root: str = SYS_NODES) -> dict[int, int]:
    """Machine CPU -> NUMA node, from sysfs (empty where the kernel has no NUMA there)."""
    out: dict[int, int] = {}
    for path in sorted(glob.glob(os.path.join(root, "node[0-9]*"))):
        try:
            node = int(os.path.basename(path)[4:])
            with open(os.path.join(path, "cpulist"), encoding="ascii") as handle:
                text = handle.read().strip()
        except (OSError, ValueError):
            continue
        for part in filter(None, text.split(",")):
            lo, _, hi = part.partition("-")
            try:
                for cpu in range(int(lo), int(hi or lo) + 1):
                    out[cpu] = node
            except ValueError:
                continue
    return out


def affinity_plugin(conf: Any) -> bool:
    plugins = [p.strip().lower() for p in str(conf.get("TaskPlugin") or "task/none").split(",")]
    return "task/affinity" in plugins or "affinity" in plugins


def job_cpus_here(jobs: dict[Any, Any], held: dict[tuple[int, int], list[int]], uid: int, job_id: int,
                  credential_job: Any, node_name: str, node_cpus: int) -> list[int]:
    """The job's abstract CPUs on this node: its batch run's, the ones held for its steps, or
    (unconfined, no batch here) the first ones of the credential's count."""
    for job in jobs.values():
        if getattr(job, "job_id", None) == job_id and getattr(job, "cpus", None):
            return sorted(job.cpus)
    if (uid, job_id) in held:
        return sorted(held[(uid, job_id)])
    count = node_cpus
    if isinstance(credential_job, dict):
        nodes, cpus = credential_job.get("nodes"), credential_job.get("cpus")
        if isinstance(nodes, list) and node_name in nodes and isinstance(cpus, list):
            i = nodes.index(node_name)
            if i < len(cpus) and isinstance(cpus[i], int) and not isinstance(cpus[i], bool):
                count = cpus[i]
    return list(range(max(1, min(count, node_cpus))))


def for_launch(daemon: Any, msg: Any, credential_job: Any) -> dict[str, Any]:
    """plurmd's call (nodeagent/daemon.launch_step): the plan for ``msg``'s tasks here; never
    raises (a plan that fails is logged and the tasks run unbound)."""
    try:
        cpus = job_cpus_here(daemon.jobs, getattr(daemon.confine, "held", {}), msg.uid, msg.job_id, credential_job,
                             daemon.name, int(daemon.node_conf.cpus))
        gpus = [g for g in (msg.job_gres or {}).get("gpu", []) if isinstance(g, int)]
        confine = daemon.confine
        cpuset = bool(confine.confined and confine.constrain and getattr(confine.cgconf, "constrain_cores", False))
        binding = with_accel_bind(dict(msg.binding or {}), getattr(msg, "launch", None))
        return plan(daemon.conf, daemon.node_conf, daemon.name, binding, list(msg.task_ids), cpus,
                    gpus, daemon.accel, cpuset=cpuset)
    except Exception:
        log.exception("node %s: the binding of step %s.%s", daemon.name, msg.job_id, msg.step_id)
        return {}


def with_accel_bind(binding: dict[str, Any], launch: Any) -> dict[str, Any]:
    """srun --accel-bind (LaunchTasks.launch["accel_bind"]): ``g`` binds each task to the GPUs
    closest to its CPUs, as --gpu-bind=closest does (an explicit --gpu-bind wins); ``n`` (NICs)
    has nothing to act on (plurm knows no NICs' places); ``v`` adds no line (22.05.8 printed
    none on the anchor)."""
    letters = launch.get("accel_bind") if isinstance(launch, dict) else None
    if isinstance(letters, str) and "g" in letters and not binding.get("gpu_bind"):
        binding["gpu_bind"] = "closest"
    return binding


def plan(conf: Any, node_conf: Any, node_name: str, binding: dict[str, Any], task_ids: list[int],
         job_cpus: list[int], job_gpus: list[int], accel: Any = None,
         allowed: list[int] | None = None, numa: dict[int, int] | None = None,
         cpuset: bool = False) -> dict[str, Any]:
    """The step's binding on this node, for plurmstepd: per local task its machine CPUs
    (``cpus``: None = unbound; ``fail``: a CPU the node lacks, or, with ``cpuset`` (task/cgroup
    constrains the job to its CPUs), one outside the job's: the task does not start, as
    sched_setaffinity's EINVAL fails it in Slurm),
    NUMA nodes (``mems``), GPU variables (``env``) and the lines written before its output
    (``first``: on the node's first task, as slurmstepd writes them; ``lines``: its own);
    ``error``: why part of the request was dropped (plurmd's log has it too)."""
    allowed = sorted(allowed if allowed is not None else os.sched_getaffinity(0))
    numa = numa if numa is not None else numa_of_cpus()
    layout = node_layout(node_conf)
    ntasks = len(task_ids)
    tasks: list[dict[str, Any]] = [{"env": {}} for _ in task_ids]
    out: dict[str, Any] = {"tasks": tasks}

    def machine(cpus: set[int]) -> set[int]:
        return {allowed[c % len(allowed)] for c in cpus} if allowed else set(cpus)

    errors: list[str] = []
    cpu_sets: list[set[int]] = [machine(set(job_cpus))] * ntasks
    affinity = affinity_plugin(conf)
    try:
        dist = taskbind.parse_distribution(binding.get("distribution"))
        if affinity:
            result = taskbind.cpu_masks(taskbind.parse_cpu_bind(binding.get("cpu_bind")), layout, job_cpus, ntasks,
                                        int(binding.get("cpus_per_task") or 1),
                                        taskbind.parse_plugin_param(conf.get("TaskPluginParam")), dist.sockets)
            for i, task in enumerate(tasks):
                mask = result.masks[i] if result.masks is not None else None
                if mask is not None and (not mask or cpuset and not mask <= set(job_cpus)):
                    task["fail"] = "task_g_set_affinity: Invalid argument"
                elif mask is not None:
                    task["cpus"] = sorted(machine(mask))
                    cpu_sets[i] = machine(mask)
                if result.verbose and result.word:
                    task["cpu_line"] = {"word": result.word, "unit": result.unit, "mask": sorted(mask or ())}
    except BindError as exc:
        errors.append(f"task/affinity: {exc}")
    try:
        mem = taskbind.parse_mem_bind(binding.get("mem_bind"))
        if affinity and mem.kind:
            known = sorted(set(numa.values())) or [0]
            mems = taskbind.mem_nodes(mem, known, [{numa.get(c, 0) for c in cs} for cs in cpu_sets])
            host = os.uname().nodename.split(".", 1)[0]
            for i, task in enumerate(tasks):
                if mems is not None:
                    task["mems"] = sorted(mems[i])
                    if mem.prefer:  # (prefer: the kernel may place pages elsewhere when these are full)
                        task["mems_prefer"] = True
                    if mem.verbose:
                        task["mem_line"] = taskbind.mem_bind_line(mem, host, task_ids[i], i, 0, mems[i])
    except BindError as exc:
        errors.append(f"task/affinity: {exc}")
    try:
        gpu = taskbind.parse_gpu_bind(binding.get("gpu_bind"))
        devices = list(getattr(accel, "devices", []) or [])
        gpu_numa = [devices[g].numa_node if g < len(devices) else None for g in sorted(job_gpus)]
        chosen = taskbind.task_gpus(gpu, job_gpus, ntasks, [{numa.get(c, 0) for c in cs} for cs in cpu_sets],
                                    gpu_numa)
        if chosen is not None and accel is not None:
            for i, task in enumerate(tasks):
                env = accel.binding("gpu", chosen[i])
                task["env"].update(env)
                task["gpus"] = chosen[i]
                if gpu.verbose:
                    visible = next(iter(env.values()), "")
                    task["lines"] = [taskbind.gpu_bind_line(chosen[i], job_gpus, visible)]
    except BindError as exc:
        errors.append(f"gres/gpu: {exc}")
    if errors:
        out["error"] = "".join(f"slurmstepd-{node_name}: error: {e}\n" for e in errors)
        log.error("node %s: binding of a step's tasks: %s", node_name, "; ".join(errors))
    return out


def node_layout(node_conf: Any) -> taskbind.Layout:
    """Sockets x cores x threads as slurm.conf gives them (grammar/slurmconf: CPUs=4 alone is
    4 sockets of one core); a layout that does not multiply out to CPUs: its CPUs as cores."""
    layout = taskbind.Layout(max(1, int(getattr(node_conf, "sockets", 1) or 1)),
                             max(1, int(getattr(node_conf, "cores_per_socket", 1) or 1)),
                             max(1, int(getattr(node_conf, "threads_per_core", 1) or 1)))
    cpus = int(getattr(node_conf, "cpus", layout.cpus) or layout.cpus)
    return layout if layout.cpus == cpus else taskbind.Layout(1, max(1, cpus), 1)


def task_place(bound: dict[str, Any], local_id: int) -> dict[str, Any]:
    """A task's part of the plan (plurmstepd's side; {} for a plan of another version)."""
    tasks = bound.get("tasks") if isinstance(bound, dict) else None
    place = tasks[local_id] if isinstance(tasks, list) and local_id < len(tasks) else None
    return place if isinstance(place, dict) else {}


def task_words(bound: dict[str, Any], place: dict[str, Any], node: str, rank: int, local_id: int,
               pid: int) -> tuple[str, str]:
    """What slurmstepd writes before a task runs: (on the node's first task's stderr, on this
    task's): the binding's error and verbose lines, the CPU mask as the kernel has it now."""
    first = str(bound.get("error") or "") if isinstance(bound, dict) and local_id == 0 else ""
    line = place.get("cpu_line")
    if isinstance(line, dict):
        result = taskbind.CpuMasks(None, True, str(line.get("word", "")), str(line.get("unit", "")))
        failed = bool(place.get("fail"))
        mask = set(line.get("mask") or [])
        if failed or result.word == "NONE":
            try:  # (FAILED: what the task has instead, as 22.05.8 shows it)
                mask = set(os.sched_getaffinity(pid))
            except OSError:
                pass
        first += taskbind.cpu_bind_line(result, node, rank, local_id, pid, mask, failed)
    if place.get("mem_line"):
        first += str(place["mem_line"]).replace(" [0]:", f" [{pid}]:")
    if place.get("fail"):
        first += f"slurmstepd-{node}: error: {place['fail']}\n"
    return first, "".join(str(x) for x in place.get("lines") or [])


def apply_in_child(cpus: list[int] | None, mems: list[int] | None, prefer: bool = False) -> None:
    """In the task, between fork and exec: its CPU mask and memory policy (os calls only;
    a mask the cpuset refuses leaves the task on its cgroup's CPUs, as the verbose line shows)."""
    if cpus:
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            pass
    if mems:
        set_mempolicy(mems, prefer)


MPOL_PREFERRED, MPOL_BIND = 1, 2
_NR_SET_MEMPOLICY = {"x86_64": 238, "aarch64": 237, "ppc64le": 261, "s390x": 237}
_LIBC: Any = None


def prepare_mempolicy() -> None:
    """Load libc in the parent (a fork's child must not dlopen)."""
    global _LIBC
    if _LIBC is None:
        import ctypes

        _LIBC = ctypes.CDLL(None, use_errno=True)


def set_mempolicy(nodes: list[int], prefer: bool = False) -> bool:
    """MPOL_BIND to ``nodes`` (MPOL_PREFERRED, the first of them, with ``prefer``) by
    set_mempolicy(2); False where it cannot be set."""
    nr = _NR_SET_MEMPOLICY.get(os.uname().machine)
    if nr is None or _LIBC is None or not nodes:
        return False
    import ctypes

    mask = 0
    for n in nodes[:1] if prefer else nodes:
        mask |= 1 << n
    value = ctypes.c_ulong(mask)
    return _LIBC.syscall(nr, MPOL_PREFERRED if prefer else MPOL_BIND, ctypes.byref(value),
                         ctypes.c_ulong(max(nodes) + 2)) == 0


def gpu_local_cpus(confine: Any, accel: Any, job: dict[str, Any], gpus: list[int], count: int, used: set[int],
                   numa: dict[int, int] | None = None) -> set[int] | None:
    """The CPU indices of this node on the NUMA nodes of the job's GPUs, which plurmd gives the job
    first (cons_tres's GPU-to-core affinity, from the NUMA nodes the accelerator backends report).
    ``--gres-flags=disable-binding``, no GPU, or GPUs of unknown NUMA node: no preference (None).
    ``enforce-binding`` means only those CPUs: when fewer are free than the job has, it still gets
    its count (the controller does not know the node's CPU-to-NUMA map) and the log says so."""
    flags = (job.get("spec") or {}).get("gres_flags") or []
    devices = list(getattr(accel, "devices", []) or [])
    wanted = {devices[g].numa_node for g in gpus if isinstance(g, int) and 0 <= g < len(devices)} - {None}
    if "disable-binding" in flags or not wanted:
        return None
    numa = numa_of_cpus() if numa is None else numa
    near = {i for i in range(confine.node_cpus) if numa.get(confine.machine_cpus([i])[0], 0) in wanted}
    if "enforce-binding" in flags and len(near - used) < count:
        log.warning("job %s: --gres-flags=enforce-binding: %d of its %d CPUs are local to its GPUs (NUMA %s)",
                    job.get("job_id"), len(near - used), count, ",".join(map(str, sorted(wanted))))
    return near
