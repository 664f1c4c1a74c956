"""What sinfo shows before it is formatted: the options, node states, and the lines.

The parsed command line (``Options``), Slurm's numeric node states (base state and flags,
``-t``'s names), and the grouping of a partition's nodes into one output line each
(``Record``, ``build_records``: alike nodes share a line, as Slurm's sinfo_data_t).  Pure:
node and partition dicts in, records out.  Imported by ``sinfo`` and ``sinfofmt``; it imports
neither.  Start-up budget: the stdlib, ``plurm.common.cli`` and ``plurm.grammar.hostlist``.
"""

from __future__ import annotations

from plurm.common.cli import Usage
from plurm.grammar.hostlist import expand

PROG = "sinfo"

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
FLAG_RES = 0x20  # in an ACTIVE advance reservation
FLAG_MAINT = 0x8000
FLAG_REBOOT_REQUESTED = 0x10000
FLAG_REBOOT_ISSUED = 0x100000
FLAG_POWERING_UP = 0x4000  # (a --reboot job's nodes while they boot: corescheduler/core_reboot.py)
FLAGS = {"DRAIN": FLAG_DRAIN, "COMPLETING": FLAG_COMPLETING, "FAIL": FLAG_FAIL, "MAINT": FLAG_MAINT,
         "MAINTENANCE": FLAG_MAINT, "RESERVED": FLAG_RES,  # (an ACTIVE reservation's: core_resv.resv_state)
         "POWERED_DOWN": FLAG_POWERED_DOWN, "NOT_RESPONDING": FLAG_NO_RESPOND,
         "REBOOT_REQUESTED": FLAG_REBOOT_REQUESTED, "REBOOT_ISSUED": FLAG_REBOOT_ISSUED,
         "POWERING_UP": FLAG_POWERING_UP}
# Pseudo ids for -t values that are not a base state.
T_DRAIN, T_DRAINED, T_DRAINING, T_NO_RESPOND = 1000, 1001, 1002, 1003


def error_text(msg: str) -> str:
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
    return "n/a" if num < 0 else _state_string(num, compact=True).lower()


def state_long(num: int) -> str:
    """node_state_string, lower-cased (%T)."""
    return "n/a" if num < 0 else _state_string(num, compact=False).lower()


def _state_string(num: int, compact: bool) -> str:
    base = num & STATE_BASE_MASK
    star = "#" if num & FLAG_POWERING_UP else "*" if num & FLAG_NO_RESPOND else ""  # (22.05: alloc#)
    if num & FLAG_MAINT and base not in (3, 5):
        return "MAINT" + star
    # A reboot pending (@) or issued (^): "BOOT" unless jobs still run there.
    reboot = num & FLAG_REBOOT_REQUESTED
    if num & FLAG_REBOOT_ISSUED and base not in (3, 5):
        return "BOOT^" if compact else "REBOOT_ISSUED"
    if reboot and base not in (3, 5):
        return "BOOT@" if compact else "REBOOT_REQUESTED"
    if num & FLAG_DRAIN:
        if num & FLAG_COMPLETING or base in (3, 5):
            return ("DRNG" if compact else "DRAINING") + ("@" if reboot else star)
        if base == 4:
            return "ERROR" + star
        return ("DRAIN" if compact else "DRAINED") + star
    if num & FLAG_FAIL:
        if num & FLAG_COMPLETING or base == 3:
            return ("FAILG" if compact else "FAILING") + star
        return "FAIL" + star
    if base == 1:
        return "DOWN" + star
    if base in (3, 5) and reboot:
        return ("ALLOC@" if compact else "ALLOCATED@") if base == 3 else ("MIX@" if compact else "MIXED@")
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
            return "IDLE" + star
        if num & FLAG_RES:  # (as the real 22.05: resv / reserved)
            return "RESV" if compact else "RESERVED"
        return "IDLE~" if num & FLAG_POWERED_DOWN else "IDLE"
    if base == 5:
        return ("MIX" if compact else "MIXED") + star
    if base == 6:
        return ("FUTR" if compact else "FUTURE") + star
    if base == 4:
        return "ERROR" + star
    return ("UNK" if compact else "UNKNOWN") + star


# States sinfo -t accepts whose flags plurm never sets (reservations, Cray counters, cloud
# and power saving, the backfill plan): accepted, matching no node.
_NEVER_SET = {"RESV": 0x20, "RESERVED": 0x20, "NPC": 0x10, "PERFCTRS": 0x10, "CLOUD": 0x80,
              "PLANNED": 0x200000, "POWER_UP": 0x1000000, "POWERING_UP": 0x4000, "POWERING_DOWN": 0x40000}
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
            elif upper == "REBOOT":
                found = FLAG_REBOOT_REQUESTED | FLAG_REBOOT_ISSUED
            elif upper == "REBOOT_REQUESTED":
                found = FLAG_REBOOT_REQUESTED
            elif upper == "REBOOT_ISSUED":
                found = FLAG_REBOOT_ISSUED
            elif upper in _NEVER_SET:
                found = _NEVER_SET[upper]
        if found is None:
            # 22.05's list word for word (its "?" and second "unknown" included)
            valid = ("unknown,down,idle,allocated,?,mixed,future,drain,drained,draining,no_respond,"
                     "reserved,perfctrs,cloud,completing,powering_down,powered_down,power_down,"
                     "powering_up,fail,maint,reboot,reboot^,unknown")
            raise Usage(error_text(f'Bad state string: "{item}"') + error_text(f"valid states: {valid}"), 1, "stderr")
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
        self.output = None  # --json/--yaml: a plurm.tools.dataparser.emit.Output


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
        count = len(records)
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
        if len(records) == count and not opts.node_flag and letters & {"P", "R"}:
            # no node of the partition passed the filters: 22.05 still prints the partition
            # when the format names it, with no nodes and the state n/a (checked: sinfo -t
            # down, -n n9, -d, -r; -o %N or %a alone print no line)
            records.append(empty_record(part, part_inx))
    return records


NO_STATE = -1  # an empty record's state: sinfo prints n/a


def empty_record(part: dict, part_inx: int) -> Record:
    """A partition's line without nodes: every count and size 0, as 22.05 prints it."""
    rec = Record(part, part_inx, {}, NO_STATE)
    for key in ("cpus", "mem", "disk", "weight", "sockets", "cores", "threads", "free_mem", "cpu_load"):
        rec.min[key] = rec.max[key] = 0
    return rec


