"""Display helpers shared by the user commands (squeue, sinfo, ...): Slurm's
time strings, timestamps, ``%[.][size]x`` format specs, state codes.

Stdlib only (``os``, ``time``) and the light hostlist module: every command imports this on its start-up path.
Command lines are read by the command-line kit, ``plurm.common.cli``.
scontrol-style durations (``01:00:00``) live in ``plurm.grammar.timefmt``
(``format_duration``, ``format_time_limit``); this module has the squeue/sinfo
style (``1:00:00``, ``10:00``, ``0:13``).
"""

from __future__ import annotations

import os
import time

from plurm import SLURM_COMPAT_VERSION, write_version
from plurm.grammar.hostlist import bitmap_ranges  # noqa: F401 (the tools import it from here)
from plurm.grammar.timefmt import format_duration, format_time_limit

__all__ = [
    "FormatField",
    "JOB_STATE_CODES",
    "JOB_STATE_NAMES",
    "bitmap_ranges",
    "convert_mb",
    "ctime_line",
    "format_duration",
    "format_elapsed",
    "format_time_limit",
    "format_timestamp",
    "job_state",
    "job_state_code",
    "pad",
    "parse_format",
    "parse_long_format",
    "render",
    "squeue_time_limit",
    "sinfo_time_limit",
    "version_line",
]

SECONDS_PER_YEAR = 365 * 24 * 3600

# Long job state names and their compact codes, as squeue prints them (%T / %t).
JOB_STATE_CODES = {
    "PENDING": "PD",
    "RUNNING": "R",
    "SUSPENDED": "S",
    "COMPLETED": "CD",
    "CANCELLED": "CA",
    "FAILED": "F",
    "TIMEOUT": "TO",
    "NODE_FAIL": "NF",
    "PREEMPTED": "PR",
    "BOOT_FAIL": "BF",
    "DEADLINE": "DL",
    "OUT_OF_MEMORY": "OOM",
    "COMPLETING": "CG",
    "CONFIGURING": "CF",
    "RESIZING": "RS",
    "RESV_DEL_HOLD": "RD",
    "REQUEUED": "RQ",
    "REQUEUE_FED": "RF",
    "REQUEUE_HOLD": "RH",
    "REVOKED": "RV",
    "SIGNALING": "SI",
    "SPECIAL_EXIT": "SE",
    "STAGE_OUT": "SO",
    "STOPPED": "ST",
}
JOB_STATE_NAMES = {code: name for name, code in JOB_STATE_CODES.items()}


def version_line() -> str:
    """What ``squeue -V`` / ``sinfo -V`` print."""
    return f"slurm {SLURM_COMPAT_VERSION}\n"


