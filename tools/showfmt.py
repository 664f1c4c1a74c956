"""What scontrol and sacct print: pure functions from reply dicts to text.

The inputs are the plain dicts the controller sends (``msgspec.to_builtins`` of the
records in ``wire/model.py``, with fields equal to their default omitted), so
every read goes through ``.get(name, default)`` with the model's default.  Nothing here
does I/O or reads the clock: the caller passes ``now``, so tests pin the output.

Layouts follow Slurm 22.05 byte for byte (``../shared/reference/slurm-22.05``).  Fields
plurm does not track print the value Slurm prints when the feature is unused
(``MCS_label=N/A``, ``Reboot=0``, ``Power=``), so scripts that parse the text keep working.

Start-up budget: standard library only, plus the light ``grammar.hostlist`` and
``grammar.timefmt``.
"""

from __future__ import annotations

import time as _time

from plurm.grammar.hostlist import compress
from plurm.grammar.timefmt import format_duration, format_time_limit
from plurm.tools.display import bitmap_ranges, job_oversubscribe, partition_oversubscribe

# A running job with no time limit: Slurm shows (and enforces) one year.
YEAR_MINUTES = 365 * 24 * 60


# ------------------------------------------------------------------------ small values
def iso(ts: float | None, none: str = "Unknown") -> str:
    """A Unix time as Slurm prints it (local time, ``2026-11-29T15:44:40``)."""
    if ts is None:
        return none
    return _time.strftime("%Y-%m-%dT%H:%M:%S", _time.localtime(ts))


def mem_exact(mb: int | None) -> str:
    """Megabytes with the largest unit that divides exactly: 2048 -> ``2G``, 2800 -> ``2800M``."""
    if mb is None:
        return "UNLIMITED"
    units = "MGTPE"
    i = 0
    while mb and mb % 1024 == 0 and i < len(units) - 1:
        mb //= 1024
        i += 1
    return f"{mb}{units[i]}"


def mem_round(mb: float) -> str:
    """Megabytes scaled to the largest unit under 1024, two decimals when not whole:
    1536 -> ``1.50G`` (scontrol's node AllocTRES)."""
    units = "MGTPE"
    i = 0
    value = float(mb)
    while value >= 1024 and i < len(units) - 1:
        value /= 1024
        i += 1
    if value == int(value):
        return f"{int(value)}{units[i]}"
    return f"{value:.2f}{units[i]}"


def _null(value: object) -> str:
    return "(null)" if value is None or value == "" else str(value)


def user_str(name: str, uid: int) -> str:
    return f"{name}({uid})"


def compress_ids(ids: list[int], throttle: int | None = None) -> str:
    """Array task ids as Slurm prints them: ``2-5``, ``0,3,5-7``, with ``%N`` for a throttle."""
    text = bitmap_ranges(ids)
    if throttle:
        text += f"%{throttle}"
    return text


# ------------------------------------------------------------------------ job helpers
def job_spec(job: dict) -> dict:
    return job.get("spec") or {}


def job_id_str(job: dict) -> str:
    """``24``, ``27_1`` for an array task, ``27_[2-5]`` for the pending remainder."""
    array_job = job.get("array_job_id")
    if array_job is None:
        return str(job["job_id"])
    pending = job.get("array_pending") or []
    if len(pending) > 1:
        return f"{array_job}_[{compress_ids(pending)}]"
    task = job.get("array_task_id")
    if pending:
        task = pending[0]
    return f"{array_job}_{task}"


def requested_cpus(job: dict) -> int:
    spec = job_spec(job)
    ntasks = spec.get("ntasks") or max(spec.get("nodes_min", 1), 1)
    per_node = spec.get("ntasks_per_node")
    if per_node and not spec.get("ntasks"):
        ntasks = per_node * max(spec.get("nodes_min", 1), 1)
    return ntasks * (spec.get("cpus_per_task") or 1)


def job_cpus(job: dict) -> int:
    cpus = job.get("cpus") or []
    return sum(cpus) if cpus else requested_cpus(job)


def job_ntasks(job: dict) -> int:
    spec = job_spec(job)
    if spec.get("ntasks"):
        return spec["ntasks"]
    if spec.get("ntasks_per_node"):
        return spec["ntasks_per_node"] * max(spec.get("nodes_min", 1), 1)
    return max(spec.get("nodes_min", 1), 1)


def job_mem_total(job: dict, def_mem_per_cpu: int | None = None) -> int | None:
    """Total memory (MB): allocated, else requested; None when unknown."""
    mem = job.get("mem") or []
    if mem:
        return sum(mem)
    spec = job_spec(job)
    nodes = max(spec.get("nodes_min", 1), 1)
    if spec.get("mem_per_node") is not None:
        return spec["mem_per_node"] * nodes
    per_cpu = spec.get("mem_per_cpu") or def_mem_per_cpu
    if per_cpu:
        return per_cpu * requested_cpus(job)
    return None


def job_state_str(job: dict) -> str:
    if job.get("completing"):
        return "COMPLETING"
    return job.get("state", "PENDING")


def job_started(job: dict) -> bool:
    return job.get("start_time") is not None and job.get("state", "PENDING") != "PENDING"


def job_limit_minutes(job: dict) -> int | None:
    limit = job.get("time_limit")
    if limit is None and job_started(job):
        return YEAR_MINUTES
    return limit


