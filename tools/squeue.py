"""squeue: view the jobs in the scheduling queue (Slurm's command, same options and output).

The formatting (``format_jobs``) is pure: job dicts in, text out, so it is tested
against the reference outputs of Slurm 22.05 without a controller.  Start-up
imports only the stdlib, ``plurm.common.cli``, ``plurm.tools.display`` and
``plurm.grammar.hostlist``; the client is imported when the request is sent.
"""

from __future__ import annotations

import os
from plurm.grammar.lazyre import lazy
import sys
import time

from plurm.common.cli import Usage, getopt_or_usage
from plurm.grammar.hostlist import compress
from plurm.tools.display import (
    job_oversubscribe,
    run_iterating,
    JOB_STATE_CODES,
    JOB_STATE_NAMES,
    FormatField,
    bitmap_ranges,
    convert_mb,
    ctime_line,
    format_elapsed,
    format_timestamp,
    job_state,
    job_state_code,
    parse_format,
    parse_long_format,
    render,
    squeue_time_limit,
    version_line,
)

PROG = "squeue"
DEFAULT_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
LONG_FORMAT = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
START_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
STEP_FORMAT = "%.15i %.8j %.9P %.8u %.9M %N"
DEFAULT_SORT = "P,t,-p"

HELP_TEXT = """\
Usage: squeue [OPTIONS]
  -A, --account=account(s)        comma separated list of accounts
\t\t\t\t  to view, default is all accounts
  -a, --all                       display jobs in hidden partitions
      --array-unique              display one unique pending job array
                                  element per line
      --federation                Report federated information if a member
                                  of one
  -h, --noheader                  no headers on output
      --hide                      do not display jobs in hidden partitions
  -i, --iterate=seconds           specify an interation period
  -j, --job=job(s)                comma separated list of jobs IDs
                                  to view, default is all
      --json                      Produce JSON output
      --local                     Report information only about jobs on the
                                  local cluster. Overrides --federation.
  -l, --long                      long report
  -L, --licenses=(license names)  comma separated list of license names to view
  -M, --clusters=cluster_name     cluster to issue commands to.  Default is
                                  current cluster.  cluster with no name will
                                  reset to default. Implies --local.
  -n, --name=job_name(s)          comma separated list of job names to view
      --noconvert                 don't convert units from their original type
                                  (e.g. 2048M won't be converted to 2G).
  -o, --format=format             format specification
  -O, --Format=format             format specification
  -p, --partition=partition(s)    comma separated list of partitions
\t\t\t\t  to view, default is all partitions
  -q, --qos=qos(s)                comma separated list of qos's
\t\t\t\t  to view, default is all qos's
  -R, --reservation=name          reservation to view, default is all
  -r, --array                     display one job array element per line
      --sibling                   Report information about all sibling jobs
                                  on a federated cluster. Implies --federation.
  -s, --step=step(s)              comma separated list of job steps
\t\t\t\t  to view, default is all
  -S, --sort=fields               comma separated list of fields to sort on
      --start                     print expected start times of pending jobs
  -t, --states=states             comma separated list of states to view,
\t\t\t\t  default is pending and running,
\t\t\t\t  '--states=all' reports all states
  -u, --user=user_name(s)         comma separated list of users to view
      --name=job_name(s)          comma separated list of job names to view
  -v, --verbose                   verbosity level
  -V, --version                   output version information and exit
  -w, --nodelist=hostlist         list of nodes to view, default is 
\t\t\t\t  all nodes
      --yaml                      Produce YAML output

Help options:
  --help                          show this help message
  --usage                         display a brief summary of squeue options
"""

USAGE_TEXT = """\
Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]
              [-n name] [-o format] [-p partitions] [--qos qos]
              [--reservation reservation] [--sort fields] [--start]
              [--step step_id] [-t states] [-u user_name] [--usage]
              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]
\t      [-ahjlrsv]
"""

