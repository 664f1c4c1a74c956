"""sacct's usage columns: MaxRSS, AveRSS, MaxVMSize, TotalCPU, TRESUsageIn* ... from a step's
``usage`` (``protocol.STEP_USAGE_KEYS``: sizes in KiB, CPU times in seconds, the maxima with the
node and task that had them), as sacct 22.05 prints them.

Sizes: sacct holds them in bytes and shortens them only as far as that stays exact (a value
whose count is a multiple of 512 goes up one unit: ``205132K``, ``1.50M``); ``--units=M``
prints every size in that unit (two decimals unless whole), ``--noconvert`` in bytes.  CPU
times (TotalCPU, UserCPU, SystemCPU) keep milliseconds below an hour (``00:02.345``), as
sacct's; in the TRES strings (``cpu=``) and AveCPU/MinCPU they are ``HH:MM:SS``.

A job's own line has no usage but its CPU times, the sum of its steps' (as slurmdbd's).
Pure functions of plain dicts; the start-up budget is the standard library.
"""

from __future__ import annotations

from typing import Any

UNITS = "\0KMGTP"  # index: the power of 1024 (0: bytes, printed without a suffix)


def convert_num(num: float, orig: int = 0, units: str | None = None, noconvert: bool = False) -> str:
    """A size as sacct prints it: ``num`` in the unit ``orig`` (0 bytes, 1 KiB ...); ``units``
    (K, M, G, T, P) forces one; ``noconvert`` keeps ``orig``; else up while it stays exact."""
    if int(num) == 0:
        return "0"
    if units:
        want = UNITS.index(units[:1].upper())
        while want > orig:
            num, orig = num / 1024, orig + 1
        while want < orig:
            num, orig = num * 1024, orig - 1
    elif not noconvert:
        while num >= 1024 and int(num) == num and int(num) % 512 == 0 and orig < len(UNITS) - 1:
            num, orig = num / 1024, orig + 1
    suffix = UNITS[orig].strip("\0")
    return f"{int(num)}{suffix}" if int(num) == num else f"{num:.2f}{suffix}"


def mem(kib: float, units: str | None = None, noconvert: bool = False) -> str:
    """A memory figure kept in KiB, as sacct prints it from its bytes."""
    return convert_num(round(kib * 1024), 0, units, noconvert)


def cpu_time(seconds: float) -> str:
    """TotalCPU, UserCPU, SystemCPU: ``MM:SS.mmm`` below an hour, else ``[D-]HH:MM:SS``
    (milliseconds cut, not rounded, as sacct's from its microseconds)."""
    millis = int(round(seconds * 1e6)) // 1000
    secs, sub = divmod(millis, 1000)
    days, rest = divmod(secs, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours:02d}:{minutes:02d}:{secs:02d}"
    if sub:
        return f"{minutes:02d}:{secs:02d}.{sub:03d}"
    return f"00:{minutes:02d}:{secs:02d}"