def run_seconds(job: dict, now: float) -> int:
    start = job.get("start_time")
    if start is None or job.get("state", "PENDING") == "PENDING":
        return 0
    end = job.get("end_time")
    if job.get("state") in ("RUNNING", "SUSPENDED") and not job.get("completing"):
        end = now
    elif end is None:
        end = now
    return max(0, int(end) - int(start))


def job_exit(job: dict) -> str:
    """ExitCode of a job record.  A cancelled job keeps 0:0 as in Slurm (the signal that
    ended its batch script shows on the batch step, not on the job)."""
    if job.get("state") == "CANCELLED":
        return "0:0"
    return f"{job.get('exit_code', 0)}:{job.get('exit_signal', 0)}"


def job_reason(job: dict) -> str:
    """The Reason field; for an ended job the cause Slurm records (NonZeroExitCode, ...)."""
    reason = job.get("reason", "None")
    if reason != "None":
        return reason
    state = job.get("state", "PENDING")
    if state == "FAILED" and (job.get("exit_code", 0) or job.get("exit_signal", 0)):
        return "NonZeroExitCode"
    if state == "TIMEOUT":
        return "TimeLimit"
    if state == "NODE_FAIL":
        return "NodeDown"
    if state == "OUT_OF_MEMORY":
        return "OutOfMemory"
    return reason


def dependency_str(job: dict) -> str:
    spec = job_spec(job)
    dep = spec.get("dependency")
    reason = job.get("reason", "None")
    if not dep or reason not in ("Dependency", "DependencyNeverSatisfied"):
        return "(null)"
    status = "(failed)" if reason == "DependencyNeverSatisfied" else "(unfulfilled)"
    sep = "?" if "?" in dep else ","
    parts: list[str] = []
    for item in dep.replace("?", ",").split(","):
        if not item:
            continue
        kind, colon, ids = item.partition(":")
        if not colon:
            parts.append(f"{kind}{status}")
            continue
        for one in ids.split(":"):
            if one:
                parts.append(f"{kind}:{one}{status}")
    return sep.join(parts) if parts else "(null)"


def _expand_io(pattern: str, job: dict) -> str:
    """%j %J %x %u %A %a %N %n %t %s %% in an output path, as scontrol shows it."""
    spec = job_spec(job)
    array_job = job.get("array_job_id")
    task = job.get("array_task_id")
    nodes = job.get("nodes") or []
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch != "%" or i + 1 >= len(pattern):
            out.append(ch)
            i += 1
            continue
        j = i + 1
        while j < len(pattern) and pattern[j].isdigit():
            j += 1
        width = int(pattern[i + 1:j]) if j > i + 1 else 0
        if j >= len(pattern):
            out.append(pattern[i:])
            break
        code = pattern[j]
        value: str | None
        if code in "jJ":
            value = str(job["job_id"])
        elif code == "x":
            value = spec.get("name", "sbatch")
        elif code == "u":
            value = spec.get("user", "root")
        elif code == "A":
            value = str(array_job if array_job is not None else job["job_id"])
        elif code == "a":
            value = str(task) if task is not None else "4294967294"
        elif code == "N":
            value = nodes[0] if nodes else "%N"
        elif code in "nts":
            value = "0"
        elif code == "%":
            value = "%"
        else:
            value = None
        if value is None:
            out.append(pattern[i:j + 1])
        else:
            out.append(value.zfill(width) if width and value.isdigit() else value)
        i = j + 1
    return "".join(out)


def io_path(job: dict, which: str) -> str:
    spec = job_spec(job)
    work = spec.get("work_dir", "/")
    if which == "stdin":
        path = spec.get("stdin") or "/dev/null"
    else:
        path = spec.get(which) if which == "stdout" else (spec.get("stderr") or spec.get("stdout"))
        if not path:
            path = "slurm-%A_%a.out" if job.get("array_job_id") is not None else "slurm-%j.out"
    path = _expand_io(path, job)
    if not path.startswith("/"):
        path = work.rstrip("/") + "/" + path
    return path


def tres_per(job: dict) -> list[str]:
    """TresPerJob/TresPerNode lines from the raw --gpus/--gres request."""
    gres = job_spec(job).get("gres") or ""
    per_job: list[str] = []
    per_node: list[str] = []
    for item in gres.split():
        key, _, value = item.partition("=")
        for one in value.split(","):
            if not one:
                continue
            if key == "gpus":
                per_job.append("gres:" + (one if one.startswith("gpu") else f"gpu:{one}"))
            else:
                per_node.append("gres:" + one)
    lines = []
    if per_job:
        lines.append("TresPerJob=" + ",".join(per_job))
    if per_node:
        lines.append("TresPerNode=" + ",".join(per_node))
    return lines


def job_tres(job: dict, def_mem_per_cpu: int | None = None) -> str:
    nodes = job.get("nodes") or []
    spec = job_spec(job)
    cpus = job_cpus(job)
    node_count = len(nodes) if nodes else max(spec.get("nodes_min", 1), 1)
    parts = [f"cpu={cpus}"]
    mem = job_mem_total(job, def_mem_per_cpu)
    if mem is not None:
        parts.append(f"mem={mem_exact(mem)}")
    parts.append(f"node={node_count}")
    parts.append(f"billing={cpus}")
    return ",".join(parts)


