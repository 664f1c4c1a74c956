"""sacct: accounting records of jobs and their steps, in Slurm's layouts.

Supported: the default layout, ``-j`` (jobs, array tasks ``12_3``, steps ``12.batch``),
``-o/--format`` (``field%width``), ``-b``, ``-l``, ``-P``, ``-p``, ``--delimiter``, ``-n``,
``-X``, ``-S``/``-E`` (Slurm's time forms), ``-a``, ``-u``, ``-s``, ``-r``, ``--name``,
``-e/--helpformat``, ``-D`` (a requeued job's earlier runs, as REQUEUED records before its latest),
``--units`` and ``--noconvert`` (the sizes of a step's usage, tools/sacctusage.py),
``--help``, ``--usage``, ``-V``.  Accepted and ignored: ``-T``,
``-L``, ``-M``, ``--local``, ``--federation``, ``-v``.

Start-up budget: stdlib only on the way to the request (json reply, no msgspec).
"""

from __future__ import annotations

import os
import re
import sys
import time

from plurm.common.cli import OptionError, getopt_long
from plurm.tools.display import info_action

PROG = "sacct"

# sacct's getopt table: long name -> (key, has_arg); the key is the short letter where
# there is one, so that aliases (--uid/--user) are one option to abbreviation.  The long
# options are in the order of sacct 22.05.8's own table, as its ambiguity messages list them
# (observed: `sacct --n`, `--u`, `--f`, ... in tests/tools/reference/cli); --constraints,
# --flags and --use-local-uid are read and have no effect here.
_SHORT = "aA:bBcDeE:f:g:hi:I:j:k:K:lLM:nN:o:pPq:r:s:S:Tu:vVW:x:X"
_LONG = {
    "allusers": ("a", 0), "accounts": ("A", 1), "allocations": ("X", 0),
    "allclusters": ("L", 0), "associations": ("x", 1),
    "brief": ("b", 0), "batch-script": ("B", 0),
    "completion": ("c", 0), "constraints": ("constraints", 1), "cluster": ("M", 1),
    "clusters": ("M", 1),
    "delimiter": ("delimiter", 1), "duplicates": ("D", 0),
    "endtime": ("E", 1), "env-vars": ("env-vars", 0),
    "federation": ("federation", 0), "file": ("f", 1), "flags": ("flags", 1),
    "fields": ("o", 1), "format": ("o", 1),
    "gid": ("g", 1), "group": ("g", 1),
    "helpformat": ("e", 0), "help": ("h", 0),
    "jobs": ("j", 1), "json": ("json", 2),
    "timelimit-min": ("k", 1), "timelimit-max": ("K", 1), "truncate": ("T", 0),
    "local": ("local", 0), "long": ("l", 0),
    "name": ("name", 1), "nnodes": ("i", 1), "ncpus": ("I", 1), "nodelist": ("N", 1),
    "noconvert": ("noconvert", 0), "noheader": ("n", 0),
    "parsable": ("p", 0), "parsable2": ("P", 0), "partition": ("r", 1),
    "qos": ("q", 1),
    "state": ("s", 1), "starttime": ("S", 1),
    "units": ("units", 1), "uid": ("u", 1), "use-local-uid": ("use-local-uid", 0),
    "usage": ("usage", 0), "user": ("u", 1),
    "verbose": ("v", 0), "version": ("V", 0),
    "wckeys": ("W", 1), "whole-hetjob": ("whole-hetjob", 2),
    "yaml": ("yaml", 2),
}

USAGE = "Usage: sacct [options]\n\tUse --help for help\n"


class UsageError(Exception):
    pass


# ------------------------------------------------------------------ time specifications
_REL_RE = re.compile(r"now(?:([+-])(\d+)(seconds?|minutes?|hours?|days?|weeks?|[smhdw])?)?\Z", re.I)
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_HMS_RE = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([AaPp][Mm])?\Z")


def _local(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0) -> float:
    return time.mktime((y, mo, d, h, mi, s, 0, 0, -1))


