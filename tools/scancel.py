"""scancel: cancel or signal jobs (Slurm's command, same options, messages and exit codes).

Supported: job ids ``12``, ``12_3``, ``12_[1-3]``; the filters ``-u``, ``-n``, ``-t``, ``-p``
(alone or narrowing the ids); ``-s/--signal`` by name (``USR1``, ``SIGUSR1``) or number;
``-b/--batch``, ``-f/--full``, ``-v``, ``-Q``, ``--help``, ``--usage``, ``-V``.
Accepted and ignored: ``-H``, ``-M`` (one cluster).  Not supported (an error, exit 1, so
that a filter is never silently dropped): cancelling a single step (``12.0``), ``-i``,
``-w``, ``-A``, ``-q``, ``-R``, ``--wckey``, ``--sibling``.

As Slurm: a job that does not exist or has already ended is reported only with ``-v``,
and is not an error when the signal is SIGKILL (plain cancel); any other failure prints
``scancel: error: Kill job error on job id N: ...`` and exits 1 (210 when the job is
someone else's: Slurm exits with ESLURM_ACCESS_DENIED's low byte).

Start-up budget: stdlib only (json through the client) and the command-line kit.
"""

from __future__ import annotations

import os
import re
import sys

from plurm.common.cli import OptionError, Table, parse, try_help
from plurm.tools.display import info_action

PROG = "scancel"

# scancel's getopt table: long name -> (key, has_arg); the key is the short letter where
# there is one, so that aliases (--name/--jobname) are one option to abbreviation.
_SHORT = "A:bfHiM:n:p:Qq:R:s:t:u:vVw:"
_LONG = {
    "account": ("A", 1), "batch": ("b", 0), "full": ("f", 0), "hurry": ("H", 0),
    "interactive": ("i", 0), "clusters": ("M", 1), "cluster": ("M", 1), "name": ("n", 1),
    "jobname": ("n", 1), "partition": ("p", 1), "quiet": ("Q", 0), "qos": ("q", 1),
    "reservation": ("R", 1), "sibling": ("sibling", 1), "signal": ("s", 1), "state": ("t", 1),
    "user": ("u", 1), "usage": ("usage", 0), "verbose": ("v", 0), "version": ("V", 0),
    "nodelist": ("w", 1), "wckey": ("wckey", 1), "help": ("help", 0), "ctld": ("ctld", 0),
}

# Linux signal numbers, as Slurm's sig_name2num knows them.
SIGNALS = {
    "HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "BUS": 7, "FPE": 8, "KILL": 9,
    "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15, "STKFLT": 16, "CHLD": 17,
    "CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21, "TTOU": 22, "URG": 23, "XCPU": 24, "XFSZ": 25,
    "VTALRM": 26, "PROF": 27, "WINCH": 28, "IO": 29, "POLL": 29, "PWR": 30, "SYS": 31,
}
SIGKILL = 9

_JOB_RE = re.compile(r"(\d+)(?:\+\d+|_(\d+|\[[\d,\-]+\]))?(?:\.(\d+|batch|extern))?\Z")

# Slurm treats these as success for a plain cancel (the job is already gone).
_GONE = ("InvalidJobId", "AlreadyDone")

_VALID_STATES = "Valid job states are PENDING, RUNNING, and SUSPENDED"   # unprefixed
_STATES = {"PENDING": "PENDING", "PD": "PENDING", "RUNNING": "RUNNING", "R": "RUNNING",
           "SUSPENDED": "SUSPENDED", "S": "SUSPENDED"}

USAGE = (
    "Usage: scancel [-A account] [--batch] [--full] [--interactive] [-n job_name]\n"
    "               [-p partition] [-Q] [-q qos] [-R reservation] [-s signal | integer]\n"
    "               [-t PENDING | RUNNING | SUSPENDED] [--usage] [-u user_name]\n"
    "               [--hurry] [-V] [-v] [-w hosts...] [--wckey=wckey]\n"
    "               [job_id[_array_id][.step_id]]\n"
)


class UsageError(Exception):
    def __init__(self, lines: list[str], code: int = 1) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines
        self.code = code


class Options:
    def __init__(self) -> None:
        self.job_ids: list[str] = []
        self.user: str | None = None
        self.names: list[str] = []
        self.states: list[str] = []
        self.partitions: list[str] = []
        self.signal: int | None = None
        self.batch = False
        self.full = False
        self.verbose = 0
        self.quiet = False
        self.action: str | None = None


def parse_signal(text: str) -> int:
    """``USR1``, ``SIGUSR1``, ``usr1`` or ``10``; raises ValueError."""
    value = text.strip()
    if value.isdigit():
        number = int(value)
        if 1 <= number <= 64:    # 22.05.8 refuses 0 ("Unknown job signal: 0")
            return number
        raise ValueError(text)
    name = value.upper()
    if name.startswith("SIG"):
        name = name[3:]
    if name in SIGNALS:
        return SIGNALS[name]
    raise ValueError(text)