# ------------------------------------------------------------------------ scontrol show job
def job_lines(job: dict, now: float, details: bool = False, def_mem_per_cpu: int | None = None) -> list[str]:
    """The fields of ``scontrol show job`` grouped as Slurm groups them on lines."""
    spec = job_spec(job)
    job_id = job["job_id"]
    state = job_state_str(job)
    pending = job.get("state", "PENDING") == "PENDING"
    started = job_started(job)
    array_job = job.get("array_job_id")
    head = f"JobId={job_id}"
    if array_job is not None:
        pending_ids = job.get("array_pending") or []
        throttle = spec.get("array_max_running")
        if len(pending_ids) > 1:
            task = compress_ids(pending_ids, throttle)
        else:
            task = str(pending_ids[0] if pending_ids else job.get("array_task_id"))
        head += f" ArrayJobId={array_job} ArrayTaskId={task}"
        if throttle:
            head += f" ArrayTaskThrottle={throttle}"
    head += f" JobName={spec.get('name', 'sbatch')}"
    lines = [head]
    lines.append(f"UserId={user_str(spec.get('user', 'root'), spec.get('user_id', 0))} "
                 f"GroupId={user_str(spec.get('group', 'root'), spec.get('group_id', 0))} MCS_label=N/A")
    lines.append(f"Priority={job.get('priority', 0)} Nice={spec.get('nice', 0)} "
                 f"Account={_null(spec.get('account'))} QOS={_null(spec.get('qos'))}")
    lines.append(f"JobState={state} Reason={job_reason(job)} Dependency={dependency_str(job)}")
    lines.append(f"Requeue={1 if spec.get('requeue', True) else 0} Restarts={job.get('restarts', 0)} "
                 f"BatchFlag={1 if spec.get('batch', True) else 0} Reboot=0 "
                 f"ExitCode={job_exit(job)}")
    if details:
        lines.append(f"DerivedExitCode={job.get('derived_exit_code', 0)}:0")
    limit = job_limit_minutes(job)
    lines.append(f"RunTime={format_duration(run_seconds(job, now))} TimeLimit={format_time_limit(limit)} "
                 "TimeMin=N/A")
    begin = spec.get("begin_time")
    eligible = job.get("eligible_time")
    submit = job.get("submit_time", 0.0)
    future_begin = pending and begin is not None and begin > now
    if future_begin:
        eligible_s = accrue_s = iso(begin)
    elif pending and job.get("reason") == "JobArrayTaskLimit":
        eligible_s, accrue_s = "Unknown", iso(eligible or submit)
    else:
        eligible_s = accrue_s = iso(eligible)
    lines.append(f"SubmitTime={iso(submit)} EligibleTime={eligible_s}")
    lines.append(f"AccrueTime={accrue_s}")
    if started:
        start_s = iso(job.get("start_time"))
        end = job.get("end_time")
        if end is None and limit is not None:
            end = job["start_time"] + limit * 60
        end_s = iso(end)
    elif pending and job.get("planned_start"):
        start_s = iso(job["planned_start"])  # backfill's reservation
        end_s = iso(job["planned_start"] + limit * 60) if limit is not None else "Unknown"
    elif pending:
        start_s = iso(begin) if future_begin else "Unknown"
        end_s = "Unknown"
    else:  # finished without starting (cancelled while pending)
        start_s = iso(job.get("start_time") or job.get("end_time"))
        end_s = iso(job.get("end_time"))
    lines.append(f"StartTime={start_s} EndTime={end_s} Deadline=N/A")
    scheduler = job.get("scheduler") or ("Backfill" if started else "Main")
    lines.append(f"SuspendTime=None SecsPreSuspend=0 LastSchedEval={iso(job.get('last_sched_eval') or submit)} "
                 f"Scheduler={scheduler}")
    lines.append(f"Partition={job.get('partition') or spec.get('partition') or ''} "
                 f"AllocNode:Sid={spec.get('submit_host', 'localhost')}:0")
    req = spec.get("req_nodes") or []
    exc = spec.get("exc_nodes") or []
    lines.append(f"ReqNodeList={compress(req) if req else '(null)'} "
                 f"ExcNodeList={compress(exc) if exc else '(null)'}")
    nodes = job.get("nodes") or []
    lines.append(f"NodeList={compress(nodes) if nodes else ''}")
    if nodes:
        lines.append(f"BatchHost={nodes[0]}")
    if pending or not nodes:
        low = max(spec.get("nodes_min", 1), 1)
        high = spec.get("nodes_max")
        num_nodes = f"{low}-{high}" if high else str(low)
    else:
        num_nodes = str(len(nodes))
    cpt = spec.get("cpus_per_task") or 1
    lines.append(f"NumNodes={num_nodes} NumCPUs={job_cpus(job)} NumTasks={job_ntasks(job)} "
                 f"CPUs/Task={cpt} ReqB:S:C:T=0:0:*:*")
    lines.append(f"TRES={job_tres(job, def_mem_per_cpu)}")
    lines.append(f"Socks/Node=* NtasksPerN:B:S:C={spec.get('ntasks_per_node') or 0}:0:*:* CoreSpec=*")
    if details and nodes:
        lines.extend(_detail_lines(job))
    if spec.get("mem_per_node") is not None:
        min_mem = f"MinMemoryNode={mem_exact(spec['mem_per_node'])}"
    else:
        per_cpu = spec.get("mem_per_cpu") or def_mem_per_cpu
        if per_cpu is None and job.get("mem") and job.get("cpus"):
            per_cpu = job["mem"][0] // max(job["cpus"][0], 1)
        min_mem = f"MinMemoryCPU={mem_exact(per_cpu)}" if per_cpu else "MinMemoryNode=0"
    per_node = spec.get("ntasks_per_node") or 1
    lines.append(f"MinCPUsNode={cpt * per_node} {min_mem} MinTmpDiskNode=0")
    lines.append(f"Features={spec.get('constraint') or '(null)'} DelayBoot=00:00:00")
    lines.append(f"OverSubscribe={job_oversubscribe(job)} "
                 f"Contiguous={1 if spec.get('contiguous') else 0} Licenses=(null) "
                 "Network=(null)")
    lines.append(f"Command={_null(spec.get('command'))}")
    lines.append(f"WorkDir={spec.get('work_dir', '/')}")
    if spec.get("comment"):
        lines.append(f"Comment={spec['comment']} ")
    if spec.get("batch", True):
        lines.append(f"StdErr={io_path(job, 'stderr')}")
        lines.append(f"StdIn={io_path(job, 'stdin')}")
        lines.append(f"StdOut={io_path(job, 'stdout')}")
    lines.append("Power=")
    lines.extend(tres_per(job))
    other = spec.get("other_options") or {}
    if other:
        # Options plurm accepted and keeps but does not act on yet (sbatch warned about them).
        lines.append("NotActedOn=" + " ".join(f"--{k}={v}" if v != "True" else f"--{k}"
                                              for k, v in sorted(other.items())))
    return lines


