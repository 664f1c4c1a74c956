"""sprio: the factors that make up pending jobs' priorities (priority/multifactor).

Slurm 22.05's command, same options and output.  ``format_sprio`` is pure (the
controller's priority_factors reply in, text out) and is tested against the
reference capture and the documented formats.

Layouts (sprio(1) of 22.05, and observed output):

* default: ``%.15i %9r %.10Y %.10S`` then one ``%.10X`` column per factor whose
  weight is not 0 (AGE ASSOC FAIRSHARE JOBSIZE PARTITION QOS), then ``%20T`` when
  TRES weights are set; ``-u`` adds ``%.8u`` after the partition.
* ``-l``: the fixed ``%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P
  %.10Q %.11N %.20T``, every factor whatever its weight.
* ``-n``: normalized, left-justified ``%10y`` (priority / 2^32-1, ``%.8f``) and
  ``%10x`` factors (``%.7f``); no SITE column.
* ``-w``: the same header, then one ``Weights`` row (SITE 1, each factor's weight).

A format field is ``%[.][size]x``: '.' right-justifies, ``size`` pads and cuts.
Start-up imports only the stdlib, ``plurm.common.cli`` and ``plurm.tools.display``.
"""

from __future__ import annotations

import os
import sys

from plurm.common.cli import Usage, getopt_or_usage
from plurm import write_version
from plurm.tools.display import parse_format, render

PROG = "sprio"

HELP_TEXT = """\
Usage: sprio [OPTIONS]
      --federation                display jobs in federation if a member of one
  -h, --noheader                  no headers on output
  -j, --jobs                      comma separated list of jobs
                                  to view, default is all
      --local                     display jobs on local cluster only
  -l, --long                      long report
  -M, --cluster=cluster_name      cluster to issue commands to.  Default is
                                  current cluster.  cluster with no name will
                                  reset to default.
                                  NOTE: SlurmDBD must be up.
  -n, --norm                      display normalized values
  -o, --format=format             format specification
      --sibling                   display job records separately for each federation cluster
  -p, --partition=partition_name  comma separated list of partitions
  -u, --user=user_name            comma separated list of users to view
  -v, --verbose                   verbosity level
  -V, --version                   output version information and exit
  -w, --weights                   show the weights for each priority factor

Help options:
  --help                          show this help message
  --usage                         display a brief summary of sprio options
"""

USAGE_TEXT = """\
Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions]
   [--federation] [--local] [--sibling] [--usage] [-hlnvVw]
"""

SHORT_OPTS = "hj::lM:no:p:S:u:vVw"
LONG_OPTS = {"noheader": ("h", 0), "jobs": ("j", 2), "long": ("l", 0), "cluster": ("M", 1),
             "clusters": ("M", 1), "norm": ("n", 0), "format": ("o", 1), "partition": ("p", 1),
             "sort": ("S", 1), "user": ("u", 1), "users": ("u", 1), "verbose": ("v", 0), "version": ("V", 0),
             "weights": ("w", 0), "federation": ("federation", 0), "local": ("local", 0),
             "sibling": ("sibling", 0), "help": ("help", 0), "usage": ("usage", 0)}

# factor name -> (weighted letter, normalized letter, header), in sprio's column order
FACTORS = {"age": ("A", "a", "AGE"), "assoc": ("B", "b", "ASSOC"), "fairshare": ("F", "f", "FAIRSHARE"),
           "jobsize": ("J", "j", "JOBSIZE"), "partition": ("P", "p", "PARTITION"), "qos": ("Q", "q", "QOS")}
BY_LETTER = {letter: name for name, (upper, lower, _) in FACTORS.items() for letter in (upper, lower)}
HEADERS = {"c": "CLUSTER", "i": "JOBID", "N": "NICE", "r": "PARTITION", "S": "SITE", "t": "TRES", "T": "TRES",
           "u": "USER", "y": "PRIORITY", "Y": "PRIORITY",
           **{letter: FACTORS[name][2] for letter, name in BY_LETTER.items()}}

