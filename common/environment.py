"""The environment Slurm gives a batch script and each task of a step.

Every job kind's whole environment is compared with the real Slurm 22.05's in
tests/integration/test_job_env_differential.py (captures in
tests/integration/reference/env/): the variables, their names and their formats
(e.g. SLURM_TASKS_PER_NODE=2(x3),1) follow what the real slurmd, srun and salloc set.
Where a kind sets a variable and another does not, the function for that kind says so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from plurm.grammar.hostlist import compress


def compress_counts(counts: list[int]) -> str:
    """Slurm's run-length form: [2, 2, 2, 1] -> "2(x3),1"."""
    parts: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j + 1 < len(counts) and counts[j + 1] == counts[i]:
            j += 1
        run = j - i + 1
        parts.append(f"{counts[i]}(x{run})" if run > 1 else str(counts[i]))
        i = j + 1
    return ",".join(parts)


# Every variable a binding may set: cleared before a node binds its own devices.
BINDING_VARIABLES = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
                     "ZE_AFFINITY_MASK")


def default_binding(name: str, indices: list[int]) -> dict[str, str]:
    """A plain gres/gpu of unknown make, as Slurm 22.05 binds it when gres.conf names no
    environment flag: every vendor's variable (shards: the node knows their gpus)."""
    if name != "gpu":
        return {}
    ids = ",".join(str(i) for i in sorted(indices))
    return {var: ids for var in BINDING_VARIABLES}


def allocated_gpus(job: dict[str, Any], node_index: int) -> list[int]:
    alloc = job.get("gres_alloc") or []
    return sorted(alloc[node_index].get("gpu", [])) if node_index < len(alloc) else []


def allocated_shards(job: dict[str, Any], node_index: int) -> list[int]:
    alloc = job.get("gres_alloc") or []
    return sorted(alloc[node_index].get("shard", [])) if node_index < len(alloc) else []


def gpu_variables(job: dict[str, Any], node_index: int, step: bool = False,
                  binding: Callable[[str, list[int]], dict[str, str]] | None = default_binding) -> dict[str, str]:
    """The GPUs a job holds on one node, as Slurm names them for a job (or a step).

    ``binding`` names the vendor's variables for those units (the node daemon
    knows its devices); None leaves the vendor's variables out.
    """
    gpus = allocated_gpus(job, node_index)
    shards = allocated_shards(job, node_index)
    if shards and not gpus:
        # gres/shard: the job sees the gpus its shards live on, shared with others.
        env = {"SLURM_SHARDS_ON_NODE": str(len(shards))}
        if binding is not None:
            env.update(binding("shard", shards))
        return env
    if not gpus:
        return {}
    indices = ",".join(str(i) for i in gpus)
    env = {
        "SLURM_STEP_GPUS" if step else "SLURM_JOB_GPUS": indices,
        "SLURM_GPUS_ON_NODE": str(len(gpus)),
    }
    if binding is not None:
        env.update(binding("gpu", gpus))
    for item in job.get("spec", {}).get("gres_req") or []:
        if item.get("per") == "job" and item.get("name") == "gpu":
            env["SLURM_GPUS"] = str(item["count"])
    return env