def _detail_lines(job: dict) -> list[str]:
    """``scontrol -d``: JOB_GRES and one line per group of nodes with the same allocation.

    CPU ids and device indices print only when the controller sends them (optional
    ``cpu_ids`` and ``gres_detail`` lists, aligned with ``nodes``)."""
    spec = job_spec(job)
    gres = spec.get("gres") or ""
    job_gres = ",".join(v for item in gres.split() for v in item.partition("=")[2].split(",") if v)
    out = [f"JOB_GRES={job_gres or '(null)'}"]
    nodes = job.get("nodes") or []
    mem = job.get("mem") or []
    cpu_ids = job.get("cpu_ids") or []
    gres_detail = job.get("gres_detail") or []
    groups: list[tuple[list[str], tuple]] = []
    for i, name in enumerate(nodes):
        key = (cpu_ids[i] if i < len(cpu_ids) else None, mem[i] if i < len(mem) else 0,
               gres_detail[i] if i < len(gres_detail) else "")
        if groups and groups[-1][1] == key:
            groups[-1][0].append(name)
        else:
            groups.append(([name], key))
    for names, (cpu, node_mem, detail) in groups:
        line = f"  Nodes={compress(names)}"
        if cpu is not None:
            line += f" CPU_IDs={cpu}"
        out.append(f"{line} Mem={node_mem} GRES={detail}")
    return out


def format_job(job: dict, now: float, oneliner: bool = False, details: bool = False,
               def_mem_per_cpu: int | None = None) -> str:
    lines = job_lines(job, now, details, def_mem_per_cpu)
    if oneliner:
        return " ".join(lines) + " \n"
    return "\n   ".join(lines) + "\n   \n\n"


# ------------------------------------------------------------------------ scontrol show node
def node_alloc_tres(node: dict) -> str:
    cpus = node.get("alloc_cpus", 0)
    mem = node.get("alloc_mem", 0)
    parts = []
    if cpus:
        parts.append(f"cpu={cpus}")
    if mem:
        parts.append(f"mem={mem_round(mem)}")
    return ",".join(parts)


def node_lines(node: dict) -> list[str]:
    name = node["name"]
    cpus = node.get("cpus", 1)
    head = f"NodeName={name}"
    if node.get("arch"):
        head += f" Arch={node['arch']}"
    head += f" CoresPerSocket={node.get('cores_per_socket', 1)} "
    load = node.get("cpu_load")
    lines = [head,
             f"CPUAlloc={node.get('alloc_cpus', 0)} CPUEfctv={cpus} CPUTot={cpus} "
             f"CPULoad={'N/A' if load is None else f'{load:.2f}'}"]
    features = ",".join(node.get("features") or []) or "(null)"
    lines.append(f"AvailableFeatures={features}")
    lines.append(f"ActiveFeatures={features}")
    lines.append(f"Gres={','.join(node.get('gres') or []) or '(null)'}")
    version = node.get("version") or "(null)"
    lines.append(f"NodeAddr={node.get('addr', '127.0.0.1')} NodeHostName={node.get('hostname', 'localhost')} "
                 f"Port={node.get('port', 0)} Version={version}")
    if node.get("os"):
        lines.append(f"OS={node['os']} ")
    free = node.get("free_mem")
    lines.append(f"RealMemory={node.get('real_memory', 1)} AllocMem={node.get('alloc_mem', 0)} "
                 f"FreeMem={'N/A' if free is None else free} Sockets={node.get('sockets', 1)} "
                 f"Boards={node.get('boards', 1)}")
    lines.append(f"State={node.get('state', 'UNKNOWN')} ThreadsPerCore={node.get('threads_per_core', 1)} "
                 f"TmpDisk={node.get('tmp_disk', 0)} Weight={node.get('weight', 1)} Owner=N/A MCS_label=N/A")
    parts = node.get("partitions") or []
    if parts:
        lines.append(f"Partitions={','.join(parts)} ")
    lines.append(f"BootTime={iso(node.get('boot_time'), 'None')} "
                 f"SlurmdStartTime={iso(node.get('slurmd_start_time'), 'None')}")
    lines.append(f"LastBusyTime={iso(node.get('last_busy_time') or node.get('slurmd_start_time'))}")
    lines.append(f"CfgTRES=cpu={cpus},mem={mem_exact(node.get('real_memory', 1))},billing={cpus}")
    lines.append(f"AllocTRES={node_alloc_tres(node)}")
    lines.append("CapWatts=n/a")
    lines.append("CurrentWatts=0 AveWatts=0")
    lines.append("ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s")
    if node.get("reason"):
        who = node.get("reason_user") or "root"
        lines.append(f"Reason={node['reason']} [{who}@{iso(node.get('reason_time'))}]")
    return lines


