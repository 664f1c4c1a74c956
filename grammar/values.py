"""Typed parsers for the values of sbatch/srun/salloc options.

Each parser takes the option's argument string (exactly as the option parser saw it, after the
batch-script tokenizer removed quotes and escapes) and returns a JSON-serialisable value, or
raises :class:`OptionValueError` carrying the line Slurm prints (without the ``sbatch: error:``
prefix, which depends on the command) and Slurm's exit status.

The rules follow Slurm's documented and observed behaviour (sbatch 22.05.8 run side by side
on this machine, ``sbatch -v``), with current Slurm winning where the two differ; no Slurm
source is copied.  This module is on every command's start-up path: standard library only,
nothing compiled at import time beyond a handful of small regular expressions.
"""
from __future__ import annotations

import time as _time

from plurm.grammar.lazyre import re  # imported at first use: most submissions need no pattern

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: `typing` costs milliseconds of every sbatch start-up
    from typing import Any, Callable

__all__ = [
    "OptionError", "OptionValueError", "PARSERS", "parse_time", "parse_memory", "parse_nodes",
    "parse_array", "parse_dependency", "parse_signal", "parse_export", "parse_gres",
    "parse_gpus", "parse_mail_type", "parse_begin", "parse_exclusive", "parse_open_mode",
    "parse_distribution", "parse_constraint", "parse_hostlist", "mbytes_to_str",
    "minutes_to_str", "MAX_ARRAY_SIZE",
]


class OptionError(Exception):
    """An error the command reports before (or instead of) submitting.

    ``lines`` are the complete lines for stderr, ``message`` the main (last) one, and
    ``exit_code`` the status Slurm exits with: 255 for option/value errors (Slurm's
    ``exit(-1)``), 1 for script and validation errors.
    """

    def __init__(self, lines: list[str] | str, exit_code: int = 255) -> None:
        self.lines: list[str] = [lines] if isinstance(lines, str) else list(lines)
        self.message: str = self.lines[-1] if self.lines else ""
        self.exit_code = exit_code
        super().__init__("\n".join(self.lines))


class OptionValueError(OptionError):
    """A value that does not parse.  ``text`` lacks the ``<prog>: error: `` prefix because
    the same parser serves sbatch, srun and salloc; ``pre_lines`` are printed before it
    verbatim (Slurm's time parser prints one unprefixed line of its own)."""

    def __init__(self, text: str, exit_code: int = 255, pre_lines: list[str] | None = None,
                 prefixed: bool = True, pre_errors: list[str] | None = None,
                 stage: str = "value") -> None:
        self.text = text
        # when sbatch reports it: "value" at once, "validate" after every option has been
        # read (before submitting), "submit" when the controller answers
        self.stage = stage
        self.pre_lines = list(pre_lines or [])     # printed verbatim
        self.pre_errors = list(pre_errors or [])   # printed as "<prog>: error: ..." lines
        # prefixed=False: the line is printed as is (getopt-style messages)
        self.prefixed = prefixed
        super().__init__(self.pre_lines + self.pre_errors + [text], exit_code)

    def for_prog(self, prog: str) -> OptionError:
        line = f"{prog}: error: {self.text}" if self.prefixed else self.text
        errs = [f"{prog}: error: {e}" for e in self.pre_errors]
        return OptionError(self.pre_lines + errs + [line], self.exit_code)


def _invalid(opt: str) -> OptionValueError:
    return OptionValueError(f"Invalid --{opt} specification")


# --------------------------------------------------------------------------------- numbers
_INT_RE = r"[ \t]*[+-]?\d+"


def _strtol(s: str) -> tuple[int | None, str]:
    """C strtol: optional leading blanks and sign; returns (value or None, rest)."""
    m = re.match(_INT_RE, s)
    if not m:
        return None, s
    return int(m.group()), s[m.end():]


def parse_positive_int(value: str, opt: str) -> int:
    """ntasks, cpus-per-task, ...: Slurm refuses anything but a whole number > 0, exit 1."""
    n, rest = _strtol(value)
    if n is None or rest or n <= 0:
        raise OptionValueError(f'Invalid numeric value "{value}" for --{opt}.', 1)
    return n


def parse_nonnegative_int(value: str, opt: str) -> int:
    n, rest = _strtol(value)
    if n is None or rest or n < 0:
        raise OptionValueError(f'Invalid numeric value "{value}" for --{opt}.', 1)
    return n


def parse_loose_int(value: str, opt: str) -> int:
    """Options Slurm reads with atoi(): a leading integer, else 0 (e.g. --nice=abc is 0)."""
    n, _ = _strtol(value)
    return n or 0


