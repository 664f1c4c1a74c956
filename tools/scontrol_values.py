"""scontrol update's values, checked as Slurm's scontrol checks them before it sends anything.

Stdlib only (and plurm.grammar.timefmt, which imports ``re`` lazily): scontrol's start-up budget.
"""

from __future__ import annotations

import sys

_UINT32_MAX = 4294967294  # below Slurm's NO_VAL
_NICE_MAX = 2147483645  # NICE_OFFSET - 3


def check_job_value(key: str, value: str) -> str | None:
    """The value scontrol sends for an update key, or None after its complaint (as Slurm's
    scontrol checks them before sending: Priority an unsigned integer, TimeLimit a time,
    Nice read as C's strtoll does, so that a word is 0)."""
    if key == "Priority":
        text = value.strip()
        if not text.isdigit() or int(text) > _UINT32_MAX:
            sys.stderr.write(f"scontrol: error: Invalid Priority value: {value}\n")
            return None
        return text
    if key == "TimeLimit":
        from plurm.grammar.timefmt import parse_time_limit

        try:
            parse_time_limit(value)
        except ValueError:
            sys.stderr.write("scontrol: error: Invalid TimeLimit value\n")
            return None
        return value
    if key == "Nice":
        text = value.strip()
        sign = -1 if text.startswith("-") else 1
        digits = text[1:] if text[:1] in ("+", "-") else text
        digits = digits[:len(digits) - len(digits.lstrip("0123456789"))]  # the leading digits
        number = sign * int(digits or 0)
        if abs(number) > _NICE_MAX:
            sys.stderr.write(f"scontrol: error: Nice value out of range (+/- {_NICE_MAX}). Value ignored\n")
            return None
        return str(number)
    return value
