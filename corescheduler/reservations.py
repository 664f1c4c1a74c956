"""Advance reservations: the record, ``scontrol create|update reservation``'s keys, and the
questions the scheduler asks of a reservation (is it active, does a job's run overlap it).

Pure, as the core is: the clock comes as ``now``.  The record is a msgspec Struct, kept by
the controller in the state store's meta table (core_resv.take_reservations), so that a
restarted plurmctld has the reservations it had.  Named ``AdvanceReservation``: backfill.py
has a ``Reservation`` of its own, the plan it makes for a pending job.

Slurm's words (checked against the real Slurm 22.05, tests/corescheduler/reference/reservations):
the errors below are what ``scontrol`` prints after "Error creating the reservation: ".
"""

from __future__ import annotations

import msgspec

from plurm.corescheduler.errors import RequestError

# The flags plurm acts on, and the ones it accepts and shows as Slurm does (no effect here).
FLAGS_ACTING = ("MAINT", "IGNORE_JOBS", "DAILY", "WEEKLY", "FLEX", "OVERLAP", "SPEC_NODES",
                "NO_HOLD_JOBS_AFTER_END")
FLAGS_KEPT = ("WEEKDAY", "WEEKEND", "ANY_NODES", "STATIC_ALLOC", "PART_NODES", "PURGE_COMP", "REPLACE",
              "REPLACE_DOWN", "TIME_FLOAT", "MAGNETIC", "FIRST_CORES")
_FLAG_ORDER = ("MAINT", "FLEX", "OVERLAP", "IGNORE_JOBS", "DAILY", "WEEKLY", "WEEKDAY", "WEEKEND",
               "ANY_NODES", "STATIC_ALLOC", "PART_NODES", "PURGE_COMP", "MAGNETIC", "NO_HOLD_JOBS_AFTER_END",
               "REPLACE", "REPLACE_DOWN", "TIME_FLOAT", "FIRST_CORES", "SPEC_NODES")
_FLAG_ALIASES = {"NO_HOLD_JOBS": "NO_HOLD_JOBS_AFTER_END"}

# How long a repeating reservation's period is, in seconds.
REPEATS = {"DAILY": 86400.0, "WEEKLY": 7 * 86400.0}

ACTIVE = "ACTIVE"
INACTIVE = "INACTIVE"

# Slurm's words.
INVALID_RESV = "Requested reservation is invalid"
BUSY = "Requested nodes are busy"
OVERLAPS = "Requested reservation overlaps with another reservation"
BAD_NODE = "Invalid node name specified"
NODE_CONFIG = "Requested node configuration is not available"
BAD_TIME = "Invalid time specification"
BAD_USER = "Invalid user id"
BAD_ACCOUNT = "Invalid account or account/partition combination specified"
BAD_PARTITION = "Invalid partition name specified"
DUPLICATE = "Duplicate reservation name"
NO_USERS = "Either Users/Groups and/or Accounts must be specified.  No reservation created."
NO_START = "A start time must be given.  No reservation created."
NAME_LIMIT = 1024


class AdvanceReservation(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One reservation as the controller keeps it (times in seconds since the epoch)."""

    name: str
    start_time: float
    end_time: float
    nodes: list[str] = []  # in slurm.conf order
    users: list[str] = []
    accounts: list[str] = []
    groups: list[str] = []
    partition: str | None = None
    flags: list[str] = []
    features: str | None = None

    def state(self, now: float) -> str:
        return ACTIVE if self.start_time <= now < self.end_time else INACTIVE

    def overlaps(self, start: float, end: float | None) -> bool:
        """Does [start, end) (end None: no end) meet this reservation's time?"""
        return self.end_time > start and (end is None or end > self.start_time)

    def admits(self, user: str, account: str | None, groups: frozenset[str] = frozenset()) -> bool:
        """May a job of ``user`` (in ``groups``) charged to ``account`` run in it?  (Users,
        Groups and Accounts: any one of them lets it in, as Slurm's documentation says.)"""
        if self.users and user in self.users:
            return True
        if self.groups and groups.intersection(self.groups):
            return True
        return bool(self.accounts and account and account in self.accounts)

    def roll(self, now: float) -> bool:
        """A DAILY/WEEKLY reservation that ended moves on by its period (as often as it takes
        to reach the future); True if it did."""
        period = next((REPEATS[f] for f in self.flags if f in REPEATS), None)
        if period is None or self.end_time > now:
            return False
        steps = int((now - self.end_time) // period) + 1
        self.start_time += steps * period
        self.end_time += steps * period
        return True


def flag_text(flags: list[str]) -> str:
    ordered = sorted(flags, key=lambda f: _FLAG_ORDER.index(f) if f in _FLAG_ORDER else len(_FLAG_ORDER))
    return ",".join(ordered)  # (none: "Flags=", as Slurm prints it)


def parse_flags(value: str, current: list[str]) -> list[str]:
    """Flags=A,B (replace), Flags+=A / Flags-=A come as "+A" / "-A" from scontrol_resv."""
    flags = list(current) if value[:1] in "+-" else []
    mode = value[:1] if value[:1] in "+-" else ""
    for word in filter(None, (w.strip().upper() for w in value.lstrip("+-").split(","))):
        word = _FLAG_ALIASES.get(word, word)
        if word not in FLAGS_ACTING and word not in FLAGS_KEPT:
            raise RequestError(f"Error parsing flags {word}.  No reservation created.", "InvalidFlag")
        if mode == "-":
            if word in flags:
                flags.remove(word)
        elif word not in flags:
            flags.append(word)
    if "DAILY" in flags and "WEEKLY" in flags:
        raise RequestError(INVALID_RESV, "InvalidReservation")
    return flags


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_time(value: str, now: float) -> float:
    """StartTime/EndTime as the controller reads them: seconds since the epoch (scontrol turns
    the calendar forms, which need the local time zone, into that: tools/scontrol_resv.py) or
    now[+N[seconds|minutes|hours|days|weeks]] (relative to the core's clock)."""
    text = value.strip().lower()
    try:
        if text.isdigit() and len(text) <= 12:
            return float(text)
        if text == "now":
            return float(int(now))
        if text.startswith("now+"):
            rest = text[4:]
            digits = rest[:len(rest) - len(rest.lstrip("0123456789"))]
            unit = rest[len(digits):] or "s"
            if digits and len(digits) <= 9 and unit in ("seconds", "minutes", "hours", "days", "weeks",
                                                       "second", "minute", "hour", "day", "week", *_UNITS):
                return float(int(now) + int(digits) * _UNITS[unit[0]])
    except ValueError:
        pass
    raise RequestError(BAD_TIME, "InvalidTime")


def parse_duration(value: str) -> float:
    """Duration=minutes | [days-]hours:minutes:seconds | UNLIMITED (a year, as plurm reads it)."""
    from plurm.grammar.timefmt import parse_time_limit

    try:
        minutes = parse_time_limit(value)
    except ValueError:
        raise RequestError(BAD_TIME, "InvalidTime") from None
    return 365 * 86400.0 if minutes is None else minutes * 60.0


def split_list(value: str) -> list[str]:
    return [w for w in (part.strip() for part in value.split(",")) if w]
