# cython: boundscheck=False, wraparound=False, initializedcheck=False
"""Placement kernel: which nodes, and how many tasks on each, for one job.

Plain Python, typed by _placement_c.pxd and compiled by Cython where a
compiler exists (_placement_c is a link to this file); the same code runs
as the pure-Python twin.  plurm.corescheduler picks one at import time.

``place()`` has two modes.

* With ``node_weight`` (the main pass): select/cons_tres's choice of nodes
  as real Slurm 22.05 makes it (observed, see docs/scheduling.md
  "Placement: best fit").  Nodes are taken by Weight, lowest first.  Within
  one Weight the candidate nodes that can hold a task form *sets* of nodes
  adjacent in slurm.conf order; the job goes to the smallest set that can
  hold what it still needs (else the biggest set, and on to the next).
  When one more node is all it needs, it takes the node of that set with
  the fewest free resources that still holds it (best fit); otherwise it
  takes the set's nodes from its start, each counted as full as the nodes
  still needed allow.  A node range (`-N2-4`) takes as many nodes as it
  can, up to its maximum (one task per node at least).
* Without it (``node_weight=None``, the 12-argument call backfill makes):
  the first nodes in the order given that hold a task.

Either way the tasks are then laid out over the chosen nodes as Slurm does
(deal(), measured: `-N2 -n4` is 3+1, `-N2-4 -n6` 2+2+1+1).
"""

from array import array


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
          ntasks_per_node: int, mem_per_node: int, mem_per_cpu: int, exclusive: int,
          node_weight: list = None, node_id: list = None, nreq: int = 0):
    """Choose nodes for a job; return (node indices, tasks per node) or None.

    ``order`` lists the candidate node indices in preference order (by
    Weight, then slurm.conf order); the per-node lists are indexed by them.
    ``nodes_max`` <= 0 means no maximum; ``ntasks_per_node`` <= 0 means not given.
    ``node_weight``: each node's Weight (selects Slurm's best-fit choice);
    ``node_id``: each node's position in slurm.conf, for adjacency (default:
    the index itself); ``nreq``: the first ``nreq`` entries of ``order`` are
    required nodes (-w), taken first.
    """
    if 0 < ntasks < nodes_min:
        nodes_min = ntasks  # every chosen node runs a task (sbatch: "setting nnodes to N")
    if node_weight is None:
        return _first_fit(free_cpus, free_mem, total_cpus, order, nodes_min, nodes_max, ntasks,
                          cpus_per_task, ntasks_per_node, mem_per_node, mem_per_cpu, exclusive)
    result = _best_fit(free_cpus, free_mem, total_cpus, order, nodes_min, nodes_max, ntasks,
                       cpus_per_task, ntasks_per_node, mem_per_node, mem_per_cpu, exclusive,
                       node_weight, node_id, nreq, 0)
    if result is not None or nodes_max <= 0:
        return result
    # The node maximum stopped it: like Slurm, try again without the nodes that
    # hold the fewest tasks, then without the next fewest, ...
    count = len(order)
    caps = []
    k = 0
    while k < count:
        idx = order[k]
        cap = node_capacity(free_cpus[idx], free_mem[idx], total_cpus[idx], cpus_per_task,
                            mem_per_node, mem_per_cpu, exclusive)
        if ntasks_per_node > 0 and cap > ntasks_per_node:
            cap = ntasks_per_node
        if k >= nreq and cap > 0:
            caps.append(cap)
        k += 1
    if ntasks_per_node > 0 or not caps:
        return None
    caps.sort()
    k = len(caps) - nodes_max  # (no negative indices: compiled without wraparound)
    if sum(caps[k if k > 0 else 0:]) < ntasks:
        return None  # not even the biggest nodes hold it
    biggest = caps[len(caps) - 1]
    last = 0
    for drop in caps:
        if drop == last or drop == biggest:
            continue
        last = drop
        result = _best_fit(free_cpus, free_mem, total_cpus, order, nodes_min, nodes_max, ntasks,
                           cpus_per_task, ntasks_per_node, mem_per_node, mem_per_cpu, exclusive,
                           node_weight, node_id, nreq, drop)
        if result is not None:
            return result
    return None