def format_node(node: dict, oneliner: bool = False) -> str:
    lines = node_lines(node)
    if oneliner:
        return " ".join(lines) + "\n"
    return "\n   ".join(lines) + "\n\n"


# ------------------------------------------------------------------------ scontrol show partition
def _yes(flag: bool) -> str:
    return "YES" if flag else "NO"


def partition_lines(part: dict, nodes: dict[str, dict]) -> list[str]:
    names = part.get("nodes") or []
    members = [nodes[n] for n in names if n in nodes]
    total_cpus = sum(n.get("cpus", 1) for n in members)
    total_mem = sum(n.get("real_memory", 1) for n in members)

    def allow(key: str) -> str:
        value = part.get(key)
        return ",".join(value) if value else "ALL"

    max_nodes = part.get("max_nodes")
    default_time = part.get("default_time")
    lines = [f"PartitionName={part['name']}",
             f"AllowGroups={allow('allow_groups')} AllowAccounts={allow('allow_accounts')} "
             f"AllowQos={allow('allow_qos')}",
             f"AllocNodes=ALL Default={_yes(part.get('default', False))} QoS=N/A",
             f"DefaultTime={'NONE' if default_time is None else format_time_limit(default_time)} "
             f"DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden={_yes(part.get('hidden', False))}",
             f"MaxNodes={'UNLIMITED' if max_nodes is None else max_nodes} "
             f"MaxTime={format_time_limit(part.get('max_time'))} MinNodes={part.get('min_nodes', 0)} LLN=NO "
             "MaxCPUsPerNode=UNLIMITED",
             f"Nodes={compress(names) if names else '(null)'}",
             f"PriorityJobFactor={part.get('priority_job_factor', 1)} PriorityTier={part.get('priority_tier', 1)} "
             f"RootOnly=NO ReqResv=NO OverSubscribe={partition_oversubscribe(part)}",
             "OverTimeLimit=NONE PreemptMode=OFF",
             f"State={part.get('state', 'UP')} TotalCPUs={total_cpus} TotalNodes={len(names)} "
             "SelectTypeParameters=NONE",
             "JobDefaults=(null)"]
    def_cpu, max_cpu = part.get("def_mem_per_cpu"), part.get("max_mem_per_cpu")
    lines.append((f"DefMemPerCPU={def_cpu}" if def_cpu is not None else "DefMemPerNode=UNLIMITED") + " "
                 + (f"MaxMemPerCPU={max_cpu}" if max_cpu is not None else "MaxMemPerNode=UNLIMITED"))
    lines.append(f"TRES=cpu={total_cpus},mem={mem_exact(total_mem)},node={len(names)},billing={total_cpus}")
    return lines


def format_partition(part: dict, nodes: dict[str, dict], oneliner: bool = False) -> str:
    lines = partition_lines(part, nodes)
    if oneliner:
        return " ".join(lines) + "\n"
    return "\n   ".join(lines) + "\n\n"


# ------------------------------------------------------------------------ sacct
# name -> (default width, right aligned).  Widths and alignment are sacct 22.05's.
SACCT_FIELDS: dict[str, tuple[int, bool]] = {}


def _fields(spec: str) -> None:
    for item in spec.split():
        name, width = item.split(":")
        w = int(width)
        SACCT_FIELDS[name.lower()] = (abs(w), w > 0)


_fields("""
Account:10 AdminComment:15 AllocCPUS:10 AllocNodes:10 AllocTRES:10 AssocID:10 AveCPU:10
AveCPUFreq:10 AveDiskRead:14 AveDiskWrite:14 AvePages:10 AveRSS:10 AveVMSize:10 BlockID:-16
Cluster:10 Comment:15 Constraints:19 ConsumedEnergy:14 ConsumedEnergyRaw:17 Container:30
CPUTime:10 CPUTimeRAW:10 DBIndex:9 DerivedExitCode:15 Elapsed:10 ElapsedRaw:10 Eligible:19
End:19 ExitCode:8 Flags:20 GID:6 Group:9 JobID:-12 JobIDRaw:-12 JobName:10 Layout:8
MaxDiskRead:12 MaxDiskReadNode:15 MaxDiskReadTask:15 MaxDiskWrite:12 MaxDiskWriteNode:16
MaxDiskWriteTask:16 MaxPages:8 MaxPagesNode:12 MaxPagesTask:14 MaxRSS:10 MaxRSSNode:10
MaxRSSTask:10 MaxVMSize:10 MaxVMSizeNode:14 MaxVMSizeTask:14 McsLabel:20 MinCPU:10
MinCPUNode:10 MinCPUTask:10 NCPUS:10 NNodes:8 NodeList:15 NTasks:8 Priority:10 Partition:10
QOS:10 QOSRAW:10 Reason:20 ReqCPUFreq:13 ReqCPUFreqMin:13 ReqCPUFreqMax:13 ReqCPUFreqGov:13
ReqCPUS:8 ReqMem:10 ReqNodes:8 ReqTRES:10 Reservation:20 ReservationId:20 Reserved:10
ResvCPU:10 ResvCPURAW:10 Start:19 State:10 Submit:19 SubmitLine:20 Suspended:10 SystemCPU:10
SystemComment:15 Timelimit:10 TimelimitRaw:12 TotalCPU:10 TRESUsageInAve:14 TRESUsageInMax:14
TRESUsageInMaxNode:18 TRESUsageInMaxTask:18 TRESUsageInMin:14 TRESUsageInMinNode:18
TRESUsageInMinTask:18 TRESUsageInTot:14 TRESUsageOutAve:15 TRESUsageOutMax:15
TRESUsageOutMaxNode:19 TRESUsageOutMaxTask:19 TRESUsageOutMin:15 TRESUsageOutMinNode:19
TRESUsageOutMinTask:19 TRESUsageOutTot:15 UID:6 User:9 UserCPU:10 WCKey:10 WCKeyID:10
WorkDir:15
""")