def job_variables(job: dict[str, Any], node_name: str, *, cluster: str, conf_path: str, ctld_host: str,
                  ctld_port: int, binding: Callable[[str, list[int]], dict[str, str]] | None = default_binding
                  ) -> dict[str, str]:
    """SLURM_* variables describing the job's allocation (batch script and steps alike)."""
    spec = job["spec"]
    nodes: list[str] = job.get("nodes", [])
    nodelist = compress(nodes)
    node_index = nodes.index(node_name) if node_name in nodes else 0
    cpus = job.get("cpus", [])
    env = {
        "SLURMD_NODENAME": node_name,
        "SLURM_CLUSTER_NAME": cluster,
        "SLURM_CONF": conf_path,
        "SLURM_CPUS_ON_NODE": str(cpus[node_index] if cpus else 1),
        "SLURM_JOBID": str(job["job_id"]),
        "SLURM_JOB_ID": str(job["job_id"]),
        "SLURM_JOB_CPUS_PER_NODE": compress_counts(cpus),
        "SLURM_JOB_GID": str(spec.get("group_id", 0)),
        "SLURM_JOB_NAME": spec.get("name", ""),
        "SLURM_JOB_NODELIST": nodelist,
        "SLURM_JOB_NUM_NODES": str(len(nodes)),
        "SLURM_JOB_PARTITION": job.get("partition", ""),
        "SLURM_JOB_UID": str(spec.get("user_id", 0)),
        "SLURM_JOB_USER": spec.get("user", ""),
        "SLURM_NNODES": str(len(nodes)),
        "SLURM_NODELIST": nodelist,
        "SLURM_NODE_ALIASES": "(null)",
        "SLURM_PRIO_PROCESS": "0",
        "SLURM_SUBMIT_DIR": spec.get("work_dir", "/"),
        "SLURM_SUBMIT_HOST": spec.get("submit_host", "localhost"),
        "SLURM_TASKS_PER_NODE": compress_counts(job.get("tasks", [])),
        "SLURM_TOPOLOGY_ADDR": node_name,
        "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
        "SLURM_WORKING_CLUSTER": f"{cluster}:{ctld_host}:{ctld_port}:9728:109",
    }
    env.update(gpu_variables(job, node_index, binding=binding))
    if spec.get("overcommit"):  # -O (issue 14, timeprio): as the real 22.05 sets it
        env["SLURM_OVERCOMMIT"] = "1"
    if spec.get("reservation"):  # --reservation (issue 14): as the real 22.05 sets it
        env["SLURM_JOB_RESERVATION"] = spec["reservation"]
    if spec.get("mem_per_node"):
        env["SLURM_MEM_PER_NODE"] = str(spec["mem_per_node"])
    elif job.get("mem") and cpus and cpus[0]:
        env["SLURM_MEM_PER_CPU"] = str(spec.get("mem_per_cpu") or job["mem"][0] // cpus[0])
    if spec.get("ntasks") is not None:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(spec["ntasks"])
    elif spec.get("ntasks_per_node") and job.get("tasks"):
        # -N2 --ntasks-per-node=1: Slurm counts the tasks it laid out (SLURM_NTASKS=2).
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(sum(job["tasks"]))
    if spec.get("ntasks_per_node"):
        env["SLURM_NTASKS_PER_NODE"] = str(spec["ntasks_per_node"])
    for unit in ("core", "socket", "gpu"):  # --ntasks-per-core|socket|gpu, as sbatch exports them
        if spec.get(f"ntasks_per_{unit}"):
            env[f"SLURM_NTASKS_PER_{unit.upper()}"] = str(spec[f"ntasks_per_{unit}"])
    if spec.get("cpus_per_task") is not None:
        env["SLURM_CPUS_PER_TASK"] = str(spec["cpus_per_task"])
    if spec.get("account"):
        env["SLURM_JOB_ACCOUNT"] = spec["account"]
        # With associations every job has a QOS: the association's default, "normal" unless
        # set (without accounting Slurm sets neither variable: reference envfile_slurm-3).
        env["SLURM_JOB_QOS"] = spec.get("qos") or "normal"
    elif spec.get("qos"):
        env["SLURM_JOB_QOS"] = spec["qos"]
    if spec.get("dependency"):
        env["SLURM_JOB_DEPENDENCY"] = spec["dependency"]
    if job.get("array_job_id") is not None:
        indices = spec.get("array_indices") or [job.get("array_task_id", 0)]
        env["SLURM_ARRAY_JOB_ID"] = str(job["array_job_id"])
        env["SLURM_ARRAY_TASK_ID"] = str(job.get("array_task_id"))
        env["SLURM_ARRAY_TASK_COUNT"] = str(len(indices))
        env["SLURM_ARRAY_TASK_MAX"] = str(max(indices))
        env["SLURM_ARRAY_TASK_MIN"] = str(min(indices))
        steps = {b - a for a, b in zip(sorted(indices), sorted(indices)[1:])}
        env["SLURM_ARRAY_TASK_STEP"] = str(steps.pop() if len(steps) == 1 else 1)
    return env


def batch_environment(job: dict[str, Any], submitted: dict[str, str], node_name: str, **where: Any
                      ) -> dict[str, str]:
    """The batch script's environment: what sbatch exported, then Slurm's variables."""
    env = dict(submitted)
    env.update(job_variables(job, node_name, **where))
    env.update({"SLURM_GTIDS": "0", "SLURM_LOCALID": "0", "SLURM_NODEID": "0", "SLURM_PROCID": "0"})
    # slurmd names the node (the anchor's nodes share one host: HOSTNAME=n2, not the host's name)
    # and slurmstepd gives the job its TmpFS unless the job brought a TMPDIR of its own.
    env["HOSTNAME"] = node_name
    env.setdefault("TMPDIR", TMPFS)
    if job.get("restarts"):  # a requeued job's run (Slurm sets it only from the first restart)
        env["SLURM_RESTART_COUNT"] = str(job["restarts"])
    env.setdefault("ENVIRONMENT", "BATCH")
    if job.get("het_components"):  # a hetjob's script: every component's, by group
        env.update(het_variables(job["het_components"], node_name, **where))
    return env


# What a hetjob's batch script learns of each component K, as SLURM_<NAME>_HET_GROUP_K and the
# older SLURM_<NAME>_PACK_GROUP_K (22.05.8: tests/integration/reference/hetjob/run_env.txt).
_HET_NAMES = ("SLURM_CPUS_PER_TASK", "SLURM_JOB_ACCOUNT", "SLURM_JOB_CPUS_PER_NODE", "SLURM_JOB_ID",
              "SLURM_JOB_NAME", "SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES", "SLURM_JOB_PARTITION",
              "SLURM_JOB_QOS", "SLURM_MEM_PER_CPU", "SLURM_MEM_PER_NODE", "SLURM_NPROCS", "SLURM_NTASKS",
              "SLURM_TASKS_PER_NODE")


# salloc's variables that a heterogeneous allocation does not name per component.
_SALLOC_UNGROUPED = ("SLURM_CLUSTER_NAME", "SLURM_CONF", "SLURM_SUBMIT_DIR", "SLURM_SUBMIT_HOST")


def salloc_het_environment(environ: dict[str, str], components: list[dict[str, Any]], **where: Any
                           ) -> dict[str, str]:
    """`salloc A : B`'s command's environment (22.05.8: reference/hetjob/salloc_env.txt): salloc's
    variables per component only (…_HET_GROUP_K, …_PACK_GROUP_K), the hetjob's id, and the
    tasks of all components; none of component 0's plain SLURM_JOB_NODELIST and the like."""
    env = dict(environ)
    size = str(len(components))
    env.update({"SLURM_HET_SIZE": size, "SLURM_PACK_SIZE": size})
    tasks = 0
    for component in components:
        own = job_variables(component, (component.get("nodes") or [""])[0], binding=None, **where)
        offset = (component.get("spec") or {}).get("het_job_offset", 0)
        for name, value in own.items():
            if name in SALLOC_VARIABLES and name not in _SALLOC_UNGROUPED:
                env[f"{name}_HET_GROUP_{offset}"] = env[f"{name}_PACK_GROUP_{offset}"] = value
        tasks += int(own.get("SLURM_NTASKS") or 0)
        if not offset:
            env.update({name: own[name] for name in _SALLOC_UNGROUPED if name in own})
            env["SLURM_JOB_ID"] = str(component["job_id"])
    if tasks:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(tasks)
    return env


def het_job_id(env: dict[str, str], job_id: int) -> str | None:
    """The hetjob a step's job ``job_id`` is a component of, from the allocation's variables
    (SLURM_JOB_ID_HET_GROUP_K); None if it is none (a stale copy names other jobs)."""
    size = env.get("SLURM_HET_SIZE", "")
    if not size.isdigit() or int(size) > 128:
        return None
    ids = [env.get(f"SLURM_JOB_ID_HET_GROUP_{k}") for k in range(int(size))]
    return ids[0] if str(job_id) in ids else None


def het_variables(components: list[dict[str, Any]], node_name: str, **where: Any) -> dict[str, str]:
    """SLURM_HET_SIZE and each component's variables (core_hetjob.model_dict's records)."""
    where.pop("binding", None)  # (a component's devices are its nodes' business)
    size = str(len(components))
    env = {"SLURM_HET_SIZE": size, "SLURM_PACK_SIZE": size}
    for component in components:
        own = job_variables(component, node_name, binding=None, **where)
        offset = component.get("offset", (component.get("spec") or {}).get("het_job_offset", 0))
        for name in _HET_NAMES:
            if name in own:
                env[f"{name}_HET_GROUP_{offset}"] = env[f"{name}_PACK_GROUP_{offset}"] = own[name]
    return env


def task_environment(base: dict[str, str], *, job_id: int, step_id: int, rank: int, local_id: int,
                     node_id: int, ntasks: int, nodelist: list[str], tasks_per_node: list[int],
                     node_task_ids: list[int], node_name: str) -> dict[str, str]:
    """One task of a step: the step's environment plus its ranks."""
    env = dict(base)
    # srun -E/--preserve-env: these keep the values srun's own environment had (tools/srun.py)
    preserved = [n for n in env.pop(PRESERVE_ENV_MARK, "").split(",") if n in base]
    step_nodes = compress(nodelist)
    env.update({
        "SLURM_STEP_ID": str(step_id),
        "SLURM_STEPID": str(step_id),
        "SLURM_STEP_NODELIST": step_nodes,
        "SLURM_STEP_NUM_NODES": str(len(nodelist)),
        "SLURM_STEP_NUM_TASKS": str(ntasks),
        "SLURM_STEP_TASKS_PER_NODE": compress_counts(tasks_per_node),
        "SLURM_PROCID": str(rank),
        "SLURM_LOCALID": str(local_id),
        "SLURM_NODEID": str(node_id),
        "SLURM_GTIDS": ",".join(str(t) for t in node_task_ids),
        "SLURM_NTASKS": str(ntasks),
        "SLURM_NPROCS": str(ntasks),
        "SLURM_TASKS_PER_NODE": compress_counts(tasks_per_node),
        "SLURM_NODELIST": step_nodes if "SLURM_NODELIST" not in env else env["SLURM_NODELIST"],
        "SLURMD_NODENAME": node_name,
        "SLURM_TOPOLOGY_ADDR": node_name,
        "SLURM_JOB_ID": str(job_id),
        "SLURM_JOBID": str(job_id),
    })
    env.update({name: base[name] for name in preserved})
    het = het_job_id(base, job_id)
    if het is not None:  # a step in a hetjob's component is named by the hetjob (22.05.8: step_env.txt)
        env["SLURM_JOB_ID"] = env["SLURM_JOBID"] = het
    env["SLURM_TASK_PID"] = str(os.getpid())
    if local_id == 0:
        # 22.05's slurmstepd gives TMPDIR to the first task it starts on a node only
        # (srun.0 has TMPDIR=/tmp, srun.1 none, in the reference captures).
        env.setdefault("TMPDIR", TMPFS)
    return env


TMPFS = "/tmp"  # slurm.conf's TmpFS default
PRESERVE_ENV_MARK = "PLURM_PRESERVE_ENV"  # srun -E: the variables its tasks keep from srun (stripped)

# What salloc gives its command (22.05): the allocation, none of the node's or the task's
# variables (no SLURMD_NODENAME, ranks, SLURM_JOB_UID/GID/USER, SLURM_CPUS_ON_NODE,
# SLURM_WORKING_CLUSTER, SLURM_PRIO_PROCESS), and memory only when asked for.
SALLOC_VARIABLES = frozenset({
    "SLURM_CLUSTER_NAME", "SLURM_CONF", "SLURM_JOBID", "SLURM_JOB_ID", "SLURM_JOB_ACCOUNT", "SLURM_JOB_QOS",
    "SLURM_JOB_CPUS_PER_NODE", "SLURM_JOB_NAME", "SLURM_JOB_NODELIST", "SLURM_JOB_NUM_NODES",
    "SLURM_JOB_PARTITION", "SLURM_NNODES", "SLURM_NODELIST", "SLURM_NODE_ALIASES", "SLURM_SUBMIT_DIR",
    "SLURM_SUBMIT_HOST", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_NTASKS_PER_NODE",
    "SLURM_CPUS_PER_TASK", "SLURM_JOB_DEPENDENCY", "SLURM_GPUS",
    "SLURM_JOB_RESERVATION",  # (--reservation: salloc names it too, tests/tools/reference/reservations)
})
MEMORY_VARIABLES = ("SLURM_MEM_PER_NODE", "SLURM_MEM_PER_CPU")


def _requested_memory(job: dict[str, Any], env: dict[str, str]) -> None:
    """srun and salloc name the memory the user asked for, never the partition's default."""
    spec = job["spec"]
    for name in MEMORY_VARIABLES:
        env.pop(name, None)
    if spec.get("mem_per_node"):
        env["SLURM_MEM_PER_NODE"] = str(spec["mem_per_node"])
    elif spec.get("mem_per_cpu"):
        env["SLURM_MEM_PER_CPU"] = str(spec["mem_per_cpu"])


def salloc_environment(environ: dict[str, str], job: dict[str, Any], **where: Any) -> dict[str, str]:
    """The environment salloc runs its command (or shell) in, on the submit host."""
    env = dict(environ)
    allocation = job_variables(job, job["nodes"][0], **where)
    _requested_memory(job, allocation)
    env.update({k: v for k, v in allocation.items() if k in SALLOC_VARIABLES or k in MEMORY_VARIABLES})
    return env


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def step_environment(environ: dict[str, str], job: dict[str, Any], node_name: str, *, srun_host: str,
                     srun_port: int, distribution: str | None = None, **where: Any) -> dict[str, str]:
    """What srun sends one node for its tasks (task_environment adds each task's ranks).

    Inside an allocation (a batch script, salloc: ``environ`` names the job) 22.05's srun adds
    SLURM_DISTRIBUTION (block unless -m says) and SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0; an srun
    that made its own allocation sets neither, nor SLURM_NODE_ALIASES nor SLURM_JOB_GPUS.  srun
    never names the memory (what the batch script had passes through).  Not modelled: an srun
    of its own with a memory option sets SLURM_DISTRIBUTION too (block; cyclic for one task).  The node daemon
    sets the vendor's device variables: it knows its devices.
    """
    env = dict(environ)
    het = het_job_id(environ, job["job_id"])  # a hetjob's component: its steps are the hetjob's
    inside = environ.get("SLURM_JOB_ID") in (str(job["job_id"]), het or str(job["job_id"]))
    own = job_variables(job, node_name, binding=None, **where)
    for name in MEMORY_VARIABLES:  # not even --mem-per-cpu's (22.05: `srun -n2 --mem-per-cpu=100`)
        own.pop(name, None)
    for name in ("SLURM_NODE_ALIASES", "SLURM_JOB_GPUS", "SLURM_GPUS_ON_NODE"):
        own.pop(name, None)
    env.update(own)
    if node_name in job.get("nodes", []):
        env.update(gpu_variables(job, job["nodes"].index(node_name), step=True, binding=None))
    env.update({
        "SLURM_LAUNCH_NODE_IPADDR": srun_host, "SLURM_SRUN_COMM_HOST": srun_host,
        "SLURM_SRUN_COMM_PORT": str(srun_port), "SLURM_STEP_LAUNCHER_PORT": str(srun_port),
        "SLURM_UMASK": f"{current_umask():04o}",
        "SRUN_DEBUG": "3",  # srun's log level (info), which its tasks inherit
    })
    if het is not None:
        env["SLURM_JOB_ID"] = env["SLURM_JOBID"] = het
    if inside:
        env["SLURM_DISTRIBUTION"] = distribution or "block"
        if het is None:  # (a hetjob's _PACK_GROUP_K are the batch script's)
            env["SLURM_JOB_CPUS_PER_NODE_PACK_GROUP_0"] = compress_counts(job.get("cpus", []))
    elif distribution:
        env["SLURM_DISTRIBUTION"] = distribution
    return env


# ----------------------------------------------------------------- the job's owner
DEFAULT_UMASK = 0o022


def submit_umask(env: dict[str, str]) -> int:
    """The umask the job was submitted with: SLURM_UMASK (octal, as sbatch and srun export it)."""
    text = env.get("SLURM_UMASK", "")
    try:
        value = int(text, 8)
    except ValueError:
        return DEFAULT_UMASK
    return value if 0 <= value <= 0o777 else DEFAULT_UMASK


def export_mode(env: dict[str, str]) -> str:
    """--export as the job carries it (SLURM_EXPORT_ENV): ALL, NONE, NIL, or "list"."""
    spec = env.get("SLURM_EXPORT_ENV", "ALL").strip()
    first = spec.split(",", 1)[0].upper()
    if first in ("NONE", "NIL"):
        return first
    return "ALL" if first in ("ALL", "") else "list"


# Names a login environment never sets in the job: the shell's own (the job's shell sets them
# again) and the workload manager's (the job's variables win).
LOGIN_SKIPPED = frozenset({"PWD", "OLDPWD", "_"})
LOGIN_TIMEOUT_S = 8.0  # --get-user-env's default timeout (sbatch(1))


def wants_login_environment(env: dict[str, str]) -> bool:
    """sbatch sets SLURM_GET_USER_ENV=1 for --get-user-env and for every --export but ALL and NIL."""
    return env.get("SLURM_GET_USER_ENV") == "1"


def login_environment(user: str, shell: str, *, as_root: bool, timeout: float = LOGIN_TIMEOUT_S
                      ) -> dict[str, str] | None:
    """The user's login environment on this node, as --get-user-env loads it: ``su - user``
    (root), else the user's own login shell.  None when it cannot be had in time."""
    import subprocess

    command = "/usr/bin/env -0; :"  # '; :' keeps the shell from exec'ing env (SHLVL as Slurm's)
    argv = ["/bin/su", "-", user, "-c", command] if as_root else [shell or "/bin/sh", "-l", "-c", command]
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                              env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    out: dict[str, str] = {}
    for item in proc.stdout.split(b"\0"):
        name, sep, value = item.decode("utf-8", "surrogateescape").partition("=")
        if sep and name and "\n" not in name:
            out[name] = value
    return out


def owner_variables(env: dict[str, str], *, user: str, home: str, shell: str,
                    login: dict[str, str] | None = None) -> dict[str, str]:
    """HOME, USER, LOGNAME (and SHELL) of the job's owner, by --export's rules (sbatch(1)).

    ``login``: the user's login environment (login_environment) when the job asked for it
    (wants_login_environment): it fills every name the job does not carry, as Slurm's
    --get-user-env does (NONE: PATH, SHELL, MAIL... come from the login shell).  Without it:
    NONE takes the passwd entry's values; NIL creates nothing of the user's environment;
    ALL and lists keep the submitted values and take the missing ones from passwd.
    """
    out = dict(env)
    mode = export_mode(env)
    if mode == "NIL":
        return out
    values = {"HOME": home, "USER": user, "LOGNAME": user}
    if login is not None:
        for name, value in login.items():
            if name not in LOGIN_SKIPPED and not name.startswith("SLURM_"):
                out.setdefault(name, value)
    elif mode == "NONE":
        values["SHELL"] = shell or "/bin/sh"
        out.update(values)
        out.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        return out
    for name, value in values.items():
        out.setdefault(name, value)
    return out
