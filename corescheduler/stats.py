"""The controller's diagnostic counters (sdiag, REST diag, /metrics) and the cluster's aggregates.

Pure: the shell (controller.py) measures durations with its clock and hands them in as
seconds; nothing here reads a clock, a socket or a file.  Two parts:

* ``Stats``: per message type and per sender uid, how many requests and how long their
  handlers took (count, total, max, in microseconds as sdiag prints them); per scheduling pass
  (the main pass, and the passes that ran the backfill cycle: core.schedule runs backfill
  inside the pass when its interval is due), the last, max and mean cycle time and depth.
  ``reset`` is ``sdiag -r``.
* ``aggregates``: what the core's state says now: jobs by state and partition, nodes by state,
  CPUs, memory and GPUs allocated and idle, per user and per account pending/running counts,
  the accelerators the node daemons detected.

Memory is bounded: message types are the dispatch table's (the shell counts only handled ones)
and uids are the ones the user database knows; beyond ``MAX_KEYS`` distinct keys the rest are
counted under one ``"other"`` entry, so a flood of new identities cannot grow the tables.
"""

from __future__ import annotations

from typing import Any

from plurm.wire import model

MAX_KEYS = 4096
OTHER = "other"


class Counter:
    """One RPC type's (or one user's) requests: count, total and max handler time (µs)."""

    __slots__ = ("count", "total_us", "max_us")

    def __init__(self) -> None:
        self.count = 0
        self.total_us = 0
        self.max_us = 0

    def add(self, micros: int) -> None:
        self.count += 1
        self.total_us += micros
        if micros > self.max_us:
            self.max_us = micros

    def as_list(self) -> list[int]:
        return [self.count, self.total_us, self.max_us]


class Cycle:
    """One kind of scheduling pass: counts, cycle times (µs) and depths (jobs considered)."""

    __slots__ = ("count", "last_us", "max_us", "total_us", "last_depth", "total_depth", "last_at")

    def __init__(self) -> None:
        self.count = 0
        self.last_us = 0
        self.max_us = 0
        self.total_us = 0
        self.last_depth = 0
        self.total_depth = 0
        self.last_at = 0.0

    def add(self, micros: int, depth: int, at: float) -> None:
        self.count += 1
        self.last_us = micros
        self.max_us = max(self.max_us, micros)
        self.total_us += micros
        self.last_depth = depth
        self.total_depth += depth
        self.last_at = at

    def as_dict(self) -> dict[str, Any]:
        n = self.count
        return {"count": n, "last_us": self.last_us, "max_us": self.max_us, "total_us": self.total_us,
                "mean_us": self.total_us // n if n else 0, "last_depth": self.last_depth,
                "mean_depth": self.total_depth // n if n else 0, "total_depth": self.total_depth,
                "last_at": self.last_at}


def _micros(seconds: float) -> int:
    return max(0, int(seconds * 1_000_000))


class Stats:
    """The counters since the controller started (or since the last ``reset``)."""

    def __init__(self, started: float) -> None:
        self.started = started  # when this controller started (never reset)
        self.reset(started)

    def reset(self, now: float) -> None:
        self.reset_time = now
        self.by_type: dict[str, Counter] = {}
        self.by_uid: dict[int | str, Counter] = {}
        self.main = Cycle()
        self.backfill = Cycle()

    @staticmethod
    def _slot(table: dict, key: Any) -> Counter:
        counter = table.get(key)
        if counter is None:
            if len(table) >= MAX_KEYS:  # bounded: the rest share one entry
                key = OTHER
                counter = table.get(key)
            if counter is None:
                counter = table[key] = Counter()
        return counter

    def rpc(self, msg_type: str, uid: int, seconds: float) -> None:
        micros = _micros(seconds)
        self._slot(self.by_type, msg_type).add(micros)
        self._slot(self.by_uid, uid).add(micros)

    def cycle(self, backfill: bool, seconds: float, depth: int, at: float) -> None:
        """One scheduling pass; ``backfill``: this pass ran the backfill cycle."""
        (self.backfill if backfill else self.main).add(_micros(seconds), depth, at)

    def snapshot(self, user_name: Any = str) -> dict[str, Any]:
        """Plain data for the wire; ``user_name(uid)`` names the senders."""
        users: dict[str, list[int]] = {}  # name -> [count, total µs, max µs, uid (-1: "other")]
        for uid, counter in self.by_uid.items():
            name = uid if isinstance(uid, str) else user_name(uid)
            if name in users:  # (two uids of one name: summed)
                old = users[name]
                users[name] = [old[0] + counter.count, old[1] + counter.total_us, max(old[2], counter.max_us), old[3]]
            else:
                users[name] = counter.as_list() + [uid if isinstance(uid, int) else -1]
        return {"started": self.started, "reset_time": self.reset_time,
                "rpc": {t: c.as_list() for t, c in sorted(self.by_type.items())},
                "rpc_user": dict(sorted(users.items())),
                "main": self.main.as_dict(), "backfill": self.backfill.as_dict()}