SHORT_OPTS = "A:ahi:j::lL:n:M:O:o:p:Pq:R:rs::S:t:u:U:vVw:"
LONG_OPTS = {
    "accounts": ("A", 1), "account": ("A", 1), "all": ("a", 0), "array": ("r", 0),
    "array-unique": ("array-unique", 0), "Format": ("O", 1), "format": ("o", 1),
    "federation": ("federation", 0), "help": ("help", 0), "hide": ("hide", 0),
    "iterate": ("i", 1), "jobs": ("j", 2), "job": ("j", 2), "json": ("json", 2),
    "local": ("local", 0), "long": ("l", 0), "licenses": ("L", 1), "cluster": ("M", 1),
    "clusters": ("M", 1), "me": ("me", 0), "name": ("n", 1), "noconvert": ("noconvert", 0),
    "node": ("w", 1), "nodes": ("w", 1), "nodelist": ("w", 1), "noheader": ("h", 0),
    "partitions": ("p", 1), "partition": ("p", 1), "priority": ("P", 0), "qos": ("q", 1),
    "reservation": ("R", 1), "sib": ("sibling", 0), "sibling": ("sibling", 0), "sort": ("S", 1),
    "start": ("start", 0), "steps": ("s", 2), "step": ("s", 2), "states": ("t", 1),
    "usage": ("usage", 0), "user": ("u", 1), "users": ("u", 1), "verbose": ("v", 0),
    "version": ("V", 0), "yaml": ("yaml", 2),
}

# Job states squeue -t accepts beyond the model's (long name -> itself).
_ALL_STATE_NAMES = (
    "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
    "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "COMPLETING", "CONFIGURING", "RESIZING",
    "REVOKED", "SPECIAL_EXIT",
)
_JOB_ID_RE = lazy(r"[0-9]+(_([0-9]+|\[[0-9,\-%]+\]))?(\.[A-Za-z0-9_+]+)?\Z")


def _error(msg: str) -> str:
    return f"{PROG}: error: {msg}\n"


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


def _split(value: str) -> list[str]:
    return [v for v in value.split(",") if v]


def parse_states(value: str) -> tuple[list[str] | None, bool]:
    """``-t`` value -> (long state names, all).  Raises Usage on an unknown state."""
    if value.strip().lower() == "all":
        return None, True
    out = []
    for item in _split(value):
        upper = item.upper()
        if upper in JOB_STATE_NAMES:
            out.append(JOB_STATE_NAMES[upper])
        elif upper in JOB_STATE_CODES:
            out.append(upper)
        else:
            valid = ",".join(s.lower() for s in _ALL_STATE_NAMES)
            raise Usage(_error(f"Invalid job state specified: {item}") +
                        _error(f"Valid job states include: {valid}\n"), 1, "stderr")
    return out, False