def parse_time(text: str, now: float) -> float:
    """sacct's -S/-E forms: HH:MM[:SS] [AM|PM], MMDD[YY], MM/DD[/YY], MM.DD[.YY],
    MM/DD[/YY]-HH:MM[:SS], YYYY-MM-DD[THH:MM[:SS]], now[{+|-}count[unit]], today, midnight,
    noon, tomorrow.  A time of day means today; a date without a year means this year."""
    value = text.strip()
    low = value.lower()
    lt = time.localtime(now)
    m = _REL_RE.match(low)
    if m:
        if not m.group(1):
            return now
        n = int(m.group(2)) * _UNIT[(m.group(3) or "s")[0]]
        return now + n if m.group(1) == "+" else now - n
    if low in ("today", "midnight"):
        return _local(lt.tm_year, lt.tm_mon, lt.tm_mday)
    if low == "noon":
        return _local(lt.tm_year, lt.tm_mon, lt.tm_mday, 12)
    if low == "tomorrow":
        return _local(lt.tm_year, lt.tm_mon, lt.tm_mday + 1)
    if low == "yesterday":
        return _local(lt.tm_year, lt.tm_mon, lt.tm_mday - 1)
    m = re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:T(\d{1,2}):(\d{2})(?::(\d{2}))?)?", value)
    if m:
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
        h, mi, s = int(m.group(4) or 0), int(m.group(5) or 0), int(m.group(6) or 0)
        if 1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 60:
            return _local(y, mo, d, h, mi, s)
        raise ValueError(text)
    m = _HMS_RE.match(value)
    if m:
        h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        if m.group(4):
            if h > 12:
                raise ValueError(text)
            h = h % 12 + (12 if m.group(4).lower() == "pm" else 0)
        if h < 24 and mi < 60 and s < 60:
            return _local(lt.tm_year, lt.tm_mon, lt.tm_mday, h, mi, s)
        raise ValueError(text)
    date, dash, clock = value.partition("-")
    m = (re.fullmatch(r"(\d{2})(\d{2})(\d{2})?", date)
         or re.fullmatch(r"(\d{1,2})/(\d{1,2})(?:/(\d{2}))?", date)
         or re.fullmatch(r"(\d{1,2})\.(\d{1,2})(?:\.(\d{2}))?", date))
    if m:
        mo, d = int(m.group(1)), int(m.group(2))
        y = 2000 + int(m.group(3)) if m.group(3) else lt.tm_year
        h = mi = s = 0
        if dash:
            c = _HMS_RE.match(clock)
            if not c or c.group(4):
                raise ValueError(text)
            h, mi, s = int(c.group(1)), int(c.group(2)), int(c.group(3) or 0)
        if 1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 60:
            return _local(y, mo, d, h, mi, s)
    raise ValueError(text)


# ------------------------------------------------------------------ options
class Options:
    def __init__(self) -> None:
        self.allusers = False
        self.users: list[str] = []
        self.jobs: list[str] = []
        self.format: str | None = None
        self.long = False
        self.brief = False
        self.parsable: str | None = None  # None | "p" | "P"
        self.delimiter = "|"
        self.noheader = False
        self.allocations = False
        self.duplicates = False  # -D: every run of a requeued job, not only its latest
        self.start: str | None = None
        self.end: str | None = None
        self.states: list[str] = []
        self.partitions: list[str] = []
        self.names: list[str] = []
        self.action: str | None = None  # help | usage | version | helpformat
        self.output = None  # --json/--yaml: a plurm.tools.dataparser.emit.Output
        self.argv: list[str] = []  # the command line, for --json's meta
        self.units: str | None = None  # --units=[KMGTP]: every size in that unit
        self.noconvert = False  # --noconvert: sizes in bytes
        self.whole_hetjob: bool | None = None  # --whole-hetjob: None: only for a hetjob's leader


def _split(value: str) -> list[str]:
    return [v for v in value.split(",") if v]


