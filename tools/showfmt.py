"""What ``scontrol show job/node/partition`` prints, and the job-record readers behind it.

Pure functions from reply dicts to text; the small value formatters and job helpers
(``iso``, ``mem_exact``, ``job_cpus``, ``job_exit`` ...) are also what ``sacctfmt`` builds
sacct's rows from, so they live here, below it (sacctfmt imports this module, never the
other way round).

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
from plurm.tools import hetfmt, showmail, showtopology
from plurm.tools.display import bitmap_ranges, job_oversubscribe, partition_oversubscribe
from plurm.tools.showpaths import io_path



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
    if job.get("configuring") and job.get("state") == "RUNNING":  # --reboot: its nodes boot (core_reboot.py)
        return "CONFIGURING"
    return job.get("state", "PENDING")


def job_started(job: dict) -> bool:
    return job.get("start_time") is not None and job.get("state", "PENDING") != "PENDING"


def job_limit_minutes(job: dict) -> int | None:
    """None is UNLIMITED, running or not (Slurm 22.05 with accounting: TimeLimit=UNLIMITED,
    EndTime=Unknown while it runs)."""
    return job.get("time_limit")


def run_seconds(job: dict, now: float) -> int:
    start = job.get("start_time")
    if start is None or job.get("state", "PENDING") == "PENDING":
        return 0
    end = job.get("end_time")
    if job.get("state") == "SUSPENDED" and job.get("suspend_time") and not job.get("completing"):
        end = job["suspend_time"]  # (RunTime stops while suspended: Slurm's SecsPreSuspend)
    elif job.get("state") in ("RUNNING", "SUSPENDED") and not job.get("completing"):
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
    head += hetfmt.show_head(spec)  # a hetjob's component: HetJobId=, HetJobOffset=, HetJobIdSet=
    head += f" JobName={spec.get('name', 'sbatch')}"
    lines = [head, *hetfmt.show_lines(spec)]
    lines.append(f"UserId={user_str(spec.get('user', 'root'), spec.get('user_id', 0))} "
                 f"GroupId={user_str(spec.get('group', 'root'), spec.get('group_id', 0))} MCS_label=N/A")
    lines.append(f"Priority={job.get('priority', 0)} Nice={spec.get('nice', 0)} "
                 f"Account={_null(spec.get('account'))} QOS={_null(spec.get('qos'))}")
    lines.append(f"JobState={state} Reason={job_reason(job)} Dependency={dependency_str(job)}")
    lines.append(f"Requeue={1 if spec.get('requeue', True) else 0} Restarts={job.get('restarts', 0)} "
                 f"BatchFlag={1 if hetfmt.batch_flag(spec) else 0} Reboot={1 if spec.get('reboot') else 0} "
                 f"ExitCode={job_exit(job)}")
    if details:
        lines.append(f"DerivedExitCode={job.get('derived_exit_code', 0)}:{job.get('derived_exit_signal', 0)}")
    limit = job_limit_minutes(job)
    lines.append(f"RunTime={format_duration(run_seconds(job, now))} TimeLimit={format_time_limit(limit)} "
                 f"TimeMin={format_time_limit(spec['time_min']) if spec.get('time_min') else 'N/A'}")
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
        # a later --begin with a limit: Slurm's expected end, the begin plus the limit
        end_s = iso(begin + limit * 60) if future_begin and limit is not None else "Unknown"
    else:  # finished without starting (cancelled while pending)
        start_s = iso(job.get("start_time") or job.get("end_time"))
        end_s = iso(job.get("end_time"))
    lines.append(f"StartTime={start_s} EndTime={end_s} "
                 f"Deadline={iso(spec['deadline']) if spec.get('deadline') else 'N/A'}")
    scheduler = job.get("scheduler") or ("Backfill" if started else "Main")
    suspended = job.get("suspend_time") if state == "SUSPENDED" else None
    lines.append(f"SuspendTime={iso(suspended) if suspended else 'None'} "
                 f"SecsPreSuspend={run_seconds(job, now) if suspended else 0} "
                 f"LastSchedEval={iso(job.get('last_sched_eval') or submit)} Scheduler={scheduler}")
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
                 f"CPUs/Task={cpt} ReqB:S:C:T={showtopology.req_bsct(spec)}")
    lines.append(f"TRES={job_tres(job, def_mem_per_cpu)}")
    lines.append(showtopology.socks_line(spec))
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
    lines.append(f"MinCPUsNode={showtopology.min_cpus_node(spec, cpt * per_node)} {min_mem} "
                 f"MinTmpDiskNode={mem_exact(spec['tmp_disk']) if spec.get('tmp_disk') else 0}")
    lines.append(f"Features={spec.get('constraint') or '(null)'} "
                 f"DelayBoot={format_duration((spec.get('delay_boot') or 0) * 60)}")
    if spec.get("prefer") and spec.get("constraint") != spec["prefer"]:  # (met at start: Features= shows it)
        lines.append(f"Prefer={spec['prefer']}")
    if spec.get("cluster_features"):  # --cluster-constraint (22.05: its own line, only when given)
        lines.append(f"ClusterFeatures={spec['cluster_features']}")
    if spec.get("reservation"):  # (as Slurm: only for a job that asked for one)
        lines.append(f"Reservation={spec['reservation']}")
    lines.append(f"OverSubscribe={job_oversubscribe(job)} "
                 f"Contiguous={1 if spec.get('contiguous') else 0} Licenses={spec.get('licenses', '(null)')} "
                 f"Network={spec.get('network') or '(null)'}")
    lines.append(f"Command={_null(spec.get('command'))}")
    lines.append(f"WorkDir={spec.get('work_dir', '/')}")
    if spec.get("admin_comment"):  # (before Comment=, as 22.05.8 prints it)
        lines.append(f"AdminComment={spec['admin_comment']} ")
    if spec.get("comment"):
        lines.append(f"Comment={spec['comment']} ")
    if spec.get("batch", True):
        lines.append(f"StdErr={io_path(job, 'stderr')}")
        lines.append(f"StdIn={io_path(job, 'stdin')}")
        lines.append(f"StdOut={io_path(job, 'stdout')}")
    from plurm.tools.options_rest import show_lines  # --switches, --bb, --cpu-freq, --gpu-freq, --container

    lines.extend(show_lines(spec, "before_power"))
    lines.append(f"Power={spec.get('power') or ''}")
    for flag, word in (("enforce-binding", "Yes"), ("disable-binding", "No")):  # (22.05: only when given)
        lines.extend([f"GresEnforceBind={word}"] if flag in (spec.get("gres_flags") or []) else [])
    lines.extend(show_lines(spec, "after_power"))
    if spec.get("spread_job"):  # (Slurm 22.05 adds the line only then)
        lines.append("SpreadJob=Yes")
    lines.extend(tres_per(job) + showtopology.per_tres_lines(spec))  # (NtasksPerTRES after TresPer*)
    lines.extend(showmail.mail_lines(spec))  # MailUser= MailType= (after TresPer*, as 22.05)
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
             f"CPUAlloc={node.get('alloc_cpus', 0)} CPUEfctv={showtopology.cpus_effective(node)} CPUTot={cpus} "
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
    lines.extend(showtopology.spec_lines(node))  # CoreSpecCount= CPUSpecList=
    lines.append(f"State={node.get('state', 'UNKNOWN')} ThreadsPerCore={node.get('threads_per_core', 1)} "
                 f"TmpDisk={node.get('tmp_disk', 0)} Weight={node.get('weight', 1)} Owner=N/A MCS_label=N/A")
    parts = node.get("partitions") or []
    if parts:
        lines.append(f"Partitions={','.join(parts)} ")
    lines.append(f"BootTime={iso(node.get('boot_time'), 'None')} "
                 f"SlurmdStartTime={iso(node.get('slurmd_start_time'), 'None')}")
    lines.append(f"LastBusyTime={iso(node.get('last_busy_time') or node.get('slurmd_start_time'))}")
    efctv = showtopology.cpus_effective(node)
    lines.append(f"CfgTRES=cpu={efctv},mem={mem_exact(node.get('real_memory', 1))},billing={efctv}")
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