def parse_args(argv: list[str], environ: dict | None = None) -> Options:
    env = os.environ if environ is None else environ
    o = Options()
    pairs, operands = getopt_or_usage(PROG, argv, SHORT_OPTS, LONG_OPTS)
    if env.get("SQUEUE_ARRAY"):
        o.array = True
    if env.get("SQUEUE_SORT"):
        o.sort = env["SQUEUE_SORT"]
    override_format_env = False
    for key, value in pairs:
        if key in ("A", "U"):
            o.accounts = _split(value or "")
        elif key == "h":
            o.noheader = True
        elif key == "i":
            try:
                o.iterate = int(value or "0")
            except ValueError:
                o.iterate = 0
            if o.iterate <= 0:
                raise Usage(_error(f"--iterate={value}\n"), 1, "stderr")
        elif key == "j":
            if value:
                o.jobs = _split(value)
            o.job_flag = True
        elif key == "l":
            o.long = True
            override_format_env = True
        elif key == "n":
            o.names = _split(value or "")
        elif key == "O":
            if o.format is not None:
                raise Usage(_error("-O (--Format) is incompatible with -o (--format)"), 1, "stderr")
            o.format_long = value
            override_format_env = True
        elif key == "o":
            if o.format_long is not None:
                raise Usage(_error("-o (--format) is incompatible with -O (--Format)"), 1, "stderr")
            o.format = value
            override_format_env = True
        elif key == "p":
            o.partitions = _split(value or "")
        elif key == "q":
            o.qos = _split(value or "")
        elif key == "r":
            o.array = True
        elif key == "s":
            o.steps = _split(value) if value else []
            override_format_env = True
        elif key == "S":
            o.sort = value
        elif key == "t":
            o.states, o.all_states = parse_states(value or "")
        elif key == "u":
            o.users = _split(value or "")
            bad = [u for u in o.users if not _known_user(u)]
            if bad:
                # squeue names each unknown user and shows nobody's jobs for it.
                sys.stderr.write("".join(_error(f"Invalid user: {u}\n") for u in bad))
        elif key == "me":
            o.users = [_current_user()]
        elif key == "v":
            o.verbose += 1
        elif key == "V":
            raise Usage(version_line(), 0)
        elif key == "w":
            from plurm.grammar.hostlist import HostlistError, expand

            try:
                o.nodes = expand(value or "")
            except HostlistError:
                raise Usage(_error(f"'{value}' invalid entry for --nodelist"), 1, "stderr") from None
        elif key == "start":
            o.start = True
            override_format_env = True
        elif key == "help":
            raise Usage(HELP_TEXT, 0)
        elif key == "usage":
            raise Usage(USAGE_TEXT, 0)
        elif key in ("json", "yaml"):
            raise Usage(_error(f"--{key} output is not supported by plurm's squeue"), 1, "stderr")
        # -a, --hide, -M, -L, -R, -P, --local, --federation, --sibling, --noconvert,
        # --array-unique: accepted, nothing to do on a single cluster without hidden partitions.
    if o.long and o.format:
        raise Usage(_error("Options -o(--format) and -l(--long) are mutually exclusive. "
                           "Please remove one and retry."), 1, "stderr")
    if not override_format_env:
        if env.get("SQUEUE_FORMAT"):
            o.format = env["SQUEUE_FORMAT"]
        elif env.get("SQUEUE_FORMAT2"):
            o.format_long = env["SQUEUE_FORMAT2"]
    if operands:
        if o.job_flag and not o.jobs:
            o.jobs = _split(operands.pop(0))
        elif o.steps is not None and not o.steps:
            o.steps = _split(operands.pop(0))
        if operands:
            raise Usage(_error(f"Unrecognized option: {operands[0]}") + USAGE_TEXT, 1, "stderr")
    for job in o.jobs:
        if not _JOB_ID_RE.match(job):
            raise Usage(_error(f"Invalid job id: {job}"), 1, "stderr")
    if not o.accounts and env.get("SQUEUE_ACCOUNT"):
        o.accounts = _split(env["SQUEUE_ACCOUNT"])
    if not o.names and env.get("SQUEUE_NAMES"):
        o.names = _split(env["SQUEUE_NAMES"])
    if not o.partitions and env.get("SQUEUE_PARTITION"):
        o.partitions = _split(env["SQUEUE_PARTITION"])
    if not o.qos and env.get("SQUEUE_QOS"):
        o.qos = _split(env["SQUEUE_QOS"])
    if o.states is None and not o.all_states and env.get("SQUEUE_STATES"):
        o.states, o.all_states = parse_states(env["SQUEUE_STATES"])
    if not o.users and env.get("SQUEUE_USERS"):
        o.users = _split(env["SQUEUE_USERS"])
    if o.start and o.steps is None:
        if o.format is None and o.format_long is None:
            o.format = START_FORMAT
        if o.sort is None:
            o.sort = "S"
        if o.states is None and not o.all_states:
            o.states = ["PENDING"]
    return o


def _known_user(name: str) -> bool:
    import pwd

    if name.isdigit():
        return True
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _current_user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


# ----------------------------------------------------------------------------- rows
def _spec(job: dict) -> dict:
    return job.get("spec") or {}


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
    if state in ("RUNNING", "SUSPENDED") or (state == "COMPLETING" and not job.get("end_time")):
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