def parse_args(argv: list[str]) -> Options:
    opts = Options()
    opts.argv = list(argv)
    try:
        pairs, rest = getopt_long(PROG, argv, _SHORT, _LONG)
    except OptionError as exc:
        raise UsageError(exc.message) from None
    for key, value in pairs:
        value = value or ""
        if key == "a":
            opts.allusers = True
        elif key == "u":
            opts.users.extend(_split(value))
        elif key == "j":
            opts.jobs.extend(_split(value))
        elif key == "o":
            opts.format = value if opts.format is None else opts.format + "," + value
        elif key == "l":
            opts.long = True
        elif key == "b":
            opts.brief = True
        elif key == "p":
            opts.parsable = "p"
        elif key == "P":
            opts.parsable = "P"
        elif key == "delimiter":
            opts.delimiter = value
        elif key == "n":
            opts.noheader = True
        elif key == "X":
            opts.allocations = True
        elif key == "S":
            opts.start = value
        elif key == "E":
            opts.end = value
        elif key == "s":
            opts.states.extend(_split(value))
        elif key == "r":
            opts.partitions.extend(_split(value))
        elif key == "name":
            opts.names.extend(_split(value))
        elif key == "h":
            opts.action = opts.action or "help"
        elif key == "usage":
            opts.action = opts.action or "usage"
        elif key == "D":
            opts.duplicates = True
        elif key == "V":
            opts.action = opts.action or "version"
        elif key == "e":
            opts.action = opts.action or "helpformat"
        elif key == "units" and (value[:1].upper() not in tuple("KMGTP") or not value):
            # the unit's first letter, either case (22.05.8: --units=k and MB pass)
            raise UsageError(f"{PROG}: error: Invalid unit type '{value[:1]}'. Possible "
                             f"options are 'KMGTP'\n{PROG}: fatal: Invalid unit type")
        elif key == "units":
            opts.units = value[:1].upper()
        elif key == "noconvert":
            opts.noconvert = True
        elif key == "whole-hetjob":
            opts.whole_hetjob = value is None or value.lower() != "no"
        elif key in ("json", "yaml"):
            from plurm.tools.dataparser.emit import OutputError, parse as parse_output

            try:
                opts.output = parse_output(PROG, key, value or None)
            except OutputError as exc:
                if exc.code == 0:
                    sys.stdout.write(exc.text)
                    raise SystemExit(0) from None
                raise UsageError(exc.text.rstrip("\n")) from None
        # Everything else is accepted and has no effect in plurm.
    if rest:
        # sacct takes no operands: 22.05.8 names each stray word and stops
        raise UsageError("\n".join([f"{PROG}: error: Unknown arguments:"]
                                   + [f"{PROG}: error:  {word}" for word in rest]))
    return opts


def _whole_hetjob(opts: Options, spec: str) -> bool:
    """--whole-hetjob, or by default: N names every component of hetjob N, N+K only itself
    (22.05.8: tests/integration/reference/hetjob/sacct_whole_hetjob.txt)."""
    if opts.whole_hetjob is not None:
        return opts.whole_hetjob
    return "+" not in spec


def _state_names(values: list[str]) -> list[str]:
    from plurm.tools.sacctfmt import SACCT_STATE_CODES

    names = []
    full = set(SACCT_STATE_CODES.values())
    for value in values:
        low = value.lower()
        if low in SACCT_STATE_CODES:
            names.append(SACCT_STATE_CODES[low])
        elif value.upper() in full:
            names.append(value.upper())
        else:
            raise UsageError(f"{PROG}: fatal: unrecognized job state value '{value}'")
    return names


_JOB_RE = re.compile(r"(\d+)(?:\+\d+|_(\d+|\[[\d,\-]+\]))?(?:\.(\d+|batch|extern))?\Z")


def helpformat_text() -> str:
    from plurm.tools.sacctfmt import SACCT_NAMES

    names = sorted(SACCT_NAMES.values(), key=str.lower)
    lines = []
    for i in range(0, len(names), 4):   # 19 columns and a space, as 22.05.8 pads them
        lines.append(" ".join(f"{n:<19}" for n in names[i:i + 4]))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        opts = parse_args(argv)
        if info_action(opts.action, HELP, USAGE):
            return 0
        if opts.action == "helpformat":
            sys.stdout.write(helpformat_text())
            return 0
        return run(opts)
    except UsageError as exc:
        # glibc's getopt line alone: sacct 22.05.8 adds no "Try ... --help" line
        sys.stderr.write(f"{exc}\n")
        return 1


