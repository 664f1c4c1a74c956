"""The controller's last accelerator reading per node and device, for /metrics.

plurmd sends every device's utilisation and memory in use with a ping once per usage interval
(protocol.NodePing.gpu_usage, nodeagent/gpu_report.py).  The controller keeps only the last
reading of each device: no history, and no more entries than the node registered devices
(a reading for a unit the node did not register, or whose uuid is not that unit's, is dropped).
Nothing is stored: a restarted controller shows nothing until the next readings come.

The reading's age is the node's own (``age_s`` when the ping left) plus the time since it came,
so no two clocks are compared.  Readings are shown only while their node responds and is
still configured; a ping with an empty list (the node could read nothing) drops its readings.
Pure: the shell hands in the time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class GpuReadings:
    def __init__(self) -> None:
        # node -> gpu unit -> (reading as a dict without its age, when it was taken by our clock)
        self._by_node: dict[str, dict[int, tuple[dict[str, Any], float]]] = {}

    def update(self, node: Any, readings: Iterable[Any] | None, now: float) -> None:
        """A node's ping (``node``: the core's Node); ``readings`` None: nothing new."""
        if readings is None or node is None:
            return
        devices = list(getattr(node, "devices", None) or [])
        kept: dict[int, tuple[dict[str, Any], float]] = {}
        for r in readings:
            if not 0 <= r.gpu < len(devices) or r.uuid != str(devices[r.gpu].get("uuid", "")):
                continue  # not a device the node registered: never an unbounded table
            kept[r.gpu] = ({"gpu": r.gpu, "uuid": r.uuid, "type": r.type, "model": r.model,
                            "util": r.util, "mem_used_mb": r.mem_used_mb}, now - max(0.0, r.age_s))
        if kept:
            self._by_node[node.name] = kept
        else:
            self._by_node.pop(node.name, None)

    def forget(self, name: str) -> None:
        self._by_node.pop(name, None)

    def rows(self, nodes: Mapping[str, Any], now: float) -> list[dict[str, Any]]:
        """The readings of the nodes that respond, each with ``node`` and ``age_s``; nodes
        that are gone from ``nodes`` (the core's) are forgotten."""
        out: list[dict[str, Any]] = []
        for name in sorted(self._by_node):
            node = nodes.get(name)
            if node is None:
                del self._by_node[name]
                continue
            if not getattr(node, "responding", True):
                continue  # a silent node's last figures are not its usage now
            for unit, (reading, taken_at) in sorted(self._by_node[name].items()):
                out.append(dict(reading, node=name, age_s=round(max(0.0, now - taken_at), 3)))
        return out
