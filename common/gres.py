"""Generic resources (GRES) as the scheduler counts them: units with an index and a type.

A node's ``Gres=gpu:h200:2,gpu:a100:2,shard:8`` becomes numbered units per
name (gpu 0-1 of type h200, gpu 2-3 of type a100; shard 0-7), as Slurm
numbers a node's devices.  A job asks per node (``--gres``,
``--gpus-per-node``), per task (``--gpus-per-task``) or per job
(``--gpus``); ``needs_per_node`` turns that into one per-node need list,
and ``pick`` chooses specific free units (lowest indices first), so a job
gets specific devices that nobody else gets, except through gres/shard:
shards are spread over a node's gpus, and jobs holding shards of one gpu
share it (while nobody holds that gpu whole).
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:  # sbatch imports this module: no typing/dataclasses at run time
    from typing import Any

_SUFFIX = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}

# One per-node requirement: `count` units of GRES `name`, of `type` (None: any type).
GresNeed = namedtuple("GresNeed", ["name", "type", "count"])


def _count(text: str) -> int:
    text = text.strip().lower()
    if text and text[-1] in _SUFFIX:
        return int(text[:-1]) * _SUFFIX[text[-1]]
    return int(text)


def node_units(items: list[str]) -> dict[str, list[str | None]]:
    """Unit types per GRES name, in index order, from a node's Gres= items."""
    units: dict[str, list[str | None]] = {}
    for item in items:
        for part in item.split(","):
            part = part.split("(", 1)[0].strip()  # drop a socket binding such as (S:0-1)
            if not part:
                continue
            fields = part.split(":")
            name = fields[0]
            gres_type: str | None = None
            count = 1
            if len(fields) == 2:
                if fields[1][:1].isdigit():
                    count = _count(fields[1])
                else:
                    gres_type = fields[1]
            elif len(fields) >= 3:
                gres_type, count = fields[1], _count(fields[2])
            units.setdefault(name, []).extend([gres_type] * count)
    return units


def _parse_count_spec(value: Any) -> tuple[str | None, int] | None:
    """"2", "a100:2", {"type":..,"count":..} -> (type, count)."""
    if value is None or value is True:
        return None
    if isinstance(value, dict):
        return value.get("type"), int(value.get("count") or 0)
    if isinstance(value, int):
        return None, value
    text = str(value)
    gres_type, _, count = text.rpartition(":")
    return (gres_type or None), _count(count)


def request_from_options(options: dict[str, Any]) -> list[dict[str, Any]]:
    """The GRES part of sbatch/srun options as JobSpec.gres_req items."""
    req: list[dict[str, Any]] = []
    for item in options.get("gres") or []:
        if isinstance(item, dict) and item.get("count", 1):
            req.append({"name": item["name"], "type": item.get("type"), "count": int(item.get("count", 1)),
                        "per": "node"})
    for option, per in (("gpus", "job"), ("gpus-per-node", "node"), ("gpus-per-task", "task")):
        parsed = _parse_count_spec(options.get(option))
        if parsed and parsed[1]:
            req.append({"name": "gpu", "type": parsed[0], "count": parsed[1], "per": per})
    return req


def needs_per_node(req: list[dict[str, Any]], nodes_min: int, tasks_per_node: int) -> list[GresNeed]:
    """What every allocated node must hold.

    --gpus=N (per job) asks for N on one node unless -N says more nodes, then
    an even share; --gpus-per-task multiplies by the tasks a node runs.
    """
    needs: dict[tuple[str, str | None], int] = {}
    for item in req:
        count = int(item["count"])
        per = item.get("per", "node")
        if per == "job":
            count = -(-count // max(nodes_min, 1))
        elif per == "task":
            count *= max(tasks_per_node, 1)
        key = (item["name"], item.get("type"))
        needs[key] = max(needs.get(key, 0), count)
    return [GresNeed(name, gres_type, count) for (name, gres_type), count in needs.items()]


def shard_owner(units: dict[str, list[str | None]], shard: int) -> int | None:
    """The gpu a shard unit lives on: a node's shards are spread evenly over its gpus
    (gres/shard: several jobs share one GPU, each holding some of its shards)."""
    gpus = len(units.get("gpu", []))
    shards = len(units.get("shard", []))
    if not gpus or not shards:
        return None
    return shard * gpus // shards


def _blocked(units: dict[str, list[str | None]], used: dict[str, set[int]], name: str, index: int,
             chosen: dict[str, list[int]]) -> bool:
    """A whole gpu and its shards exclude each other."""
    if name == "gpu":
        shards = used.get("shard", set()) | set(chosen.get("shard", []))
        return any(shard_owner(units, s) == index for s in shards)
    if name == "shard":
        owner = shard_owner(units, index)
        return owner is not None and (owner in used.get("gpu", set()) or owner in chosen.get("gpu", []))
    return False


def fits(units: dict[str, list[str | None]], used: dict[str, set[int]], needs: list[GresNeed]) -> bool:
    return pick(units, used, needs) is not None


def pick(units: dict[str, list[str | None]], used: dict[str, set[int]], needs: list[GresNeed]
         ) -> dict[str, list[int]] | None:
    """Free unit indices satisfying every need, lowest first; None when they do not fit."""
    chosen: dict[str, list[int]] = {}
    for need in needs:
        types = units.get(need.name)
        if not types:
            return None
        taken = used.get(need.name, set())
        already = set(chosen.get(need.name, []))
        free = [i for i, t in enumerate(types)
                if i not in taken and i not in already and (need.type is None or t == need.type)
                and not _blocked(units, used, need.name, i, chosen)]
        if len(free) < need.count:
            return None
        chosen.setdefault(need.name, []).extend(free[:need.count])
    return chosen


def capacity(units: dict[str, list[str | None]], need: GresNeed) -> int:
    """How many units of a need's name and type a node has at all."""
    return sum(1 for t in units.get(need.name, []) if need.type is None or t == need.type)


def format_indices(indices: list[int]) -> str:
    """Slurm's SLURM_JOB_GPUS form: "0,1,2"."""
    return ",".join(str(i) for i in sorted(indices))


def gpus_in_all(req: list[dict[str, Any]], nodes: int) -> int:
    """The GPUs a structured request names in all: per job, plus per node times ``nodes``
    (--ntasks-per-gpu counts tasks from them: tools/jobspec_topology.py, corescheduler/topology.py)."""
    total = 0
    for item in req:
        count = item.get("count")
        if item.get("name") != "gpu" or not isinstance(count, int) or isinstance(count, bool):
            continue
        per = item.get("per", "node")
        if per == "job":
            total += count
        elif per == "node":
            total += count * max(nodes, 1)
    return total
