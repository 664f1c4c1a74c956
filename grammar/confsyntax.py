"""The syntax that slurm.conf and gres.conf share: comments, continuation lines,
``Include``, the cached lark parser, Key=Value statements with their file and line,
value parsers, and ``ConfError`` (``FILE:LINE: what is wrong``).

What the keys mean is each file's own: grammar/slurmconf.py, grammar/gresconf.py.
"""

from __future__ import annotations

import functools
import glob
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plurm.grammar import hostlist
from plurm.grammar.timefmt import parse_time_limit


class ConfError(ValueError):
    """An invalid configuration file; the message starts with ``FILE:LINE:``."""


# ============================================================== reading lines

@dataclass(frozen=True)
class Loc:
    """Where a statement starts: file and 1-based physical line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"

    def error(self, message: str) -> ConfError:
        return ConfError(f"{self}: {message}")


@dataclass
class Statement:
    """One logical line: ``pairs`` in order, or an ``include`` path."""

    loc: Loc
    pairs: list[tuple[str, str]] = field(default_factory=list)
    include: str | None = None


def _strip_comment(line: str) -> str:
    # "#" starts a comment outside double quotes; "\#" is a literal "#".
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\" and line.startswith("#", i + 1):
            out.append("#")
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch == "#" and not quoted:
            break
        out.append(ch)
        i += 1
    return "".join(out)


def logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first physical line number, logical line) for each non-blank logical line.

    A line ending in a backslash continues on the next line; the two are joined with the
    backslash removed, as Slurm does (no space is inserted)."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.split("\n"), 1):
        line = _strip_comment(raw[:-1] if raw.endswith("\r") else raw)
        if not pending:
            start = number
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            pending.append(stripped[:-1])
            continue
        pending.append(line)
        joined = "".join(pending).strip()
        pending = []
        if joined:
            yield start, joined
    if pending:
        joined = "".join(pending).strip()
        if joined:
            yield start, joined


@functools.lru_cache(maxsize=None)
def _lark_parser(grammar: str) -> Any:
    """The LALR parser for ``grammar`` (a file next to this module), built once."""
    import lark  # daemons only: keep lark off the commands' import path

    # Lark.open resolves gres_conf.lark's "%import .slurm_conf" next to this file.
    return lark.Lark.open(str(Path(__file__).parent / grammar), parser="lalr",
                          lexer="contextual", maybe_placeholders=False)


def _unquote(token: str) -> str:
    return token[1:-1] if len(token) >= 2 and token[0] == token[-1] == '"' else token


def _tree_statements(tree: Any, lines: list[int], path: str) -> list[Statement]:
    # Rules: start -> statement* ; statement -> include | pairs ; pairs -> pair+ ;
    # pair -> KEY_EQ value? ; value -> QUOTED | BARE.  (test_slurmconf checks none is missed.)
    out: list[Statement] = []
    for statement in tree.children:
        (node,) = statement.children
        first = node.children[0]
        if node.data == "include":
            line = lines[first.line - 1]
            out.append(Statement(Loc(path, line), include=str(node.children[1]).strip()))
            continue
        assert node.data == "pairs", node.data
        line = lines[first.children[0].line - 1]
        stmt = Statement(Loc(path, line))
        for pair in node.children:
            key = str(pair.children[0])[:-1].rstrip()
            value = ""
            if len(pair.children) > 1:
                value = _unquote(str(pair.children[1].children[0]))
            stmt.pairs.append((key, value))
        out.append(stmt)
    return out


RULES_HANDLED = frozenset({"start", "statement", "include", "pairs", "pair", "value"})


def parse_statements(text: str, path: str = "<string>",
                     grammar: str = "slurm_conf.lark") -> list[Statement]:
    """Parse the text of one file (no Include expansion) into statements."""
    import lark

    numbered = list(logical_lines(text))
    lines = [n for n, _ in numbered]
    body = "".join(line + "\n" for _, line in numbered)
    try:
        tree = _lark_parser(grammar).parse(body)
    except lark.exceptions.UnexpectedInput as exc:
        # Lark counts lines of the joined logical lines; map back to the physical line.
        row = getattr(exc, "line", -1)
        row = len(lines) if row < 1 else min(row, len(lines))
        loc = Loc(path, lines[row - 1] if lines else 1)
        text_line = numbered[row - 1][1] if numbered else ""
        col = max(getattr(exc, "column", 1) - 1, 0)
        words = text_line[col:col + 40].split()
        near = words[0] if words and not text_line[col:col + 1].isspace() else ""
        if near.startswith('"'):
            raise loc.error(f"unterminated quoted value {near!r}") from None
        if near and "=" not in near:
            raise loc.error(f"expected Key=Value, found {near!r}") from None
        raise loc.error(f"syntax error near {near!r}") from None
    return _tree_statements(tree, lines, path)


def read_statements(path: str | os.PathLike[str], grammar: str = "slurm_conf.lark",
                    warnings: list[str] | None = None, _depth: int = 0,
                    _seen: tuple[str, ...] = ()) -> list[Statement]:
    """All statements of a file with its ``Include`` files spliced in, in order."""
    name = os.fspath(path)
    try:
        real = os.path.realpath(name)
        text = Path(name).read_text(encoding="utf-8", errors="surrogateescape")
    except (OSError, ValueError) as exc:
        raise ConfError(f"{name}:0: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    if real in _seen:
        raise ConfError(f"{name}:1: Include loop")
    return splice_includes(parse_statements(text, name, grammar), name, grammar, warnings,
                           _depth, _seen + (real,))


def splice_includes(statements: list[Statement], path: str, grammar: str,
                    warnings: list[str] | None, _depth: int = 0,
                    _seen: tuple[str, ...] = ()) -> list[Statement]:
    """Replace each ``Include`` statement by the statements of the file(s) it names.

    A relative path is relative to the including file's directory (the current directory
    for text that did not come from a file); a pattern with ``*?[`` is a glob."""
    out: list[Statement] = []
    for stmt in statements:
        if stmt.include is None and stmt.pairs and stmt.pairs[0][0].lower() == "include":
            stmt = Statement(stmt.loc, include=stmt.pairs[0][1])  # "Include=file" form
        if stmt.include is None:
            out.append(stmt)
            continue
        if _depth >= 16:
            raise stmt.loc.error("Include nested too deep")
        pattern = _unquote(stmt.include)
        if "\0" in pattern:
            raise stmt.loc.error("Include path contains a NUL byte")
        if not os.path.isabs(pattern):
            base = os.getcwd() if path.startswith("<") else os.path.dirname(path)
            pattern = os.path.join(base or ".", pattern)
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(pattern))
            if not matches and warnings is not None:
                warnings.append(f"{stmt.loc}: Include {stmt.include!r} matches no file")
        else:
            matches = [pattern]
        for match in matches:
            if not os.path.isfile(match):
                raise stmt.loc.error(f"Include file {match!r} does not exist")
            if os.path.realpath(match) in _seen:
                raise stmt.loc.error(f"Include loop: {match!r} is already being read")
            out.extend(read_statements(match, grammar, warnings, _depth + 1, _seen))
    return out


# ============================================================== values

UNLIMITED_WORDS = frozenset({"UNLIMITED", "INFINITE"})


def parse_int(value: str, loc: Loc, key: str, *, minimum: int = 0,
              unlimited: bool = False) -> int | None:
    """An integer value; with ``unlimited``, UNLIMITED/INFINITE give None."""
    text = value.strip()
    if unlimited and text.upper() in UNLIMITED_WORDS:
        return None
    if not re.fullmatch(r"[+-]?[0-9]{1,30}", text):
        raise loc.error(f"invalid value {value!r} for {key} (expected an integer)")
    number = int(text)
    if number < minimum:
        raise loc.error(f"invalid value {value!r} for {key} (must be >= {minimum})")
    return number


_TRUE = frozenset({"YES", "TRUE", "1", "UP", "Y"})
_FALSE = frozenset({"NO", "FALSE", "0", "DOWN", "N"})


def parse_bool(value: str, loc: Loc, key: str) -> bool:
    word = value.strip().upper()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise loc.error(f"invalid value {value!r} for {key} (expected YES or NO)")


def split_list(value: str) -> list[str]:
    """Comma-separated items; commas inside parentheses (``gpu:2(S:0,1)``) do not split."""
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for ch in value:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        if ch == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def expand_hosts(value: str, loc: Loc, key: str) -> list[str]:
    try:
        return hostlist.expand(value)
    except hostlist.HostlistError as exc:
        raise loc.error(f"invalid hostlist {value!r} for {key}: {exc}") from None


def parse_minutes(value: str, loc: Loc, key: str) -> int | None:
    try:
        return parse_time_limit(value)
    except ValueError:
        raise loc.error(f"invalid time {value!r} for {key}") from None
