"""What squeue prints: the job rows, the field letters and long names, -S sorting, the table.

``format_jobs`` is pure: job dicts in, text out, so it is tested against the reference
outputs of Slurm 22.05 without a controller.  ``Options`` (the parsed command line) lives
here, below ``squeue``, which parses into it and sends the request.  Start-up budget: the
stdlib, ``plurm.common.cli``, ``plurm.tools.display`` and ``plurm.grammar.hostlist``.
"""

from __future__ import annotations

from plurm.common.cli import Usage
from plurm.grammar.hostlist import compress
from plurm.tools import hetfmt
from plurm.tools.display import (
    FormatField,
    bitmap_ranges,
    convert_mb,
    ctime_line,
    format_elapsed,
    format_timestamp,
    job_oversubscribe,
    job_state,
    job_state_code,
    job_state_shown,
    sort_keys,
    parse_format,
    parse_long_format,
    render,
    squeue_time_limit,
)

PROG = "squeue"
DEFAULT_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
LONG_FORMAT = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
START_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
STEP_FORMAT = "%.15i %.8j %.9P %.8u %.9M %N"
DEFAULT_SORT = "P,t,-p"


def error_text(msg: str) -> str:
    return f"{PROG}: error: {msg}\n"


# The parsed command line: squeue.parse_args fills it, the filters and the table read it.
class Options:
    def __init__(self) -> None:
        self.accounts: list[str] = []
        self.array = False
        self.noheader = False
        self.iterate = 0
        self.jobs: list[str] = []
        self.job_flag = False
        self.long = False
        self.names: list[str] = []
        self.format: str | None = None
        self.format_long: str | None = None
        self.partitions: list[str] = []
        self.qos: list[str] = []
        self.sort: str | None = None
        self.start = False
        self.steps: list[str] | None = None
        self.states: list[str] | None = None  # long names; None = default
        self.all_states = False
        self.users: list[str] = []
        self.nodes: list[str] = []
        self.verbose = 0
        self.output = None  # --json/--yaml: a plurm.tools.dataparser.emit.Output
        self.given: dict[str, str | None] = {}  # option key -> its last value as given (-v's dump)


# ----------------------------------------------------------------------------- rows
def _spec(job: dict) -> dict:
    return job.get("spec") or {}


def _min_cpus_node(spec: dict) -> int:
    """squeue %c: the job's MinCPUsNode (CPUs per task x tasks per node, or --mincpus if more;
    measured on 22.05.8: -n2 -c2 --ntasks-per-node=2 shows 4, -n1 --mincpus=3 shows 3)."""
    from plurm.tools.showtopology import min_cpus_node

    return min_cpus_node(spec, (spec.get("cpus_per_task") or 1) * (spec.get("ntasks_per_node") or 1))


def _is_meta(job: dict) -> bool:
    return bool(job.get("array_pending"))


def expand_rows(jobs: list[dict], expand: bool) -> list[dict]:
    """With ``-r``, one row per pending array task (the meta record's place in the order)."""
    if not expand:
        return jobs
    rows: list[dict] = []
    for job in jobs:
        pending = job.get("array_pending") or []
        if not pending:
            rows.append(job)
            continue
        for task in sorted(pending):
            row = dict(job)
            row["array_pending"] = []
            row["array_task_id"] = task
            row["array_job_id"] = job.get("array_job_id") or job["job_id"]
            rows.append(row)
    return rows


def _array_task_str(job: dict) -> str:
    text = bitmap_ranges(job.get("array_pending") or [])
    throttle = _spec(job).get("array_max_running")
    if throttle:
        text += f"%{throttle}"
    return text


def _job_id_text(job: dict) -> str:
    het = hetfmt.job_id(_spec(job))  # a hetjob's component: N+K (tools/hetfmt.py)
    if het is not None:
        return het
    if _is_meta(job):
        return f"{job.get('array_job_id') or job['job_id']}_[{_array_task_str(job)}]"
    task = job.get("array_task_id")
    if task is not None:
        return f"{job.get('array_job_id') or job['job_id']}_{task}"
    return str(job["job_id"])


