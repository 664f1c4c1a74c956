"""What sacct prints: its field table, ``--format`` parsing, the table and its rows.

Pure functions from ``acct_query`` reply dicts (jobs and steps, as ``msgspec.to_builtins``
of the records in ``wire/model.py``) to text; the caller passes ``now``.  Widths, alignment
and the ``+`` truncation follow sacct 22.05 byte for byte.  The job-record readers
(``job_cpus``, ``job_exit``, ``iso`` ...) are scontrol's, from ``showfmt``, which never
imports this module.

Start-up budget: ``showfmt`` and what it loads (standard library, ``grammar.hostlist``,
``grammar.timefmt``, ``tools.display``), nothing more.
"""

from __future__ import annotations

from plurm.grammar.hostlist import compress
from plurm.grammar.timefmt import format_duration, format_time_limit
from plurm.tools import hetfmt
from plurm.tools.showfmt import (iso, job_cpus, job_exit, job_id_str, job_mem_total, job_spec, mem_exact,
                                 requested_cpus)


# ------------------------------------------------------------------------ sacct
# name -> (default width, right aligned).  Widths and alignment are sacct 22.05's.
SACCT_FIELDS: dict[str, tuple[int, bool]] = {}


def _job_id(job: dict) -> str:
    """sacct's JobID: ``N+K`` for a hetjob's component (tools/hetfmt.py), else scontrol's."""
    return hetfmt.job_id(job_spec(job)) or job_id_str(job)


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


def _times(elapsed: int, cpus: int, start: float | None, end: float | None) -> dict[str, str]:
    """The columns a job's and a step's rows compute alike from their run time."""
    return {"Elapsed": format_duration(elapsed), "ElapsedRaw": str(elapsed),
            "CPUTime": format_duration(elapsed * cpus), "CPUTimeRAW": str(elapsed * cpus),
            "Start": iso(start), "End": iso(end)}


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
        "JobID": _job_id(job),
        "JobIDRaw": str(job["job_id"]),
        "JobName": spec.get("name", "sbatch"),
        "Partition": job.get("partition", ""),
        "Account": spec.get("account") or "",
        "AllocCPUS": str(cpus),  # slurmdbd records the request until the job is allocated
        "NCPUS": str(cpus),
        "State": state_s,
        # slurmdbd records a timed-out job's end when its limit is hit, before the batch
        # script's signal is known: 22.05's sacct shows 0:0 there (scontrol: 0:15).
        # A DEADLINE job: scontrol 0:1, sacct 1:0 (22.05.8, measured: tests/integration/reference/timeprio).
        "ExitCode": "0:0" if state == "TIMEOUT" else "1:0" if state == "DEADLINE" else job_exit(job),
        "DerivedExitCode": f"{job.get('derived_exit_code', 0)}:{job.get('derived_exit_signal', 0)}",
        **_times(elapsed, cpus, start, end),
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
        "AdminComment": spec.get("admin_comment") or "",  # (slurm-bridge's pods: docs/kubernetes.md)
        "Constraints": "",
        "Reservation": spec.get("reservation") or "",
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


def acct_step_row(step: dict, job: dict, now: float, cluster: str, units: str | None = None,
                  noconvert: bool = False) -> dict[str, str]:
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
        "JobID": f"{_job_id(job)}.{step_id}",
        "JobIDRaw": f"{job['job_id']}.{step_id}",
        "JobName": step.get("name", ""),
        "Partition": "",
        "Account": spec.get("account") or "",
        "AllocCPUS": str(cpus),
        "NCPUS": str(cpus),
        "State": state,
        "ExitCode": f"{step.get('exit_code', 0)}:{step.get('exit_signal', 0)}",
        **_times(elapsed, cpus, start, end),
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
    if step_id != "batch":  # (an srun step asks for no frequency: 22.05 shows Unknown there)
        row.update(ReqCPUFreqMin="Unknown", ReqCPUFreqMax="Unknown", ReqCPUFreqGov="Unknown")
    for key in _STEP_ENERGY:
        row[key] = "energy=0" if key in ("TRESUsageInAve", "TRESUsageInTot", "TRESUsageOutAve",
                                         "TRESUsageOutTot") else ""
    # Accelerator usage sampled by the node daemon (gres/gpuutil, gres/gpumem).
    for key, usage in (("TRESUsageInMax", step.get("tres_usage_max")), ("TRESUsageInAve", step.get("tres_usage_ave"))):
        if usage:
            parts = [p for p in row[key].split(",") if p] + [f"{k}={v}" for k, v in sorted(usage.items())]
            row[key] = ",".join(parts)
    if step.get("usage"):  # measured by the node (cgroups, /proc): MaxRSS, TotalCPU, ... (sacctusage.py)
        from plurm.tools.sacctusage import StepUsage

        StepUsage(step, units, noconvert).apply(row)
    return row