def run(opts: Options) -> int:
    from plurm.tools import sacctfmt

    if opts.format is not None:
        fmt = opts.format
    elif opts.long:
        fmt = sacctfmt.SACCT_LONG
    elif opts.brief:
        fmt = sacctfmt.SACCT_BRIEF
    else:
        fmt = os.environ.get("SACCT_FORMAT") or sacctfmt.SACCT_DEFAULT
    try:
        fields = sacctfmt.parse_sacct_format(fmt)
    except sacctfmt.FieldError as exc:
        raise UsageError(f"{PROG}: error: Invalid field requested: \"{exc}\"") from None
    for spec in opts.jobs:
        if not _JOB_RE.match(spec):
            raise UsageError(f"{PROG}: fatal: Bad job/step specified: {spec}")
    now = time.time()
    body: dict = {"job_ids": [], "users": [], "states": [], "start_time": None, "end_time": None}
    try:
        if opts.start is not None:
            body["start_time"] = parse_time(opts.start, now)
        elif opts.states and not opts.jobs:
            body["start_time"] = now
        elif not opts.jobs:
            lt = time.localtime(now)
            body["start_time"] = _local(lt.tm_year, lt.tm_mon, lt.tm_mday)
        if opts.end is not None:
            body["end_time"] = parse_time(opts.end, now)
    except ValueError as exc:
        # Slurm's time parser prints this line unprefixed, and sacct stops
        raise UsageError(f"Invalid time specification (pos=0): {exc}") from None
    # (a hetjob's component whose whole hetjob is wanted: asked for by the hetjob's id)
    body["job_ids"] = [spec.split(".")[0].split("+")[0] if _whole_hetjob(opts, spec) else spec.split(".")[0]
                       for spec in opts.jobs]
    if opts.states:
        body["states"] = _state_names(opts.states)
    if opts.users:
        body["users"] = opts.users
    elif not opts.allusers and os.getuid() != 0 and not opts.jobs:
        body["users"] = [str(os.getuid())]

    from plurm.wire.client import ClientError, request

    try:
        reply = request("acct_query", body)
    except ClientError as exc:
        sys.stderr.write(f"{PROG}: error: Problem talking to the database: {exc}\n")
        return 1
    rows = select_rows(reply, opts, now)
    if opts.output is not None:
        return _write_json(opts, reply, rows, now)
    delimiter = opts.delimiter if opts.parsable else None
    sys.stdout.write(sacctfmt.sacct_table(fields, rows, header=not opts.noheader, delimiter=delimiter,
                                          trailing=opts.parsable == "p"))
    return 0


def _write_json(opts: Options, reply: dict, rows: list[dict[str, str]], now: float) -> int:
    """--json/--yaml: slurmdbd's jobs response for the jobs and steps the table would list."""
    from plurm.tools.dataparser import accounting, emit

    listed = {row["JobIDRaw"] for row in rows}
    jobs = [j for j in reply.get("jobs", []) if str(j["job_id"]) in listed]
    jobs.sort(key=lambda j: (j.get("submit_time") or 0.0, j["job_id"]))
    steps = [s for s in reply.get("steps", []) if f"{s['job_id']}.{s['step_id']}" in listed]
    cluster = reply.get("cluster", "")
    obj = accounting.jobs_resp(jobs, steps, now, emit.meta(PROG, opts.argv, opts.output, cluster, True), cluster)
    emit.write(obj, opts.output)
    return 0


