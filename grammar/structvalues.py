"""Typed parsers for the sbatch/srun/salloc option values that have structure.

Job arrays (``--array``), dependencies, signals, ``--export``, GRES and GPU requests, mail
types, host lists, and the dates of ``--begin``/``--deadline``: each value is a list or a
record (a date: one of Slurm's absolute, relative and named forms).  The scalar values and
the errors they raise are ``values``'; this module builds on it, never the other way round.
Same rules as there: Slurm's documented and observed behaviour (sbatch 22.05.8), no Slurm
source copied; standard library only, nothing compiled at import time.
"""
from __future__ import annotations

import time as _time

from plurm.grammar.lazyre import re  # imported at first use: most submissions need no pattern

from .values import OptionValueError, _invalid

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: `typing` costs milliseconds of every sbatch start-up
    from typing import Any

__all__ = [
    "MAX_ARRAY_SIZE", "parse_array", "parse_dependency", "parse_signal", "parse_export",
    "parse_gres", "parse_gpus", "parse_mail_type", "merge_mail_type", "parse_begin", "time_to_iso", "read_hostfile",
    "parse_hostlist",
]

# ----------------------------------------------------------------------------------- array
MAX_ARRAY_SIZE = 1001  # slurm.conf MaxArraySize default: indices 0..1000
_ARRAY_ERR = "Batch job submission failed: Invalid job array specification"


def _array_error() -> OptionValueError:
    return OptionValueError(_ARRAY_ERR, 1, stage="submit")
_RANGE_RE = r"(\d+)(?:-(\d+)(?::(\d+))?)?"


def parse_array(value: str, opt: str = "array", max_array_size: int = MAX_ARRAY_SIZE
                ) -> dict[str, Any]:
    """{"indices": [...], "max_running": int|None, "spec": value}.

    Slurm's sbatch passes the string through and the controller refuses it; the message
    and status (1) are the controller's, as in the reference err_array_*.
    """
    spec, pct, throttle = value.partition("%")
    max_running = None
    if pct:
        if not throttle.isdigit():
            raise _array_error()
        max_running = int(throttle)
    indices: set[int] = set()
    for part in spec.split(","):
        m = re.fullmatch(_RANGE_RE, part)
        if not m:
            raise _array_error()
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) is not None else first
        step = int(m.group(3)) if m.group(3) is not None else 1
        if last < first or step <= 0 or last >= max_array_size:
            raise _array_error()
        indices.update(range(first, last + 1, step))
    return {"indices": sorted(indices), "max_running": max_running, "spec": value}


# ------------------------------------------------------------------------------ dependency
DEPENDENCY_TYPES = ("after", "afterany", "afterburstbuffer", "aftercorr", "afternotok",
                    "afterok", "singleton", "expand")
_DEP_ERR = "Batch job submission failed: Job dependency problem"


def _dep_error() -> OptionValueError:
    return OptionValueError(_DEP_ERR, 1, stage="submit")
_JOBID_RE = r"(\d+(?:_\d+|_\*)?)(?:\+(\d+))?"


def parse_dependency(value: str, opt: str = "dependency") -> dict[str, Any]:
    """{"combine": "all"|"any", "conditions": [{"type", "job_ids", "minutes"}], "spec"}.

    ',' joins conditions that must all hold, '?' conditions of which any may; mixing the two
    is refused (by the controller, status 1, like every dependency syntax error).
    """
    if "," in value and "?" in value:
        raise _dep_error()
    combine = "any" if "?" in value else "all"
    conditions = []
    for part in value.split("?" if combine == "any" else ","):
        kind, colon, rest = part.partition(":")
        kind = kind.lower()
        if kind == "singleton" and not colon:
            conditions.append({"type": "singleton", "job_ids": [], "minutes": None})
            continue
        if kind not in DEPENDENCY_TYPES or kind == "singleton" or not rest:
            # a bare job id list ("123:456") is the old form of afterany
            if kind.isdigit() or re.fullmatch(r"\d+(:\d+)*", part):
                conditions.append({"type": "afterany", "job_ids": part.split(":"),
                                   "minutes": None})
                continue
            raise _dep_error()
        ids, minutes = [], None
        for tok in rest.split(":"):
            m = re.fullmatch(_JOBID_RE, tok)
            if not m:
                raise _dep_error()
            ids.append(m.group(1))
            if m.group(2) is not None:
                minutes = int(m.group(2))
        conditions.append({"type": kind, "job_ids": ids, "minutes": minutes})
    return {"combine": combine, "conditions": conditions, "spec": value}


