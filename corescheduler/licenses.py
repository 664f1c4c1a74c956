"""Licenses: slurm.conf's ``Licenses=`` pool, ``-L/--licenses`` requests, and their use over time.

Pure: no I/O.  The pool is counted from the jobs that hold licenses (running, suspended
or completing), never kept as a counter beside them, so that a requeue, a preemption or
a node failure gives a job's licenses back by changing its state, with no path to
forget.  ``LicenseTimeline`` plans licenses over time for the scheduling pass: a job
whose licenses are held gets a start after the holders' ends, and a lower-priority job
that would take licenses a higher-priority one is planned to use does not start
(core_licenses.py drives it).

Slurm 22.05's words and rules, checked on the real Slurm (tests/corescheduler/reference/licenses):
a request is ``name[:count][,name[:count]...]`` (count 1 when omitted, 0 allowed, repeated
names add up); an unknown name, a count over the configured total, a bad count, or the
``|`` alternatives of later Slurm versions are all "Invalid license specification".
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

INVALID_REQUEST = "Invalid license specification"
REASON_LICENSES = "Licenses"
MAX_SPEC_CHARS = 4096  # a request longer than this is hostile, not a license list
_NAME = re.compile(r"[A-Za-z0-9_.@\-]+\Z")


class LicenseSpecError(ValueError):
    """A license list that does not parse (the message says what)."""


def _entries(text: str, what: str) -> list[tuple[str, int]]:
    if len(text) > MAX_SPEC_CHARS:
        raise LicenseSpecError(f"{what} longer than {MAX_SPEC_CHARS} characters")
    out: list[tuple[str, int]] = []
    for item in text.split(","):
        name, sep, count = item.strip().partition(":")
        if not name or not _NAME.match(name):
            raise LicenseSpecError(f"{what}: bad license name {item!r}")
        if not sep:
            out.append((name, 1))
            continue
        if not count.isdigit() or len(count) > 9:
            raise LicenseSpecError(f"{what}: bad count in {item!r}")
        out.append((name, int(count)))
    return out


def parse_configured(text: str | None) -> dict[str, int]:
    """slurm.conf's ``Licenses=fluent:4,matlab:2`` (``foo`` alone is one): name -> total.
    Raises LicenseSpecError; a name given twice is an error, as a site surely meant one."""
    totals: dict[str, int] = {}
    if not text or not text.strip():
        return totals
    for name, count in _entries(text.strip(), "Licenses"):
        if name in totals:
            raise LicenseSpecError(f"Licenses: {name} given twice")
        totals[name] = count
    return totals


def parse_request(text: str, totals: Mapping[str, int]) -> dict[str, int]:
    """A job's ``-L`` value against the configured pool: name -> count, in the order given,
    repeated names summed.  Raises LicenseSpecError for what Slurm calls an invalid
    license specification."""
    wanted: dict[str, int] = {}
    for name, count in _entries(text, "license request"):
        if name not in totals:
            raise LicenseSpecError(f"license {name} is not configured")
        wanted[name] = wanted.get(name, 0) + count
    for name, count in wanted.items():
        if count > totals[name]:
            raise LicenseSpecError(f"license {name}: {count} requested, {totals[name]} configured")
    return wanted


def format_request(wanted: Mapping[str, int]) -> str:
    """As scontrol show job and squeue %W print it: ``fluent:3,matlab:1``."""
    return ",".join(f"{name}:{count}" for name, count in wanted.items())


def parse_held(text: str | None) -> dict[str, int]:
    """A stored job's (already validated) licenses, repeated names summed; what does not
    parse holds nothing."""
    held: dict[str, int] = {}
    if not text:
        return held
    try:
        for name, count in _entries(text, "licenses"):
            held[name] = held.get(name, 0) + count
    except LicenseSpecError:
        return {}
    return held


def usage(totals: Mapping[str, int], held: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Licenses in use per configured name (a held name no longer configured is left out)."""
    used = dict.fromkeys(totals, 0)
    for wanted in held:
        for name, count in wanted.items():
            if name in used:
                used[name] += count
    return used


def report(totals: Mapping[str, int], used: Mapping[str, int], names: Iterable[str] = ()) -> list[dict[str, object]]:
    """Records for ``scontrol show licenses [name]``: every configured license, or those named."""
    wanted = set(names)
    return [{"name": name, "total": total, "used": used.get(name, 0), "free": max(total - used.get(name, 0), 0),
             "reserved": 0, "remote": False}
            for name, total in totals.items() if not wanted or name in wanted]


@dataclass(slots=True)
class _Hold:
    start: float
    end: float | None  # None: until further notice (no time limit)
    wanted: Mapping[str, int]


@dataclass
class LicenseTimeline:
    """Licenses over time during one scheduling pass: what running jobs hold until their
    ends, plus what the pass plans for the pending jobs it has looked at, in priority order."""

    totals: Mapping[str, int]
    now: float
    holds: list[_Hold] = field(default_factory=list)
    _steps_of: dict[str, tuple[list[float], list[int]]] = field(default_factory=dict)  # (until the next hold)

    def hold(self, wanted: Mapping[str, int], start: float, end: float | None) -> None:
        if any(wanted.values()):
            self.holds.append(_Hold(start, end, wanted))
            for name in wanted:
                self._steps_of.pop(name, None)

    def _steps(self, name: str) -> tuple[list[float], list[int]]:
        """The use of ``name`` as a step function: ``use[i]`` from ``times[i]`` to ``times[i + 1]``."""
        cached = self._steps_of.get(name)
        if cached is not None:
            return cached
        deltas: dict[float, int] = {}
        for h in self.holds:
            count = h.wanted.get(name, 0)
            if count:
                deltas[h.start] = deltas.get(h.start, 0) + count
                if h.end is not None:
                    deltas[h.end] = deltas.get(h.end, 0) - count
        times = sorted(deltas)
        use: list[int] = []
        level = 0
        for t in times:
            level += deltas[t]
            use.append(level)
        self._steps_of[name] = (times, use)
        return times, use

    @staticmethod
    def _peak(steps: tuple[list[float], list[int]], start: float, end: float | None) -> int:
        """The most in use at any moment of [start, end)."""
        times, use = steps
        i = bisect_right(times, start) - 1
        peak = use[i] if i >= 0 else 0
        for j in range(i + 1, len(times)):
            if end is not None and times[j] >= end:
                break
            peak = max(peak, use[j])
        return peak

    def free_now(self, wanted: Mapping[str, int], length_s: float | None) -> bool:
        """``wanted`` is free from now on for ``length_s`` seconds (None: unlimited)."""
        if any(name not in self.totals for name in wanted):
            return False
        end = None if length_s is None else self.now + length_s
        return all(self._peak(self._steps(name), self.now, end) + count <= self.totals[name]
                   for name, count in wanted.items() if count)

    def earliest(self, wanted: Mapping[str, int], length_s: float | None) -> float | None:
        """The first moment from now at which ``wanted`` is free for ``length_s`` seconds
        (None: unlimited); None when never (a holder without an end stands in the way, or a
        name is not configured).  One step function per name: O(holds) per moment tried."""
        if any(name not in self.totals for name in wanted):
            return None
        steps = {name: self._steps(name) for name, count in wanted.items() if count}
        starts = sorted({self.now} | {t for times, _ in steps.values() for t in times if t > self.now})
        for start in starts:
            end = None if length_s is None else start + length_s
            if all(self._peak(steps[name], start, end) + count <= self.totals[name]
                   for name, count in wanted.items() if count):
                return start
        return None
