"""`scontrol show job`'s layout fields (issue 14, area topology), as Slurm 22.05.8 prints them.

Measured on the anchor (tests/corescheduler/reference/topology/anchor_sbatch*.txt):
``ReqB:S:C:T=0:0:C:T`` carries the cores per socket and threads per core asked for (a hint
of one thread per core shows T=1, memory_bound C=1 too) while the sockets go to
``Socks/Node=``; ``NtasksPerN:B:S:C=N:0:S:C`` the tasks per node, socket and core;
``MinCPUsNode`` is --mincpus when it is more than the tasks per node need; ``NtasksPerTRES=``
follows the TresPer lines.  A --hint beside the options it would set sets nothing.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from typing import Any

_ONE_THREAD = ("compute_bound", "memory_bound", "nomultithread")


def effective_hint(spec: dict[str, Any]) -> list[str]:
    """--hint, unless an option it would set is given too: then that option wins and the hint
    sets nothing (22.05.8: --hint=compute_bound --ntasks-per-core=1 shows ReqB:S:C:T=0:0:*:*,
    --hint=memory_bound --threads-per-core=1 0:0:*:1)."""
    if any(spec.get(k) for k in ("ntasks_per_core", "threads_per_core", "cores_per_socket", "sockets_per_node")):
        return []
    return list(spec.get("hint") or [])


def _or_star(value: Any) -> str:
    return str(value) if value else "*"


def req_bsct(spec: dict[str, Any]) -> str:
    """ReqB:S:C:T's value."""
    hint = effective_hint(spec)
    cores = spec.get("cores_per_socket") or (1 if "memory_bound" in hint else None)
    one = any(h in hint for h in _ONE_THREAD) and "multithread" not in hint
    threads = spec.get("threads_per_core") or (1 if one else None)
    return f"0:0:{_or_star(cores)}:{_or_star(threads)}"


def socks_line(spec: dict[str, Any]) -> str:
    """The `Socks/Node=... NtasksPerN:B:S:C=... CoreSpec=*` line."""
    return (f"Socks/Node={_or_star(spec.get('sockets_per_node'))} "
            f"NtasksPerN:B:S:C={spec.get('ntasks_per_node') or 0}:0:"
            f"{_or_star(spec.get('ntasks_per_socket'))}:{_or_star(spec.get('ntasks_per_core'))} CoreSpec=*")


def min_cpus_node(spec: dict[str, Any], tasks_need: int) -> int:
    """MinCPUsNode: the CPUs the tasks of a node need, or --mincpus if more."""
    return max(tasks_need, int(spec.get("min_cpus") or 0))


def per_tres_lines(spec: dict[str, Any]) -> list[str]:
    return [f"NtasksPerTRES={spec['ntasks_per_gpu']}"] if spec.get("ntasks_per_gpu") else []


# -- scontrol show node: a node's specialized CPUs (CoreSpecCount / CPUSpecList)

def cpus_effective(node: dict[str, Any]) -> int:
    """CPUEfctv: the CPUs jobs may have (22.05.8 with CoreSpecCount=1 on 4 CPUs: 3)."""
    return int(node.get("cpus", 1)) - len(node.get("cpu_spec_list") or [])


def spec_lines(node: dict[str, Any]) -> list[str]:
    """`   CoreSpecCount=1 CPUSpecList=3 ` after the RealMemory line, only for a node that has them."""
    spec = node.get("cpu_spec_list") or []
    if not spec:
        return []
    from plurm.grammar.hostlist import bitmap_ranges

    threads = max(int(node.get("threads_per_core", 1)), 1)
    return [f"CoreSpecCount={len({c // threads for c in spec})} CPUSpecList={bitmap_ranges(sorted(spec))} "]