def time_used(job: dict, now: float) -> int:
    state = job_state(job)
    start = job.get("start_time")
    if state == "PENDING" or not start:
        return 0
    if state == "SUSPENDED" and job.get("suspend_time"):
        end = job["suspend_time"]  # (the clock stops while suspended or frozen, as Slurm's)
    elif state in ("RUNNING", "SUSPENDED") or (state == "COMPLETING" and not job.get("end_time")):
        end = now
    else:
        end = job.get("end_time") or now
    return max(0, int(end) - int(start))


def _num_nodes(job: dict) -> int:
    nodes = job.get("nodes") or []
    if nodes:
        return len(nodes)
    return int(_spec(job).get("nodes_min", 1) or 1)


def _num_cpus(job: dict) -> int:
    cpus = job.get("cpus") or []
    if cpus:
        return sum(cpus)
    spec = _spec(job)
    ntasks = spec.get("ntasks")
    nodes_min = int(spec.get("nodes_min", 1) or 1)
    if ntasks is None and spec.get("ntasks_per_node"):
        ntasks = spec["ntasks_per_node"] * nodes_min
    cpt = spec.get("cpus_per_task") or 1
    return max((ntasks or 1) * cpt, nodes_min)


def _start_time(job: dict, now: float) -> float | None:
    start = job.get("start_time")
    if start:
        return start
    if job_state(job) == "PENDING":
        if job.get("planned_start"):
            return job["planned_start"]  # backfill's reservation
        begin = _spec(job).get("begin_time")
        if begin and begin > now:
            return begin
    return None


def _end_time(job: dict) -> float | None:
    if job.get("end_time"):
        return job["end_time"]
    if job_state(job) in ("RUNNING", "SUSPENDED") and job.get("start_time") and job.get("time_limit") is not None:
        return job["start_time"] + job["time_limit"] * 60
    return None


def _end_text(job: dict, ctx: Context) -> tuple[str, bool]:
    """%e: a running job without a limit has no end: NONE (as squeue 22.05.8); else N/A or the time."""
    end = _end_time(job)
    if end is None and job_state(job) in ("RUNNING", "SUSPENDED") and job.get("time_limit") is None:
        return "NONE", True
    return _time(end, ctx)


def _tres_per_node(job: dict) -> str:
    gres = _spec(job).get("gres")
    if not gres:
        return "N/A"
    parts = []
    for item in str(gres).split():
        key, eq, value = item.partition("=")
        if not eq:
            key, value = "gres", item
        if key == "gres":
            parts.extend("gres:" + g for g in value.split(",") if g)
    return ",".join(parts) or "N/A"


class Context:
    """What fields need besides the job: the time, and lazily the cluster's defaults."""

    def __init__(self, now: float, default_mem_per_cpu: int | None = None, environ: dict | None = None,
                 cluster: str = "") -> None:
        self.now = now
        self.cluster = cluster
        self.default_mem_per_cpu = default_mem_per_cpu
        self.environ = environ


def _min_memory(job: dict, ctx: Context) -> str:
    spec = _spec(job)
    if spec.get("mem_per_node") is not None:
        return convert_mb(spec["mem_per_node"])
    if spec.get("mem_per_cpu") is not None:
        return convert_mb(spec["mem_per_cpu"])
    if ctx.default_mem_per_cpu:
        return convert_mb(ctx.default_mem_per_cpu)
    return "0"


def _reason(job: dict) -> str:
    """%r: the job's reason; an out-of-memory end is Slurm's FAIL_OOM, ``OutOfMemory``."""
    reason = str(job.get("reason", "None"))
    if reason == "None" and job.get("state") == "OUT_OF_MEMORY":
        return "OutOfMemory"
    return reason


def _reason_list(job: dict, ctx: Context) -> tuple[str, bool]:
    """%R: a pending or failed job's reason (squeue 22.05 also gives the out-of-memory
    ones theirs), else its nodes; a job a node's freeze policy froze shows why, so that
    its owner sees it in squeue's default output (plurm's: Slurm has no freeze)."""
    state = job_state(job)
    if state in ("PENDING", "TIMEOUT", "FAILED", "OUT_OF_MEMORY", "DEADLINE") or \
            (state == "SUSPENDED" and job.get("frozen")):
        return f"({_reason(job)})", True
    return compress(job.get("nodes") or []), False