LONG_FORMAT = "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q %.11N %.20T"
# Not in the man page nor in the captures: the normalized counterpart of LONG_FORMAT,
# without the columns that have no normalized form (SITE, NICE), as the short -n drops SITE.
NORM_LONG_FORMAT = "%.15i %9r %.8u %10y %10a %10b %10f %10j %10p %10q %20t"
NO_PRIORITY = 0xFFFFFFFF  # -n divides the job priority by the largest one


def _error(msg: str) -> str:
    return f"{PROG}: error: {msg}\n"


class Options:
    def __init__(self) -> None:
        self.noheader = False
        self.long = False
        self.norm = False
        self.weights = False
        self.jobs: list[int] | None = None  # -j given (None: not given)
        self.job_flag = False
        self.users: list[str] = []
        self.partitions: list[str] = []
        self.format: str | None = None
        self.sort: str | None = None
        self.verbose = 0


def _job_ids(text: str) -> list[int]:
    ids = []
    for item in text.split(","):
        if not item:
            continue
        head = item.split("_", 1)[0].split(".", 1)[0]
        if not head.isdigit():
            raise Usage(_error(f"Invalid job id: {item}"), 1, "stderr")
        ids.append(int(head))
    return ids


def parse_args(argv: list[str], environ: dict | None = None) -> Options:
    env = os.environ if environ is None else environ
    o = Options()
    pairs, operands = getopt_or_usage(PROG, argv, SHORT_OPTS, LONG_OPTS)
    if env.get("SPRIO_FORMAT"):
        o.format = env["SPRIO_FORMAT"]
    for key, value in pairs:
        if key == "h":
            o.noheader = True
        elif key == "j":
            o.job_flag = True
            if value:
                o.jobs = _job_ids(value)
        elif key == "l":
            o.long = True
        elif key == "n":
            o.norm = True
        elif key == "o":
            o.format = value
        elif key == "p":
            o.partitions = [p for p in (value or "").split(",") if p]
        elif key == "S":
            o.sort = value
        elif key == "u":
            o.users = [u for u in (value or "").split(",") if u]
        elif key == "v":
            o.verbose += 1
        elif key == "w":
            o.weights = True
        elif key == "V":
            write_version()  # stdout: Slurm's line; stderr: plurm's
            raise Usage("", 0)
        elif key == "help":
            raise Usage(HELP_TEXT, 0)
        elif key == "usage":
            raise Usage(USAGE_TEXT, 0)
        # -M, --federation, --local, --sibling: one cluster, no federation: nothing to do.
    if operands and o.job_flag and o.jobs is None:
        o.jobs = _job_ids(operands.pop(0))  # "-j 12,13": the list follows as an operand
    if operands:
        raise Usage(_error(f"Unrecognized option: {operands[0]}"), 1, "stderr", USAGE_TEXT)
    if o.job_flag and o.jobs is None:
        o.jobs = []
    return o


def _check_users(users: list[str]) -> None:
    """Slurm's sprio names a user it cannot resolve on stderr (then a blank line) and goes
    on: the queue it prints simply holds no job of theirs."""
    import pwd

    for user in users:
        try:
            pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
        except KeyError:
            sys.stderr.write(_error(f"Invalid user: {user}") + "\n")


def default_format(opts: Options, weights: dict[str, int], tres_weights: str = "") -> str:
    """The format sprio builds when no -o is given: zero-weight factors left out (not with -l)."""
    if opts.long:
        return NORM_LONG_FORMAT if opts.norm else LONG_FORMAT
    fmt = "%.15i %9r"
    if opts.users:
        fmt += " %.8u"
    fmt += " %10y" if opts.norm else " %.10Y %.10S"
    for name, (upper, lower, _) in FACTORS.items():
        if weights.get(name):
            fmt += f" %10{lower}" if opts.norm else f" %.10{upper}"
    if tres_weights:
        fmt += " %20t" if opts.norm else " %20T"
    return fmt


def _value(letter: str, job: dict, weights: dict[str, int], cluster: str) -> str:
    """One field of one job row, as sprio prints it."""
    name = BY_LETTER.get(letter)
    if name is not None:
        factor = float((job.get("factors") or {}).get(name, 0.0))
        if letter.isupper():
            return f"{factor * weights.get(name, 0):.0f}"
        return f"{factor:.7f}"
    if letter == "i":
        return str(job["job_id"])
    if letter == "r":
        return job.get("partition", "")
    if letter == "u":
        return job.get("user", "")
    if letter == "Y":
        return str(job.get("priority", 0))
    if letter == "y":
        return f"{job.get('priority', 0) / NO_PRIORITY:.8f}"
    if letter == "S":
        return str(job.get("site", 0))
    if letter == "N":
        return str(job.get("nice", 0))
    if letter == "c":
        return cluster
    return ""  # t, T: no TRES weights


