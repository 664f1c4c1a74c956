"""How sinfo prints its lines: the field letters and long names, sorting, the table.

``format_sinfo`` is pure (node and partition dicts in, text out) and is tested against
Slurm 22.05's reference outputs.  The lines come from ``sinfo_records``; this module adds
the columns (``FIELDS``, ``-o``/``-O`` parsing), ``-S`` ordering and the header.  Start-up
budget: the stdlib, ``plurm.tools.display`` and ``plurm.grammar.hostlist``.
"""

from __future__ import annotations

from plurm.grammar.hostlist import compress, sort_key
from plurm.tools.display import (
    FormatField,
    ctime_line,
    format_timestamp,
    pad,
    parse_format,
    parse_long_format,
    partition_oversubscribe,
    sinfo_time_limit,
    sort_keys,
)
from plurm.tools.sinfo_records import Options, Record, build_records, error_text, state_compact, state_long

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
            if letter is None:  # "job": 22.05's word here (its -o says "node")
                errors.append(error_text(f"Invalid job format specification: {f.key}"))
                continue
            fields.append(FormatField(letter, f.width, f.right, f.suffix))
        return fields, errors
    for f in parse_format(opts.format or ""):
        if f.key is not None and f.key not in FIELDS:
            errors.append(error_text(f"Invalid node format specification: {f.key}"))
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
    for ch, before in sort_keys(spec, ",#+-"):
        reverse = before == "-"
        if ch == "P":
            if before == "#":
                rows.sort(key=lambda r: r.part_inx, reverse=reverse)
            else:
                rows.sort(key=lambda r: (r.part or {}).get("name", ""), reverse=reverse)
        elif ch in _SORT_KEYS:
            rows.sort(key=_SORT_KEYS[ch], reverse=reverse)
    return rows


# ----------------------------------------------------------------------------- output
def date_line(opts: Options, now: float) -> str:
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
    out: list[str] = [date_line(opts, ctx.now)]
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