def tres_time(seconds: float) -> str:
    """CPU time in a TRES string and AveCPU/MinCPU: ``[D-]HH:MM:SS`` (whole seconds)."""
    secs = int(seconds)
    days, rest = divmod(secs, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def _number(usage: dict[str, Any], key: str) -> float | None:
    value = usage.get(key)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def step_cpu_seconds(usage: dict[str, Any]) -> tuple[float, float] | None:
    """(user, system) CPU seconds of a step; None: not measured."""
    user, system = _number(usage, "user_cpu_s"), _number(usage, "system_cpu_s")
    if user is None and system is None:
        return None
    return user or 0.0, system or 0.0


def cpu_cells(user: float, system: float) -> dict[str, str]:
    return {"TotalCPU": cpu_time(user + system), "UserCPU": cpu_time(user), "SystemCPU": cpu_time(system)}


def job_cpu_cells(steps: list[dict]) -> dict[str, str]:
    """The job line's TotalCPU, UserCPU and SystemCPU: its steps' summed (none measured: none)."""
    found = [cpu for cpu in (step_cpu_seconds(s.get("usage") or {}) for s in steps) if cpu is not None]
    if not found:
        return {}
    return cpu_cells(sum(u for u, _ in found), sum(s for _, s in found))


class StepUsage:
    """A step line's usage columns (``cells``, empty when nothing was measured) and the parts
    they add to its TRESUsageIn* strings (``tres``: column -> parts).  What plurm does not
    measure (pages, fs/disk, energy) is left out or 0, as sacct shows a missing figure."""

    def __init__(self, step: dict, units: str | None = None, noconvert: bool = False) -> None:
        self.cells: dict[str, str] = {}
        self.tres: dict[str, dict[str, str]] = {}
        usage = step.get("usage") or {}
        nodes = step.get("nodes") or []
        ntasks = max(int(step.get("ntasks") or 1), 1)
        for name, key, tres in (("RSS", "rss", "mem"), ("VMSize", "vmsize", "vmem")):
            peak, ave = _number(usage, f"max_{key}_kb"), _number(usage, f"ave_{key}_kb")
            if peak is not None:
                node = str(usage.get(f"max_{key}_node") or (nodes[0] if nodes else ""))
                task = str(int(_number(usage, f"max_{key}_task") or 0))
                self._put(f"Max{name}", "TRESUsageInMax", tres, mem(peak, units, noconvert))
                self._put(f"Max{name}Node", "TRESUsageInMaxNode", tres, node)
                self._put(f"Max{name}Task", "TRESUsageInMaxTask", tres, task)
            if ave is not None:
                self._put(f"Ave{name}", "TRESUsageInAve", tres, mem(ave, units, noconvert))
                self._part("TRESUsageInTot", tres, mem(ave * ntasks, units, noconvert))
        cpu = step_cpu_seconds(usage)
        if cpu is not None:
            self.cells.update(cpu_cells(*cpu))
            total = cpu[0] + cpu[1]
            node = nodes[0] if len(nodes) == 1 else str(usage.get("max_rss_node") or "")
            self._put("AveCPU", "TRESUsageInAve", "cpu", tres_time(total / ntasks))
            self._part("TRESUsageInMax", "cpu", tres_time(total / ntasks))
            self._part("TRESUsageInMaxNode", "cpu", node)
            self._part("TRESUsageInMaxTask", "cpu", "0" if ntasks == 1 else
                       str(int(_number(usage, "max_rss_task") or 0)))
            self._part("TRESUsageInTot", "cpu", tres_time(total))
            if ntasks == 1:  # (one task: its figures are the step's minimum as well)
                self.cells.update(MinCPU=tres_time(total), MinCPUNode=node, MinCPUTask="0")
        if not self.tres:
            return
        for column in ("TRESUsageInMax", "TRESUsageInAve", "TRESUsageInTot"):
            self._part(column, "energy", "0")
        if "TRESUsageInMaxNode" in self.tres:
            self._part("TRESUsageInMaxNode", "energy", self.tres["TRESUsageInMaxNode"].get(
                "mem", next(iter(self.tres["TRESUsageInMaxNode"].values()))))
        if ntasks == 1:
            for column in ("", "Node", "Task"):
                if f"TRESUsageInMax{column}" in self.tres:
                    self.tres[f"TRESUsageInMin{column}"] = dict(self.tres[f"TRESUsageInMax{column}"])

    def _part(self, column: str, tres: str, text: str) -> None:
        self.tres.setdefault(column, {})[tres] = text

    def _put(self, column: str, tres_column: str, tres: str, text: str) -> None:
        self.cells[column] = text
        self._part(tres_column, tres, text)

    def apply(self, row: dict[str, str]) -> None:
        """Into a step's row: the columns, and the TRES parts merged into what it has."""
        row.update(self.cells)
        for column, parts in self.tres.items():
            row[column] = merge_tres(row.get(column, ""), parts)


def merge_tres(existing: str, parts: dict[str, str]) -> str:
    """``existing`` (``energy=0``, ``gres/gpuutil=37``) with ``parts`` added, in the order of
    TRES names sacct prints them (alphabetical)."""
    items = dict(p.split("=", 1) for p in existing.split(",") if "=" in p)
    items.update(parts)
    return ",".join(f"{k}={items[k]}" for k in sorted(items))
