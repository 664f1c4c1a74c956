"""squeue -v: the dump of the parsed options that Slurm 22.05's squeue prints on stdout
before its table, and the line that says what the controller returned.

The names and their order are those 22.05 prints (checked on the real squeue with the
options set and unset: ``(null)`` for a list not given, ``false``/``true`` and ``0``/``1``
for flags, ``nodes`` empty when not given, ``sibling`` with one space more).
"""

from __future__ import annotations

from plurm.tools.display import ctime_line
from plurm.tools.squeuefmt import Options

_RULE = "-----------------------------\n"


def _text(value: str | None) -> str:
    return value if value else "(null)"


def _flag(on: bool) -> str:
    return "true" if on else "false"


def dump(opts: Options) -> str:
    given = opts.given
    rows = [
        ("all", _flag("a" in given)),
        ("array", _flag(opts.array)),
        ("federation", _flag("federation" in given or "sibling" in given)),
        ("format", _text(opts.format)),
        ("iterate", str(opts.iterate)),
        ("job_flag", "1" if opts.job_flag else "0"),
        ("jobs", _text(",".join(opts.jobs))),
        ("licenses", _text(given.get("L"))),
        ("local", _flag("local" in given)),
        ("names", _text(",".join(opts.names))),
        ("nodes", given.get("w") or ""),
        ("partitions", _text(",".join(opts.partitions))),
        ("priority", _flag("P" in given)),
        ("reservation", _text(given.get("R"))),
        ("sibling", _flag("sibling" in given)),
        ("sort", _text(opts.sort)),
        ("start_flag", "1" if opts.start else "0"),
        ("states", _text(given.get("t"))),
        ("step_flag", "0" if opts.steps is None else "1"),
        ("steps", _text(",".join(opts.steps or []))),
        ("users", _text(",".join(opts.users))),
        ("verbose", str(opts.verbose)),
    ]
    # (22.05 pads sibling one column wider than the rest)
    return _RULE + "".join(f"{name:<{12 if name == 'sibling' else 11}} = {value}\n"
                           for name, value in rows) + _RULE


def records_line(jobs: list[dict], now: float) -> str:
    """After the load: two empty lines, then (when the controller returned jobs) the date
    and the time of its data; 22.05 says 0 for both when it returned none."""
    if not jobs:
        return "\n\nlast_update_time=0 records=0\n"
    return f"\n\n{ctime_line(now)}last_update_time={int(now)} records={len(jobs)}\n"