def parse_nice(value: str | None, opt: str = "nice") -> int:
    if not value:            # --nice without a value means +100 (sbatch man page)
        return 100
    n = parse_loose_int(value, opt)
    if abs(n) > 2147483645:  # NICE_OFFSET - 3: Slurm refuses wider adjustments
        raise OptionValueError("Invalid --nice value", 255)
    return n


# ------------------------------------------------------------------------------ time limits
# Patterns are kept as strings: re caches each compiled pattern on first use, so importing
# this module compiles nothing (it is on every command's start-up path).
_TIME_FORMS = [
    # (regex, fields) -- days, hours, minutes, seconds; the forms the sbatch man page lists
    (r"(\d+)", ("m",)),
    (r"(\d+):(\d+)", ("m", "s")),
    (r"(\d+):(\d+):(\d+)", ("h", "m", "s")),
    (r"(\d+)-(\d+)", ("d", "h")),
    (r"(\d+)-(\d+):(\d+)", ("d", "h", "m")),
    (r"(\d+)-(\d+):(\d+):(\d+)", ("d", "h", "m", "s")),
]
_SCALE = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def time_to_seconds(value: str) -> int | None:
    """Seconds for a Slurm time string, None for unlimited, -1 if it does not parse."""
    low = value.lower()
    if low in ("unlimited", "infinite", "-1"):
        return None
    if re.fullmatch(r"-\d+", value):
        # sbatch 22.05 accepts "-5" (it wraps to an enormous limit, reference
        # err_time_negative): the job gets no limit of its own.
        return None
    for rx, fields in _TIME_FORMS:
        m = re.fullmatch(rx, value)
        if m:
            return sum(int(g) * _SCALE[f] for g, f in zip(m.groups(), fields))
    return -1


def parse_time(value: str, opt: str = "time") -> int | None:
    """Minutes (seconds rounded up); None means UNLIMITED (also 0, as Slurm treats it)."""
    secs = time_to_seconds(value)
    if secs is None:
        return None
    if secs < 0:
        raise _invalid(opt)
    minutes = (secs + 59) // 60
    return None if minutes == 0 else minutes


def minutes_to_str(minutes: int | None) -> str:
    """Slurm's display form: [D-]HH:MM:SS or UNLIMITED."""
    if minutes is None:
        return "UNLIMITED"
    d, rem = divmod(minutes, 1440)
    h, m = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:00" if d else f"{h:02d}:{m:02d}:00"


# ---------------------------------------------------------------------------------- memory
_MEM_RE = r"[ \t]*\+?(\d+)(?:([KkMmGgTt])[Bb]?)?"
_MEM_UNIT = {"K": -1, "M": 0, "G": 1, "T": 2}


def parse_memory(value: str, opt: str = "mem") -> int:
    """Megabytes.  No unit means MB; K rounds up; 0 means all the memory of the node."""
    m = re.fullmatch(_MEM_RE, value)
    if not m:
        raise _invalid(opt)
    n, unit = int(m.group(1)), (m.group(2) or "M").upper()
    if unit == "K":
        return (n + 1023) // 1024
    return n * 1024 ** _MEM_UNIT[unit]


def mbytes_to_str(mb: int) -> str:
    """How sbatch -v prints a memory size: the largest exact unit; 0 prints as '0?'."""
    units = "MGTP?"
    i = 0
    while units[i] != "?":
        if mb and mb % 1024:
            break
        mb //= 1024
        i += 1
    return str(mb) if i == 0 else f"{mb}{units[i]}"


# ----------------------------------------------------------------------------------- nodes
_COUNT_RE = r"(\d+)([kKmM]?)"


def _node_count(s: str) -> int | None:
    m = re.fullmatch(_COUNT_RE, s)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1048576}[m.group(2).lower()]


