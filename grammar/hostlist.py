"""Slurm hostlists: ``n[1-3,7],gpu[01-02]`` <-> ``["n1", "n2", "n3", "n7", "gpu01", "gpu02"]``.

This module is on the start-up path of every user command, so it imports only ``re`` (lazily) and
``itertools`` (no lark).  ``hostlist.lark`` is the same syntax written as a grammar; a test
checks that this hand-written tokenizer and the grammar agree on generated inputs.

Behaviour follows ``scontrol show hostnames`` / ``show hostlist`` / ``show hostlistsorted`` of
Slurm 22.05, checked against the real commands, with these deliberate differences:

* text after a bracket group (``n[1-2]-ib``, ``x[1-2]y``) is a suffix (as later Slurm
  releases accept); 22.05 rejects it;
* a stray ``]``, an unclosed ``[`` or whitespace inside brackets is an error; 22.05 keeps a
  stray ``]`` as a literal, turns ``n[1-`` into ``n]`` and counts a space in a width;
* one expansion is capped at ``MAX_HOSTS`` names (Slurm caps each range at 65536 hosts, as
  here, but not the product of several groups);
* ``compress(sort=True)`` drops duplicates (like Slurm's hostlist_uniq); ``hostlistsorted``
  keeps them.  Its order is a total order (prefix in natural order, a name without a number
  first, then digit count, then value); Slurm sorts ranges rather than names, so the two
  differ only when one prefix mixes zero-padded widths in an unsorted input.
"""

from __future__ import annotations

import itertools
from plurm.grammar.lazyre import lazy
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: collections.abc imports collections, ~3 ms of squeue's start in a venv
    from collections.abc import Iterable, Iterator

__all__ = [
    "HostlistError",
    "MAX_HOSTS",
    "MAX_RANGE",
    "compress",
    "count",
    "expand",
    "iter_expand",
    "parse",
    "sort_key",
    "sort_hosts",
]

MAX_RANGE = 65536  # hosts in one range "lo-hi", as Slurm
MAX_HOSTS = 1 << 20  # names in one expansion (guards a[0-65535]b[0-65535])
# Digits of a host number; a longer digit run is not a number (keeps int() cheap and below
# Python's int/str conversion limit).
_MAX_DIGITS = 64


class HostlistError(ValueError):
    """An invalid hostlist expression or host name."""


# One range inside brackets: "7" or "01-10".
_RANGE_RE = lazy(r"([0-9]+)(?:-([0-9]+))?\Z")
# A token of an item: literal text, or a bracket group "[...]" (content checked later).
_TOKEN_RE = lazy(r"([^\[\]]+)|\[([^\[\]]*)\]")
# Separators between items (outside brackets): commas and whitespace, as scontrol accepts.
_SEPARATORS = frozenset(",\t\n\r\f\v ")
# A host name split into prefix and numeric suffix.

# A parsed item: literal strings alternating with groups; a group is a list of
# (lo, hi, width) ranges.  The list always starts and ends with a literal ("" allowed).
Range = tuple[int, int, int]
Item = list  # [str, list[Range], str, list[Range], ..., str]


def _check_brackets(text: str) -> None:
    depth = 0
    for i, ch in enumerate(text):
        if ch == "[":
            if depth:
                raise HostlistError(f"invalid hostlist '{text}': nested '[' at offset {i}")
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError(f"invalid hostlist '{text}': unbalanced ']' at offset {i}")
            depth = 0
    if depth:
        raise HostlistError(f"invalid hostlist '{text}': unclosed '['")


def _split_items(text: str) -> list[str]:
    """Split at commas/whitespace outside brackets; empty items are dropped (like Slurm)."""
    items: list[str] = []
    inside = False
    start = 0
    for i, ch in enumerate(text):
        if ch == "[":
            inside = True
        elif ch == "]":
            inside = False
        elif not inside and ch in _SEPARATORS:
            if i > start:
                items.append(text[start:i])
            start = i + 1
    if start < len(text):
        items.append(text[start:])
    return items