# ----------------------------------------------------------------------------- times
def _clock(secs: int) -> str:
    days, rest = divmod(secs, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def format_elapsed(seconds: float | int | None) -> str:
    """Seconds as squeue's TIME column prints them: ``0:13``, ``10:00``, ``1:02:03``,
    ``1-00:00:00``; ``INVALID`` below 0 or beyond a year."""
    if seconds is None:
        return "INVALID"
    secs = int(seconds)
    if secs < 0 or secs > SECONDS_PER_YEAR:
        return "INVALID"
    return _clock(secs)


def squeue_time_limit(minutes: int | None) -> str:
    """A job's time limit as squeue prints it (%l): ``UNLIMITED``, ``10:00``, ``365-00:00:00``."""
    if minutes is None:
        return "UNLIMITED"
    return format_elapsed(minutes * 60)


def sinfo_time_limit(minutes: int | None) -> str:
    """A partition's MaxTime as sinfo prints it (%l): ``infinite``, ``30:00``, ``1:00:00``,
    ``2-00:00:00``."""
    if minutes is None:
        return "infinite"
    return _clock(int(minutes) * 60)


def format_timestamp(t: float | None, environ: dict | None = None) -> str:
    """A local time as Slurm prints it (``2026-11-29T15:44:40``), honouring
    SLURM_TIME_FORMAT (``standard``, or a strftime format); ``Unknown`` for 0/None
    (callers that print ``N/A`` test for that first)."""
    if not t:
        return "Unknown"
    env = os.environ if environ is None else environ
    fmt = env.get("SLURM_TIME_FORMAT")
    if fmt == "relative":
        return _relative_time(t)
    if not fmt or fmt == "standard":
        fmt = "%Y-%m-%dT%H:%M:%S"
    return time.strftime(fmt, time.localtime(t))


def _relative_time(t: float) -> str:
    """SLURM_TIME_FORMAT=relative, as 22.05 prints it (checked on the real commands): today
    ``14:37:08``; the day before or after ``Ystday 12:37`` / ``Tomorr 12:37``; within a week
    ``Sat 12:37``; this year ``22 Dec 12:37``; otherwise ``6 Jan 2028``."""
    when, today = time.localtime(t), time.localtime()
    days = (time.mktime((when.tm_year, when.tm_mon, when.tm_mday, 12, 0, 0, 0, 0, -1)) -
            time.mktime((today.tm_year, today.tm_mon, today.tm_mday, 12, 0, 0, 0, 0, -1))) // 86400
    hm = time.strftime("%H:%M", when)
    if days == 0:
        return time.strftime("%H:%M:%S", when)
    if days in (-1, 1):
        return ("Ystday " if days < 0 else "Tomorr ") + hm
    if -7 < days < 7:
        return time.strftime("%a ", when) + hm
    day_month = f"{when.tm_mday} {time.strftime('%b', when)}"
    if when.tm_year == today.tm_year:
        return f"{day_month} {hm}"
    return f"{day_month} {when.tm_year}"


def ctime_line(now: float) -> str:
    """The date line that ``squeue -l`` / ``sinfo -l`` print first: ``Sun Nov 29 15:45:16 2026``."""
    return time.asctime(time.localtime(now)) + "\n"


def convert_mb(mb: int | float) -> str:
    """Megabytes with Slurm's exact unit conversion: 256 -> ``256M``, 1024 -> ``1G``, 0 -> ``0``."""
    value = int(mb)
    if value == 0:
        return "0"
    units = "MGTPE"
    idx = 0
    while value % 1024 == 0 and idx < len(units) - 1:
        value //= 1024
        idx += 1
    return f"{value}{units[idx]}"


# ----------------------------------------------------------------------------- states
def job_state(job: dict) -> str:
    """A job's long state for display: COMPLETING while resources are being released."""
    if job.get("completing", False):
        return "COMPLETING"
    return job.get("state", "PENDING")


def job_state_shown(job: dict) -> str:
    """The state squeue prints (%T): a running --reboot job whose nodes boot is CONFIGURING
    (core_reboot.py); everything else that reads a state treats it as RUNNING, as Slurm."""
    state = job_state(job)
    return "CONFIGURING" if state == "RUNNING" and job.get("configuring") else state


def job_state_code(job: dict) -> str:
    state = job_state_shown(job)
    return JOB_STATE_CODES.get(state, state[:2])


# ----------------------------------------------------------------------------- fields
def partition_oversubscribe(part: dict | None) -> str:
    """A partition's OverSubscribe as sinfo %h and scontrol show it: YES and FORCE with their
    default of 4 jobs per resource (YES:4, FORCE:4)."""
    if part is None:
        return "n/a"
    value = str(part.get("oversubscribe", "NO")).upper()
    return value + ":4" if value in ("YES", "FORCE") else value


def job_oversubscribe(job: dict) -> str:
    """squeue %h and scontrol's OverSubscribe= for a job: NO when it wants whole nodes, YES
    when it asked to share (-s) or shares CPUs now (a FORCE partition), OK otherwise."""
    spec = job.get("spec") or {}
    if spec.get("exclusive"):
        return "NO"
    if spec.get("oversubscribe") or job.get("share_rows"):
        return "YES"
    return "OK"


def sort_keys(spec: str, marks: str = ",+-") -> list[tuple[str, str]]:
    """The keys of a -S spec, last to first (squeue and sinfo apply them as stable sorts in
    that order), each with the character before it ('-': descending; '#': sinfo's
    partition order).  ``marks`` are the characters that are not keys."""
    return [(spec[i], spec[i - 1] if i > 0 else "") for i in range(len(spec) - 1, -1, -1) if spec[i] not in marks]


def pad(text: str, width: int, right: bool, cut: bool = True) -> str:
    """One field as Slurm's _print_str writes it: right-justified with '.', truncated to
    ``width`` (left-justified text always; right-justified only when ``cut``), padded."""
    if width <= 0:
        return text
    if right:
        text = text.rjust(width)
        if cut:
            text = text[:width]
    else:
        text = text[:width]
    return text.ljust(width)


class FormatField:
    """One ``%[.][size]x`` item of a format: ``key`` is the field letter (or a -O name),
    ``key is None`` for literal text (the format's prefix)."""

    __slots__ = ("key", "width", "right", "suffix")

    def __init__(self, key: str | None, width: int = 0, right: bool = False, suffix: str = "") -> None:
        self.key = key
        self.width = width
        self.right = right
        self.suffix = suffix

    def __repr__(self) -> str:
        return f"FormatField({self.key!r}, {self.width}, {self.right}, {self.suffix!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FormatField) and (self.key, self.width, self.right, self.suffix) == (
            other.key, other.width, other.right, other.suffix)