def _time(t: float | None, ctx: Context) -> tuple[str, bool]:
    if not t:
        return "N/A", True
    return format_timestamp(t, ctx.environ), True


def _time_limit(job: dict, ctx: Context) -> tuple[str, bool]:
    limit = job.get("time_limit")
    return squeue_time_limit(limit), limit is None


def _time_left(job: dict, ctx: Context) -> tuple[str, bool]:
    limit = job.get("time_limit")
    if limit is None:
        return "UNLIMITED", True
    return format_elapsed(max(0, limit * 60 - time_used(job, ctx.now))), False


def _null(value) -> str:
    return "(null)" if value in (None, "") else str(value)


# letter -> (header, -O name(s), function(job, ctx) -> (text, cut))
FIELDS: dict[str, tuple[str, tuple[str, ...], object]] = {
    "a": ("ACCOUNT", ("account",), lambda j, c: (_null(_spec(j).get("account")), True)),
    "A": ("JOBID", ("jobid",), lambda j, c: (str(j["job_id"]), True)),
    "b": ("TRES_PER_NODE", ("tres-per-node", "gres"), lambda j, c: (_tres_per_node(j), True)),
    "B": ("EXEC_HOST", ("batchhost",), lambda j, c: (
        (j.get("nodes") or ["n/a"])[0] if job_state(j) != "PENDING" else "n/a", True)),
    "c": ("MIN_CPUS", ("mincpus",), lambda j, c: (str(_min_cpus_node(_spec(j))), True)),  # = MinCPUsNode
    "C": ("CPUS", ("numcpus",), lambda j, c: (str(_num_cpus(j)), True)),
    "d": ("MIN_TMP_DISK", ("mintmpdisk",), lambda j, c: ("0", True)),
    "D": ("NODES", ("numnodes",), lambda j, c: (str(_num_nodes(j)), True)),
    "e": ("END_TIME", ("endtime",), lambda j, c: _end_text(j, c)),
    "E": ("DEPENDENCY", ("dependency",), lambda j, c: (_null(_spec(j).get("dependency")), True)),
    "f": ("FEATURES", ("feature",), lambda j, c: ("(null)", True)),
    "F": ("ARRAY_JOB_ID", ("arrayjobid",), lambda j, c: (
        str(j.get("array_job_id") or j["job_id"]) if (_is_meta(j) or j.get("array_task_id") is not None)
        else str(j["job_id"]), True)),
    "g": ("GROUP", ("groupname",), lambda j, c: (str(_spec(j).get("group", "root")), True)),
    "G": ("GROUP", ("groupid",), lambda j, c: (str(_spec(j).get("group_id", 0)), True)),
    "h": ("OVER_SUBSCRIBE", ("oversubscribe", "shared"), lambda j, c: (
        job_oversubscribe(j), True)),
    "H": ("SOCKETS", ("sockets",), lambda j, c: ("*", True)),
    "i": ("JOBID", ("jobarrayid",), lambda j, c: (_job_id_text(j), True)),
    "I": ("CORES", ("cores",), lambda j, c: ("*", True)),
    "j": ("NAME", ("name",), lambda j, c: (str(_spec(j).get("name", "sbatch")), True)),
    "J": ("THREADS", ("threads",), lambda j, c: ("*", True)),
    "k": ("COMMENT", ("comment",), lambda j, c: (_null(_spec(j).get("comment")), True)),
    "K": ("ARRAY_TASK_ID", ("arraytaskid",), lambda j, c: (
        _array_task_str(j) if _is_meta(j) else
        (str(j["array_task_id"]) if j.get("array_task_id") is not None else "N/A"), True)),
    "l": ("TIME_LIMIT", ("timelimit",), _time_limit),
    "L": ("TIME_LEFT", ("timeleft",), _time_left),
    "m": ("MIN_MEMORY", ("minmemory",), lambda j, c: (_min_memory(j, c), True)),
    "M": ("TIME", ("timeused",), lambda j, c: (format_elapsed(time_used(j, c.now)), False)),
    "n": ("REQ_NODES", ("reqnodes",), lambda j, c: (compress(_spec(j).get("req_nodes") or []), True)),
    "N": ("NODELIST", ("nodelist",), lambda j, c: (compress(j.get("nodes") or []), False)),
    "o": ("COMMAND", ("command",), lambda j, c: (_null(_spec(j).get("command")), True)),
    "O": ("CONTIGUOUS", ("contiguous",), lambda j, c: ("0", True)),
    "p": ("PRIORITY", ("priority",), lambda j, c: (f"{int(j.get('priority', 0)) / 4294967295:.8f}", True)),
    "P": ("PARTITION", ("partition",), lambda j, c: (str(j.get("partition", "")), True)),
    "q": ("QOS", ("qos",), lambda j, c: (_null(_spec(j).get("qos")), True)),
    "Q": ("PRIORITY", ("prioritylong",), lambda j, c: (str(int(j.get("priority", 0))), True)),
    "r": ("REASON", ("reason",), lambda j, c: (_reason(j), True)),
    "R": ("NODELIST(REASON)", ("reasonlist",), _reason_list),
    "S": ("START_TIME", ("starttime",), lambda j, c: _time(_start_time(j, c.now), c)),
    "t": ("ST", ("statecompact",), lambda j, c: (job_state_code(j), True)),
    "T": ("STATE", ("state",), lambda j, c: (job_state_shown(j), True)),
    "u": ("USER", ("username",), lambda j, c: (str(_spec(j).get("user", "root")), True)),
    "U": ("UID", ("userid",), lambda j, c: (str(_spec(j).get("user_id", 0)), True)),
    "v": ("RESERVATION", ("reservation",), lambda j, c: (_null(_spec(j).get("reservation")), True)),
    "V": ("SUBMIT_TIME", ("submittime",), lambda j, c: _time(j.get("submit_time"), c)),
    "w": ("WCKEY", ("wckey",), lambda j, c: (_null((_spec(j).get("other_options") or {}).get("wckey")), True)),
    "W": ("LICENSES", ("licenses",), lambda j, c: (str(_spec(j).get("licenses") or "(null)"), True)),
    "x": ("EXC_NODES", ("excnodes",), lambda j, c: (compress(_spec(j).get("exc_nodes") or []), True)),
    "X": ("CORE_SPEC", ("corespec",), lambda j, c: ("N/A", True)),
    "y": ("NICE", ("nice",), lambda j, c: (str(_spec(j).get("nice", 0)), True)),
    "Y": ("SCHEDNODES", ("schednodes",), lambda j, c: ("(null)", True)),
    "z": ("S:C:T", ("sct",), lambda j, c: ("*:*:*", True)),
    "Z": ("WORK_DIR", ("workdir",), lambda j, c: (str(_spec(j).get("work_dir", "/")), True)),
}
_LONG_NAMES = {name: letter for letter, (_, names, _) in FIELDS.items() for name in names}
_LONG_NAMES.update({"cluster": "cluster", "stdout": "stdout", "stderr": "stderr", "stdin": "stdin",
                    "eligibletime": "eligibletime"})