def _parse_group(body: str, whole: str) -> list[Range]:
    ranges: list[Range] = []
    for part in body.split(","):
        m = _RANGE_RE.match(part)
        if m is None:
            raise HostlistError(f"invalid range '{part}' in hostlist '{whole}'")
        lo_s, hi_s = m.group(1), m.group(2)
        if max(len(lo_s), len(hi_s or "")) > _MAX_DIGITS:
            raise HostlistError(f"number too long in range '{part[:80]}' in hostlist '{whole}'")
        lo = int(lo_s)
        hi = lo if hi_s is None else int(hi_s)
        if hi < lo:
            raise HostlistError(f"invalid range '{part}' in hostlist '{whole}': end before start")
        if hi - lo + 1 > MAX_RANGE:
            raise HostlistError(f"too many hosts in range '{part}' in hostlist '{whole}'")
        # The width of the first number pads every number of the range (n[1-010] -> n1..n10).
        ranges.append((lo, hi, len(lo_s)))
    return ranges


def _parse_item(item: str, whole: str) -> Item:
    # Brackets are balanced and not nested here, so the tokens cover the whole item.
    parts: Item = [""]
    for m in _TOKEN_RE.finditer(item):
        if m.group(1) is not None:
            parts[-1] += m.group(1)
        else:
            parts.append(_parse_group(m.group(2), whole))
            parts.append("")
    return parts


def parse(text: str) -> list[Item]:
    """Parse a hostlist into items: ``[literal, group, literal, ..., literal]`` where a group
    is a list of ``(lo, hi, width)`` ranges.  Used by the tests to compare with the grammar."""
    if not isinstance(text, str):
        raise HostlistError(f"hostlist must be a string, not {type(text).__name__}")
    _check_brackets(text)
    return [_parse_item(item, text) for item in _split_items(text)]


def _item_size(item: Item) -> int:
    n = 1
    for group in item[1::2]:
        n *= sum(hi - lo + 1 for lo, hi, _ in group)
    return n


def _group_values(group: list[Range]) -> list[str]:
    return [str(v).zfill(w) for lo, hi, w in group for v in range(lo, hi + 1)]


def _expand_item(item: Item) -> Iterator[str]:
    literals = item[0::2]
    groups = [_group_values(g) for g in item[1::2]]
    if not groups:
        yield literals[0]
        return
    if len(groups) == 1:
        head, tail = literals
        for v in groups[0]:
            yield head + v + tail
        return
    # Slurm's order for several groups: the last group varies fastest, then the first, then
    # the second, ... (a[1-2]b[1-2]c[1-2] -> a1b1c1 a1b1c2 a2b1c1 a2b1c2 a1b2c1 ...).
    outer = groups[:-1]
    for combo in itertools.product(*reversed(outer)):
        values = combo[::-1]
        head = "".join(lit + v for lit, v in zip(literals, values)) + literals[-2]
        for v in groups[-1]:
            yield head + v + literals[-1]


def iter_expand(text: str) -> Iterator[str]:
    """Like :func:`expand`, lazily (the whole expression is still validated first)."""
    items = parse(text)
    total = sum(_item_size(item) for item in items)
    if total > MAX_HOSTS:
        raise HostlistError(f"hostlist '{text[:80]}' expands to {total} names (limit {MAX_HOSTS})")
    for item in items:
        yield from _expand_item(item)


def expand(text: str) -> list[str]:
    """Expand a hostlist like ``scontrol show hostnames`` (order and duplicates kept)."""
    return list(iter_expand(text))


def count(text: str) -> int:
    """Number of names in a hostlist, without expanding it."""
    return sum(_item_size(item) for item in parse(text))


# ---------------------------------------------------------------------------- compress

def _is_digit(c: str) -> bool:
    return "0" <= c <= "9"  # ASCII only, unlike str.isdigit


def _split_name(name: str) -> tuple[str, str]:
    """(prefix, numeric suffix) of a host name; the suffix is "" when there is none.

    Plain string scanning, no regular expression: compress() runs in squeue's
    start-up, where importing `re` alone costs milliseconds."""
    i = len(name)
    while i and _is_digit(name[i - 1]):
        i -= 1
    if len(name) - i > _MAX_DIGITS:
        return name, ""
    return name[:i], name[i:]


