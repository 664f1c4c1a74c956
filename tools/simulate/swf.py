"""The Standard Workload Format (SWF) of the Parallel Workloads Archive.

A trace is a header of ``;`` comment lines (``; MaxNodes: 128``, ``; MaxProcs: 1024``,
``; UnixStartTime: ...``) and one line per job of 18 whitespace-separated numbers:

 1 job number          7 used memory (KB)       13 group id
 2 submit time (s)     8 requested processors   14 executable number
 3 wait time (s)       9 requested time (s)     15 queue number
 4 run time (s)       10 requested memory (KB)  16 partition number
 5 allocated procs    11 status                 17 preceding job number
 6 average CPU time   12 user id                18 think time (s)

-1 means unknown.  Status: 1 completed, 0 failed, 5 cancelled (2-4 are checkpoint and
swap records of a job, which the archive's cleaned traces do not use).

What the simulator takes from a job (``SwfJob.runnable``): its submit time, its size
(requested processors, or allocated ones when the request is unknown), its run time and
its requested time (the time limit it was submitted with).  A job cancelled before it
ran (status 5 with no run time) never used the machine and is skipped and counted.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field, fields

FIELDS = ("job", "submit", "wait", "run", "alloc_procs", "avg_cpu", "used_mem", "req_procs", "req_time",
          "req_mem", "status", "user", "group", "executable", "queue", "partition", "preceding", "think")

STATUS_FAILED, STATUS_COMPLETED, STATUS_CANCELLED = 0, 1, 5


class SwfError(ValueError):
    """A line the reader cannot use; ``line`` is its 1-based number in the file."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message


@dataclass(frozen=True, slots=True)
class SwfJob:
    """One job line, every field as in the file (-1: unknown)."""

    job: int
    submit: float
    wait: float = -1
    run: float = -1
    alloc_procs: int = -1
    avg_cpu: float = -1
    used_mem: float = -1
    req_procs: int = -1
    req_time: float = -1
    req_mem: float = -1
    status: int = 1
    user: int = -1
    group: int = -1
    executable: int = -1
    queue: int = -1
    partition: int = -1
    preceding: int = -1
    think: float = -1

    @property
    def procs(self) -> int:
        """The size asked for: requested processors, else the allocated ones."""
        return self.req_procs if self.req_procs > 0 else self.alloc_procs

    @property
    def never_ran(self) -> bool:
        return self.status == STATUS_CANCELLED and self.run <= 0

    def line(self) -> str:
        return " ".join(_fmt(getattr(self, name)) for name in FIELDS)


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


@dataclass
class SwfHeader:
    max_nodes: int | None = None
    max_procs: int | None = None
    unix_start_time: int | None = None
    fields: dict[str, str] = field(default_factory=dict)  # every "; Key: value" line, as written
    comments: list[str] = field(default_factory=list)  # the other comment lines


@dataclass
class Trace:
    """A read trace: the jobs to simulate, in submit order, and what was left out."""

    header: SwfHeader
    jobs: list[SwfJob]
    skipped: dict[str, int] = field(default_factory=dict)  # why -> how many
    path: str = "<string>"

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


_INT_FIELDS = frozenset(f.name for f in fields(SwfJob) if f.type in ("int", int))


def _header_int(value: str) -> int | None:
    try:
        number = int(float(value.split()[0]))
    except (ValueError, IndexError):
        return None
    return number if number > 0 else None


def parse_line(text: str, path: str, number: int) -> SwfJob:
    parts = text.split()
    if len(parts) != len(FIELDS):
        raise SwfError(path, number, f"expected {len(FIELDS)} fields, found {len(parts)}")
    values: dict[str, float | int] = {}
    for name, raw in zip(FIELDS, parts):
        try:
            value = float(raw)
        except ValueError:
            raise SwfError(path, number, f"field {FIELDS.index(name) + 1} ({name}) is not a number: {raw!r}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise SwfError(path, number, f"field {FIELDS.index(name) + 1} ({name}) is not finite: {raw!r}")
        values[name] = int(value) if name in _INT_FIELDS else value
    job = SwfJob(**values)  # type: ignore[arg-type]
    if job.submit < 0:
        raise SwfError(path, number, f"submit time {parts[1]} is negative")
    return job


def parse_swf(lines: Iterable[str], path: str = "<string>") -> Trace:
    """Read a trace from its lines.  Raises SwfError (with the line number) on a bad line."""
    header = SwfHeader()
    jobs: list[SwfJob] = []
    skipped: dict[str, int] = {}
    for number, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text:
            continue
        if text.startswith(";"):
            body = text[1:].strip()
            key, sep, value = body.partition(":")
            if sep and key and " " not in key.strip():
                key, value = key.strip(), value.strip()
                header.fields[key] = value
                if key == "MaxNodes":
                    header.max_nodes = _header_int(value)
                elif key == "MaxProcs":
                    header.max_procs = _header_int(value)
                elif key == "UnixStartTime":
                    header.unix_start_time = _header_int(value)
            elif body:
                header.comments.append(body)
            continue
        job = parse_line(text, path, number)
        if job.never_ran:
            skipped["cancelled_before_start"] = skipped.get("cancelled_before_start", 0) + 1
            continue
        if job.procs <= 0:
            skipped["no_size"] = skipped.get("no_size", 0) + 1
            continue
        if job.run < 0:
            skipped["no_run_time"] = skipped.get("no_run_time", 0) + 1
            continue
        jobs.append(job)
    # Archive traces are in submit order; a hand-edited one may not be (stable: ties keep
    # the file's order, which is the order the jobs were submitted in).
    jobs.sort(key=lambda j: j.submit)
    return Trace(header, jobs, skipped, path)


def read_swf(path: str | os.PathLike[str]) -> Trace:
    name = os.fspath(path)
    opener = open
    if name.endswith(".gz"):  # the archive ships its traces gzipped
        import gzip

        opener = gzip.open  # type: ignore[assignment]
    with opener(name, "rt", encoding="utf-8", errors="replace") as handle:
        return parse_swf(handle, name)


def format_swf(header: SwfHeader, jobs: Iterable[SwfJob]) -> str:
    lines = [f"; {text}" for text in header.comments]
    known = dict(header.fields)
    if header.max_nodes:
        known["MaxNodes"] = str(header.max_nodes)
    if header.max_procs:
        known["MaxProcs"] = str(header.max_procs)
    if header.unix_start_time is not None:
        known["UnixStartTime"] = str(header.unix_start_time)
    lines.extend(f"; {key}: {value}" for key, value in known.items())
    lines.extend(job.line() for job in jobs)
    return "\n".join(lines) + "\n"


def write_swf(path: str | os.PathLike[str], header: SwfHeader, jobs: Iterable[SwfJob]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(format_swf(header, jobs))
