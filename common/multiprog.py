"""srun --multi-prog: the configuration file that gives each task its own program.

srun reads and checks the file (``parse``) as 22.05's srun does, with its words for each
fault, and sends the parsed records to the nodes (LaunchTasks.launch["multi_prog"]); each
node's plurmstepd turns them into a task's command (``task_argv``): ``%t`` the task's rank,
``%o`` its offset in its line's range (its rank on a ``*`` line), the command line's own
arguments after the file's.  The file is read only up to MAX_FILE_BYTES: a larger one is an
error, never a read of the whole.

The format (man srun, MULTIPLE PROGRAM CONFIGURATION): ``#`` in column one starts a comment;
each other line is ranks (comma separated numbers and ``lo-hi`` ranges, or ``*`` on the last
line), the program, its arguments; single quotes keep what they enclose as one argument,
uninterpreted (double quotes are plain characters: 22.05 passes them on).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_FILE_BYTES = 1024 * 1024  # far beyond any real one (a line per rank of 10,000 tasks)
Word = list  # [(text, quoted), ...]: one argument, in pieces


class MultiProgError(Exception):
    """The file cannot be used: ``lines`` are srun's error lines (without their prefix)."""

    def __init__(self, *lines: str) -> None:
        super().__init__("; ".join(lines))
        self.lines = list(lines)


@dataclass(frozen=True)
class Record:
    """One line: its ranges (None: ``*``, every task no other line names) and its words, each
    in (text, quoted) pieces."""

    ranges: tuple[tuple[int, int], ...] | None
    words: tuple[tuple[tuple[str, bool], ...], ...]

    def to_wire(self) -> dict[str, Any]:
        return {"ranges": None if self.ranges is None else [list(r) for r in self.ranges],
                "words": [[[t, q] for t, q in word] for word in self.words]}


def read(path: str) -> str:
    """The file's text, bounded; MultiProgError (22.05's words) when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        raise MultiProgError(f"Could not open multi_prog config file {path}") from None
    if len(data) > MAX_FILE_BYTES:
        raise MultiProgError(f"Configuration file {path} is larger than {MAX_FILE_BYTES} bytes")
    return data.decode("utf-8", "surrogateescape")


def _split(text: str) -> list[Word]:
    """Words separated by white space, each a list of (text, quoted) pieces: a single-quoted
    stretch (to its closing quote, or the end of the line) is part of its word, uninterpreted."""
    words: list[Word] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        pieces: Word = []
        plain = ""
        while i < n and not text[i].isspace():
            if text[i] == "'":
                close = text.find(text[i], i + 1)
                end = n if close < 0 else close
                if plain:
                    pieces.append((plain, False))
                    plain = ""
                pieces.append((text[i + 1:end], True))
                i = end + 1
            else:
                plain += text[i]
                i += 1
        if plain or not pieces:
            pieces.append((plain, False))
        words.append(pieces)
    return words


def _text(word: Word) -> str:
    return "".join(piece for piece, _ in word)


def _ranges(spec: str, ntasks: int) -> tuple[tuple[int, int], ...]:
    out = []
    for part in spec.split(","):
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise MultiProgError(f"Invalid task range specification ({spec})")
        first, last = int(lo), int(hi) if dash else int(lo)
        if first > last:
            raise MultiProgError(f"Invalid task range, {part}")
        if last >= ntasks:
            raise MultiProgError(f"Invalid task id, {last} >= ntasks")
        out.append((first, last))
    return tuple(out)


def parse(text: str, name: str, ntasks: int) -> list[Record]:
    """The records of the file ``name`` (as the user named it, for the messages) for a step of
    ``ntasks`` tasks; MultiProgError when a line is wrong or a task has no line."""
    records: list[Record] = []
    seen: set[int] = set()
    star = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("#") or not line.strip():
            continue
        words = _split(line)
        try:
            if star:
                raise MultiProgError("Task range specification with asterisk must be last")
            if len(words) < 2:
                raise MultiProgError()
            spec = _text(words[0])
            if spec == "*":
                star = True
                records.append(Record(None, tuple(tuple(w) for w in words[1:])))
                continue
            ranges = _ranges(spec, ntasks)
            for lo, hi in ranges:
                for rank in range(lo, hi + 1):
                    if rank in seen:
                        raise MultiProgError(f"Duplicate record for task {rank}")
                    seen.add(rank)
        except MultiProgError as exc:
            raise MultiProgError(*exc.lines, f"Line {number} of configuration file {name} invalid") from None
        records.append(Record(ranges, tuple(tuple(w) for w in words[1:])))
    if not star:
        for rank in range(ntasks):
            if rank not in seen:
                raise MultiProgError(f"Configuration file {name} invalid, no record for task id {rank}")
    return records


def task_argv(records: Any, rank: int, extra: list[str]) -> list[str] | None:
    """Task ``rank``'s command from the records as srun sent them (Record.to_wire); None when
    none names it (the records are srun's, checked there: a malformed one names no task)."""
    if not isinstance(records, list):
        return None
    for record in records:
        if not isinstance(record, dict) or not isinstance(record.get("words"), list):
            continue
        ranges = record.get("ranges")
        offset = None
        if ranges is None:
            offset = rank
        elif isinstance(ranges, list):
            before = 0
            for r in ranges:
                if not (isinstance(r, list) and len(r) == 2 and all(isinstance(v, int) for v in r)):
                    break
                if r[0] <= rank <= r[1]:
                    offset = before + rank - r[0]
                    break
                before += r[1] - r[0] + 1
        if offset is None:
            continue
        argv = []
        for word in record["words"]:
            if not isinstance(word, list):
                return None
            arg = ""
            for piece in word:
                if not (isinstance(piece, list) and len(piece) == 2 and isinstance(piece[0], str)):
                    return None
                text, quoted = piece[0], bool(piece[1])
                arg += text if quoted else text.replace("%t", str(rank)).replace("%o", str(offset))
            argv.append(arg)
        return argv + list(extra)
    return None