# ---------------------------------------------------------------------------------- signal
# The names Slurm knows (observed: TRAP, SEGV, PIPE, CHLD, WINCH, SYS are refused by name;
# any positive number is taken, and shown by name only when it has one here).
SIGNALS = {"HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "USR1": 10, "USR2": 12,
           "ALRM": 14, "TERM": 15, "CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21, "TTOU": 22,
           "URG": 23, "XCPU": 24}
_SIGNAMES = {v: k for k, v in SIGNALS.items()}
_SIGNAL_RE = r"(?:([RBrb]*):)?([A-Za-z0-9]+)(?:@(\d+))?"


def parse_signal(value: str, opt: str = "signal") -> dict[str, Any]:
    """[{R|B}:]sig[@seconds]; the warning time defaults to 60 s."""
    m = re.fullmatch(_SIGNAL_RE, value)
    if not m:
        raise _invalid(opt)
    flags, sig, secs = (m.group(1) or "").upper(), m.group(2).upper(), m.group(3)
    if sig.isdigit():
        number = int(sig)
        if not 1 <= number <= 0xFFFF:  # sbatch takes any positive number
            raise _invalid(opt)
        name = _SIGNAMES.get(number, str(number))
    else:
        name = sig[3:] if sig.startswith("SIG") else sig
        if name not in SIGNALS:
            raise _invalid(opt)
        number = SIGNALS[name]
    warn = 60 if secs is None else int(secs)
    if warn > 0xFFFF:
        raise _invalid(opt)
    return {"signal": name, "number": number, "warn_seconds": warn,
            "batch_shell_only": "B" in flags, "on_reservation_end": "R" in flags}


# ---------------------------------------------------------------------------------- export
def parse_export(value: str, opt: str = "export") -> dict[str, Any]:
    """ALL | NONE | NIL | [ALL,]NAME[=value],...  (a list without ALL exports only the
    listed names plus SLURM_*)."""
    up = value.upper()
    if up in ("ALL", "NONE", "NIL"):
        return {"mode": up, "names": [], "assignments": {}}
    mode, names, assignments = "list", [], {}
    for tok in value.split(","):
        if tok.upper() == "ALL":
            mode = "ALL"
        elif tok.upper() in ("NONE", "NIL"):
            mode = tok.upper()
        elif "=" in tok:
            k, _, v = tok.partition("=")
            assignments[k] = v
            names.append(k)
        elif tok:
            names.append(tok)
    return {"mode": mode, "names": names, "assignments": assignments}


# ------------------------------------------------------------------------------ gres, gpus
_GRES_ERR = "Invalid generic resource (gres) specification"


def _gres_error() -> OptionValueError:
    # sbatch checks GRES once every option is read (status 1)
    return OptionValueError(_GRES_ERR, 1, stage="validate")
_GRES_COUNT_RE = r"(\d+)([kKmMgGtT]?)"
_SHARING = ("mps", "shard")


def _gres_count(s: str) -> int | None:
    m = re.fullmatch(_GRES_COUNT_RE, s)
    if not m:
        return None
    return int(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " ")


def parse_gres(value: str, opt: str = "gres") -> list[dict[str, Any]]:
    """[{"name", "type", "count"}] from name[:type][:count],...  ("gres:" prefix allowed)."""
    if value.lower() == "none" or value == "":   # "--gres=" clears the request
        return []
    out = []
    for item in value.split(","):
        if item.startswith("gres:") or item.startswith("gres/"):
            item = item[5:]
        fields = item.split(":")
        name = fields[0]
        if not name or len(fields) > 3 or any(f == "" for f in fields):
            raise _gres_error()
        gtype, count = None, 1
        if len(fields) == 2:
            c = _gres_count(fields[1])
            if c is None:
                gtype = fields[1]
            else:
                count = c
        elif len(fields) == 3:
            gtype = fields[1]
            c = _gres_count(fields[2])
            if c is None:
                raise _gres_error()
            count = c
        out.append({"name": name, "type": gtype, "count": count})
    names = {g["name"] for g in out}
    # a whole GPU and a share of one (mps/shard) may not be requested together
    if "gpu" in names and names & set(_SHARING):
        raise _gres_error()
    return out