def _runs(text: str) -> list[str]:
    """``text`` cut into alternating runs of ASCII digits and of other characters."""
    runs: list[str] = []
    start = 0
    for i in range(1, len(text) + 1):
        if i == len(text) or _is_digit(text[i]) != _is_digit(text[start]):
            runs.append(text[start:i])
            start = i
    return runs


def _natural_key(text: str) -> tuple:
    # Natural order like strnatcmp: digit runs compare by value and sort where their first
    # character would ('0'..'9' between '/' and ':'); other characters by code point.
    key: list[tuple[int, int]] = []
    for run in _runs(text):
        if _is_digit(run[0]) and len(run) <= _MAX_DIGITS:
            key.append((48, int(run)))
        else:
            key.extend((ord(c), -1) for c in run)
    return tuple(key)


def sort_key(name: str) -> tuple:
    """The order of ``compress(sort=True)``: prefix (natural order; case-sensitive), a name
    without a numeric suffix before numbered ones, then digit count, then value, so that
    n1 < n9 < n01 < n10 < n001 as Slurm's hostlistsorted prints them."""
    prefix, digits = _split_name(name)
    if not digits:
        return (_natural_key(prefix), prefix, 0, 0, 0)
    return (_natural_key(prefix), prefix, 1, len(digits), int(digits))


def sort_hosts(names: Iterable[str]) -> list[str]:
    """Sorted, duplicate-free names in ``compress(sort=True)`` order."""
    return sorted(set(names), key=sort_key)


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise HostlistError(f"invalid host name {name!r}")
    if "[" in name or "]" in name or any(ch in _SEPARATORS for ch in name):
        raise HostlistError(f"invalid host name {name!r}: contains a bracket, ',' or whitespace")
    return name


def compress(names: Iterable[str], sort: bool = True) -> str:
    """Compress names into a hostlist like Slurm's ranged strings.

    ``sort=True`` (the default) sorts (see :func:`sort_key`), drops duplicates and merges
    runs, so ``expand(compress(names)) == sort_hosts(names)``.  ``sort=False`` keeps the
    given order and duplicates, like ``scontrol show hostlist`` (Slurm's default for a list
    it did not sort, e.g. nodes in slurm.conf order): a name extends the previous range only
    when it is the next number with the same prefix and padding.
    Zero padding stays distinct: ``n01,n2`` -> ``n[01,2]`` (``n9,n10`` -> ``n[9-10]``).
    """
    seq = [_check_name(n) for n in names]
    if sort:
        seq = sort_hosts(seq)
    # Runs: [prefix, digits-or-None, ranges]; a range is [lo, hi, width].
    runs: list[tuple[str, list[list[int]] | None]] = []
    for name in seq:
        prefix, digits = _split_name(name)
        if not digits:
            runs.append((name, None))
            continue
        value = int(digits)
        if runs and runs[-1][0] == prefix and runs[-1][1] is not None:
            ranges = runs[-1][1]
            last = ranges[-1]
            # Extend when the next number printed with the range's width is this very name.
            if value == last[1] + 1 and str(value).zfill(last[2]) == digits:
                last[1] = value
            else:
                ranges.append([value, value, len(digits)])
        else:
            runs.append((prefix, [[value, value, len(digits)]]))
    out: list[str] = []
    for prefix, ranges in runs:
        if ranges is None:
            out.append(prefix)
            continue
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            lo, _, w = ranges[0]
            out.append(prefix + str(lo).zfill(w))
            continue
        body = ",".join(
            str(lo).zfill(w) if lo == hi else f"{str(lo).zfill(w)}-{str(hi).zfill(w)}"
            for lo, hi, w in ranges
        )
        out.append(f"{prefix}[{body}]")
    return ",".join(out)


def bitmap_ranges(ids: list[int]) -> str:
    """Integers as Slurm's bit_fmt writes them (array task ids): ``0-9``, ``1,3,5-7``."""
    out: list[str] = []
    ordered = sorted(set(ids))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)