def parse_args(argv: list[str], environ: dict[str, str] | None = None) -> Options:
    environ = os.environ if environ is None else environ
    opts = Options()
    # Slurm reads these before the command line.
    for var, attr in (("SCANCEL_BATCH", "batch"), ("SCANCEL_FULL", "full"), ("SCANCEL_QUIET", "quiet")):
        if environ.get(var):
            setattr(opts, attr, True)
    if environ.get("SCANCEL_VERBOSE"):
        opts.verbose = 1
    if environ.get("SCANCEL_PARTITION"):
        opts.partitions = [environ["SCANCEL_PARTITION"]]
    if environ.get("SCANCEL_STATE"):
        opts.states = [environ["SCANCEL_STATE"]]
        if environ["SCANCEL_STATE"].upper() not in _STATES:   # its own words (22.05.8)
            raise UsageError([f"Unrecognized SCANCEL_STATE value: {environ['SCANCEL_STATE']}",
                              _VALID_STATES])
    if environ.get("SCANCEL_USER"):
        opts.user = environ["SCANCEL_USER"]
    try:
        parsed, rest = parse(PROG, argv, Table(_SHORT, _LONG))
    except OptionError as exc:
        raise UsageError([exc.message, try_help(PROG)]) from None
    for p in parsed:
        key, value = p.key, p.value or ""
        if key == "b":
            opts.batch = True
        elif key == "f":
            opts.full = True
        elif key == "n":
            opts.names.extend(v for v in value.split(",") if v)
        elif key == "p":
            opts.partitions = [v for v in value.split(",") if v]
        elif key == "Q":
            opts.quiet = True
        elif key == "s":
            try:
                opts.signal = parse_signal(value)
            except ValueError:
                raise UsageError([f"Unknown job signal: {value}"]) from None   # unprefixed
        elif key == "t":
            opts.states = [v for v in value.split(",") if v]
        elif key == "u":
            opts.user = value
        elif key == "v":
            opts.verbose += 1
        elif key == "V":
            opts.action = opts.action or "version"
        elif key == "help":
            opts.action = opts.action or "help"
        elif key == "usage":
            opts.action = opts.action or "usage"
        elif key in ("H", "ctld", "M"):
            pass  # no burst buffers, one cluster; the controller always relays signals
        else:
            raise UsageError([f"{PROG}: error: option {p.spelled} is not supported by plurm"])
    states = []
    for value in opts.states:
        state = _STATES.get(value.upper())
        if state is None:
            raise UsageError([f"Invalid job state specified: {value}", _VALID_STATES])
        states.append(state)
    opts.states = states
    for arg in rest:
        for spec in arg.split():
            if not _JOB_RE.match(spec):
                raise UsageError([f"{PROG}: error: Invalid job id {spec}"])
            opts.job_ids.append(spec)
    return opts


def _known_user(name: str | None) -> bool:
    """-u names a local user (or is a uid): checked before asking, as 22.05.8 does."""
    if name is None or name.isdigit():
        return True
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        opts = parse_args(argv)
    except UsageError as exc:
        sys.stderr.write("".join(line + "\n" for line in exc.lines))
        return exc.code
    if info_action(opts.action, HELP, USAGE):
        return 0
    if not _known_user(opts.user):
        sys.stderr.write(f"{PROG}: error: Invalid user name: {opts.user}\n")
        return 1
    if not opts.job_ids and opts.user is None and not opts.names and not opts.states and not opts.partitions:
        sys.stderr.write(f"{PROG}: error: No job identification provided\n")
        return 1
    steps = [spec for spec in opts.job_ids if "." in spec]
    if steps:
        for spec in steps:
            # a job that does not exist is named as 22.05 names it; plurm cancels no single step
            reason = ("Cancelling a single job step is not supported by plurm" if _job_exists(spec)
                      else "Invalid job id specified")
            sys.stderr.write(f"{PROG}: error: Kill job error on job step id {spec}: {reason}\n")
        return 1
    return cancel(opts)


def _job_exists(spec: str) -> bool:
    """Whether the controller knows the job of ``JOB[_TASK].STEP`` (True when it cannot say)."""
    from plurm.wire.client import ClientError, request

    try:
        reply = request("job_info", {"job_ids": [spec.split(".", 1)[0]], "all_states": True})
    except ClientError as exc:
        return "Invalid job id" not in str(exc)
    return bool(reply.get("jobs"))


