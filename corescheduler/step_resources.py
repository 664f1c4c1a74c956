"""What a job's running steps hold of its allocation: CPUs per node, and reserved ports.

Slurm 22.05 (measured: tests/integration/reference/srun-client/capture3.txt, capture5.txt):

- a step without ``--exact`` holds every CPU of the job on each of its nodes (``--whole``
  says so outright); with ``--exact`` only the CPUs its tasks ask for, so several steps
  share a node; an ``--overlap`` step (and the interactive step) holds nothing;
- a step that would need CPUs or ports held by running steps waits ("step creation
  temporarily disabled, retrying"); one that could never fit is refused;
- with ``MpiParams=ports=P1-P2`` every step reserves ports from that pool (the largest task
  count on one of its nodes + 1, or ``--resv-ports=N``), never a port of another running
  step, dealt out cyclically after the last one handed out; its tasks see them as
  ``SLURM_STEP_RESV_PORTS`` (``12000,12002-12003``).

Pure bookkeeping, no I/O: the core (core_nodes.step_create) asks and records.  Claims live
in memory only: after a controller restart the running steps count as holding nothing, so
new steps may share their CPUs (never the reverse: no step waits for a claim that is gone).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from plurm.grammar.hostlist import bitmap_ranges

# srun -Z's steps have no job: their job ids lie beyond MaxJobId's range (67043328 at most)
NO_ALLOCATE_JOB_BASE = 0x7FFF0000
INTERACTIVE_STEP_ID = 0xFFFFFFFA  # SLURM_INTERACTIVE_STEP: what 22.05's interactive step's tasks see as SLURM_STEP_ID


class StepBusy(Exception):
    """The step fits the job, but not beside its running steps now: srun retries."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def port_pool(mpi_params: str) -> tuple[int, int] | None:
    """``MpiParams=ports=12000-12999`` as (12000, 12999); None without a (valid) range."""
    for item in (mpi_params or "").split(","):
        key, _, value = item.strip().partition("=")
        if key.strip().lower() != "ports":
            continue
        low, _, high = value.partition("-")
        try:
            first, last = int(low), int(high)
        except ValueError:
            return None
        return (first, last) if 0 < first <= last <= 65535 else None
    return None


def port_ranges(ports: list[int]) -> str:
    """Ports as Slurm writes SLURM_STEP_RESV_PORTS: sorted, runs as ``a-b``, comma-separated
    (a bitmap's ranges, as hostlist writes CPU ids)."""
    return bitmap_ranges(ports)


@dataclass
class Claim:
    nodes: list[str]
    cpus: list[int]  # CPUs held on each of ``nodes`` (0: none, an overlapping step)
    ports: list[int] = field(default_factory=list)


class StepClaims:
    """The claims of the running steps, by (job id, step id as the core keys steps)."""

    def __init__(self) -> None:
        self.claims: dict[tuple[int, str], Claim] = {}
        self.next_port: int | None = None  # where the next reservation starts looking (cyclic)

    def forget_gone(self, running: set[tuple[int, str]]) -> None:
        """Drop the claims of steps that are no longer running (ended, their job gone)."""
        for key in [k for k in self.claims if k not in running]:
            del self.claims[key]

    def held_cpus(self, job_id: int) -> dict[str, int]:
        held: dict[str, int] = {}
        for (jid, _), claim in self.claims.items():
            if jid == job_id:
                for node, cpus in zip(claim.nodes, claim.cpus):
                    held[node] = held.get(node, 0) + cpus
        return held

    def ports_in_use(self) -> set[int]:
        return {p for claim in self.claims.values() for p in claim.ports}

    def reserve_ports(self, pool: tuple[int, int], count: int) -> list[int]:
        """``count`` ports of ``pool`` that no running step holds, cyclically after the last
        ones handed out.  Raises ValueError when the pool is smaller than ``count`` (never
        possible) and StepBusy when running steps hold too many of it (later, perhaps)."""
        first, last = pool
        size = last - first + 1
        if count > size:
            raise ValueError("Requires more ports than can be reserved")
        used = self.ports_in_use()
        start = self.next_port if self.next_port is not None and first <= self.next_port <= last else first
        got: list[int] = []
        for i in range(size):
            port = first + (start - first + i) % size
            if port not in used:
                got.append(port)
                if len(got) == count:
                    break
        if len(got) < count:
            raise StepBusy("Required ports are in use")
        self.next_port = got[-1] + 1 if got[-1] < last else first
        return got

    def add(self, key: tuple[int, str], claim: Claim) -> None:
        self.claims[key] = claim

    def release(self, key: tuple[int, str]) -> None:
        self.claims.pop(key, None)


def place(names: list[str], job_cpus: list[int], held: dict[str, int], count: int, ntasks: int, cpt: int,
          mode: str, overcommit: bool) -> tuple[list[str], list[int], str]:
    """The step's nodes (``count`` of ``names``), the tasks each can take, and what the step
    holds there ("tasks": its tasks' CPUs; "node": the job's CPUs of the node).

    ``mode`` "default": the first nodes, whatever runs there (plurm's steps without --exact
    or --whole never wait: as --overlap would, where 22.05 waits for whole nodes); "exact":
    the nodes with CPUs free beside the running steps first, the tasks in those free CPUs;
    "whole": only nodes no running step holds anything of.  StepBusy when the step fits the
    job but not now."""
    capacity_all = [max(c // cpt, 0) for c in job_cpus]
    if mode == "default":
        return names[:count], capacity_all[:count], "node"
    free = [max(c - held.get(n, 0), 0) for n, c in zip(names, job_cpus)]
    if mode == "whole":
        order = [i for i in range(len(names)) if held.get(names[i], 0) == 0]
        if len(order) < count:
            raise StepBusy("Requested nodes are busy")
        chosen = order[:count]
        return [names[i] for i in chosen], [capacity_all[i] for i in chosen], "node"
    # exact: the nodes with room first (22.05 ran a second -N1 --exact step on the job's free n2)
    order = sorted(range(len(names)), key=lambda i: (free[i] < cpt, i))
    chosen = order[:count]
    capacity = [free[i] // cpt for i in chosen]
    if (sum(capacity) < ntasks and not overcommit) or min(capacity, default=0) < 1:
        best = sorted(capacity_all, reverse=True)[:count]
        if sum(best) >= ntasks or overcommit:
            raise StepBusy("Requested nodes are busy")
        return [names[i] for i in chosen], [capacity_all[i] for i in chosen], "tasks"  # (refused by the caller)
    return [names[i] for i in chosen], capacity, "tasks"