def parse_nodes(value: str, opt: str = "nodes") -> list[int]:
    """[min, max]; "-N2" is [2, 2], "2-6" is [2, 6], "-4" is [1, 4]."""
    if value == "":
        raise OptionValueError('"" is not a valid node count')
    lo_s, dash, hi_s = value.partition("-")
    lo = _node_count(lo_s) if lo_s else 1
    if lo is None:   # with a '-', sbatch names just the bad minimum ("n[1-3]" -> "n[1")
        raise OptionValueError(f'"{lo_s if dash else value}" is not a valid node count')
    if not dash:
        return [lo, lo]
    if hi_s == "":
        raise OptionValueError(f"Maximum node count -1 is less than minimum node count {lo}")
    hi = _node_count(hi_s)
    if hi is None:   # sbatch names just the bad maximum ("2-5%2" -> "5%2")
        raise OptionValueError(f'"{hi_s}" is not a valid node count')
    if hi < lo:
        raise OptionValueError(f"Maximum node count {hi} is less than minimum node count {lo}")
    return [lo, hi]


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
    does; only when no word is known is the value refused.  NONE clears the set."""
    types: list[str] = []
    dropped: list[str] = []
    known = False
    for tok in value.split(","):
        up = tok.upper()
        if up == "NONE":
            types, known = [], True
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
    return {"types": types, "dropped": dropped}


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


# ------------------------------------------------------------------------- small keywords
def parse_exclusive(value: str | None, opt: str = "exclusive") -> str:
    if value is None or value == "":
        return "exclusive"
    low = value.lower()
    if low in ("user", "mcs", "topo", "exclusive"):
        return low
    raise _invalid(opt)


def parse_open_mode(value: str, opt: str = "open-mode") -> str:
    # Slurm looks only at the first letter
    if value[:1] in ("a", "A"):
        return "append"
    if value[:1] in ("t", "T"):
        return "truncate"
    raise _invalid(opt)


_DIST_L1 = ("block", "cyclic", "arbitrary", "*")
_DIST_L23 = ("block", "cyclic", "fcyclic", "*")


def parse_distribution(value: str, opt: str = "distribution") -> str:
    """block|cyclic|arbitrary|plane=N|*, then :level2[:level3], then ,Pack|,NoPack."""
    main, comma, pack = value.partition(",")
    if comma and pack.lower() not in ("pack", "nopack"):
        raise _invalid(opt)
    levels = main.split(":")
    first = levels[0].lower()
    ok = first in _DIST_L1 or re.fullmatch(r"plane=\d+", first) is not None
    ok = ok and len(levels) <= 3 and all(lv.lower() in _DIST_L23 for lv in levels[1:])
    if not ok:
        raise _invalid(opt)
    return value


def parse_constraint(value: str, opt: str = "constraint") -> dict[str, Any]:
    """The feature expression; Slurm's controller reads ',' as '&'."""
    return {"expression": value, "controller_reads_as": value.replace(",", "&")}


