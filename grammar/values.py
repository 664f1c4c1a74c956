"""Typed parsers for the scalar values of sbatch/srun/salloc options, and their errors.

Scalars: counts and integers, time limits, memory sizes, node counts, and the keyword
options (``--exclusive``, ``--open-mode``, ``--distribution``, ``--hint``, ``--cpu-freq``,
...).  The values with structure (arrays, dependencies, signals, exports, GRES, mail types,
host lists, dates) are parsed by ``structvalues``, which imports the errors from here;
``options.PARSERS`` names every parser by the kind the option table gives.

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

from plurm.grammar.lazyre import re  # imported at first use: most submissions need no pattern

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: `typing` costs milliseconds of every sbatch start-up
    from typing import Any

__all__ = [
    "OptionError", "OptionValueError", "parse_time", "parse_memory", "parse_nodes",
    "parse_exclusive", "parse_open_mode", "parse_distribution", "parse_constraint",
    "mbytes_to_str", "minutes_to_str",
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
    if len(parts) == 2 and _cpu_freq_rank(parts[0]) > _cpu_freq_rank(parts[1]):
        # 22.05 (observed): "high-low" refused; the words rank above any kHz number, in their own
        # order (low, medium, high, highm1), as slurm encodes them
        raise OptionValueError("Invalid --cpu-freq argument", 255,
                               pre_errors=[f"min cpu-frec ({parts[0]}) must be < max cpu-freq ({parts[1]})"])
    return value


def _cpu_freq_rank(part: str) -> int:
    return int(part) if part.isdigit() else 0x80000001 + _CPU_FREQ_WORDS.index(part.lower())


_GPU_FREQ_WORDS = ("low", "medium", "high", "highm1")


def parse_gpu_freq(value: str, opt: str = "gpu-freq") -> str:
    """[[memory=]value][,[memory=]value][,verbose]: value low|medium|high|highm1 or MHz.
    Refused as 22.05.8's sbatch, srun and salloc word it (exit 255)."""
    for item in value.split(","):
        kind, eq, level = item.partition("=")
        if not eq and kind.lower() == "verbose":
            continue
        if eq and kind.lower() not in ("memory", "graphics"):
            level = ""
        word = (level if eq else kind).lower()
        if not (word.isdigit() or word in _GPU_FREQ_WORDS):
            raise OptionValueError(f"Invalid --gpu-freq argument: gpu:{value}", 255)
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


_CPU_BIND_WORDS = {"q", "quiet", "v", "verbose", "no", "none", "rank", "rank_ldom",
                   "sockets", "cores", "threads", "ldoms", "boards", "help"}
_CPU_BIND_LISTS = ("map_cpu", "mask_cpu", "map_ldom", "mask_ldom")


def parse_cpu_bind(value: str, opt: str = "cpu-bind") -> str:
    """srun --cpu-bind: its words, or map_cpu/mask_cpu/map_ldom/mask_ldom with a list of
    numbers (decimal or 0x hex, ``*count`` repeats); the list runs on over later commas.
    Refused as srun 22.05.8 words it (exit 1): the error, then a fatal line."""
    fatal = "srun: fatal: Failed to parse --cpu-bind= values."
    in_list, listing = False, ""
    for word in value.split(","):
        low = word.lower()
        kind, colon, first = low.partition(":")
        if colon and kind in _CPU_BIND_LISTS:
            in_list, item, listing = True, first, kind
        elif low in _CPU_BIND_WORDS:
            in_list = False
            continue
        elif in_list:
            item = low
        else:
            raise OptionValueError(fatal, 1, prefixed=False,
                                   pre_errors=[f'unrecognized --cpu-bind argument "{word}"'])
        # (22.05.8 takes map_cpu/map_ldom IDs in decimal only: "map_cpu:0x1" is refused at the x)
        decimal = listing.startswith("map_")
        m = re.fullmatch(r"([0-9]+)(\*[0-9]+)?" if decimal else r"(0x[0-9a-f]+|[0-9]+)(\*[0-9]+)?", item)
        if not m:
            bad = re.sub(r"^[0-9]*" if decimal else r"^(0x)?[0-9a-f]*", "", item)[:1] or item[:1]
            raise OptionValueError(fatal, 1, prefixed=False, pre_errors=[
                f"Failed to validate number: {item}, the offending character is {bad}"])
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
    if n is None or rest or n < 0:
        raise OptionValueError(f'Invalid numeric value "{count}" for --switches.', 1)
    if n > 0xFFFFFFFF:  # (sic, 22.05.8's words; strtol's value, saturated at LONG_MAX)
        raise OptionValueError(f"Numeric argument ({min(n, 2**63 - 1)}) to big for --switches.", 1)
    try:
        minutes = parse_time(wait, opt) if at else None
    except OptionValueError:  # 22.05 (observed): a bad wait is no wait given (MaxSwitchWait's 5 min)
        minutes = None
    return {"count": n, "max_wait_minutes": minutes}


def parse_string(value: str, opt: str = "") -> str:
    return value


def parse_flag(value: Any, opt: str = "") -> bool:
    return True
