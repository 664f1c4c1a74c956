"""sinfo: view nodes and partitions (Slurm's command, same options and output).

``format_sinfo`` is pure (node and partition dicts in, text out) and is tested
against Slurm 22.05's reference outputs.  Start-up imports only the stdlib,
``plurm.common.cli``, ``plurm.tools.display`` and ``plurm.grammar.hostlist``.
"""

from __future__ import annotations

import os
import sys
import time

from plurm.common.cli import Usage, getopt_or_usage
from plurm.grammar.hostlist import HostlistError, compress, expand, sort_key
from plurm.tools.display import (
    partition_oversubscribe,
    run_iterating,
    FormatField,
    ctime_line,
    format_timestamp,
    pad,
    parse_format,
    parse_long_format,
    sinfo_time_limit,
    version_line,
)

PROG = "sinfo"

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

# Slurm's node state numbers: base states and flags (slurm.h, 22.05).
BASE_STATES = {"UNKNOWN": 0, "DOWN": 1, "IDLE": 2, "ALLOCATED": 3, "ERROR": 4, "MIXED": 5, "FUTURE": 6}
BASE_COMPACT = {0: "UNK", 1: "DOWN", 2: "IDLE", 3: "ALLOC", 4: "ERROR", 5: "MIX", 6: "FUTR"}
BASE_LONG = {v: k for k, v in BASE_STATES.items()}
STATE_BASE_MASK = 0xF
FLAG_DRAIN = 0x200
FLAG_COMPLETING = 0x400
FLAG_NO_RESPOND = 0x800
FLAG_POWERED_DOWN = 0x1000
FLAG_FAIL = 0x2000
FLAG_MAINT = 0x8000
FLAGS = {"DRAIN": FLAG_DRAIN, "COMPLETING": FLAG_COMPLETING, "FAIL": FLAG_FAIL, "MAINT": FLAG_MAINT,
         "POWERED_DOWN": FLAG_POWERED_DOWN, "NOT_RESPONDING": FLAG_NO_RESPOND}
# Pseudo ids for -t values that are not a base state.
T_DRAIN, T_DRAINED, T_DRAINING, T_NO_RESPOND = 1000, 1001, 1002, 1003


def _error(msg: str) -> str:
    return f"{PROG}: error: {msg}\n"


# ----------------------------------------------------------------------------- node states
def state_number(state: str) -> int:
    """The controller's state word (``MIXED+DRAIN*``) as Slurm's numeric node state."""
    no_resp = state.endswith("*")
    words = state.rstrip("*").split("+")
    value = BASE_STATES.get(words[0], 0)
    for word in words[1:]:
        value |= FLAGS.get(word, 0)
    if no_resp:
        value |= FLAG_NO_RESPOND
    return value


def state_compact(num: int) -> str:
    """node_state_string_compact, lower-cased as sinfo prints it (%t)."""
    return _state_string(num, compact=True).lower()


def state_long(num: int) -> str:
    """node_state_string, lower-cased (%T)."""
    return _state_string(num, compact=False).lower()


def _state_string(num: int, compact: bool) -> str:
    base = num & STATE_BASE_MASK
    star = "*" if num & FLAG_NO_RESPOND else ""
    if num & FLAG_MAINT and base not in (3, 5):
        return "MAINT" + star
    if num & FLAG_DRAIN:
        if num & FLAG_COMPLETING or base in (3, 5):
            return ("DRNG" if compact else "DRAINING") + star
        if base == 4:
            return "ERROR" + star
        return ("DRAIN" if compact else "DRAINED") + star
    if num & FLAG_FAIL:
        if num & FLAG_COMPLETING or base == 3:
            return ("FAILG" if compact else "FAILING") + star
        return "FAIL" + star
    if base == 1:
        return "DOWN" + star
    if base == 3:
        if star:
            return ("ALLOC" if compact else "ALLOCATED") + star
        if num & FLAG_COMPLETING:
            return ("ALLOC" if compact else "ALLOCATED") + "+"
        return "ALLOC" if compact else "ALLOCATED"
    if num & FLAG_COMPLETING:
        return ("COMP" if compact else "COMPLETING") + star
    if base == 2:
        if star:
            return "IDLE*"
        return "IDLE~" if num & FLAG_POWERED_DOWN else "IDLE"
    if base == 5:
        return ("MIX" if compact else "MIXED") + star
    if base == 6:
        return ("FUTR" if compact else "FUTURE") + star
    if base == 4:
        return "ERROR" + star
    return ("UNK" if compact else "UNKNOWN") + star


