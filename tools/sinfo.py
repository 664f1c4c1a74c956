"""sinfo: view nodes and partitions (Slurm's command, same options and output).

This module is the command: its help, its getopt table and ``parse_args``, the request
and ``-i`` iteration.  The lines it shows are grouped in ``sinfo_records`` and printed by
``sinfofmt.format_sinfo``.  Start-up imports only the stdlib, ``plurm.common.cli``,
``plurm.tools.display`` and ``plurm.grammar.hostlist`` (with those two halves).
"""

from __future__ import annotations

import os
import sys
import time

from plurm.common.cli import Usage, getopt_or_usage
from plurm.grammar.hostlist import HostlistError, expand
from plurm import write_version
from plurm.tools.display import run_iterating
from plurm.tools.sinfo_records import FLAG_FAIL, PROG, T_DRAIN, Options, error_text, parse_node_states
from plurm.tools.sinfofmt import Context, build_fields, date_line, format_sinfo

HELP_TEXT = """\
Usage: sinfo [OPTIONS]
  -a, --all                  show all partitions (including hidden and those
\t\t\t     not accessible)
  -d, --dead                 show only non-responding nodes
  -e, --exact                group nodes only on exact match of configuration
      --federation           Report federated information if a member of one
  -h, --noheader             no headers on output
  --hide                     do not show hidden or non-accessible partitions
  -i, --iterate=seconds      specify an iteration period
      --json                 Produce JSON output
      --local                show only local cluster in a federation.
                             Overrides --federation.
  -l, --long                 long output - displays more information
  -M, --clusters=names       clusters to issue commands to. Implies --local.
                             NOTE: SlurmDBD must be up.
  -n, --nodes=NODES          report on specific node(s)
  --noconvert                don't convert units from their original type
\t\t\t     (e.g. 2048M won't be converted to 2G).
  -N, --Node                 Node-centric format
  -o, --format=format        format specification
  -O, --Format=format        long format specification
  -p, --partition=PARTITION  report on specific partition
  -r, --responding           report only responding nodes
  -R, --list-reasons         list reason nodes are down or drained
  -s, --summarize            report state summary only
  -S, --sort=fields          comma separated list of fields to sort on
  -t, --states=node_state    specify the what states of nodes to view
  -T, --reservation          show only reservation information
  -v, --verbose              verbosity level
  -V, --version              output version information and exit
      --yaml                 Produce YAML output

Help options:
  --help                     show this help message
  --usage                    display brief usage message
"""

USAGE_TEXT = """\
Usage: sinfo [-abdelNRrsTv] [-i seconds] [-t states] [-p partition] [-n nodes]
             [-S fields] [-o format] [-O Format] [--federation] [--local]
"""

SHORT_OPTS = "adehi:lM:n:No:O:p:rRsS:t:TvV"
LONG_OPTS = {
    "all": ("a", 0), "dead": ("d", 0), "exact": ("e", 0), "federation": ("federation", 0),
    "help": ("help", 0), "hide": ("hide", 0), "iterate": ("i", 1), "json": ("json", 2),
    "local": ("local", 0), "long": ("l", 0), "cluster": ("M", 1), "clusters": ("M", 1),
    "nodes": ("n", 1), "noconvert": ("noconvert", 0), "noheader": ("h", 0), "Node": ("N", 0),
    "format": ("o", 1), "Format": ("O", 1), "partition": ("p", 1), "responding": ("r", 0),
    "list-reasons": ("R", 0), "summarize": ("s", 0), "sort": ("S", 1), "states": ("t", 1),
    "reservation": ("T", 0), "usage": ("usage", 0), "verbose": ("v", 0), "version": ("V", 0),
    "yaml": ("yaml", 2),
}