# ----------------------------------------------------------------------------- aggregates

def _gpu_count(gres: list[str]) -> int:
    """GPUs a node's Gres= configures: gpu:N or gpu:TYPE:N entries (N defaults to 1)."""
    total = 0
    for entry in gres:
        parts = entry.split("(")[0].split(":")
        if parts[0] != "gpu":
            continue
        last = parts[-1] if len(parts) > 1 else "1"
        total += int(last) if last.isdigit() else 1
    return total


def _job_gpus(units: dict[str, list[int]]) -> int:
    return sum(len(v) for k, v in units.items() if k == "gpu" or k.startswith("gpu:"))


def aggregates(core: Any, user_name: Any = str) -> dict[str, Any]:
    """What the core's jobs and nodes add up to now (one pass over each)."""
    jobs: dict[tuple[str, str], int] = {}
    users: dict[str, list[int]] = {}  # name -> [pending, running, cpus running]
    accounts: dict[str, list[int]] = {}
    node_cpus: dict[str, int] = {}
    node_mem: dict[str, int] = {}
    node_gpus: dict[str, int] = {}
    part_pending: dict[str, int] = {}
    names: dict[int, str] = {}
    for job in core.jobs.values():
        state = "CONFIGURING" if job.configuring else job.state
        if job.completing:
            state = "COMPLETING"
        count = max(1, len(job.array_pending)) if job.state == model.PENDING else 1
        key = (state, job.partition)
        jobs[key] = jobs.get(key, 0) + count
        uid = job.spec.user_id
        name = names.get(uid)
        if name is None:
            name = names[uid] = user_name(uid)
        account = job.spec.account or ""
        for table, label in ((users, name), (accounts, account)):
            row = table.setdefault(label, [0, 0, 0])
            if job.state == model.PENDING:
                row[0] += count
            elif job.state == model.RUNNING:
                row[1] += 1
                row[2] += sum(job.cpus)
        if job.state == model.PENDING:
            part_pending[job.partition] = part_pending.get(job.partition, 0) + count
        if job.state in (model.RUNNING, model.SUSPENDED) or job.completing:
            for i, node in enumerate(job.nodes):
                if i < len(job.gres_alloc):
                    node_gpus[node] = node_gpus.get(node, 0) + _job_gpus(job.gres_alloc[i])
    nodes: list[dict[str, Any]] = []
    devices: list[dict[str, Any]] = []
    for node in core.nodes.values():
        state = core.resv_state(node, core.now)  # (+RESERVED, as sinfo shows it)
        gpus = _gpu_count(node.gres)
        nodes.append({"name": node.name, "state": state, "cpus": node.cpus, "alloc_cpus": node.alloc_cpus,
                      "mem": node.real_memory, "alloc_mem": node.alloc_mem, "gpus": gpus,
                      "alloc_gpus": min(gpus, node_gpus.get(node.name, 0)), "partitions": list(node.partitions),
                      "responding": node.responding, "cpu_load": node.cpu_load, "free_mem": node.free_mem})
        node_cpus[node.name] = node.cpus
        node_mem[node.name] = node.real_memory
        for device in node.devices:
            devices.append({"node": node.name, "vendor": str(device.get("vendor", "")),
                            "model": str(device.get("model", "")), "backend": str(device.get("backend", "")),
                            "health": str(device.get("health", "ok")), "kind": str(device.get("kind", "gpu"))})
    partitions = []
    by_name = {n["name"]: n for n in nodes}
    for part in core.partitions.values():
        members = [by_name[n] for n in part.nodes if n in by_name]
        total = sum(n["cpus"] for n in members)
        alloc = sum(n["alloc_cpus"] for n in members)
        other = sum(n["cpus"] - n["alloc_cpus"] for n in members if not available(n["state"]))
        partitions.append({"name": part.name, "cpus_total": total, "cpus_alloc": alloc, "cpus_other": other,
                           "cpus_idle": total - alloc - other, "nodes": len(members),
                           "jobs_pending": part_pending.get(part.name, 0),
                           "jobs_running": sum(c for (s, p), c in jobs.items() if p == part.name and s == model.RUNNING)})
    return {"jobs": [[s, p, c] for (s, p), c in sorted(jobs.items())],
            "users": dict(sorted(users.items())), "accounts": dict(sorted(accounts.items())),
            "nodes": nodes, "partitions": partitions, "devices": devices}


def available(state: str) -> bool:
    """Whether a node in ``state`` can take work (its idle CPUs are idle, not "other")."""
    word = state.upper()
    return not (word.startswith(("DOWN", "UNKNOWN", "FUTURE")) or "DRAIN" in word or word.endswith("*")
                or "MAINT" in word)
