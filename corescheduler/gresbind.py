"""--gres-flags=enforce-binding in placement: a node is eligible only if the CPUs the job would
get there can all come from the CPUs local to the GPU units it would get (cons_tres's rule;
plurmd registers each unit's local CPUs: gres.conf Cores=, else the device's NUMA node).

The controller counts a node's allocated CPUs, it does not know which they are: the free local
CPUs are estimated as (local CPUs of the units) - (CPUs allocated on the node), the worst case
(every allocated CPU local), so a job may wait where it would fit, never start where it does not.
A unit whose locality is unknown makes every CPU local (as Slurm's GPU without Cores=).
"""

from __future__ import annotations

from plurm.common import gres
from plurm.wire.model import Node


def local_cpus_free(node: Node, units: dict[str, list[str | None]], used: dict[str, set[int]],
                    needs: list[gres.GresNeed], idle: bool = False) -> int | None:
    """How many CPUs local to the gpu units ``gres.pick`` would give the job are free here
    (``idle``: as if the node were empty); None: no limit (no map, no gpu, or unknown locality)."""
    picked = gres.pick(units, used, needs)
    if picked is None:
        return 0
    gpus = picked.get("gpu") or []
    cpu_map = node.gpu_cpus
    if not gpus or not cpu_map:
        return None
    local: set[int] = set()
    for unit in gpus:
        cpus = cpu_map[unit] if unit < len(cpu_map) else None
        if cpus is None:
            return None
        local.update(cpus)
    return max(0, len(local) - (0 if idle else node.alloc_cpus))
