"""Slurm time limits: ``MaxTime=1-12:00:00``, ``--time=90``, and how scontrol prints them.

Imports only ``re``, lazily, so the user commands can use it.
"""

from __future__ import annotations

from plurm.grammar.lazyre import lazy

__all__ = ["format_duration", "format_time_limit", "parse_time_limit"]

_INFINITE = frozenset({"UNLIMITED", "INFINITE", "-1"})
# days-hours[:minutes[:seconds]]   |   minutes[:seconds]   |   hours:minutes:seconds
# (at most 9 digits a field: enough for any limit, and no giant int() from a bad value)
_N = r"([0-9]{1,9})"
_DAYS_RE = lazy(rf"{_N}-{_N}(?::{_N}(?::{_N})?)?\Z")
_CLOCK_RE = lazy(rf"{_N}(?::{_N}(?::{_N})?)?\Z")


def parse_time_limit(value: str) -> int | None:
    """Minutes from a Slurm time string; ``None`` for UNLIMITED/INFINITE/-1.

    Accepted: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``; seconds round up
    to the next minute (``0:30`` -> 1).  Anything else raises ``ValueError``.
    """
    text = value.strip()
    if text.upper() in _INFINITE:
        return None
    m = _DAYS_RE.match(text)
    if m:
        days, hours = int(m.group(1)), int(m.group(2))
        minutes = int(m.group(3) or 0)
        seconds = int(m.group(4) or 0)
    else:
        m = _CLOCK_RE.match(text)
        if not m:
            raise ValueError(f"invalid time specification '{value}'")
        days = 0
        if m.group(3) is not None:  # H:M:S
            hours, minutes, seconds = int(m.group(1)), int(m.group(2)), int(m.group(3))
        else:  # M or M:S
            hours, minutes, seconds = 0, int(m.group(1)), int(m.group(2) or 0)
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    return (total + 59) // 60


def format_duration(seconds: int | None) -> str:
    """Seconds as scontrol prints RunTime/TimeLimit: ``[D-]HH:MM:SS``; None -> UNLIMITED."""
    if seconds is None:
        return "UNLIMITED"
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{sign}{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{sign}{hours:02d}:{minutes:02d}:{secs:02d}"


def format_time_limit(minutes: int | None) -> str:
    """Minutes as scontrol prints TimeLimit/MaxTime: ``1-00:00:00``, ``01:00:00``,
    ``00:05:00``; ``None`` -> ``UNLIMITED``."""
    return format_duration(None if minutes is None else minutes * 60)
