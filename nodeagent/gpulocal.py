"""Which of a node's CPUs are local to each of its GPU units: what plurmd registers so the
controller can place ``--gres-flags=enforce-binding`` jobs (cons_tres's GPU-to-core map).

Per gpu unit (the scheduler's unit order, slurm.conf Gres=): the gres.conf ``Cores=`` of
the line that unit comes from, as node CPU indices (core c is CPUs c*T .. c*T+T-1 with T
threads per core); without Cores=, the CPUs on the NUMA node the accelerator backend
reports for the unit's device; without either, None (unknown: every CPU counts as local,
as Slurm treats a GPU without Cores=).
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("plurmd")


def _core_list(text: str) -> list[int]:
    """``0-3,8`` -> [0, 1, 2, 3, 8] (gresconf.py has checked the shape)."""
    out: list[int] = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _conf_cores(entries: list[Any], units: int) -> list[str | None]:
    """The Cores= text of each gpu unit, from the gpu lines in file order (a line with
    File= holds one unit per file, else Count= units, else one)."""
    out: list[str | None] = []
    for entry in entries:
        if getattr(entry, "name", None) != "gpu":
            continue
        count = len(entry.files) or entry.count or 1
        out.extend([entry.cores] * count)
    return (out + [None] * units)[:units]


def unit_local_cpus(accel: Any, confine: Any, threads_per_core: int, numa: dict[int, int] | None = None
                    ) -> list[list[int] | None]:
    """Node CPU indices local to each gpu unit (None: unknown); never raises."""
    try:
        units = len(accel.units.get("gpu", []))
        if not units:
            return []
        cores = _conf_cores(list(accel.entries), units)
        threads = max(1, threads_per_core)
        node_cpus = confine.node_cpus
        devices = list(accel.devices)
        if numa is None and any(c is None for c in cores):
            from plurm.nodeagent.stepbind import numa_of_cpus

            numa = numa_of_cpus()
        out: list[list[int] | None] = []
        for u in range(units):
            if cores[u] is not None:
                out.append(sorted({c * threads + t for c in _core_list(cores[u] or "") for t in range(threads)
                                   if c * threads + t < node_cpus}))
                continue
            node = devices[u].numa_node if u < len(devices) else None
            if node is None or not numa:
                out.append(None)
                continue
            out.append([i for i in range(node_cpus) if numa.get(confine.machine_cpus([i])[0], 0) == node])
        return out
    except Exception:  # a bad map must not stop registration: no map, no enforcement
        log.exception("GPU-local CPUs could not be worked out")
        return []