def _weight_value(letter: str, weights: dict[str, int], tres_weights: str) -> str:
    """One field of the -w row."""
    name = BY_LETTER.get(letter)
    if name is not None:
        return str(weights.get(name, 0))
    if letter == "i":
        return "Weights"
    if letter == "S":
        return "1"
    if letter in ("t", "T"):
        return tres_weights
    return ""


def sort_rows(jobs: list[dict], spec: str, weights: dict[str, int]) -> list[dict]:
    """-S: comma separated field letters, '-' descending, '+' (or nothing) ascending."""
    rows = list(jobs)
    for item in reversed([s for s in spec.split(",") if s]):
        descending = item.startswith("-")
        letter = item.lstrip("+-")[-1:]
        name = BY_LETTER.get(letter)
        if name is not None:
            def key(job, name=name, weighted=letter.isupper()):
                factor = float((job.get("factors") or {}).get(name, 0.0))
                return factor * weights.get(name, 0) if weighted else factor
        elif letter in ("y", "Y"):
            def key(job):
                return job.get("priority", 0)
        elif letter in ("r", "u"):
            def key(job, field={"r": "partition", "u": "user"}[letter]):
                return job.get(field, "")
        elif letter == "N":
            def key(job):
                return job.get("nice", 0)
        elif letter == "S":
            def key(job):
                return job.get("site", 0)
        else:
            def key(job):
                return job.get("job_id", 0)
        rows.sort(key=key, reverse=descending)
    return rows


def format_sprio(reply: dict, opts: Options) -> tuple[str, str]:
    """(stdout, stderr) for one reply of the controller."""
    weights = reply.get("weights") or {}
    tres_weights = reply.get("tres_weights") or ""
    cluster = reply.get("cluster") or ""
    fields = parse_format(opts.format if opts.format is not None else default_format(opts, weights, tres_weights))
    err = []
    usable = []
    for field in fields:
        if field.key is not None and field.key not in HEADERS:
            err.append(_error(f"Invalid job format specification: {field.key}"))
            continue
        usable.append(field)
    lines = []
    if not opts.noheader:
        lines.append(render(usable, [(HEADERS.get(f.key or "", ""), True) for f in usable]))
    if opts.weights:
        lines.append(render(usable, [(_weight_value(f.key or "", weights, tres_weights), True) for f in usable]))
        return "".join(line + "\n" for line in lines), "".join(err)
    jobs = reply.get("jobs") or []
    if opts.jobs is not None and not jobs:
        return "Unable to find jobs matching user/id(s) specified\n", "".join(err)
    if opts.partitions:
        jobs = [j for j in jobs if j.get("partition") in opts.partitions]
    if opts.sort:
        jobs = sort_rows(jobs, opts.sort, weights)
    for job in jobs:
        lines.append(render(usable, [(_value(f.key or "", job, weights, cluster), True) for f in usable]))
    return "".join(line + "\n" for line in lines), "".join(err)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse_args(argv)
    except Usage as exc:
        return exc.write()
    from plurm.wire.client import ClientError, request

    _check_users(opts.users)
    body = {"job_ids": opts.jobs or [], "users": opts.users}
    try:
        reply = request("priority_factors", body)
    except ClientError as exc:
        code = getattr(exc, "code", "")
        why = "Unable to contact slurm controller (connect failure)" \
            if code in ("ConnectError", "Timeout", "ConfigError") else str(exc)
        sys.stderr.write(f"Couldn't get priority factors from controller: {why}\n")
        return 1
    if reply.get("type") != "priority/multifactor":
        sys.stderr.write(f"You are not running a supported priority plugin\n({reply.get('type')}).\n"
                         "Only 'priority/multifactor' is supported.\n")
        return 1
    out, err = format_sprio(reply, opts)
    sys.stderr.write(err)
    sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