def _eligible_time(job: dict, ctx: Context) -> tuple[str, bool]:
    """When the job became (or, with a future --begin, will become) eligible: as
    scontrol's EligibleTime= (tools/showfmt.py)."""
    begin = _spec(job).get("begin_time")
    if job_state(job) == "PENDING" and begin is not None and begin > ctx.now:
        return _time(begin, ctx)
    return _time(job.get("eligible_time"), ctx)


_EXTRA_LONG = {
    "eligibletime": ("ELIGIBLE_TIME", _eligible_time),
    "cluster": ("CLUSTER", lambda j, c: (c.cluster, True)),
    "stdout": ("STDOUT", lambda j, c: (_null(_spec(j).get("stdout")), True)),
    "stderr": ("STDERR", lambda j, c: (_null(_spec(j).get("stderr")), True)),
    "stdin": ("STDIN", lambda j, c: (_null(_spec(j).get("stdin") or "/dev/null"), True)),
}


def build_fields(fmt: str | None, fmt_long: str | None) -> tuple[list[FormatField], list[str]]:
    """Parse -o / -O into fields; unknown items become literal text (with an error line)."""
    errors: list[str] = []
    if fmt_long is not None:
        fields = []
        for f in parse_long_format(fmt_long):
            key = _LONG_NAMES.get(f.key.lower())
            if key is None:
                errors.append(error_text(f"Invalid job format specification: {f.key}"))
                continue
            fields.append(FormatField(key if len(key) == 1 else "+" + key, f.width, f.right, f.suffix))
        return fields, errors
    fields = []
    fmt = DEFAULT_FORMAT if fmt is None else fmt
    if fmt.lower() == "%all":  # every field, '|'-separated; letters without a field are skipped
        letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [chr(c) for c in range(ord("A"), ord("Z") + 1)]
        known = [c for c in letters if c in FIELDS]
        return [FormatField(c, 0, False, "" if i == len(known) - 1 else "|") for i, c in enumerate(known)], []
    for f in parse_format(fmt):
        if f.key is not None and f.key not in FIELDS:
            errors.append(error_text(f"Invalid job format specification: {f.key}"))
            text = "%" + ("." if f.right else "") + (str(f.width) if f.width else "") + f.key + f.suffix
            fields.append(FormatField(None, suffix=text))
            continue
        fields.append(f)
    return fields, errors