def _capacity(free_cpus: list, free_mem: list, total_cpus: list, idx: int, cpus_per_task: int,
              ntasks_per_node: int, mem_per_node: int, mem_per_cpu: int, exclusive: int) -> int:
    cap = node_capacity(free_cpus[idx], free_mem[idx], total_cpus[idx], cpus_per_task,
                        mem_per_node, mem_per_cpu, exclusive)
    if ntasks_per_node > 0:
        if cap < ntasks_per_node:
            return 0
        return ntasks_per_node
    return cap


def _best_fit(free_cpus: list, free_mem: list, total_cpus: list, order: list,
              nodes_min: int, nodes_max: int, ntasks: int, cpus_per_task: int,
              ntasks_per_node: int, mem_per_node: int, mem_per_cpu: int, exclusive: int,
              node_weight: list, node_id: list, nreq: int, drop: int):
    """Slurm's choice (see the module's docstring); nodes holding at most ``drop``
    tasks are left out (required nodes never)."""
    count = len(order)
    # How many nodes it would like: a range (-N2-4) as many as it may have.
    want = nodes_min
    if nodes_max > nodes_min:
        if ntasks_per_node > 0:
            want = -(-ntasks // ntasks_per_node)
        else:
            want = ntasks
        if want > nodes_max:
            want = nodes_max
        if want < nodes_min:
            want = nodes_min
    left = nodes_max if nodes_max > 0 else count
    rem_tasks = ntasks
    rem_nodes = want
    min_rem = nodes_min
    # Per position of ``order``: tasks the node can hold (0: none, or already chosen)
    # and its place in slurm.conf (adjacency), filled one Weight at a time.
    caps = array("l", [0]) * count
    ids = array("l", [0]) * count
    chosen = []
    holds = []  # what each chosen node can hold
    k = 0
    while k < nreq:  # required nodes first, whatever they hold
        cap = _capacity(free_cpus, free_mem, total_cpus, order[k], cpus_per_task, ntasks_per_node,
                        mem_per_node, mem_per_cpu, exclusive)
        if cap <= 0 or left <= 0:
            return None
        take = _take(cap, rem_tasks, min_rem, ntasks_per_node, exclusive)
        chosen.append(order[k])
        holds.append(cap)
        rem_tasks -= take
        rem_nodes -= 1
        min_rem -= 1
        left -= 1
        k += 1
    start = nreq  # first candidate of the current Weight
    end = nreq  # the current Weight's candidates are [start, end)
    while left > 0 and (rem_nodes > 0 or rem_tasks > 0):
        if start >= end:
            # Next Weight: its nodes' capacities.
            start = end
            if start >= count:
                break
            weight = node_weight[order[start]]
            end = start
            while end < count:
                idx = order[end]
                if node_weight[idx] != weight:
                    break
                cap = _capacity(free_cpus, free_mem, total_cpus, idx, cpus_per_task,
                                ntasks_per_node, mem_per_node, mem_per_cpu, exclusive)
                if cap <= drop:
                    cap = 0
                caps[end] = cap
                ids[end] = idx if node_id is None else node_id[idx]
                end += 1
        # The sets of adjacent nodes of this Weight: the smallest that holds the
        # rest of the job, else the biggest (first of equals).
        best = -1
        best_end = -1
        best_sum = 0
        best_ok = 0
        k = start
        while k < end:
            if caps[k] <= 0:
                k += 1
                continue
            first = k
            total = 0
            nodes = 0
            while True:
                total += caps[k]
                nodes += 1
                k += 1
                if k >= end or caps[k] <= 0 or ids[k] != ids[k - 1] + 1:
                    break
            ok = 1 if total >= rem_tasks and nodes >= min_rem else 0
            if (best < 0 or (ok and not best_ok) or (ok and total < best_sum)
                    or (not ok and not best_ok and total > best_sum)):
                best = first
                best_end = k
                best_sum = total
                best_ok = ok
                if ok and total <= rem_tasks:
                    break  # nothing fits tighter
        if best < 0:
            start = end  # this Weight has nothing left
            continue
        if best_ok and rem_nodes <= 1:
            # One node more: the one that holds the rest with the least to spare.
            fit = -1
            k = best
            while k < best_end:
                if caps[k] >= rem_tasks and (fit < 0 or caps[k] < caps[fit]):
                    fit = k
                k += 1
            if fit >= 0:
                best = fit
                best_end = fit + 1
        k = best
        while k < best_end and left > 0 and (rem_nodes > 0 or rem_tasks > 0):
            take = _take(caps[k], rem_tasks, min_rem, ntasks_per_node, exclusive)
            chosen.append(order[k])
            holds.append(caps[k])
            caps[k] = 0
            rem_tasks -= take
            rem_nodes -= 1
            min_rem -= 1
            left -= 1
            k += 1
    n = len(chosen)
    if n < nodes_min or rem_tasks > 0:
        return None
    # The tasks laid out as Slurm does, in the order the nodes were taken (deal()),
    # then listed in slurm.conf order.
    if ntasks_per_node > 0:
        tasks = [ntasks_per_node] * n
    else:
        tasks = deal(holds, ntasks, nodes_min, cpus_per_task, exclusive)
        if tasks is None:
            return None
    pairs = []
    k = 0
    while k < n:
        idx = chosen[k]
        pairs.append((idx if node_id is None else node_id[idx], idx, tasks[k]))
        k += 1
    pairs.sort()
    return [p[1] for p in pairs], [p[2] for p in pairs]


def _take(cap: int, rem_tasks: int, min_rem: int, ntasks_per_node: int, exclusive: int) -> int:
    """How many of the remaining tasks a chosen node takes: as many as it holds, less one
    for each node the job still needs (a whole node for --exclusive)."""
    if ntasks_per_node > 0 or exclusive:
        return cap
    take = rem_tasks
    if min_rem > 1:
        take -= min_rem - 1
    if take > cap:
        take = cap
    if take < 0:
        take = 0
    return take


def _first_fit(free_cpus: list, free_mem: list, total_cpus: list, order: list,
               nodes_min: int, nodes_max: int, ntasks: int, cpus_per_task: int,
               ntasks_per_node: int, mem_per_node: int, mem_per_cpu: int, exclusive: int):
    """The first nodes of ``order`` that hold a task, tasks dealt as Slurm does (deal())."""
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
    if ntasks_per_node > 0:
        return chosen, caps
    tasks = deal(caps, ntasks, nodes_min, cpus_per_task, exclusive)
    if tasks is None:
        return None
    return chosen, tasks


def deal(holds: list, ntasks: int, nodes_min: int, cpus_per_task: int, exclusive: int):
    """Tasks per chosen node, the nodes in the order they were taken, as Slurm 22.05 lays
    them out; None if the nodes cannot hold them.  ``holds``: the tasks each node holds.

    Measured on the real Slurm (docs/scheduling.md, "Tasks per node"): first each node
    gets a limit, in order: what is left of the job's CPUs, less one CPU for each node
    still needed to reach the job's minimum, at least one task, at most what it holds
    (whole tasks; an exclusive job's nodes keep all they hold).  Then the tasks go one
    per node in turns, up to those limits.  With a fixed node count that packs the first
    nodes (-N2 -n4: 3+1); a node range spreads (-N2-4 -n6: 2+2+1+1).
    """
    c = cpus_per_task if cpus_per_task > 0 else 1
    n = len(holds)
    limits = [0] * n
    rem = ntasks * c
    m = nodes_min
    k = 0
    while k < n and not exclusive:
        want = rem - (m - 1 if m > 1 else 0)
        if want < c:
            want = c
        lim = holds[k] * c
        if want < lim:
            lim = want - want % c
        limits[k] = lim // c
        rem -= lim
        m -= 1
        k += 1
    if exclusive:
        limits = holds
    tasks = [0] * n
    remaining = ntasks
    for bounds in (limits, holds):  # the limits, then (never needed so far) what nodes hold
        progressed = 1
        while remaining > 0 and progressed:
            progressed = 0
            k = 0
            while k < n and remaining > 0:
                if tasks[k] < bounds[k]:
                    tasks[k] += 1
                    remaining -= 1
                    progressed = 1
                k += 1
    if remaining > 0:
        return None
    return tasks