_T_NAMES = ("DRAIN", "DRAINED", "DRAINING", "NO_RESPOND", "COMP", "COMPLETING", "FAIL", "MAINT")


def parse_node_states(value: str) -> list[int] | None:
    """``-t`` value -> state ids (base numbers, or pseudo ids / flags); None for ``all``."""
    if value.lower() == "all":
        return None
    out: list[int] = []
    for item in [v for v in value.split(",") if v]:
        upper = item.upper()
        found = None
        for num in range(7):
            if BASE_COMPACT[num].startswith(upper) or BASE_LONG[num].startswith(upper):
                found = num
                break
        if found is None:
            if "DRAIN".startswith(upper):
                found = T_DRAIN
            elif "DRAINED".startswith(upper):
                found = T_DRAINED
            elif "DRAINING".startswith(upper):
                found = T_DRAINING
            elif "NO_RESPOND".startswith(upper):
                found = T_NO_RESPOND
            elif "COMP".startswith(upper) or "COMPLETING".startswith(upper):
                found = FLAG_COMPLETING
            elif "FAIL".startswith(upper):
                found = FLAG_FAIL
            elif "MAINT".startswith(upper):
                found = FLAG_MAINT
            elif upper in ("POWER_DOWN", "POWERED_DOWN", "POW_DN"):
                found = FLAG_POWERED_DOWN
        if found is None:
            valid = ",".join(BASE_LONG[n].lower() for n in range(7)) + \
                ",drain,drained,draining,no_respond,reserved,perfctrs,completing,power_down,power_up,fail,maint,reboot"
            raise Usage(_error(f'Bad state string: "{item}"') + _error(f"valid states: {valid}"), 1, "stderr")
        out.append(found)
    return out


def node_matches_states(num: int, wanted: list[int]) -> bool:
    base = num & STATE_BASE_MASK
    drain = bool(num & FLAG_DRAIN)
    draining = drain and (base in (3, 5) or bool(num & FLAG_COMPLETING))
    for want in wanted:
        if want == T_DRAIN:
            if drain:
                return True
        elif want == T_NO_RESPOND:
            if num & FLAG_NO_RESPOND:
                return True
        elif drain:
            if (want == T_DRAINING and draining) or (want == T_DRAINED and not draining):
                return True
        elif want in (T_DRAINED, T_DRAINING):
            continue
        elif want >= 0x10:
            if num & want:
                return True
        elif base == want:
            return True
    return False


