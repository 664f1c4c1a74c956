"""squeue: view the jobs in the scheduling queue (Slurm's command, same options and output).

This module is the command: its help, its getopt table, ``parse_args`` (with ``-t`` and
the ``SQUEUE_*`` variables), the request and ``-i`` iteration.  What it prints is
``squeuefmt.format_jobs``, pure and tested against Slurm 22.05's reference outputs.
Start-up imports only the stdlib, ``plurm.common.cli``, ``plurm.tools.display`` and
``plurm.grammar.hostlist`` (with squeuefmt); the client is imported when the request is sent.
"""

from __future__ import annotations

import os
from plurm.grammar.lazyre import lazy
import sys
import time

from plurm.common.cli import Usage, getopt_or_usage
from plurm import write_version
from plurm.tools.display import JOB_STATE_CODES, JOB_STATE_NAMES, run_iterating
from plurm.tools.squeuefmt import (
    PROG,
    START_FORMAT,
    Context,
    Options,
    build_fields,
    date_line,
    error_text,
    format_jobs,
    job_format,
    sort_jobs,
)

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
    # only the names Slurm's table has: --account, --partition, --step are prefixes of
    # these (glibc names the full option in its errors, and lists it once when ambiguous)
    "accounts": ("A", 1), "all": ("a", 0), "array": ("r", 0),
    "array-unique": ("array-unique", 0), "Format": ("O", 1), "format": ("o", 1),
    "federation": ("federation", 0), "help": ("help", 0), "hide": ("hide", 0),
    "iterate": ("i", 1), "jobs": ("j", 2), "job": ("j", 2), "json": ("json", 2),
    "local": ("local", 0), "long": ("l", 0), "licenses": ("L", 1), "cluster": ("M", 1),
    "clusters": ("M", 1), "me": ("me", 0), "name": ("n", 1), "noconvert": ("noconvert", 0),
    "node": ("w", 1), "nodes": ("w", 1), "nodelist": ("w", 1), "noheader": ("h", 0),
    "partitions": ("p", 1), "priority": ("P", 0), "qos": ("q", 1),
    "reservation": ("R", 1), "sib": ("sibling", 0), "sibling": ("sibling", 0), "sort": ("S", 1),
    "start": ("start", 0), "steps": ("s", 2), "states": ("t", 1),
    "usage": ("usage", 0), "user": ("u", 1), "users": ("u", 1), "verbose": ("v", 0),
    "version": ("V", 0), "yaml": ("yaml", 2),
}