def acct_rows(jobs: list[dict], steps: list[dict], now: float, cluster: str, allocations: bool = False,
              step_filter: dict[int, set[str]] | None = None,
              def_mem_per_cpu: int | None = None, duplicates: bool = False, units: str | None = None,
              noconvert: bool = False) -> list[dict[str, str]]:
    """Job lines, each followed by its steps (batch first, then 0, 1, ...) unless -X.  With
    ``duplicates`` (sacct -D) a requeued job's earlier runs come first, as REQUEUED records
    (without their steps: the store keeps a job's latest steps only).  ``units`` and
    ``noconvert``: sacct's --units and --noconvert, for the sizes a step's usage has."""
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

    # Each record with its steps, keyed as Slurm orders them: by submit time (a requeued run's
    # is the requeue's, so a job's earlier runs come before every later submission).
    groups: list[tuple[tuple[float, int, int], list[dict[str, str]]]] = []
    for job in jobs:
        wanted_steps = step_filter.get(job["job_id"]) if step_filter else None
        rows: list[dict[str, str]] = []
        runs = (job.get("earlier_runs") or []) if duplicates else []
        if wanted_steps is None:
            for k, run in enumerate(runs):
                earlier = dict(job, state=run.get("state") or "REQUEUED", completing=False, exit_code=0,
                               exit_signal=0, derived_exit_code=0, derived_exit_signal=0,
                               start_time=run.get("start_time"),
                               end_time=run.get("end_time"), submit_time=run.get("submit_time", 0.0),
                               nodes=run.get("nodes") or [], cpus=run.get("cpus") or [])
                group = [acct_job_row(earlier, now, cluster, def_mem_per_cpu)]
                if not allocations and earlier["state"] == "NODE_FAIL" and job.get("spec", {}).get("batch", True):
                    # (the store keeps the latest run's steps; a failed run's batch step was
                    # CANCELLED with its node, its exit code unknown, as Slurm shows it)
                    batch = {"job_id": job["job_id"], "step_id": "batch", "name": "batch", "state": "CANCELLED",
                             "nodes": earlier["nodes"][:1], "cpus": (earlier["cpus"] or [1])[0], "ntasks": 1,
                             "start_time": earlier["start_time"], "end_time": earlier["end_time"]}
                    group.append(dict(acct_step_row(batch, earlier, now, cluster), ExitCode=""))
                groups.append(((earlier["submit_time"], job["job_id"], k), group))
            rows.append(acct_job_row(job, now, cluster, def_mem_per_cpu))
            if any(st.get("usage") for st in by_job.get(job["job_id"], [])):  # TotalCPU...: its steps' sum
                from plurm.tools.sacctusage import job_cpu_cells

                rows[-1].update(job_cpu_cells(by_job[job["job_id"]]))
        if not allocations:
            for step in sorted(by_job.get(job["job_id"], []), key=step_key):
                if wanted_steps is not None and step["step_id"] not in wanted_steps:
                    continue
                row = acct_step_row(step, job, now, cluster, units, noconvert)
                if job.get("state") == "NODE_FAIL" and step.get("state") == "CANCELLED":
                    row["ExitCode"] = ""  # (killed with its node: no exit code, as Slurm)
                rows.append(row)
        groups.append(((job.get("submit_time") or 0.0, job["job_id"], len(runs)), rows))
    if duplicates:
        groups.sort(key=lambda group: group[0])
    return [row for _, rows in groups for row in rows]
