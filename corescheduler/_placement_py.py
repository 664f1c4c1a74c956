"""Placement kernel: which nodes, and how many tasks on each, for one job.

Plain Python, typed by _placement_c.pxd and compiled by Cython where a
compiler exists (_placement_c is a link to this file); the same code runs
as the pure-Python twin.  plurm.corescheduler picks one at import time.

Semantics follow select/cons_tres for the options the controller passes:
nodes are tried in the order given (the caller sorts by Weight, then
name); a node qualifies when it can hold at least one task (or exactly
ntasks_per_node tasks) with its free CPUs and memory; tasks are then dealt
round-robin over the chosen nodes, up to each node's capacity, which is
how Slurm balances `-N2 -n4` as 2+2.
"""


def node_capacity(free_cpus: int, free_mem: int, total_cpus: int, cpus_per_task: int,
                  mem_per_node: int, mem_per_cpu: int, exclusive: int) -> int:
    """How many tasks of the job fit on one node (0: none)."""
    if exclusive and free_cpus < total_cpus:
        return 0
    if cpus_per_task <= 0:
        cpus_per_task = 1
    tasks = free_cpus // cpus_per_task
    if mem_per_cpu > 0:
        per_task = mem_per_cpu * cpus_per_task
        by_mem = free_mem // per_task
        if by_mem < tasks:
            tasks = by_mem
    elif mem_per_node > 0 and free_mem < mem_per_node:
        return 0
    return tasks


def place(free_cpus: list, free_mem: list, total_cpus: list, order: list,
          nodes_min: int, nodes_max: int, ntasks: int, cpus_per_task: int,
          ntasks_per_node: int, mem_per_node: int, mem_per_cpu: int, exclusive: int):
    """Choose nodes for a job; return (node indices, tasks per node) or None.

    ``order`` lists the candidate node indices in preference order.
    ``nodes_max`` <= 0 means no maximum; ``ntasks_per_node`` <= 0 means not given.
    """
    if 0 < ntasks < nodes_min:
        nodes_min = ntasks  # every chosen node runs a task (sbatch: "setting nnodes to N")
    chosen = []
    caps = []
    total = 0
    count = len(order)
    limit = nodes_max if nodes_max > 0 else count
    i = 0
    while i < count:
        idx = order[i]
        i += 1
        cap = node_capacity(free_cpus[idx], free_mem[idx], total_cpus[idx], cpus_per_task,
                            mem_per_node, mem_per_cpu, exclusive)
        if ntasks_per_node > 0:
            if cap < ntasks_per_node:
                continue
            cap = ntasks_per_node
        elif cap <= 0:
            continue
        chosen.append(idx)
        caps.append(cap)
        total += cap
        if len(chosen) >= nodes_min and total >= ntasks:
            break
        if len(chosen) >= limit:
            break
    if len(chosen) < nodes_min or total < ntasks:
        return None
    # Deal tasks round-robin so that the chosen nodes are balanced.
    n = len(chosen)
    tasks = [0] * n
    remaining = ntasks
    if ntasks_per_node > 0:
        for k in range(n):
            tasks[k] = caps[k]
        return chosen, tasks
    while remaining > 0:
        progressed = 0
        for k in range(n):
            if remaining == 0:
                break
            if tasks[k] < caps[k]:
                tasks[k] += 1
                remaining -= 1
                progressed = 1
        if not progressed:
            return None
    return chosen, tasks
