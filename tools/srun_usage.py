"""What srun gathers from its step's task_exit messages beyond the exit statuses: the kernel's
OOM kills and the step's usage on each node, summed up for ``step_complete``.

plurmstepd (nodeagent/stepd.py) may put in a task_exit ``oom_kills`` (OOM kills in the step's
cgroup on its node) and ``usage`` (the step on its node, keys as ``protocol.STEP_USAGE_KEYS``
without the *_node ones); both are figures of the node, not of the task, and may repeat in
every task_exit of that node: the latest of a node counts.  Over the nodes: OOM kills and CPU
times are summed, the maxima keep the node and task that had them, the averages are weighted
by the node's tasks.  Plain dicts in, plain dicts out (srun's start-up budget: stdlib only).
"""

from __future__ import annotations

from typing import Any

_MAXIMA = (("max_rss_kb", "max_rss_node", "max_rss_task"),
           ("max_vmsize_kb", "max_vmsize_node", "max_vmsize_task"))
_AVERAGES = ("ave_rss_kb", "ave_vmsize_kb")
_SUMS = ("user_cpu_s", "system_cpu_s")


def _number(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class StepUsage:
    def __init__(self) -> None:
        self.oom: dict[str, int] = {}  # node -> OOM kills in the step there
        self.usage: dict[str, dict[str, Any]] = {}  # node -> its latest usage report
        self.tasks: dict[str, set[int]] = {}  # node -> the tasks that reported from it

    def add(self, node: str, task: int, body: dict[str, Any]) -> None:
        """One task_exit from ``node``."""
        self.tasks.setdefault(node, set()).add(task)
        kills = _number(body.get("oom_kills"))
        if kills:
            self.oom[node] = max(self.oom.get(node, 0), int(kills))
        usage = body.get("usage")
        if isinstance(usage, dict) and usage:
            self.usage[node] = usage

    def oom_kills(self) -> int:
        return sum(self.oom.values())

    def oom_node(self, node: str) -> bool:
        return self.oom.get(node, 0) > 0

    def summary(self) -> dict[str, Any]:
        """The step's usage over its nodes, for step_complete ({} when no node measured any)."""
        out: dict[str, Any] = {}
        for key, node_key, task_key in _MAXIMA:
            best = max(((v, n) for n, u in self.usage.items() if (v := _number(u.get(key))) is not None),
                       default=None)
            if best is not None:
                out[key], out[node_key] = best[0], best[1]
                task = _number(self.usage[best[1]].get(task_key))
                out[task_key] = int(task) if task is not None else min(self.tasks.get(best[1]) or {0})
        for key in _AVERAGES:
            weighted = [(v, len(self.tasks.get(n) or ()) or 1) for n, u in self.usage.items()
                        if (v := _number(u.get(key))) is not None]
            if weighted:
                out[key] = sum(v * w for v, w in weighted) / sum(w for _, w in weighted)
        for key in _SUMS:
            values = [v for u in self.usage.values() if (v := _number(u.get(key))) is not None]
            if values:
                out[key] = sum(values)
        return out