def parse_gpus(value: str, opt: str = "gpus") -> dict[str, Any]:
    """{"type", "count"} from [type:]count."""
    if value == "":
        return {"type": None, "count": 0}   # "--gpus=" clears the request
    gtype, colon, cnt = value.rpartition(":")
    n = _gres_count(cnt)
    # an unreadable count is None: sbatch passes it on and the controller refuses it (the
    # front end reports that after its own GPU checks, which read it as 0)
    return {"type": gtype or None, "count": n}


# ------------------------------------------------------------------------------- mail-type
MAIL_TYPES = ("NONE", "BEGIN", "END", "FAIL", "REQUEUE", "ALL", "INVALID_DEPEND",
              "STAGE_OUT", "TIME_LIMIT", "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50",
              "ARRAY_TASKS")
MAIL_ALL = ("BEGIN", "END", "FAIL", "REQUEUE", "INVALID_DEPEND", "STAGE_OUT")


def parse_mail_type(value: str, opt: str = "mail-type") -> dict[str, Any]:
    """{"types": [...], "dropped": [...]}: unknown words are dropped silently, as Slurm
    does; only when no word is known is the value refused.  NONE anywhere in the list
    makes the whole value select nothing (22.05.8: ``BEGIN,NONE`` and ``NONE,BEGIN`` are
    both NONE); a repeated --mail-type adds to the earlier ones (see ``merge_mail_type``)."""
    types: list[str] = []
    dropped: list[str] = []
    known = none = False
    for tok in value.split(","):
        up = tok.upper()
        if up == "NONE":
            none = known = True
        elif up == "ALL":
            known = True
            types += [t for t in MAIL_ALL if t not in types]
        elif up in MAIL_TYPES:
            known = True
            if up not in types:
                types.append(up)
        elif tok:
            dropped.append(tok)
    if not known:
        raise _invalid(opt)
    return {"types": [] if none else types, "dropped": dropped}


def merge_mail_type(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """A second --mail-type (another directive, the command line after the script) adds
    its events to the first one's, as sbatch 22.05.8 ORs the flags: ``--mail-type=BEGIN
    --mail-type=END`` is BEGIN,END and a later NONE takes nothing away."""
    return {"types": before["types"] + [t for t in after["types"] if t not in before["types"]],
            "dropped": before["dropped"] + after["dropped"]}


# --------------------------------------------------------------------------- begin/deadline
_REL_RE = r"(?i)now(?:\+(\d+)(seconds?|minutes?|hours?|days?|weeks?|[smhdw])?)?"
_REL_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_NAMED = {"midnight": (0, 0), "noon": (12, 0), "elevenses": (11, 0), "fika": (15, 0),
          "teatime": (16, 0)}
_HMS_RE = r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([AaPp][Mm])?"


def _local(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0) -> int:
    return int(_time.mktime((y, mo, d, h, mi, s, 0, 0, -1)))


_TIME_WORDS = ("now", "today", "tomorrow", "midnight", "noon", "elevenses", "fika",
               "teatime")


def _bad_pos(value: str) -> int:
    """Where Slurm's time parser says it gave up (approximation of its "pos=N", matched
    against sbatch 22.05.8 for the common shapes)."""
    low = value.lower()
    for w in _TIME_WORDS:
        if low.startswith(w):
            return len(w) + (1 if low[len(w):len(w) + 1] == "+" else 0)
    lead = len(value) - len(value.lstrip("-+:/. "))
    if lead:
        return lead                   # "--nice": it stops after the punctuation
    d = len(value) - len(value.lstrip("0123456789"))
    if value == "0":
        return -1                     # as sbatch reports it
    nxt = value[d:d + 1]
    if d == 4 and nxt == "-":
        return 5                      # YYYY- then a bad month/day
    if nxt == ":":
        return d + 1                  # HH: then bad minutes
    if nxt in ("/", "."):
        return len(value)
    return min(d, 2)


def parse_begin(value: str, opt: str = "begin", now: float | None = None) -> int:
    """Unix time for the forms of the sbatch man page (--begin/--deadline):
    now[+N[units]], today, tomorrow, midnight, noon, fika, teatime, elevenses,
    HH:MM[:SS][AM|PM], MMDD[YY], MM/DD[/YY], MM.DD[.YY], YYYY-MM-DD[THH:MM[:SS]]
    (date and time may be combined as DATE THH:MM)."""
    t = _time.time() if now is None else now
    lt = _time.localtime(t)
    v = value.strip()
    low = v.lower()
    # Slurm's time parser prints its own unprefixed line first (not for an empty value)
    err = OptionValueError(f"Invalid --{opt} specification", 255,
                           [f"Invalid time specification (pos={_bad_pos(value)}): {value}"]
                           if value else [])
    m = re.fullmatch(_REL_RE, low)
    if m:
        n = int(m.group(1) or 0)
        unit = (m.group(2) or "s")[0]
        return int(t) + n * _REL_UNIT[unit]
    if low == "today":
        return _local(lt.tm_year, lt.tm_mon, lt.tm_mday)
    if low == "tomorrow":
        return _local(lt.tm_year, lt.tm_mon, lt.tm_mday + 1)
    if low in _NAMED:
        h, mi = _NAMED[low]
        ts = _local(lt.tm_year, lt.tm_mon, lt.tm_mday, h, mi)
        return ts if ts > t else _local(lt.tm_year, lt.tm_mon, lt.tm_mday + 1, h, mi)
    date_part, sep, time_part = v.partition("T")
    m = re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})", date_part)
    if m:
        y, mo, d = (int(x) for x in m.groups())
        h = mi = s = 0
        if sep:
            tm = re.fullmatch(_HMS_RE, time_part)
            if not tm:
                raise err
            h, mi, s = int(tm.group(1)), int(tm.group(2)), int(tm.group(3) or 0)
        if not (1 <= mo <= 12 and 1 <= d <= 31 and h < 24 and mi < 60 and s < 60):
            raise err
        return _local(y, mo, d, h, mi, s)
    m = re.fullmatch(_HMS_RE, v)
    if m:
        h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        if m.group(4):
            if h > 12:
                raise err
            h = h % 12 + (12 if m.group(4).lower() == "pm" else 0)
        if h > 23 or mi > 59 or s > 59:
            raise err
        ts = _local(lt.tm_year, lt.tm_mon, lt.tm_mday, h, mi, s)
        return ts if ts > t else _local(lt.tm_year, lt.tm_mon, lt.tm_mday + 1, h, mi, s)
    m = (re.fullmatch(r"(\d{2})(\d{2})(\d{2})?", v)
         or re.fullmatch(r"(\d{1,2})/(\d{1,2})(?:/(\d{2}))?", v)
         or re.fullmatch(r"(\d{1,2})\.(\d{1,2})(?:\.(\d{2}))?", v))
    if m:
        mo, d = int(m.group(1)), int(m.group(2))
        y = 2000 + int(m.group(3)) if m.group(3) else lt.tm_year
        if not (1 <= mo <= 12 and 1 <= d <= 31):
            raise err
        ts = _local(y, mo, d)
        if not m.group(3) and ts + 86400 <= t:
            ts = _local(y + 1, mo, d)
        return ts
    raise err