# The names as sacct prints them in its header.
SACCT_NAMES = {name.lower(): name for name in """
Account AdminComment AllocCPUS AllocNodes AllocTRES AssocID AveCPU AveCPUFreq AveDiskRead
AveDiskWrite AvePages AveRSS AveVMSize BlockID Cluster Comment Constraints ConsumedEnergy
ConsumedEnergyRaw Container CPUTime CPUTimeRAW DBIndex DerivedExitCode Elapsed ElapsedRaw
Eligible End ExitCode Flags GID Group JobID JobIDRaw JobName Layout MaxDiskRead
MaxDiskReadNode MaxDiskReadTask MaxDiskWrite MaxDiskWriteNode MaxDiskWriteTask MaxPages
MaxPagesNode MaxPagesTask MaxRSS MaxRSSNode MaxRSSTask MaxVMSize MaxVMSizeNode MaxVMSizeTask
McsLabel MinCPU MinCPUNode MinCPUTask NCPUS NNodes NodeList NTasks Priority Partition QOS
QOSRAW Reason ReqCPUFreq ReqCPUFreqMin ReqCPUFreqMax ReqCPUFreqGov ReqCPUS ReqMem ReqNodes
ReqTRES Reservation ReservationId Reserved ResvCPU ResvCPURAW Start State Submit SubmitLine
Suspended SystemCPU SystemComment Timelimit TimelimitRaw TotalCPU TRESUsageInAve
TRESUsageInMax TRESUsageInMaxNode TRESUsageInMaxTask TRESUsageInMin TRESUsageInMinNode
TRESUsageInMinTask TRESUsageInTot TRESUsageOutAve TRESUsageOutMax TRESUsageOutMaxNode
TRESUsageOutMaxTask TRESUsageOutMin TRESUsageOutMinNode TRESUsageOutMinTask TRESUsageOutTot
UID User UserCPU WCKey WCKeyID WorkDir
""".split()}
# Accepted spellings that sacct maps onto a field.
SACCT_ALIASES = {"jobstep": "jobid", "error": "exitcode", "ncpus": "alloccpus", "allocgres": "alloctres",
                 "reqgres": "reqtres", "cputimeraw": "cputimeraw"}

SACCT_DEFAULT = "jobid,jobname,partition,account,alloccpus,state,exitcode"
SACCT_LONG = ("jobid,jobidraw,jobname,partition,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,"
              "maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,"
              "mincputask,avecpu,ntasks,alloccpus,elapsed,state,exitcode,avecpufreq,reqcpufreqmin,"
              "reqcpufreqmax,reqcpufreqgov,reqmem,consumedenergy,maxdiskread,maxdiskreadnode,maxdiskreadtask,"
              "avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,avediskwrite,reqtres,alloctres,"
              "tresusageinave,tresusageinmax,tresusageinmaxn,tresusageinmaxt,tresusageinmin,tresusageinminn,"
              "tresusageinmint,tresusageintot,tresusageoutmax,tresusageoutmaxn,tresusageoutmaxt,"
              "tresusageoutave,tresusageouttot")
SACCT_BRIEF = "jobid,state,exitcode"


class FieldError(ValueError):
    pass


def parse_sacct_format(text: str) -> list[tuple[str, int, bool]]:
    """``JobID,AllocTRES%40`` -> [(canonical name, width, right aligned)]."""
    out: list[tuple[str, int, bool]] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, pct, width = item.partition("%")
        key = name.lower()
        key = SACCT_ALIASES.get(key, key)
        if key not in SACCT_FIELDS:
            # sacct accepts unique prefixes (tresusageinmaxn -> TRESUsageInMaxNode).
            matches = [k for k in SACCT_FIELDS if k.startswith(key)]
            if len(matches) != 1:
                raise FieldError(name)
            key = matches[0]
        default_width, right = SACCT_FIELDS[key]
        if pct:
            try:
                w = int(width)
            except ValueError:
                raise FieldError(item) from None
            right = w >= 0  # as print_fields: a negative width left-justifies
            w = abs(w)
        else:
            w = default_width
        out.append((SACCT_NAMES[key], w, right))
    return out


def _cell(value: str, width: int, right: bool) -> str:
    if len(value) > width:
        value = value[:width - 1] + "+" if width > 0 else ""
    return value.rjust(width) if right else value.ljust(width)