def _field_value(key: str, job: dict | None, ctx: Context) -> tuple[str, bool]:
    if key.startswith("+"):
        title, fn = _EXTRA_LONG[key[1:]]
    else:
        title, _, fn = FIELDS[key]
    if job is None:
        return title, True
    return fn(job, ctx)  # type: ignore[operator]


def format_line(fields: list[FormatField], job: dict | None, ctx: Context) -> str:
    values = [("", True) if f.key is None else _field_value(f.key, job, ctx) for f in fields]
    return render(fields, values) + "\n"


# ----------------------------------------------------------------------------- sorting
def _start_key(job: dict, now: float) -> float:
    start = _start_time(job, now)
    if not start:
        return float("inf")
    if job_state(job) == "PENDING" and start < now:
        return int(now)
    return int(start)


_SORT_KEYS = {
    "B": lambda j, n: (j.get("nodes") or [""])[0],
    "C": lambda j, n: _num_cpus(j),
    "D": lambda j, n: _num_nodes(j),
    "e": lambda j, n: _end_time(j) or 0,
    "g": lambda j, n: str(_spec(j).get("group", "")),
    "G": lambda j, n: int(_spec(j).get("group_id", 0)),
    # Slurm's order: an array task by (array id, task id); anything else, including the
    # pending remainder of an array (task id NO_VAL), by its own job id.
    "i": lambda j, n: ((j.get("array_job_id") or j["job_id"], j["array_task_id"])
                       if j.get("array_task_id") is not None else (j["job_id"], 0xFFFFFFFE)),
    "j": lambda j, n: str(_spec(j).get("name", "")),
    "l": lambda j, n: j["time_limit"] if j.get("time_limit") is not None else float("inf"),
    "L": lambda j, n: (j["time_limit"] * 60 - time_used(j, n)) if j.get("time_limit") is not None
    else float("inf"),
    "m": lambda j, n: _spec(j).get("mem_per_node") or _spec(j).get("mem_per_cpu") or 0,
    "M": lambda j, n: time_used(j, n),
    "N": lambda j, n: (j.get("nodes") or [""])[0],
    "p": lambda j, n: int(j.get("priority", 0)),
    "P": lambda j, n: str(j.get("partition", "")),
    "Q": lambda j, n: int(j.get("priority", 0)),
    "S": _start_key,
    "t": lambda j, n: job_state_code(j),
    "T": lambda j, n: job_state_shown(j),
    "u": lambda j, n: str(_spec(j).get("user", "")),
    "U": lambda j, n: int(_spec(j).get("user_id", 0)),
    "V": lambda j, n: j.get("submit_time", 0.0),
}
_SORT_IGNORED = set("cfhnOdvzHIJbw")