# ----------------------------------------------------------------------------- options
def parse_args(argv: list[str], environ: dict | None = None) -> Options:
    env = os.environ if environ is None else environ
    o = Options()
    pairs, operands = getopt_or_usage(PROG, argv, SHORT_OPTS, LONG_OPTS)
    if env.get("SINFO_ALL"):
        o.all = True
    if env.get("SINFO_PARTITION"):
        o.partitions = [p for p in env["SINFO_PARTITION"].split(",") if p]
    if env.get("SINFO_SORT"):
        o.sort = env["SINFO_SORT"]
    opt_a = opt_p = False
    for key, value in pairs:
        if key == "a":
            opt_a = True
            o.all = True
            o.partitions = []
        elif key == "d":
            o.dead = True
        elif key == "e":
            o.exact = True
        elif key == "h":
            o.noheader = True
        elif key == "i":
            try:
                o.iterate = int(value or "0")
            except ValueError:
                o.iterate = 0
            if o.iterate <= 0:
                raise Usage(error_text(f"Error: invalid entry for --iterate={value}"), 1, "stderr")
        elif key == "l":
            o.long = True
        elif key == "n":
            try:
                o.nodes = expand(value or "")
            except HostlistError:
                raise Usage(error_text(f"'{value}' invalid entry for --nodes"), 1, "stderr") from None
        elif key == "N":
            o.node_flag = True
        elif key == "o":
            o.format, o.format_long = value, None
        elif key == "O":
            o.format_long, o.format = value, None
        elif key == "p":
            opt_p = True
            o.partitions = [p for p in (value or "").split(",") if p]
            o.all = True
        elif key == "r":
            o.responding = True
        elif key == "R":
            o.reasons = True
        elif key == "s":
            o.summarize = True
        elif key == "S":
            o.sort = value
        elif key == "t":
            o.states = parse_node_states(value or "")
        elif key == "T":
            o.reservation = True
        elif key == "v":
            o.verbose += 1
        elif key == "V":
            write_version()  # stdout: Slurm's line; stderr: plurm's
            raise Usage("", 0)
        elif key == "help":
            raise Usage(HELP_TEXT, 0)
        elif key == "usage":
            raise Usage(USAGE_TEXT, 0)
        elif key == "hide":
            o.all = False
        elif key in ("json", "yaml"):
            from plurm.tools.dataparser.emit import OutputError, parse as parse_output

            try:
                o.output = parse_output(PROG, key, value)
            except OutputError as exc:
                raise Usage(exc.text, exc.code, "stderr" if exc.code else "stdout") from None
    if opt_a and opt_p:
        raise Usage(error_text("Conflicting options, -a and -p, specified. Please choose one or the other."),
                    1, "stderr")
    if operands:
        # getopt stops at nothing; sinfo ignores stray operands silently.
        pass
    if o.format is None and o.format_long is None:
        if o.summarize:
            o.part_field_flag = True
            o.format = "%9P %.5a %.10l %.16F %N"
        elif o.node_flag:
            o.node_field_flag = o.part_field_flag = True
            o.format = ("%N %.6D %.9P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E" if o.long
                        else "%N %.6D %.9P %6t")
        elif o.reasons:
            o.format = "%20E %12U %19H %6t %N" if o.long else "%20E %9u %19H %N"
        elif env.get("SINFO_FORMAT"):
            o.format = env["SINFO_FORMAT"]
        else:
            o.part_field_flag = True
            o.format = ("%9P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N" if o.long
                        else "%9P %.5a %.10l %.6D %.6t %N")
    if o.reasons and o.states is None:
        o.states = [T_DRAIN, FLAG_FAIL, 1]  # down, fail, drain
    return o


# ----------------------------------------------------------------------------- output
def _load_error(exc) -> str:
    code = getattr(exc, "code", "")
    if code in ("ConnectError", "Timeout", "ConfigError"):
        return "slurm_load_partitions: Unable to contact slurm controller (connect failure)\n"
    if code == "AuthenticationError":
        return "slurm_load_partitions: Protocol authentication error\n"
    return f"slurm_load_partitions: {exc}\n"


def run_once(opts: Options) -> tuple[list[tuple[str, str]], int]:
    """One load and display: ([(stream, text)] in the order Slurm writes them, exit code)."""
    from plurm.wire.client import ClientError, request

    try:
        reply = request("node_info", {"nodes": [], "partitions": opts.partitions})
    except ClientError as exc:
        if opts.output is not None:
            return _json_once(opts, {}, _load_error(exc).split(": ", 1)[-1].strip())
        return [("out", date_line(opts, time.time())), ("err", _load_error(exc))], 1
    if opts.output is not None:
        return _json_once(opts, reply)
    ctx = Context(reply.get("now") or time.time(), cluster=reply.get("cluster", ""))
    _, errors = build_fields(opts)
    return [("err", "".join(errors)),
            ("out", format_sinfo(reply.get("nodes", []), reply.get("partitions", []), opts, ctx))], 0


def _json_once(opts: Options, reply: dict, error: str | None = None) -> tuple[list[tuple[str, str]], int]:
    """--json/--yaml: sinfo's lines (the groups of alike nodes the table would print)."""
    from plurm.tools.dataparser import emit, nodes
    from plurm.tools.sinfo_records import build_records
    from plurm.tools.sinfofmt import sort_records

    fields, _ = build_fields(opts)
    node_list = reply.get("nodes", [])
    records = build_records(node_list, reply.get("partitions", []), opts, {f.key for f in fields if f.key})
    records = [r for r in records if r.nodes]  # (the table's node-less partition lines are not nodes)
    records = sort_records(records, opts.sort, opts.node_flag)
    cluster = reply.get("cluster", "")
    errors = emit.load_errors(error, "slurm_load_partitions") if error else None
    obj = nodes.sinfo_resp(records, {n["name"]: n for n in node_list},
                           emit.meta(PROG, _ARGV, opts.output, cluster), cluster, errors=errors)
    return [("out", emit.text(obj, opts.output))], 1 if error else 0


_ARGV: list[str] = []  # the command line, for --json's meta


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _ARGV[:] = argv
    try:
        opts = parse_args(argv)
    except Usage as exc:
        (sys.stdout if exc.stream == "stdout" else sys.stderr).write(exc.text)
        return exc.code
    if opts.reservation:
        from plurm.tools.scontrol_resv import sinfo_reservations

        return sinfo_reservations()
    return run_iterating(lambda: run_once(opts), opts.iterate)


if __name__ == "__main__":
    sys.exit(main())