def request_body(opts: Options) -> dict:
    signal = opts.signal
    if signal == SIGKILL and not opts.batch and not opts.full:
        signal = None  # SIGKILL to the whole job is a cancel
    if signal is None and opts.batch:
        signal = SIGKILL
    user = opts.user
    if user is None and not opts.job_ids and os.getuid() != 0:
        user = str(os.getuid())  # filters alone act on the caller's own jobs
    return {"job_ids": opts.job_ids, "user": user,
            "names": opts.names, "states": opts.states, "partitions": opts.partitions, "signal": signal,
            "batch_only": opts.batch, "full": opts.full}


def cancel(opts: Options, send=None) -> int:
    """Send the request; print what Slurm prints; return the exit status."""
    if send is None:
        from plurm.wire.client import request as send
    from plurm.wire.client import ClientError

    body = request_body(opts)
    sig = opts.signal if opts.signal is not None else SIGKILL
    if opts.verbose:
        for spec in opts.job_ids:
            if sig == SIGKILL:
                sys.stderr.write(f"{PROG}: Terminating job {spec}\n")
            else:
                sys.stderr.write(f"{PROG}: Signal {sig} to job {spec}\n")
    try:
        reply = send("cancel_job", body)
    except ClientError as exc:
        message = str(exc)
        marker = "(connect failure)"
        if marker in message:  # as Slurm: no OS detail
            message = message[:message.index(marker) + len(marker)]
        if opts.job_ids:
            for spec in opts.job_ids:
                sys.stderr.write(f"{PROG}: error: Kill job error on job id {spec}: {message}\n")
        else:
            sys.stderr.write(f"{PROG}: error: slurm_load_jobs error: {message}\n")
        return 1
    rc = 0
    if opts.verbose and not opts.job_ids and not reply.get("results"):
        # filters that matched nothing: said only with -v, the filters in 22.05.8's order
        shown = [("job_name", ",".join(opts.names)), ("partition", ",".join(opts.partitions)),
                 ("state", ",".join(opts.states)), ("user_name", opts.user or "")]
        sys.stderr.write(f"{PROG}: error: No active jobs match ALL job filters, including: "
                         + "".join(f"{k}={v} " for k, v in shown if v) + "\n")
    for result in reply.get("results", []):
        if "error" not in result:
            if opts.verbose and not opts.job_ids:
                if sig == SIGKILL:
                    sys.stderr.write(f"{PROG}: Terminating job {result.get('job')}\n")
                else:
                    sys.stderr.write(f"{PROG}: Signal {sig} to job {result.get('job')}\n")
            continue
        code = result.get("code", "Error")
        gone = code in _GONE
        if (opts.verbose or not gone) and not (opts.quiet and gone):
            sys.stderr.write(f"{PROG}: error: Kill job error on job id {result.get('job')}: {result['error']}\n")
        if not (gone and sig == SIGKILL):
            # Slurm exits with its error number's low byte: 210 for ESLURM_ACCESS_DENIED (2002).
            # (60: ESLURM_NOT_WHOLE_HET_JOB's, for a pending hetjob's component alone)
            rc = max(rc, ACCESS_DENIED_EXIT if code == "AccessDenied" else 60 if code == "HetJobPending" else 1)
    return rc


ACCESS_DENIED_EXIT = 2002 & 0xFF


# Slurm 22.05's text, byte for byte.
HELP = (
    'Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]\n'
    '  -A, --account=account           act only on jobs charging this account\n'
    '  -b, --batch                     signal batch shell for specified job\n'
    '  -f, --full                      signal batch shell and all steps for specified job\n'
    '  -H, --hurry                     avoid burst buffer stage out\n'
    '  -i, --interactive               require response from user for each job\n'
    '  -M, --clusters                  clusters to issue commands to.\n'
    '                                  NOTE: SlurmDBD must be up.\n'
    '  -n, --name=job_name             act only on jobs with this name\n'
    '  -p, --partition=partition       act only on jobs in this partition\n'
    '  -Q, --quiet                     disable warnings\n'
    '  -q, --qos=qos                   act only on jobs with this quality of service\n'
    '  -R, --reservation=reservation   act only on jobs with this reservation\n'
    '      --sibling=cluster_name      remove an active sibling job from a federated job\n'
    '  -s, --signal=name | integer     signal to send to job, default is SIGKILL\n'
    '  -t, --state=states              act only on jobs in this state.  Valid job\n'
    '                                  states are PENDING, RUNNING and SUSPENDED\n'
    '  -u, --user=user_name            act only on jobs of this user\n'
    '  -V, --version                   output version information and exit\n'
    '  -v, --verbose                   verbosity level\n'
    '  -w, --nodelist                  act only on jobs on these nodes\n'
    '      --wckey=wckey               act only on jobs with this workload\n'
    '                                  charactization key\n'
    '\n'
    'Help options:\n'
    '  --help                          show this help message\n'
    '  --usage                         display brief usage message\n'
)

if __name__ == "__main__":
    sys.exit(main())