def select_rows(reply: dict, opts: Options, now: float) -> list[dict[str, str]]:
    """The reply's jobs and steps as table rows, after the filters the server does not apply."""
    from plurm.tools import sacctfmt

    jobs = reply.get("jobs", [])
    steps = reply.get("steps", [])
    if opts.partitions:
        jobs = [j for j in jobs if j.get("partition", "") in opts.partitions]
    if opts.names:
        jobs = [j for j in jobs if (j.get("spec") or {}).get("name", "sbatch") in opts.names]
    step_filter: dict[int, set[str]] = {}
    whole: set[int] = set()
    for spec in opts.jobs:
        m = _JOB_RE.match(spec)
        if not m:
            continue
        base, task, step = int(m.group(1)), m.group(2), m.group(3)
        het = spec.partition(".")[0].partition("+")[2]  # N+K: a hetjob's component
        if het and _whole_hetjob(opts, spec):
            het = ""  # ... and every component of N with it
        own_only = not het and opts.whole_hetjob is False  # N, --whole-hetjob=no: N's record alone
        for job in jobs:
            het_of = (job.get("spec") or {}).get("het_job_id")
            if het:
                if het_of != base or (job.get("spec") or {}).get("het_job_offset", 0) != int(het):
                    continue
            elif job["job_id"] != base and job.get("array_job_id") != base and (het_of != base or own_only):
                continue
            if task is not None and job.get("array_job_id") == base and task.isdigit() \
                    and job.get("array_task_id") != int(task) and int(task) not in (job.get("array_pending") or []):
                continue
            if step is None:
                whole.add(job["job_id"])
            else:
                step_filter.setdefault(job["job_id"], set()).add(step)
    if opts.jobs:
        jobs = [j for j in jobs if j["job_id"] in whole or j["job_id"] in step_filter]
    for job_id in whole:
        step_filter.pop(job_id, None)
    # As Slurm's: by submit time (a requeued job's is its requeue's), then job id.
    jobs = sorted(jobs, key=lambda j: (j.get("submit_time") or 0.0, j["job_id"]))
    return sacctfmt.acct_rows(jobs, steps, now, reply.get("cluster", ""), opts.allocations, step_filter,
                              duplicates=opts.duplicates, units=opts.units, noconvert=opts.noconvert)