def sacct_table(fields: list[tuple[str, int, bool]], rows: list[dict[str, str]], header: bool = True,
                delimiter: str | None = None, trailing: bool = False) -> str:
    """The table: fixed width with ``+`` truncation, or ``delimiter`` separated (-p/-P)."""
    out: list[str] = []
    if delimiter is not None:
        end = delimiter if trailing else ""
        if header:
            out.append(delimiter.join(f[0] for f in fields) + end)
        for row in rows:
            out.append(delimiter.join(row.get(f[0], "") for f in fields) + end)
    else:
        if header:
            out.append(" ".join(_cell(f[0], f[1], f[2]) for f in fields) + " ")
            out.append(" ".join("-" * f[1] for f in fields) + " ")
        for row in rows:
            out.append(" ".join(_cell(row.get(f[0], ""), f[1], f[2]) for f in fields) + " ")
    return "".join(line + "\n" for line in out)


def _sorted_tres(parts: dict[str, str]) -> str:
    return ",".join(f"{k}={parts[k]}" for k in sorted(parts))


def _gpus_of(job: dict) -> int:
    """GPUs requested by --gres=gpu[:type]:N (per node) and --gpus=N (per job)."""
    gres = job_spec(job).get("gres") or ""
    nodes = len(job.get("nodes") or []) or max(job_spec(job).get("nodes_min", 1), 1)
    total = 0
    for item in gres.split():
        key, _, value = item.partition("=")
        for one in value.split(","):
            bits = one.split(":")
            if not bits or not bits[0].startswith("gpu") and key != "gpus":
                continue
            try:
                count = int(bits[-1])
            except ValueError:
                count = 1
            total += count * (nodes if key == "gres" else 1)
    return total


def acct_job_tres(job: dict, allocated: bool, def_mem_per_cpu: int | None = None) -> str:
    if allocated and not job.get("nodes"):
        return ""
    parts: dict[str, str] = {}
    cpus = job_cpus(job)
    parts["billing"] = str(cpus)
    parts["cpu"] = str(cpus)
    mem = job_mem_total(job, def_mem_per_cpu)
    if mem is not None:
        parts["mem"] = mem_exact(mem)
    nodes = job.get("nodes") or []
    parts["node"] = str(len(nodes) if nodes else max(job_spec(job).get("nodes_min", 1), 1))
    gpus = _gpus_of(job)
    if gpus:
        parts["gres/gpu"] = str(gpus)
    return _sorted_tres(parts)


SACCT_STATE_CODES = {
    "r": "RUNNING", "pd": "PENDING", "cd": "COMPLETED", "ca": "CANCELLED", "f": "FAILED",
    "to": "TIMEOUT", "nf": "NODE_FAIL", "pr": "PREEMPTED", "oom": "OUT_OF_MEMORY", "bf": "BOOT_FAIL",
    "dl": "DEADLINE", "s": "SUSPENDED", "rq": "REQUEUED", "rs": "RESIZING", "rv": "REVOKED",
    "se": "SPECIAL_EXIT",
}


def acct_job_row(job: dict, now: float, cluster: str, def_mem_per_cpu: int | None = None) -> dict[str, str]:
    """One job (allocation) line of sacct, every field it knows."""
    spec = job_spec(job)
    state = job.get("state", "PENDING")
    nodes = job.get("nodes") or []
    start = job.get("start_time")
    end = job.get("end_time")
    if state in ("RUNNING", "SUSPENDED", "PENDING") or job.get("completing"):
        end = None
    if state == "PENDING":
        start = None
    if state == "CANCELLED":
        by = job.get("cancel_uid", job.get("cancelled_by", spec.get("user_id", 0)))
        state_s = f"CANCELLED by {by}"
    else:
        state_s = state
    elapsed = 0
    if start is not None:
        elapsed = max(0, int(end if end is not None else now) - int(start))
    cpus = job_cpus(job)
    limit = job.get("time_limit")
    mem = job_mem_total(job, def_mem_per_cpu)
    row = {
        "JobID": job_id_str(job),
        "JobIDRaw": str(job["job_id"]),
        "JobName": spec.get("name", "sbatch"),
        "Partition": job.get("partition", ""),
        "Account": spec.get("account") or "",
        "AllocCPUS": str(cpus),  # slurmdbd records the request until the job is allocated
        "NCPUS": str(cpus),
        "State": state_s,
        "ExitCode": job_exit(job),
        "DerivedExitCode": f"{job.get('derived_exit_code', 0)}:0",
        "Elapsed": format_duration(elapsed),
        "ElapsedRaw": str(elapsed),
        "CPUTime": format_duration(elapsed * cpus),
        "CPUTimeRAW": str(elapsed * cpus),
        "Start": iso(start),
        "End": iso(end),
        "Submit": iso(job.get("submit_time", 0.0)),
        "Eligible": iso(job.get("eligible_time")),
        "NodeList": compress(nodes) if nodes else "None assigned",
        "NNodes": str(len(nodes) if nodes else max(spec.get("nodes_min", 1), 1)),
        "AllocNodes": str(len(nodes)),
        "ReqNodes": str(max(spec.get("nodes_min", 1), 1)),
        "ReqCPUS": str(requested_cpus(job)),
        "NTasks": "",
        "AllocTRES": acct_job_tres(job, True, def_mem_per_cpu),
        "ReqTRES": acct_job_tres(job, False, def_mem_per_cpu),
        "ReqMem": mem_exact(mem) if mem is not None else "0",
        "Timelimit": format_time_limit(limit) if limit is not None else "UNLIMITED",
        "TimelimitRaw": str(limit) if limit is not None else "UNLIMITED",
        "User": spec.get("user", "root"),
        "UID": str(spec.get("user_id", 0)),
        "Group": spec.get("group", "root"),
        "GID": str(spec.get("group_id", 0)),
        "Cluster": cluster,
        "Priority": str(job.get("priority", 0)),
        "QOS": spec.get("qos") or "",
        "Reason": job.get("reason", "None"),
        "WorkDir": spec.get("work_dir", "/"),
        "Comment": spec.get("comment") or "",
        "Constraints": "",
        "Reservation": "",
        "Suspended": "00:00:00",
        "ReqCPUFreqMin": "Unknown",
        "ReqCPUFreqMax": "Unknown",
        "ReqCPUFreqGov": "Unknown",
        "ReqCPUFreq": "Unknown",
        "Layout": "",
        "Flags": "SchedMain" if start is not None else "",
        "McsLabel": "",
        "WCKey": "",
        "SubmitLine": "",
    }
    return row