# The job states squeue's error lists, in Slurm 22.05's order: the base states, then the
# flag states (this is the list squeue prints; -t accepts the model's names and codes)
_ALL_STATE_NAMES = (
    "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL",
    "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "COMPLETING", "CONFIGURING", "RESIZING",
    "RESV_DEL_HOLD", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "REVOKED", "SIGNALING",
    "SPECIAL_EXIT", "STAGE_OUT", "STOPPED",
)
_JOB_ID_RE = lazy(r"[0-9]+(\+[0-9]+|_([0-9]+|\[[0-9,\-%]+\]))?(\.[A-Za-z0-9_+]+)?\Z")


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
            valid = ",".join(_ALL_STATE_NAMES)
            raise Usage(error_text(f"Invalid job state specified: {item}") +
                        error_text(f"Valid job states include: {valid}\n"), 1, "stderr")
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
        o.given[key] = value
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
                raise Usage(error_text(f"--iterate={value}\n"), 1, "stderr")
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
                raise Usage(error_text("-O (--Format) is incompatible with -o (--format)"), 1, "stderr")
            o.format_long = value
            override_format_env = True
        elif key == "o":
            if o.format_long is not None:
                raise Usage(error_text("-o (--format) is incompatible with -O (--Format)"), 1, "stderr")
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
                sys.stderr.write("".join(error_text(f"Invalid user: {u}\n") for u in bad))
        elif key == "me":
            o.users = [_current_user()]
        elif key == "v":
            o.verbose += 1
        elif key == "V":
            write_version()  # stdout: Slurm's line; stderr: plurm's
            raise Usage("", 0)
        elif key == "w":
            from plurm.grammar.hostlist import HostlistError, expand

            try:
                o.nodes = expand(value or "")
            except HostlistError:
                raise Usage(error_text(f"'{value}' invalid entry for --nodelist"), 1, "stderr") from None
        elif key == "start":
            o.start = True
            override_format_env = True
        elif key == "help":
            raise Usage(HELP_TEXT, 0)
        elif key == "usage":
            raise Usage(USAGE_TEXT, 0)
        elif key in ("json", "yaml"):
            from plurm.tools.dataparser.emit import OutputError, parse as parse_output

            try:
                o.output = parse_output(PROG, key, value)
            except OutputError as exc:
                raise Usage(exc.text, exc.code, "stderr" if exc.code else "stdout") from None
        # -a, --hide, -M, -L, -R, -P, --local, --federation, --sibling, --noconvert,
        # --array-unique: accepted, nothing to do on a single cluster without hidden partitions.
    if o.long and o.format:
        raise Usage(error_text("Options -o(--format) and -l(--long) are mutually exclusive. "
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
            raise Usage(error_text(f"Unrecognized option: {operands[0]}"), 1, "stderr", USAGE_TEXT)
    for job in o.jobs:
        if not _JOB_ID_RE.match(job):
            raise Usage(error_text(f"Invalid job id: {job}"), 1, "stderr")
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


def run_once(opts: Options, source=None) -> tuple[list[tuple[str, str]], int]:
    """One load and display: ([(stream, text)] in the order Slurm writes them, exit code);
    ``source``: where the reply comes from instead of a request (-i: squeue_stream.py)."""
    from plurm.wire.client import ClientError, request

    try:
        reply = source() if source is not None else request("job_info", _request_body(opts))
    except ClientError as exc:
        if opts.output is not None:
            return _json_once(opts, {}, _load_error(exc).split(": ", 1)[-1].strip())
        return [("out", date_line(opts, time.time())), ("err", _load_error(exc))], 1
    if opts.given.get("L"):  # -L: the jobs that asked for one of these licenses (scontrol_licenses.py)
        from plurm.tools.scontrol_licenses import jobs_with_licenses

        reply["jobs"] = jobs_with_licenses(reply.get("jobs", []), opts.given["L"])
    if opts.given.get("R"):  # -R: the jobs of that reservation (issue 14: reservations)
        wanted = opts.given["R"]
        reply["jobs"] = [j for j in reply.get("jobs", []) if (j.get("spec") or {}).get("reservation") == wanted]
    if opts.output is not None:
        return _json_once(opts, reply)
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
    _, errors = build_fields(job_format(opts), opts.format_long)
    shown = [("err", "".join(errors)), ("out", format_jobs(reply.get("jobs", []), opts, ctx))]
    if opts.verbose:
        from plurm.tools.squeue_verbose import dump, records_line

        shown[:0] = [("out", dump(opts)), ("out", records_line(reply.get("jobs", []), now))]
    return shown, 0


def _json_once(opts: Options, reply: dict, error: str | None = None) -> tuple[list[tuple[str, str]], int]:
    """--json/--yaml: the job info response of the jobs the table would list."""
    from plurm.tools.dataparser import emit, jobs
    from plurm.tools.squeuefmt import filter_jobs, select_array_tasks

    rows = filter_jobs(reply.get("jobs", []), opts)
    if opts.jobs:
        rows = select_array_tasks(rows, opts.jobs)
    cluster = reply.get("cluster", "")
    errors = emit.load_errors(error, "slurm_load_jobs") if error else None
    obj = jobs.job_info_resp(rows, reply.get("now") or time.time(),
                             emit.meta(PROG, _ARGV, opts.output, cluster), cluster, errors=errors)
    return [("out", emit.text(obj, opts.output))], 1 if error else 0


_ARGV: list[str] = []  # the command line, for --json's meta


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _ARGV[:] = argv
    try:
        opts = parse_args(argv)
        if opts.sort:
            sort_jobs([], opts.sort, 0.0)  # validate -S before asking the controller
    except Usage as exc:
        return exc.write()
    if opts.steps is not None:
        from plurm.tools.squeuesteps import run_steps

        return run_iterating(lambda: run_steps(opts), opts.iterate)
    if opts.iterate and opts.output is None:  # -i: the event stream says when to ask again
        from plurm.tools.squeue_stream import StreamedListing
        from plurm.wire.client import request

        source = StreamedListing(_request_body(opts), opts.users or [], opts.partitions or [], request)
        try:
            return run_iterating(lambda: run_once(opts, source), opts.iterate)
        finally:
            source.close()
    if not opts.iterate:
        import gc

        gc.disable()  # one listing and exit: 100,000 acyclic job dicts are not worth the collector's passes
    return run_iterating(lambda: run_once(opts), opts.iterate)


if __name__ == "__main__":
    sys.exit(main())