def _reason_list(job: dict, ctx: Context) -> tuple[str, bool]:
    state = job_state(job)
    if state in ("PENDING", "TIMEOUT", "FAILED"):
        return f"({job.get('reason', 'None')})", True
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
    "c": ("MIN_CPUS", ("mincpus",), lambda j, c: (str(_spec(j).get("cpus_per_task") or 1), True)),
    "C": ("CPUS", ("numcpus",), lambda j, c: (str(_num_cpus(j)), True)),
    "d": ("MIN_TMP_DISK", ("mintmpdisk",), lambda j, c: ("0", True)),
    "D": ("NODES", ("numnodes",), lambda j, c: (str(_num_nodes(j)), True)),
    "e": ("END_TIME", ("endtime",), lambda j, c: _time(_end_time(j), c)),
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
    "r": ("REASON", ("reason",), lambda j, c: (str(j.get("reason", "None")), True)),
    "R": ("NODELIST(REASON)", ("reasonlist",), _reason_list),
    "S": ("START_TIME", ("starttime",), lambda j, c: _time(_start_time(j, c.now), c)),
    "t": ("ST", ("statecompact",), lambda j, c: (job_state_code(j), True)),
    "T": ("STATE", ("state",), lambda j, c: (job_state(j), True)),
    "u": ("USER", ("username",), lambda j, c: (str(_spec(j).get("user", "root")), True)),
    "U": ("UID", ("userid",), lambda j, c: (str(_spec(j).get("user_id", 0)), True)),
    "v": ("RESERVATION", ("reservation",), lambda j, c: ("(null)", True)),
    "V": ("SUBMIT_TIME", ("submittime",), lambda j, c: _time(j.get("submit_time"), c)),
    "w": ("WCKEY", ("wckey",), lambda j, c: ("(null)", True)),
    "W": ("LICENSES", ("licenses",), lambda j, c: ("(null)", True)),
    "x": ("EXC_NODES", ("excnodes",), lambda j, c: (compress(_spec(j).get("exc_nodes") or []), True)),
    "X": ("CORE_SPEC", ("corespec",), lambda j, c: ("N/A", True)),
    "y": ("NICE", ("nice",), lambda j, c: (str(_spec(j).get("nice", 0)), True)),
    "Y": ("SCHEDNODES", ("schednodes",), lambda j, c: ("(null)", True)),
    "z": ("S:C:T", ("sct",), lambda j, c: ("*:*:*", True)),
    "Z": ("WORK_DIR", ("workdir",), lambda j, c: (str(_spec(j).get("work_dir", "/")), True)),
}
_LONG_NAMES = {name: letter for letter, (_, names, _) in FIELDS.items() for name in names}
_LONG_NAMES.update({"cluster": "cluster", "stdout": "stdout", "stderr": "stderr", "stdin": "stdin"})
_EXTRA_LONG = {
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
                errors.append(_error(f"Invalid job format specification: {f.key}"))
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
            errors.append(_error(f"Invalid job format specification: {f.key}"))
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
    "T": lambda j, n: job_state(j),
    "u": lambda j, n: str(_spec(j).get("user", "")),
    "U": lambda j, n: int(_spec(j).get("user_id", 0)),
    "V": lambda j, n: j.get("submit_time", 0.0),
}
_SORT_IGNORED = set("cfhnOdvzHIJbw")


def sort_jobs(jobs: list[dict], spec: str | None, now: float) -> list[dict]:
    """squeue's order: newest planned start first, then the -S keys (default ``P,t,-p``)
    applied as stable sorts from the last key to the first."""
    rows = sorted(jobs, key=lambda j: _start_key(j, now), reverse=True)
    spec = DEFAULT_SORT if spec is None else spec
    i = len(spec) - 1
    while i >= 0:
        ch = spec[i]
        if ch in ",+-":
            i -= 1
            continue
        reverse = i > 0 and spec[i - 1] == "-"
        if ch in _SORT_KEYS:
            fn = _SORT_KEYS[ch]
            rows.sort(key=lambda j, fn=fn: fn(j, now), reverse=reverse)
        elif ch not in _SORT_IGNORED:
            raise Usage(_error(f"Invalid sort specification: {ch}"), 1, "stderr")
        i -= 1
    return rows


# ----------------------------------------------------------------------------- filters
def filter_jobs(jobs: list[dict], opts: Options) -> list[dict]:
    """What the controller does not filter: exact display states, accounts, qos, nodes."""
    out = []
    for job in jobs:
        state = job_state(job)
        if opts.states is not None:
            if state not in opts.states:
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