# ----------------------------------------------------------------------------- options
class Options:
    def __init__(self) -> None:
        self.all = False
        self.dead = False
        self.exact = False
        self.noheader = False
        self.iterate = 0
        self.long = False
        self.nodes: list[str] = []
        self.node_flag = False
        self.format: str | None = None
        self.format_long: str | None = None
        self.partitions: list[str] = []
        self.responding = False
        self.reasons = False
        self.summarize = False
        self.sort: str | None = None
        self.states: list[int] | None = None
        self.reservation = False
        self.verbose = 0
        self.node_field_flag = False
        self.part_field_flag = False


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
                raise Usage(_error(f"Error: invalid entry for --iterate={value}"), 1, "stderr")
        elif key == "l":
            o.long = True
        elif key == "n":
            try:
                o.nodes = expand(value or "")
            except HostlistError:
                raise Usage(_error(f"'{value}' invalid entry for --nodes"), 1, "stderr") from None
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
            raise Usage(version_line(), 0)
        elif key == "help":
            raise Usage(HELP_TEXT, 0)
        elif key == "usage":
            raise Usage(USAGE_TEXT, 0)
        elif key == "hide":
            o.all = False
        elif key in ("json", "yaml"):
            raise Usage(_error(f"--{key} output is not supported by plurm's sinfo"), 1, "stderr")
    if opt_a and opt_p:
        raise Usage(_error("Conflicting options, -a and -p, specified. Please choose one or the other."),
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


# ----------------------------------------------------------------------------- records
class Record:
    """One output line: nodes of one partition that look alike (Slurm's sinfo_data_t)."""

    def __init__(self, part: dict | None, part_inx: int, node: dict, num: int) -> None:
        self.part = part
        self.part_inx = part_inx
        self.node_state = num
        self.first = node
        self.nodes: list[str] = []
        self.seen: set[str] = set()
        self.min = {}
        self.max = {}
        self.nodes_alloc = self.nodes_idle = self.nodes_other = self.nodes_total = 0
        self.cpus_alloc = self.cpus_idle = self.cpus_other = self.cpus_total = 0
        self.hostnames: list[str] = []
        self.addrs: list[str] = []

    def add(self, node: dict, num: int) -> None:
        name = node["name"]
        if name in self.seen:
            return
        self.seen.add(name)
        for key, value in (("cpus", node.get("cpus", 1)), ("mem", node.get("real_memory", 1)),
                           ("disk", node.get("tmp_disk", 0)), ("weight", node.get("weight", 1)),
                           ("sockets", node.get("sockets", 1)), ("cores", node.get("cores_per_socket", 1)),
                           ("threads", node.get("threads_per_core", 1)), ("free_mem", node.get("free_mem")),
                           ("cpu_load", node.get("cpu_load"))):
            if key not in self.min:
                self.min[key] = self.max[key] = value
            elif value is not None and self.min[key] is not None:
                self.min[key] = min(self.min[key], value)
                self.max[key] = max(self.max[key], value)
            elif value is None:
                self.min[key] = None
        base = num & STATE_BASE_MASK
        if num & FLAG_DRAIN:
            self.nodes_other += 1
        elif base in (3, 5) or num & FLAG_COMPLETING:
            self.nodes_alloc += 1
        elif base == 2:
            self.nodes_idle += 1
        else:
            self.nodes_other += 1
        self.nodes_total += 1
        cpus = int(node.get("cpus", 1))
        used = int(node.get("alloc_cpus", 0))
        self.cpus_alloc += used
        self.cpus_total += cpus
        if (num & FLAG_DRAIN) or base == 1:
            self.cpus_other += cpus - used
        else:
            self.cpus_idle += cpus - used
        self.nodes.append(name)
        self.hostnames.append(node.get("hostname", "localhost"))
        self.addrs.append(node.get("addr", "127.0.0.1"))


# Which format letters make nodes of a group alike (Slurm's match flags).
_NODE_MATCH = {
    "n": "hostname", "o": "addr", "f": "features", "b": "features", "G": "gres", "E": "reason",
    "H": "reason_time", "u": "reason_user", "U": "reason_user", "t": "state", "T": "state",
}
_PART_MATCH = set("aglPRrhsLlpM")
_EXACT_MATCH = {"c": "cpus", "X": "sockets", "Y": "cores", "Z": "threads", "z": "sct", "d": "tmp_disk",
                "m": "real_memory", "w": "weight"}


def _node_key(node: dict, num: int, letters: set[str], exact: bool) -> tuple:
    key: list = []
    for letter in sorted(letters):
        what = _NODE_MATCH.get(letter)
        if what == "state":
            key.append(state_long(num))
        elif what == "features":
            key.append(tuple(node.get("features") or []))
        elif what == "gres":
            key.append(tuple(node.get("gres") or []))
        elif what == "reason":
            key.append(node.get("reason"))
        elif what == "reason_time":
            key.append(node.get("reason_time"))
        elif what == "reason_user":
            key.append(node.get("reason_user"))
        elif what in ("hostname", "addr"):
            key.append(node.get(what))
        if exact and letter in _EXACT_MATCH:
            field = _EXACT_MATCH[letter]
            if field == "sct":
                key.append((node.get("sockets", 1), node.get("cores_per_socket", 1), node.get("threads_per_core", 1)))
            elif field in ("sockets", "cores", "threads"):
                key.append(node.get({"sockets": "sockets", "cores": "cores_per_socket",
                                     "threads": "threads_per_core"}[field], 1))
            else:
                key.append(node.get(field))
    return tuple(key)


def _part_key(part: dict | None, letters: set[str]) -> tuple:
    if part is None:
        return ()
    key: list = []
    if letters & set("PR"):
        key.append(part.get("name"))
    if "a" in letters:
        key.append(part.get("state", "UP"))
    if letters & set("l"):
        key.append(part.get("max_time"))
    if "L" in letters:
        key.append(part.get("default_time"))
    if "g" in letters:
        key.append(tuple(part.get("allow_groups") or ()))
    if "s" in letters:
        key.append((part.get("min_nodes", 0), part.get("max_nodes")))
    if "r" in letters:
        key.append(part.get("root_only", False))
    if "h" in letters:
        key.append(part.get("oversubscribe", "NO"))
    if "p" in letters:
        key.append(part.get("priority_tier", 1))
    return tuple(key)


def _part_node_names(part: dict) -> list[str]:
    names: list[str] = []
    for item in part.get("nodes") or []:
        if "[" in item or "," in item:
            names.extend(expand(item))
        else:
            names.append(item)
    return names


def build_records(nodes: list[dict], partitions: list[dict], opts: Options, letters: set[str]) -> list[Record]:
    """Group nodes into output records, partition by partition, in node-table order."""
    index = {n["name"]: i for i, n in enumerate(nodes)}
    by_name = {n["name"]: n for n in nodes}
    wanted_parts = set(opts.partitions)
    records: list[Record] = []
    groups: dict[tuple, Record] = {}
    for part_inx, part in enumerate(partitions):
        if wanted_parts and part.get("name") not in wanted_parts:
            continue
        if part.get("hidden") and not opts.all:
            continue
        members = sorted((n for n in _part_node_names(part) if n in by_name), key=lambda n: index[n])
        for name in members:
            node = by_name[name]
            num = state_number(node.get("state", "UNKNOWN"))
            if opts.nodes and name not in opts.nodes:
                continue
            if opts.dead and not num & FLAG_NO_RESPOND:
                continue
            if opts.responding and num & FLAG_NO_RESPOND:
                continue
            if opts.states is not None and not node_matches_states(num, opts.states):
                continue
            if opts.node_flag:
                key: tuple = ("node", part_inx, name)
            else:
                key = (_part_key(part, letters), _node_key(node, num, letters, opts.exact))
            rec = groups.get(key)
            if rec is None:
                rec = Record(part, part_inx, node, num)
                groups[key] = rec
                records.append(rec)
            rec.add(node, num)
    return records


# ----------------------------------------------------------------------------- fields
def _minmax(rec: Record, key: str, rng: bool) -> str:
    lo, hi = rec.min.get(key), rec.max.get(key)
    if lo is None or hi is None:
        lo_s = "N/A" if lo is None else str(lo)
        hi_s = "N/A" if hi is None else str(hi)
    else:
        lo_s, hi_s = str(lo), str(hi)
    if lo == hi:
        return hi_s
    return f"{lo_s}-{hi_s}" if rng else f"{lo_s}+"


def _cpu_load(rec: Record) -> str:
    def fmt(v):
        return "N/A" if v is None else f"{float(v):.2f}"
    lo, hi = rec.min.get("cpu_load"), rec.max.get("cpu_load")
    if lo == hi:
        return fmt(hi)
    return f"{fmt(lo)}-{fmt(hi)}"


def _part_name(rec: Record, width: int) -> str:
    if rec.part is None:
        return "n/a"
    name = rec.part.get("name", "")
    if rec.part.get("default"):
        if len(name) < width or width == 0:
            name += "*"
        elif width > 0:
            name = name[:width - 1] + "*"
    return name




def _job_size(part: dict | None) -> str:
    if part is None:
        return "n/a"
    lo = int(part.get("min_nodes", 0) or 0)
    hi = part.get("max_nodes")
    if lo < 1 and (hi is None or hi > 0):
        lo = 1
    if hi is not None and hi == lo:
        return str(lo)
    return f"{lo}-{'infinite' if hi is None else hi}"


def _reason(rec: Record) -> str:
    reason = rec.first.get("reason")
    return reason if reason else "none"


def _user(rec: Record, long: bool) -> str:
    user = rec.first.get("reason_user")
    if not user:
        return "Unknown"
    if not long:
        return str(user)
    import pwd

    try:
        return f"{user}({pwd.getpwnam(str(user)).pw_uid})"
    except KeyError:
        return str(user)


def _features(rec: Record) -> str:
    feats = rec.first.get("features") or []
    return ",".join(feats) if feats else "(null)"


def _gres(rec: Record) -> str:
    gres = rec.first.get("gres") or []
    return ",".join(gres) if gres else "(null)"


def _avail(part: dict | None) -> str:
    if part is None:
        return "n/a"
    return str(part.get("state", "UP")).lower()


def _time_field(minutes, part) -> str:
    if part is None:
        return "n/a"
    return sinfo_time_limit(minutes)


# letter -> (header, function(rec, ctx) -> text); the header of N/n/o is not cut.
FIELDS: dict[str, tuple[str, object]] = {
    "a": ("AVAIL", lambda r, c: _avail(r.part)),
    "A": ("NODES(A/I)", lambda r, c: f"{r.nodes_alloc}/{r.nodes_idle}"),
    "b": ("ACTIVE_FEATURES", lambda r, c: _features(r)),
    "B": ("MAX_CPUS_PER_NODE", lambda r, c: "UNLIMITED"),
    "c": ("CPUS", lambda r, c: _minmax(r, "cpus", False)),
    "C": ("CPUS(A/I/O/T)", lambda r, c: f"{r.cpus_alloc}/{r.cpus_idle}/{r.cpus_other}/{r.cpus_total}"),
    "d": ("TMP_DISK", lambda r, c: _minmax(r, "disk", False)),
    "D": ("NODES", lambda r, c: str(r.nodes_total)),
    "e": ("FREE_MEM", lambda r, c: _minmax(r, "free_mem", True)),
    "E": ("REASON", lambda r, c: _reason(r)),
    "f": ("AVAIL_FEATURES", lambda r, c: _features(r)),
    "F": ("NODES(A/I/O/T)", lambda r, c: f"{r.nodes_alloc}/{r.nodes_idle}/{r.nodes_other}/{r.nodes_total}"),
    "g": ("GROUPS", lambda r, c: ",".join(r.part.get("allow_groups") or []) or "all" if r.part else "n/a"),
    "G": ("GRES", lambda r, c: _gres(r)),
    "h": ("OVERSUBSCRIBE", lambda r, c: partition_oversubscribe(r.part)),
    "H": ("TIMESTAMP", lambda r, c: format_timestamp(r.first.get("reason_time"), c.environ)),
    "I": ("PRIO_JOB_FACTOR", lambda r, c: str(r.part.get("priority_job_factor", 1)) if r.part else "n/a"),
    "l": ("TIMELIMIT", lambda r, c: _time_field(r.part.get("max_time") if r.part else None, r.part)),
    "L": ("DEFAULTTIME", lambda r, c: "n/a" if r.part is None or r.part.get("default_time") is None
          else sinfo_time_limit(r.part["default_time"])),
    "m": ("MEMORY", lambda r, c: _minmax(r, "mem", False)),
    "M": ("PREEMPT_MODE", lambda r, c: "OFF"),
    "n": ("HOSTNAMES", lambda r, c: compress(r.hostnames, sort=False)),
    "N": ("NODELIST", lambda r, c: compress(r.nodes)),
    "o": ("NODE_ADDR", lambda r, c: compress(r.addrs, sort=False)),
    "O": ("CPU_LOAD", lambda r, c: _cpu_load(r)),
    "p": ("PRIO_TIER", lambda r, c: str(r.part.get("priority_tier", 1)) if r.part else "n/a"),
    "P": ("PARTITION", None),
    "r": ("ROOT", lambda r, c: "n/a" if r.part is None else ("yes" if r.part.get("root_only") else "no")),
    "R": ("PARTITION", lambda r, c: r.part.get("name", "") if r.part else "n/a"),
    "s": ("JOB_SIZE", lambda r, c: _job_size(r.part)),
    "t": ("STATE", lambda r, c: state_compact(r.node_state)),
    "T": ("STATE", lambda r, c: state_long(r.node_state)),
    "u": ("USER", lambda r, c: _user(r, False)),
    "U": ("USER", lambda r, c: _user(r, True)),
    "v": ("VERSION", lambda r, c: r.first.get("version") or "N/A"),
    "V": ("CLUSTER", lambda r, c: c.cluster),
    "w": ("WEIGHT", lambda r, c: _minmax(r, "weight", False)),
    "X": ("SOCKETS", lambda r, c: _minmax(r, "sockets", False)),
    "Y": ("CORES", lambda r, c: _minmax(r, "cores", False)),
    "Z": ("THREADS", lambda r, c: _minmax(r, "threads", False)),
    "z": ("S:C:T", lambda r, c: ":".join(_minmax(r, k, False) for k in ("sockets", "cores", "threads"))),
}
_LONG_NAMES = {
    "available": "a", "nodeai": "A", "featuresact": "b", "maxcpuspernode": "B", "cpus": "c",
    "cpusstate": "C", "disk": "d", "nodes": "D", "freemem": "e", "reason": "E", "features": "f",
    "nodeaiot": "F", "groups": "g", "gres": "G", "oversubscribe": "h", "timestamp": "H",
    "priorityjobfactor": "I", "time": "l", "defaulttime": "L", "memory": "m", "preemptmode": "M",
    "nodehost": "n", "nodelist": "N", "nodeaddr": "o", "cpusload": "O", "prioritytier": "p",
    "partition": "P", "root": "r", "partitionname": "R", "size": "s", "statecompact": "t",
    "statelong": "T", "user": "u", "userlong": "U", "version": "v", "cluster": "V", "weight": "w",
    "sockets": "X", "cores": "Y", "threads": "Z", "socketcorethread": "z",
}


class Context:
    def __init__(self, now: float, environ: dict | None = None, cluster: str = "") -> None:
        self.now = now
        self.environ = environ
        self.cluster = cluster


def build_fields(opts: Options) -> tuple[list[FormatField], list[str]]:
    errors: list[str] = []
    fields: list[FormatField] = []
    if opts.format_long is not None:
        for f in parse_long_format(opts.format_long):
            letter = _LONG_NAMES.get(f.key.lower())
            if letter is None:
                errors.append(_error(f"Invalid node format specification: {f.key}"))
                continue
            fields.append(FormatField(letter, f.width, f.right, f.suffix))
        return fields, errors
    for f in parse_format(opts.format or ""):
        if f.key is not None and f.key not in FIELDS:
            errors.append(_error(f"Invalid node format specification: {f.key}"))
            continue
        fields.append(f)
    return fields, errors


# ----------------------------------------------------------------------------- sorting
def _natural(name: str) -> tuple:
    return sort_key(name) if name else ()


_SORT_KEYS = {
    "a": lambda r: _avail(r.part),
    "A": lambda r: r.nodes_alloc,
    "c": lambda r: r.min.get("cpus") or 0,
    "d": lambda r: r.min.get("disk") or 0,
    "D": lambda r: r.nodes_total,
    "E": lambda r: r.first.get("reason_time") or 0,
    "f": lambda r: _features(r),
    "F": lambda r: r.nodes_alloc,
    "g": lambda r: ",".join((r.part or {}).get("allow_groups") or []),
    "h": lambda r: partition_oversubscribe(r.part),
    "l": lambda r: float("inf") if not r.part or r.part.get("max_time") is None else r.part["max_time"],
    "m": lambda r: r.min.get("mem") or 0,
    "N": lambda r: _natural(sort_nodes(r.nodes)[0] if r.nodes else ""),
    "n": lambda r: _natural(r.hostnames[0] if r.hostnames else ""),
    "o": lambda r: _natural(r.addrs[0] if r.addrs else ""),
    "O": lambda r: r.min.get("cpu_load") or 0,
    "p": lambda r: (r.part or {}).get("priority_tier", 1),
    "R": lambda r: _reason(r),
    "s": lambda r: _job_size(r.part),
    "t": lambda r: r.node_state,
    "T": lambda r: r.node_state,
    "w": lambda r: r.min.get("weight") or 0,
    "X": lambda r: r.min.get("sockets") or 0,
    "Y": lambda r: r.min.get("cores") or 0,
    "Z": lambda r: r.min.get("threads") or 0,
}


def sort_nodes(names: list[str]) -> list[str]:
    return sorted(names, key=sort_key)


def sort_records(records: list[Record], spec: str | None, node_flag: bool) -> list[Record]:
    """sinfo's order: stable sorts from the last -S key to the first; ``#P`` is the
    partition's configuration order, ``P`` its name (default ``#P,-t``, or ``N`` with -N)."""
    if spec is None:
        spec = "N" if node_flag else "#P,-t"
    rows = list(records)
    i = len(spec) - 1
    while i >= 0:
        ch = spec[i]
        if ch in ",#+-":
            i -= 1
            continue
        reverse = i > 0 and spec[i - 1] == "-"
        part_order = i > 0 and spec[i - 1] == "#"
        if ch == "P":
            if part_order:
                rows.sort(key=lambda r: r.part_inx, reverse=reverse)
            else:
                rows.sort(key=lambda r: (r.part or {}).get("name", ""), reverse=reverse)
        elif ch in _SORT_KEYS:
            fn = _SORT_KEYS[ch]
            rows.sort(key=fn, reverse=reverse)
        i -= 1
    return rows


# ----------------------------------------------------------------------------- output
def _date_line(opts: Options, now: float) -> str:
    """sinfo prints the date first with -l or -i (not with -h), even when the load fails."""
    return ctime_line(now) if not opts.noheader and (opts.long or opts.iterate) else ""


def format_sinfo(nodes: list[dict], partitions: list[dict], opts: Options, ctx: Context) -> str:
    fields, _ = build_fields(opts)
    letters = {f.key for f in fields if f.key}
    records = sort_records(build_records(nodes, partitions, opts, letters), opts.sort, opts.node_flag)
    node_width = 0
    if opts.node_field_flag:
        node_width = max([9] + [len(compress(r.nodes)) for r in records])
    part_width = 0
    if opts.part_field_flag:
        part_width = 9
        for r in records:
            if r.part is not None:
                part_width = max(part_width, len(r.part.get("name", "")) + (1 if r.part.get("default") else 0))
    out: list[str] = [_date_line(opts, ctx.now)]
    if not opts.noheader:
        out.append(_line(fields, None, ctx, node_width, part_width))
    for rec in records:
        out.append(_line(fields, rec, ctx, node_width, part_width))
    return "".join(out)


def _line(fields: list[FormatField], rec: Record | None, ctx: Context, node_width: int, part_width: int) -> str:
    parts: list[str] = []
    for f in fields:
        if f.key is None:
            parts.append(f.suffix)
            continue
        width = f.width
        if f.key in ("N", "n") and node_width:
            width = node_width
        if f.key in ("P", "R") and part_width:
            width = part_width
        title, fn = FIELDS[f.key]
        if rec is None:
            parts.append(pad(title, width, f.right, cut=f.key not in ("N", "n", "o")))
        elif f.key == "P":
            parts.append(pad(_part_name(rec, width), width, f.right))
        else:
            parts.append(pad(fn(rec, ctx), width, f.right))  # type: ignore[operator]
        parts.append(f.suffix)
    return "".join(parts) + "\n"


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
        return [("out", _date_line(opts, time.time())), ("err", _load_error(exc))], 1
    ctx = Context(reply.get("now") or time.time(), cluster=reply.get("cluster", ""))
    _, errors = build_fields(opts)
    return [("err", "".join(errors)),
            ("out", format_sinfo(reply.get("nodes", []), reply.get("partitions", []), opts, ctx))], 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse_args(argv)
    except Usage as exc:
        (sys.stdout if exc.stream == "stdout" else sys.stderr).write(exc.text)
        return exc.code
    if opts.reservation:
        if not opts.noheader:
            sys.stdout.write("%-9s  %8s  %19s  %19s  %11s  %s\n" % (
                "RESV_NAME", "STATE", "START_TIME", "END_TIME", "DURATION", "NODELIST"))
        return 0
    return run_iterating(lambda: run_once(opts), opts.iterate)


if __name__ == "__main__":
    sys.exit(main())
