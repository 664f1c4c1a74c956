# cython: annotation_typing=False, boundscheck=False, wraparound=False, initializedcheck=False
"""Priority kernel: priority/multifactor over a vector of pending jobs.

Plain Python, typed by _multifactor_c.pxd and compiled by Cython where a
compiler exists (_multifactor_c is a link to this file); the same code runs as
the pure-Python twin.  corescheduler.priority.MultifactorPriority.priorities
fills the per-job arrays (``array('d')``/``array('l')``) and calls it once
per PriorityCalcPeriod for the whole queue.

The arithmetic is MultifactorPriority.factors + priority_from_factors,
operation for operation in the same order, so that a job gets the same
priority whether computed alone or in the vector (a property test checks):
age = min(max(0, now - eligible), max_age) / max_age; job size = mean of
the job's share of the cluster's nodes and CPUs (each capped at 1),
inverted by PriorityFavorSmall; then site + Σ weight × factor (in sprio's
column order: age, assoc, fairshare, jobsize, partition, qos) − nice,
truncated, at least 1.
"""


def priorities(eligible, nodes, cpus, partition, fairshare, qos, nice, out, now: float,
                max_age: float, total_nodes: int, total_cpus: int, favor_small: int,
                w_age: int, w_assoc: int, w_fairshare: int, w_jobsize: int, w_partition: int,
                w_qos: int, site: int):
    """Priorities of len(out) jobs into ``out``.

    Per job: ``eligible`` (epoch seconds; NaN: not yet, counts as now),
    ``nodes`` and ``cpus`` asked, its partition's factor (PriorityJobFactor
    over the largest), its fair-share and QOS factors, its nice.
    """
    n = len(out)
    for k in range(n):
        since = eligible[k]
        if since != since:  # NaN: not eligible yet
            since = now
        age = 0.0
        if max_age:
            age = now - since
            if age < 0.0:
                age = 0.0
            if age > max_age:
                age = max_age
            age = age / max_age
        size = 0.0
        if total_nodes and total_cpus:
            a = nodes[k] / total_nodes
            if a > 1.0:
                a = 1.0
            b = cpus[k] / total_cpus
            if b > 1.0:
                b = 1.0
            size = (a + b) / 2
        if favor_small:
            size = 1.0 - size
        total = 0.0
        total += w_age * age
        total += w_assoc * 0.0
        total += w_fairshare * fairshare[k]
        total += w_jobsize * size
        total += w_partition * partition[k]
        total += w_qos * qos[k]
        total = site + total - nice[k]
        value = int(total)
        out[k] = value if value > 1 else 1