# Slurm 22.05's text, byte for byte (trailing blanks and tabs included).
HELP = (
    'sacct [<OPTION>]                                                            \n'
    '     Valid <OPTION> values are:                                              \n'
    '     -a, --allusers:                                                        \n'
    '\t           Display jobs for all users. By default, only the         \n'
    "                   current user's jobs are displayed.  If ran by user root  \n"
    '                   this is the default.                                     \n'
    '     -A, --accounts:                                                        \n'
    '\t           Use this comma separated list of accounts to select jobs \n'
    '                   to display.  By default, all accounts are selected.      \n'
    '     -b, --brief:                                                           \n'
    "\t           Equivalent to '--format=jobstep,state,error'.            \n"
    '     -B, --batch-script:                                                    \n'
    '\t           Print batch script of job.                               \n'
    '                   NOTE: AccountingStoreFlags=job_script is required for this\n'
    "                   NOTE: Requesting specific job(s) with '-j' is required   \n"
    '                         for this.                                          \n'
    '     -c, --completion: Use job completion instead of accounting data.       \n'
    '         --delimiter:                                                       \n'
    '\t           ASCII characters used to separate the fields when        \n'
    '\t           specifying the  -p  or  -P options. The default delimiter\n'
    "\t           is a '|'. This options is ignored if -p or -P options    \n"
    '\t           are not specified.                                       \n'
    '     -D, --duplicates:                                                      \n'
    '\t           If Slurm job ids are reset, some job numbers may         \n'
    '\t           appear more than once referring to different jobs.       \n'
    '\t           Without this option only the most recent jobs will be    \n'
    '                   displayed.                                               \n'
    '     -e, --helpformat:                                                      \n'
    '\t           Print a list of fields that can be specified with the    \n'
    "\t           '--format' option                                        \n"
    '     -E, --endtime:                                                         \n'
    '                   Select jobs eligible before this time.  If states are    \n'
    '                   given with the -s option return jobs in this state before\n'
    '                   this period.                                             \n'
    '         --env-vars:                                                        \n'
    '\t           Print the environment to launch the batch script of job. \n'
    '                   NOTE: AccountingStoreFlags=job_env is required for this  \n'
    "                   NOTE: Requesting specific job(s) with '-j' is required   \n"
    '                         for this.                                          \n'
    '         --federation: Report jobs from federation if a member of a one.    \n'
    '     -f, --file=file:                                                       \n'
    "\t           Read data from the specified file, rather than Slurm's   \n"
    '                   current accounting log file. (Only appliciable when      \n'
    '                   running the jobcomp/filetxt plugin.)                     \n'
    '     -g, --gid, --group:                                                    \n'
    '\t           Use this comma separated list of gids or group names     \n'
    '                   to select jobs to display.  By default, all groups are   \n'
    '                   selected.                                                \n'
    '     -h, --help:   Print this description of use.                           \n'
    '     -i, --nnodes=N:                                                        \n'
    '                   Return jobs which ran on this many nodes (N = min[-max]) \n'
    '     -I, --ncpus=N:                                                         \n'
    '                   Return jobs which ran on this many cpus (N = min[-max])  \n'
    '     -j, --jobs:                                                            \n'
    '\t           Format is <job(.step)>. Display information about this   \n'
    '                   job or comma-separated list of jobs. The default is all  \n'
    '                   jobs. Adding .step will display the specific job step of \n'
    "                   that job. (A step id of 'batch' will display the         \n"
    '                   information about the batch step.)                       \n'
    '     --json:                                                                \n'
    '                   Produce JSON output                                      \n'
    '     -k, --timelimit-min:                                                   \n'
    '                   Only send data about jobs with this timelimit.           \n'
    '                   If used with timelimit_max this will be the minimum      \n'
    '                   timelimit of the range.  Default is no restriction.      \n'
    '     -K, --timelimit-max:                                                   \n'
    '                   Ignored by itself, but if timelimit_min is set this will \n'
    '                   be the maximum timelimit of the range.  Default is no    \n'
    '                   restriction.                                             \n'
    '         --local   Report information only about jobs on the local cluster. \n'
    '\t           Overrides --federation.                                  \n'
    '     -l, --long:                                                            \n'
    '\t           Equivalent to specifying                                 \n'
    "\t           '--format=jobid,jobidraw,jobname,partition,maxvmsize,    \n"
    '                             maxvmsizenode,maxvmsizetask,avevmsize,maxrss,  \n'
    '                             maxrssnode,maxrsstask,averss,maxpages,         \n'
    '                             maxpagesnode,maxpagestask,avepages,mincpu,     \n'
    '                             mincpunode,mincputask,avecpu,ntasks,alloccpus, \n'
    '                             elapsed,state,exitcode,avecpufreq,reqcpufreqmin,\n'
    '                             reqcpufreqmax,reqcpufreqgov,reqmem,            \n'
    '                             consumedenergy,maxdiskread,maxdiskreadnode,    \n'
    '                             maxdiskreadtask,avediskread,maxdiskwrite,      \n'
    '                             maxdiskwritenode,maxdiskwritetask,avediskwrite,\n'
    '                             reqtres,alloctres,                             \n'
    '                             tresusageinave,tresusageinmax,tresusageinmaxn, \n'
    '                             tresusageinmaxt,tresusageinmin,tresusageinminn,\n'
    '                             tresusageinmint,tresusageintot,tresusageoutmax,\n'
    '                             tresusageoutmaxn,tresusageoutmaxt,             \n'
    '                             tresusageoutave,tresusageouttot                \n'
    '     -L, --allclusters:                                                     \n'
    '\t           Display jobs ran on all clusters. By default, only jobs  \n'
    '                   ran on the cluster from where sacct is called are        \n'
    '                   displayed.                                               \n'
    '     -M, --clusters:                                                        \n'
    '                   Only send data about these clusters. Use "all" for all \n'
    '                   clusters.\n'
    '     -n, --noheader:                                                        \n'
    '\t           No header will be added to the beginning of output.      \n'
    '                   The default is to print a header.                        \n'
    '     --noconvert:                                                           \n'
    "\t\t   Don't convert units from their original type             \n"
    "\t\t   (e.g. 2048M won't be converted to 2G).                   \n"
    '     -N, --nodelist:                                                        \n'
    '                   Display jobs that ran on any of these nodes,             \n'
    '                   can be one or more using a ranged string.                \n'
    '     --name:                                                                \n'
    '                   Display jobs that have any of these name(s).             \n'
    '     -o, --format:                                                          \n'
    '\t           Comma separated list of fields. (use "--helpformat"    \n'
    '                   for a list of available fields).                         \n'
    "     -p, --parsable: output will be '|' delimited with a '|' at the end     \n"
    "     -P, --parsable2: output will be '|' delimited without a '|' at the end \n"
    '     -q, --qos:                                                             \n'
    '                   Only send data about jobs using these qos.  Default is all.\n'
    '     -r, --partition:                                                       \n'
    '\t           Comma separated list of partitions to select jobs and    \n'
    '                   job steps from. The default is all partitions.           \n'
    '     -s, --state:                                                           \n'
    '\t           Select jobs based on their current state or the state    \n'
    '                   they were in during the time period given: running (r),  \n'
    '                   completed (cd), failed (f), timeout (to), resizing (rs), \n'
    '                   deadline (dl) and node_fail (nf).                        \n'
    '     -S, --starttime:                                                       \n'
    '                   Select jobs eligible after this time.  Default is        \n'
    "                   00:00:00 of the current day, unless '-s' is set then     \n"
    "                   the default is 'now'.                                    \n"
    '     -T, --truncate:                                                        \n'
    '                   Truncate time.  So if a job started before --starttime   \n'
    '                   the start time would be truncated to --starttime.        \n'
    '                   The same for end time and --endtime.                     \n'
    '     -u, --uid, --user:                                                     \n'
    '\t           Use this comma separated list of uids or user names      \n'
    '                   to select jobs to display.  By default, the running      \n'
    "                   user's uid is used.                                      \n"
    '     --units=[KMGTP]:                                                       \n'
    '                   Display values in specified unit type. Takes precedence  \n'
    '\t\t   over --noconvert option.                                 \n'
    '     --usage:      Display brief usage message.                             \n'
    '     -v, --verbose:                                                         \n'
    '\t           Primarily for debugging purposes, report the state of    \n'
    '                   various variables during processing.                     \n'
    '     -V, --version: Print version.                                          \n'
    '     -W, --wckeys:                                                          \n'
    '                   Only send data about these wckeys.  Default is all.      \n'
    '     --whole-hetjob[=yes|no]:                                               \n'
    "\t\t   If set to 'yes' (or no argument), then information about \n"
    '\t\t   all the heterogeneous components will be retrieved. If   \n'
    "\t\t   set to 'no' only the specific filtered components will   \n"
    '\t\t   be retrieved. The default behavior without this option is\n'
    '\t\t   that all components are retrieved only if filtering the  \n'
    '\t\t   leader component with --jobs.                            \n'
    '     -x, --associations:                                                    \n'
    '                   Only send data about these association id.  Default is all.\n'
    '     -X, --allocations:                                                     \n'
    '\t           Only show statistics relevant to the job allocation      \n'
    '\t           itself, not taking steps into consideration.             \n'
    '     --yaml:                                                                \n'
    '                   Produce YAML output                                      \n'
    '\t                                                                    \n'
    '     Note, valid start/end time formats are...                              \n'
    '\t           HH:MM[:SS] [AM|PM]                                       \n'
    '\t           MMDD[YY] or MM/DD[/YY] or MM.DD[.YY]                     \n'
    '\t           MM/DD[/YY]-HH:MM[:SS]                                    \n'
    '\t           YYYY-MM-DD[THH:MM[:SS]]                                  \n'
    '\t           now[{+|-}count[seconds(default)|minutes|hours|days|weeks]]\n'
    '\n'
)

if __name__ == "__main__":
    sys.exit(main())