def parse_format(fmt: str) -> list[FormatField]:
    """Split a ``-o`` format the way Slurm does: text before the first ``%`` is a prefix;
    each ``%`` starts a token ``[.][digits]letter`` whose remaining text is its suffix."""
    fields: list[FormatField] = []
    first = fmt.find("%")
    if first == -1:
        return [FormatField(None, suffix=fmt)] if fmt else []
    if first > 0:
        fields.append(FormatField(None, suffix=fmt[:first]))
    for token in fmt[first + 1:].split("%"):
        if not token:
            continue  # "%%": strtok skips empty tokens
        i = 0
        right = False
        if token[0] == ".":
            right = True
            i = 1
        width = 0
        while i < len(token) and token[i].isdigit():
            width = width * 10 + int(token[i])
            i += 1
        key = token[i] if i < len(token) else ""
        fields.append(FormatField(key, width, right, token[i + 1:]))
    return fields


def parse_long_format(fmt: str, default_width: int = 20) -> list[FormatField]:
    """Split a ``-O`` format: ``Name[:[.][size][suffix]]`` items separated by commas."""
    fields: list[FormatField] = []
    for token in fmt.split(","):
        if not token:
            continue
        name, sep, rest = token.partition(":")
        right = False
        width = default_width
        suffix = ""
        if sep:
            if rest.startswith("."):
                right = True
                rest = rest[1:]
            digits = ""
            while rest and rest[0].isdigit():
                digits += rest[0]
                rest = rest[1:]
            width = int(digits) if digits else 0
            suffix = rest
        fields.append(FormatField(name.strip(), width, right, suffix))
    return fields


def render(fields: list[FormatField], values: list[tuple[str, bool]]) -> str:
    """Join one line: ``values[i]`` is (text, cut) for field i (ignored for prefixes)."""
    parts: list[str] = []
    for field, (text, cut) in zip(fields, values):
        if field.key is None:
            parts.append(field.suffix)
            continue
        parts.append(pad(text, field.width, field.right, cut))
        parts.append(field.suffix)
    return "".join(parts)


# ----------------------------------------------------------------------------- reports
def run_iterating(run_once, iterate: float | None) -> int:
    """Print one report (a list of (stream, text) chunks), or one every ``iterate``
    seconds (squeue/sinfo -i) until interrupted; return the last exit code."""
    import sys

    while True:
        chunks, rc = run_once()
        for stream, text in chunks:
            (sys.stdout if stream == "out" else sys.stderr).write(text)
            if stream == "out":
                sys.stdout.flush()
        if not iterate:
            return rc
        sys.stdout.write("\n")
        sys.stdout.flush()
        try:
            time.sleep(iterate)
        except KeyboardInterrupt:
            return 130


def info_action(action: str | None, help_text: str, usage_text: str) -> bool:
    """Answer --help, --usage or --version (``action``) on stdout; True when answered."""
    import sys

    if action == "help":
        sys.stdout.write(help_text)
    elif action == "usage":
        sys.stdout.write(usage_text)
    elif action == "version":
        write_version()
    else:
        return False
    return True