# ---------------------------------------------------------------------------------- hosts
def read_hostfile(path: str) -> str:
    """A -w/-x value with a '/' names a file; sbatch joins its lines with ','."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return ",".join(line.rstrip("\n") for line in fh if line.strip())
    except OSError as exc:
        raise OptionValueError(f"slurm_allocate_resources error opening file {path}, "
                               f"{exc.strerror}", 1) from None


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


# ------------------------------------------------------- keyword options (checked locally)
def parse_yes_no(value: str, opt: str = "kill-on-invalid-dep") -> bool:
    low = value.lower()
    if low in ("yes", "no"):
        return low == "yes"
    raise _invalid(opt)


def parse_zero_one(value: str, opt: str = "wait-all-nodes") -> int:
    n, rest = _strtol(value)
    if n is None or rest:
        raise OptionValueError(f'Invalid numeric value "{value}" for --{opt}.', 1)
    if n not in (0, 1):
        raise _invalid(opt)
    return n


def parse_no_kill(value: str | None, opt: str = "no-kill") -> bool:
    """--no-kill[=off]: 'off' turns it back off."""
    if value is None:
        return True
    if value.lower() == "off":
        return False
    raise _invalid(opt)


GRES_FLAGS = ("enforce-binding", "disable-binding", "multiple-tasks-per-sharing",
              "one-task-per-sharing", "allow-task-sharing")


def parse_gres_flags(value: str, opt: str = "gres-flags") -> list[str]:
    words = value.lower().split(",")
    if any(w not in GRES_FLAGS for w in words):
        raise _invalid(opt)
    return words


HINTS = ("compute_bound", "memory_bound", "multithread", "nomultithread", "help")


def parse_hint(value: str, opt: str = "hint") -> list[str]:
    words = value.lower().split(",")
    for w, given in zip(words, value.split(",")):
        if w not in HINTS:
            # sbatch applies --hint last, once the options it interacts with are known
            raise OptionValueError(f'unrecognized --hint argument "{given}", see --hint=help',
                                   1, stage="validate")
    return words


PROFILES = ("all", "none", "energy", "lustre", "network", "task")


def parse_profile(value: str, opt: str = "profile") -> list[str]:
    words = value.lower().split(",")
    if any(w not in PROFILES for w in words):
        raise OptionValueError(f"invalid --profile={value} option")
    return words


_ACCTG_TYPES = ("task", "energy", "network", "filesystem")


def parse_acctg_freq(value: str, opt: str = "acctg-freq") -> dict[str, int]:
    """N (task sampling seconds) or type=N,... ."""
    out: dict[str, int] = {}
    bad: list[str] = []
    for item in value.split(","):
        k, eq, v = item.partition("=")
        if not eq:
            k, v = "task", item
        if k.lower() not in _ACCTG_TYPES or not v.isdigit():
            bad.append(item)       # sbatch names each bad item on a line of its own
        else:
            out[k.lower()] = int(v)
    if bad:
        lines = [f"Invalid --acctg-freq specification: {b}" for b in bad]
        raise OptionValueError(lines[-1], pre_errors=lines[:-1])
    return out


_CPU_FREQ_WORDS = ("low", "medium", "high", "highm1", "conservative", "ondemand",
                   "performance", "powersave", "userspace", "schedutil")


def parse_cpu_freq(value: str, opt: str = "cpu-freq") -> str:
    """p1[-p2[:governor]] with p a frequency in kHz or low|medium|high|highm1, or a governor."""
    rng, colon, gov = value.partition(":")
    parts = rng.split("-") if rng else []
    ok = 1 <= len(parts) <= 2 and all(p.isdigit() or p.lower() in _CPU_FREQ_WORDS
                                      for p in parts)
    if colon:
        ok = ok and gov.lower() in _CPU_FREQ_WORDS[4:]
    if not ok:
        raise OptionValueError("Invalid --cpu-freq argument", 255,
                               pre_errors=[f'unrecognized --cpu-freq argument "{value}"'])
    return value


_MEM_BIND_WORDS = ("quiet", "q", "verbose", "v", "no", "none", "rank", "local", "sort",
                   "nosort", "prefer", "help", "p")


def parse_mem_bind(value: str, opt: str = "mem-bind") -> str:
    for w in value.split(","):
        low = w.lower()
        if low in _MEM_BIND_WORDS or re.fullmatch(
                r"(map_mem|mask_mem|map_ldom|mask_ldom)[:=].+", low):
            continue
        raise OptionValueError(f'unrecognized --mem-bind argument "{value}"')
    return value


def parse_gpu_bind(value: str, opt: str = "gpu-bind") -> str:
    """[verbose,]closest|none|map_gpu:...|mask_gpu:...|single:N|per_task:N.  sbatch only
    looks at the start: any word beginning with c (closest) or n (none) passes, and the
    forms with a colon are checked by their prefix (observed with sbatch 22.05.8)."""
    main = value[8:] if value.lower().startswith("verbose,") else value
    low = main.lower()
    if low[:1] in ("c", "n") or low.startswith(("map_gpu:", "mask_gpu:", "single:",
                                                "per_task:")):
        return value
    raise OptionValueError(f"Invalid --gpu-bind argument: gpu:{value}")


def parse_switches(value: str, opt: str = "switches") -> dict[str, Any]:
    """count[@max-time-to-wait]."""
    count, at, wait = value.partition("@")
    n, rest = _strtol(count)
    if n is None or rest:
        raise OptionValueError(f'Invalid numeric value "{count}" for --switches.', 1)
    return {"count": n, "max_wait_minutes": parse_time(wait, opt) if at else None}


def parse_string(value: str, opt: str = "") -> str:
    return value


def parse_flag(value: Any, opt: str = "") -> bool:
    return True


PARSERS: dict[str, Callable[..., Any]] = {
    "string": parse_string, "flag": parse_flag, "time": parse_time, "memory": parse_memory,
    "nodes": parse_nodes, "array": parse_array, "dependency": parse_dependency,
    "signal": parse_signal, "export": parse_export, "gres": parse_gres, "gpus": parse_gpus,
    "mail_type": parse_mail_type, "begin": parse_begin, "exclusive": parse_exclusive,
    "open_mode": parse_open_mode, "distribution": parse_distribution,
    "constraint": parse_constraint, "hostlist": parse_hostlist, "nice": parse_nice,
    "positive_int": parse_positive_int, "nonnegative_int": parse_nonnegative_int,
    "loose_int": parse_loose_int, "yes_no": parse_yes_no, "zero_one": parse_zero_one,
    "no_kill": parse_no_kill, "gres_flags": parse_gres_flags, "hint": parse_hint,
    "profile": parse_profile, "acctg_freq": parse_acctg_freq, "cpu_freq": parse_cpu_freq,
    "mem_bind": parse_mem_bind, "gpu_bind": parse_gpu_bind, "switches": parse_switches,
}