def sort_jobs(jobs: list[dict], spec: str | None, now: float) -> list[dict]:
    """squeue's order: newest planned start first, then the -S keys (default ``P,t,-p``)
    applied as stable sorts from the last key to the first."""
    spec = DEFAULT_SORT if spec is None else spec
    if spec == DEFAULT_SORT:  # (the same order in one sort: squeuecols.default_order, issue 17)
        from plurm.tools.squeuecols import default_order

        return default_order(jobs, now, _start_key, job_state_code)
    rows = sorted(jobs, key=lambda j: _start_key(j, now), reverse=True)
    for ch, before in sort_keys(spec):
        if ch in _SORT_KEYS:
            fn = _SORT_KEYS[ch]
            rows.sort(key=lambda j, fn=fn: fn(j, now), reverse=before == "-")
        elif ch not in _SORT_IGNORED:
            raise Usage(error_text(f"Invalid sort specification: {ch}"), 1, "stderr")
    return rows


# ----------------------------------------------------------------------------- filters
def filter_jobs(jobs: list[dict], opts: Options) -> list[dict]:
    """What the controller does not filter: exact display states, accounts, qos, nodes."""
    out = []
    for job in jobs:
        state = job_state(job)
        if opts.states is not None:
            if state not in opts.states and job_state_shown(job) not in opts.states:  # (-t CF: core_reboot.py)
                continue
        elif not opts.all_states:  # with -j too: `squeue -j DONE` prints nothing, as Slurm
            if state not in ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING"):
                continue
        if opts.accounts and _spec(job).get("account") not in opts.accounts:
            continue
        if opts.qos and _spec(job).get("qos") not in opts.qos:
            continue
        if opts.nodes and not set(opts.nodes).intersection(job.get("nodes") or []):
            continue
        out.append(job)
    return out


def job_format(opts: Options) -> str | None:
    if opts.long and opts.format is None and opts.format_long is None:
        return LONG_FORMAT
    return opts.format


def select_array_tasks(jobs: list[dict], job_ids: list[str]) -> list[dict]:
    """``-j 27_3`` when task 3 is still in 27's pending remainder: show that task alone
    (the controller answers with the whole remainder)."""
    plain: set[int] = set()
    tasks: dict[int, set[int]] = {}
    for text in job_ids:
        head = text.split(".", 1)[0]
        base, sep, task = head.partition("_")
        if not sep:
            plain.add(int(base))
        elif task.isdigit():
            tasks.setdefault(int(base), set()).add(int(task))
        else:
            plain.add(int(base))  # 27_[1-3]: keep the remainder whole
    if not tasks:
        return jobs
    out: list[dict] = []
    for job in jobs:
        array_id = job.get("array_job_id") or job["job_id"]
        pending = job.get("array_pending") or []
        if not pending or array_id in plain or job["job_id"] in plain or array_id not in tasks:
            out.append(job)
            continue
        for task in sorted(set(pending) & tasks[array_id]):
            row = dict(job)
            row["array_pending"] = []
            row["array_task_id"] = task
            row["array_job_id"] = array_id
            out.append(row)
    return out


def date_line(opts: Options, now: float) -> str:
    """squeue prints the date first with -l or -i (not with -h), even when the load fails."""
    return ctime_line(now) if not opts.noheader and (opts.long or opts.iterate) else ""


def format_jobs(jobs: list[dict], opts: Options, ctx: Context) -> str:
    """The whole output (header, then one line per job) for jobs as the controller sent them."""
    fields, _ = build_fields(job_format(opts), opts.format_long)
    out: list[str] = [date_line(opts, ctx.now)]
    if not opts.noheader:
        out.append(format_line(fields, None, ctx))
    rows = filter_jobs(jobs, opts)
    if opts.jobs:
        rows = select_array_tasks(rows, opts.jobs)
    rows = sort_jobs(rows, opts.sort, ctx.now)
    from plurm.tools.squeuecols import format_rows  # (format_line, column by column: issue 17)

    out.extend(format_rows(fields, expand_rows(rows, opts.array), ctx, _field_value))
    return "".join(out)
