"""squeue's rows column by column: what ``squeuefmt.format_line`` gives for each job, faster.

``format_line`` asks each field's function for each job, then pads cell by cell: about 11 us
a job for the default format, 1.1 s of a 100,000-job ``squeue`` (issue 17).  Here each
column is one list comprehension over all the rows and is padded in one more; the common
case, a plain pending job (not an array's meta record or task, not a hetjob component, not
completing), is written out inline for the default format's letters (``%i %P %j %u %t %M %D
%R`` and their -O names), and every other job and letter goes through the field's own
function, so the text is the same byte for byte (tests/tools/test_squeuecols.py compares
the two over every letter).
"""

from __future__ import annotations

from itertools import repeat
from typing import Any, Callable

from plurm.tools.display import FormatField

# squeuefmt._field_value (passed in: squeuefmt calls this module, so it is not imported here)
FieldValue = Callable[[str, dict, Any], "tuple[str, bool]"]
Column = tuple[list[str], "bool | list[bool]"]  # the texts, and whether each may be cut


def _generic(key: str, rows: list[dict], value: FieldValue, ctx: Any) -> Column:
    pairs = [value(key, job, ctx) for job in rows]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _mixed(key: str, rows: list[dict], plain: list[bool], fast: list[Any], value: FieldValue, ctx: Any) -> list[str]:
    """A plain row's text from ``fast``, any other row's from the field's own function."""
    return [f if p else value(key, j, ctx)[0] for j, p, f in zip(rows, plain, fast)]


def _column(key: str, rows: list[dict], specs: list[dict], plain: list[bool], value: FieldValue,
            ctx: Any) -> Column:
    """One field over all rows: the default format's letters written out for plain pending
    jobs (as squeuefmt.FIELDS computes them for such a job), the rest as the field says."""
    if key == "P":
        return [str(j.get("partition", "")) for j in rows], True
    if key == "j":
        return [str(s.get("name", "sbatch")) for s in specs], True
    if key == "u":
        return [str(s.get("user", "root")) for s in specs], True
    if key == "i":
        return _mixed(key, rows, plain, [str(j["job_id"]) for j in rows], value, ctx), True
    if key == "t":
        return _mixed(key, rows, plain, repeat("PD"), value, ctx), True
    if key == "M":  # (a pending job has used no time)
        return _mixed(key, rows, plain, repeat("0:00"), value, ctx), False
    if key == "D":  # (no nodes yet: the number asked for)
        return [str(len(j["nodes"])) if j.get("nodes") else str(int(s.get("nodes_min", 1) or 1))
                for j, s in zip(rows, specs)], True
    if key == "R":  # a pending job's (reason); others' nodes are not cut (squeuefmt._reason_list)
        pairs = [(f"({str(j.get('reason', 'None'))})", True) if p else value(key, j, ctx)
                 for j, p in zip(rows, plain)]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    return _generic(key, rows, value, ctx)


def _pad(texts: list[str], cuts: bool | list[bool], width: int, right: bool) -> list[str]:
    """display.pad over a column (right-justified text is cut only where its field allows)."""
    if width <= 0:
        return texts
    if not right:
        return [t[:width].ljust(width) for t in texts]
    if cuts is True:
        return [t.rjust(width)[:width] for t in texts]
    if cuts is False:
        return [t.rjust(width) for t in texts]
    return [t.rjust(width)[:width] if c else t.rjust(width) for t, c in zip(texts, cuts)]


def format_rows(fields: list[FormatField], rows: list[dict[str, Any]], ctx: Any, value: FieldValue) -> list[str]:
    """``[format_line(fields, job, ctx) for job in rows]``, column by column; ``value`` is
    squeuefmt._field_value."""
    if not rows:
        return []
    specs = [j.get("spec") or {} for j in rows]
    plain = [not j.get("completing") and j.get("state", "PENDING") == "PENDING" and not j.get("array_pending")
             and j.get("array_task_id") is None and s.get("het_job_id") is None for j, s in zip(rows, specs)]
    columns: list[Any] = []
    for field in fields:
        if field.key is None:  # a literal prefix
            columns.append(repeat(field.suffix, len(rows)))
            continue
        texts, cuts = _column(field.key, rows, specs, plain, value, ctx)
        column = _pad(texts, cuts, field.width, field.right)
        columns.append([c + field.suffix for c in column] if field.suffix else column)
    columns.append(repeat("\n", len(rows)))
    return ["".join(parts) for parts in zip(*columns)]


def default_order(jobs: list[dict[str, Any]], now: float, start_key: Callable[[dict, float], float],
                  state_code: Callable[[dict], str]) -> list[dict[str, Any]]:
    """``squeuefmt.sort_jobs(jobs, "P,t,-p", now)`` in one sort instead of four: its stable
    sorts (planned start descending, then -p, t, P, each keeping the order before it among
    equals) order the rows by (partition, state code, -priority, -start), ties in the
    controller's order, which one stable sort on that key gives too.  ``start_key`` and
    ``state_code`` are squeuefmt's ``_start_key`` and display's ``job_state_code``."""
    keys = [(str(j.get("partition", "")), state_code(j), -int(j.get("priority", 0)), -start_key(j, now))
            for j in jobs]
    return [jobs[i] for i in sorted(range(len(jobs)), key=keys.__getitem__)]