def _job_format(opts: Options) -> str | None:
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


def _date_line(opts: Options, now: float) -> str:
    """squeue prints the date first with -l or -i (not with -h), even when the load fails."""
    return ctime_line(now) if not opts.noheader and (opts.long or opts.iterate) else ""


def format_jobs(jobs: list[dict], opts: Options, ctx: Context) -> str:
    """The whole output (header, then one line per job) for jobs as the controller sent them."""
    fields, _ = build_fields(_job_format(opts), opts.format_long)
    out: list[str] = [_date_line(opts, ctx.now)]
    if not opts.noheader:
        out.append(format_line(fields, None, ctx))
    rows = filter_jobs(jobs, opts)
    if opts.jobs:
        rows = select_array_tasks(rows, opts.jobs)
    rows = sort_jobs(rows, opts.sort, ctx.now)
    for job in expand_rows(rows, opts.array):
        out.append(format_line(fields, job, ctx))
    return "".join(out)


def format_steps_header(opts: Options, ctx: Context) -> str:
    if opts.noheader:
        return ""
    fields = parse_format(STEP_FORMAT)
    titles = {"i": "STEPID", "j": "NAME", "P": "PARTITION", "u": "USER", "M": "TIME", "N": "NODELIST"}
    return render(fields, [("", True) if f.key is None else (titles[f.key], True) for f in fields]) + "\n"


# ----------------------------------------------------------------------------- main
def _request_body(opts: Options) -> dict:
    body: dict = {}
    if opts.jobs:
        body["job_ids"] = [j.split(".", 1)[0] for j in opts.jobs]
    if opts.states is not None:
        body["states"] = list(opts.states)
        body["all_states"] = True
    if opts.all_states:
        body["all_states"] = True
    if opts.users:
        body["users"] = opts.users
    if opts.partitions:
        body["partitions"] = opts.partitions
    if opts.names:
        body["names"] = opts.names
    return body


def _load_error(exc) -> str:
    code = getattr(exc, "code", "")
    if code in ("ConnectError", "Timeout", "ConfigError"):
        return "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"
    if code == "AuthenticationError":
        return "slurm_load_jobs error: Protocol authentication error\n"
    return f"slurm_load_jobs error: {exc}\n"


def _needs_default_mem(opts: Options) -> bool:
    fmt = opts.format_long if opts.format_long is not None else (opts.format or "")
    if "m" not in fmt.lower():
        return False  # (the common case decides without importing re)
    import re

    return bool(re.search(r"%\.?[0-9]*m", fmt)) or "minmemory" in fmt.lower()


def run_once(opts: Options) -> tuple[list[tuple[str, str]], int]:
    """One load and display: ([(stream, text)] in the order Slurm writes them, exit code)."""
    from plurm.wire.client import ClientError, request

    try:
        reply = request("job_info", _request_body(opts))
    except ClientError as exc:
        return [("out", _date_line(opts, time.time())), ("err", _load_error(exc))], 1
    now = reply.get("now") or time.time()
    default_mem = None
    if _needs_default_mem(opts):
        try:
            info = request("node_info", {"nodes": [], "partitions": []})
            for part in info.get("partitions", []):
                if part.get("def_mem_per_cpu"):
                    default_mem = part["def_mem_per_cpu"]
                    if part.get("default"):
                        break
        except ClientError:
            pass
    ctx = Context(now, default_mem, cluster=reply.get("cluster", ""))
    _, errors = build_fields(_job_format(opts), opts.format_long)
    return [("err", "".join(errors)), ("out", format_jobs(reply.get("jobs", []), opts, ctx))], 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse_args(argv)
        if opts.sort:
            sort_jobs([], opts.sort, 0.0)  # validate -S before asking the controller
    except Usage as exc:
        (sys.stdout if exc.stream == "stdout" else sys.stderr).write(exc.text)
        return exc.code
    if opts.steps is not None:
        sys.stdout.write(format_steps_header(opts, Context(time.time())))
        return 0
    return run_iterating(lambda: run_once(opts), opts.iterate)


if __name__ == "__main__":
    sys.exit(main())