def time_to_iso(ts: int) -> str:
    return _time.strftime("%Y-%m-%dT%H:%M:%S", _time.localtime(ts))


# ---------------------------------------------------------------------------------- hosts
def read_hostfile(path: str) -> str:
    """A -w/-x value with a '/' names a file; sbatch joins its lines with ','."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return ",".join(line.rstrip("\n") for line in fh if line.strip())
    except OSError as exc:
        raise OptionValueError(f"slurm_allocate_resources error opening file {path}, "
                               f"{exc.strerror}", 1) from None


def parse_nodefile(value: str, opt: str = "nodefile") -> list[str]:
    """-F/--nodefile: the host names in a file (any lines, any separators), expanded; an
    unreadable file is sbatch's error, exit status 255 (22.05.8, measured)."""
    try:
        with open(value, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        raise OptionValueError(f"Invalid --{opt} node file", 255, pre_errors=[
            f"slurm_allocate_resources error opening file {value}, {exc.strerror}"]) from None
    from .hostlist import HostlistError, expand
    try:
        return list(expand(",".join(text.split())))
    except (HostlistError, ValueError):
        raise OptionValueError("Batch job submission failed: Invalid node name specified",
                               1, stage="submit") from None


def parse_hostlist(value: str, opt: str = "nodelist") -> list[str]:
    """Expanded host names (a value containing '/' names a file of host names).

    sbatch itself passes a malformed list on and the controller refuses it, so the error
    is the controller's (status 1, reported after the local checks)."""
    if "/" in value:
        value = read_hostfile(value)
    from .hostlist import HostlistError, expand   # imported only when a host list is given
    try:
        return list(expand(value.replace(" ", ",")))
    except (HostlistError, ValueError):
        raise OptionValueError("Batch job submission failed: Invalid node name specified",
                               1, stage="submit") from None