_STEP_ZERO = ("AveCPUFreq", "ReqCPUFreqMin", "ReqCPUFreqMax", "ReqCPUFreqGov", "ConsumedEnergy",
              "ConsumedEnergyRaw")
_STEP_ENERGY = ("TRESUsageInAve", "TRESUsageInMax", "TRESUsageInMaxNode", "TRESUsageInMaxTask",
                "TRESUsageInMin", "TRESUsageInMinNode", "TRESUsageInMinTask", "TRESUsageInTot",
                "TRESUsageOutAve", "TRESUsageOutMax", "TRESUsageOutMaxNode", "TRESUsageOutMaxTask",
                "TRESUsageOutMin", "TRESUsageOutMinNode", "TRESUsageOutMinTask", "TRESUsageOutTot")


def acct_step_row(step: dict, job: dict, now: float, cluster: str) -> dict[str, str]:
    spec = job_spec(job)
    state = step.get("state", "RUNNING")
    start = step.get("start_time", 0.0)
    end = step.get("end_time")
    elapsed = max(0, int(end if end is not None else now) - int(start))
    nodes = step.get("nodes") or []
    cpus = step.get("cpus", 1)
    step_id = step["step_id"]
    mem_per_node = (job.get("mem") or [0])[0] if job.get("mem") else None
    tres = {"cpu": str(cpus), "node": str(len(nodes) or 1)}
    if mem_per_node:
        job_cpus_first = (job.get("cpus") or [cpus])[0] or 1
        tres["mem"] = mem_exact(mem_per_node * cpus // job_cpus_first if step_id != "batch" else mem_per_node)
    row = {
        "JobID": f"{job_id_str(job)}.{step_id}",
        "JobIDRaw": f"{job['job_id']}.{step_id}",
        "JobName": step.get("name", ""),
        "Partition": "",
        "Account": spec.get("account") or "",
        "AllocCPUS": str(cpus),
        "NCPUS": str(cpus),
        "State": state,
        "ExitCode": f"{step.get('exit_code', 0)}:{step.get('exit_signal', 0)}",
        "Elapsed": format_duration(elapsed),
        "ElapsedRaw": str(elapsed),
        "CPUTime": format_duration(elapsed * cpus),
        "CPUTimeRAW": str(elapsed * cpus),
        "Start": iso(start),
        "End": iso(end),
        "Submit": iso(start),
        "Eligible": iso(start),
        "NodeList": compress(nodes) if nodes else "None assigned",
        "NNodes": str(len(nodes)),
        "AllocNodes": str(len(nodes)),
        "NTasks": str(step.get("ntasks", 1)),
        "AllocTRES": _sorted_tres(tres),
        "Cluster": cluster,
        "UID": "",
        "User": "",
        "Suspended": "00:00:00",
        "Layout": "Unknown",
    }
    for key in _STEP_ZERO:
        row[key] = "0"
    for key in _STEP_ENERGY:
        row[key] = "energy=0" if key in ("TRESUsageInAve", "TRESUsageInTot", "TRESUsageOutAve",
                                         "TRESUsageOutTot") else ""
    # Accelerator usage sampled by the node daemon (gres/gpuutil, gres/gpumem).
    for key, usage in (("TRESUsageInMax", step.get("tres_usage_max")), ("TRESUsageInAve", step.get("tres_usage_ave"))):
        if usage:
            parts = [p for p in row[key].split(",") if p] + [f"{k}={v}" for k, v in sorted(usage.items())]
            row[key] = ",".join(parts)
    return row


def acct_rows(jobs: list[dict], steps: list[dict], now: float, cluster: str, allocations: bool = False,
              step_filter: dict[int, set[str]] | None = None,
              def_mem_per_cpu: int | None = None) -> list[dict[str, str]]:
    """Job lines, each followed by its steps (batch first, then 0, 1, ...) unless -X."""
    by_job: dict[int, list[dict]] = {}
    for step in steps:
        by_job.setdefault(step["job_id"], []).append(step)

    def step_key(step: dict) -> tuple[int, int]:
        sid = step["step_id"]
        if sid == "extern":
            return (0, 0)
        if sid == "batch":
            return (1, 0)
        return (2, int(sid)) if sid.isdigit() else (3, 0)

    rows: list[dict[str, str]] = []
    for job in jobs:
        wanted_steps = step_filter.get(job["job_id"]) if step_filter else None
        if wanted_steps is None:
            rows.append(acct_job_row(job, now, cluster, def_mem_per_cpu))
        if allocations:
            continue
        for step in sorted(by_job.get(job["job_id"], []), key=step_key):
            if wanted_steps is not None and step["step_id"] not in wanted_steps:
                continue
            rows.append(acct_step_row(step, job, now, cluster))
    return rows
