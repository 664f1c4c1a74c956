"""Partition OverSubscribe in the main pass, sans-IO, against what real Slurm 22.05 did.

Each test replays an experiment on the anchor (n1-n4 of 4 CPUs and 2800 MB,
DefMemPerCPU=256, partitions over all nodes: debug (NO), excl (EXCLUSIVE),
force2 (FORCE:2), force (FORCE), yes (YES), yes2 (YES:2)); jobs are
submitted one after the other, each into its own pass (docs/scheduling.md,
"OverSubscribe").
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plurm.wire.model import Job, JobSpec, Node, Partition
from plurm.corescheduler.scheduler import Scheduler, demand_of, oversubscribe_mode

MODES = {"debug": "NO", "excl": "EXCLUSIVE", "force2": "FORCE:2", "force": "FORCE", "yes": "YES",
         "yes2": "YES:2"}


class Anchor:
    def __init__(self) -> None:
        self.nodes = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=2800, responding=True) for i in range(1, 5)}
        self.partitions = {name: Partition(name=name, nodes=list(self.nodes), oversubscribe=mode)
                           for name, mode in MODES.items()}
        self.sched = Scheduler(self.nodes, self.partitions, 256)
        self.pending: list[tuple[Job, object]] = []
        self.running: dict[int, Job] = {}
        self.next_id = 1

    def sbatch(self, partition: str, **spec) -> Job:
        """Submit and run one pass; return the job (state RUNNING or PENDING with its reason)."""
        job_spec = JobSpec(**spec)
        job = Job(job_id=self.next_id, spec=job_spec, partition=partition)
        self.next_id += 1
        self.pending.append((job, demand_of(job_spec, self.partitions[partition], 256)))
        for start in self.sched.schedule(self.pending, 0.0):
            start.job.state = "RUNNING"
            a = start.allocation
            start.job.nodes, start.job.cpus, start.job.mem, start.job.tasks = a.nodes, a.cpus, a.mem, a.tasks
            start.job.share_rows = tuple(a.share_rows)
            self.running[start.job.job_id] = start.job
        self.pending = [(j, d) for j, d in self.pending if j.state == "PENDING"]
        return job

    def end(self, job: Job) -> None:
        self.sched.release(job)
        del self.running[job.job_id]

    def cpus(self) -> list[tuple[int, int]]:
        """sinfo -N -o %C: (allocated, idle) per node."""
        return [(n.alloc_cpus, n.cpus - n.alloc_cpus) for n in self.nodes.values()]


def _on(job: Job) -> list[str]:
    assert job.state == "RUNNING", job.reason
    return job.nodes


def test_modes_as_slurm_shows_them() -> None:
    assert oversubscribe_mode("FORCE") == ("FORCE", 4)
    assert oversubscribe_mode("YES") == ("YES", 4)
    assert oversubscribe_mode("FORCE:2") == ("FORCE", 2)
    assert oversubscribe_mode("EXCLUSIVE") == ("EXCLUSIVE", 0)
    assert oversubscribe_mode("NO") == ("NO", 0)


def test_exclusive_partition_gives_whole_nodes() -> None:
    a = Anchor()
    job = a.sbatch("excl", ntasks=1)
    assert _on(job) == ["n1"] and job.cpus == [4] and job.mem == [1024]  # NumCPUs=4, mem=1G
    assert a.cpus()[0] == (4, 0)
    # O11: nothing shares with it, not even a FORCE job.
    assert a.sbatch("force2", ntasks=1, nodes_max=1, req_nodes=["n1"]).reason == "Resources"


def test_force2_fills_idle_nodes_then_shares_two_per_cpu() -> None:
    a = Anchor()
    first = [_on(a.sbatch("force2", ntasks=4)) for _ in range(4)]
    assert first == [["n1"], ["n2"], ["n3"], ["n4"]]  # idle nodes before any CPU is shared
    second = [_on(a.sbatch("force2", ntasks=4)) for _ in range(4)]
    assert second == [["n1"], ["n2"], ["n3"], ["n4"]]
    ninth = a.sbatch("force2", ntasks=4)
    assert ninth.state == "PENDING" and ninth.reason == "Resources"
    assert a.cpus() == [(4, 0)] * 4  # CPUAlloc=4 (not 8), AllocMem=2048
    assert [n.alloc_mem for n in a.nodes.values()] == [2048] * 4
    assert all(n.state == "ALLOCATED" for n in a.nodes.values())
    # A job ending leaves its row; the waiting job takes it, the next one waits.
    a.end(a.running[1])
    assert a.sbatch("force2", ntasks=1).reason == "Resources"
    assert ninth.state == "RUNNING" and ninth.nodes == ["n1"] and ninth.share_rows == (0,)


def test_rows_not_cpu_counts() -> None:
    """O3: two 3-CPU jobs share the same 3 CPUs of n1 (sinfo 3/1); a 2-CPU job then fits no row."""
    a = Anchor()
    for _ in range(2):
        assert _on(a.sbatch("force2", ntasks=3, nodes_max=1, req_nodes=["n1"])) == ["n1"]
    assert a.cpus()[0] == (3, 1) and a.nodes["n1"].state == "MIXED"
    assert a.sbatch("force2", ntasks=2, nodes_max=1, req_nodes=["n1"]).reason == "Resources"


def test_force_default_is_four_and_memory_is_never_shared() -> None:
    a = Anchor()
    for _ in range(4):
        _on(a.sbatch("force", ntasks=4, nodes_max=1, req_nodes=["n1"], mem_per_node=100))
    assert a.sbatch("force", ntasks=4, nodes_max=1, req_nodes=["n1"], mem_per_node=100).reason == "Resources"
    b = Anchor()
    _on(b.sbatch("force2", ntasks=4, nodes_max=1, req_nodes=["n1"], mem_per_node=2000))
    assert b.sbatch("force2", ntasks=4, nodes_max=1, req_nodes=["n1"], mem_per_node=2000).reason == "Resources"


@pytest.mark.parametrize(("partition", "shares"), [("yes", False), ("debug", False)])
def test_without_oversubscribe_option_no_sharing(partition, shares) -> None:
    a = Anchor()
    for _ in range(4):
        _on(a.sbatch(partition, ntasks=4, oversubscribe=partition == "debug"))
    fifth = a.sbatch(partition, ntasks=4, oversubscribe=partition == "debug")
    assert fifth.reason == "Resources"  # YES without -s, or -s in a NO partition: no sharing


def test_yes_shares_jobs_that_ask() -> None:
    a = Anchor()
    placed = [_on(a.sbatch("yes", ntasks=4, oversubscribe=True)) for _ in range(6)]
    assert placed == [["n1"], ["n2"], ["n3"], ["n4"], ["n1"], ["n2"]]
    c = Anchor()
    for _ in range(4):  # YES = YES:4
        _on(c.sbatch("yes", ntasks=4, oversubscribe=True, nodes_max=1, req_nodes=["n1"], mem_per_node=100))
    assert c.sbatch("yes", ntasks=4, oversubscribe=True, nodes_max=1, req_nodes=["n1"],
                    mem_per_node=100).reason == "Resources"
    b = Anchor()
    for _ in range(2):
        _on(b.sbatch("yes2", ntasks=4, oversubscribe=True, nodes_max=1, req_nodes=["n1"]))
    assert b.sbatch("yes2", ntasks=4, oversubscribe=True, nodes_max=1, req_nodes=["n1"]).reason == "Resources"


def test_sharing_and_not_sharing_never_mix_on_a_node() -> None:
    # O7a: a NO job on n1 (2 CPUs): a FORCE job cannot use the other two.
    a = Anchor()
    _on(a.sbatch("debug", ntasks=2, req_nodes=["n1"]))
    assert a.sbatch("force2", ntasks=2, nodes_max=1, req_nodes=["n1"]).reason == "Resources"
    # O7b: a FORCE job on n1: a NO job cannot use the rest.
    b = Anchor()
    _on(b.sbatch("force2", ntasks=2, nodes_max=1, req_nodes=["n1"]))
    assert b.sbatch("debug", ntasks=1, req_nodes=["n1"]).reason == "Resources"
    # O7e: YES without -s, then YES with -s on the same node.
    c = Anchor()
    _on(c.sbatch("yes", ntasks=2, nodes_max=1, req_nodes=["n1"]))
    assert c.sbatch("yes", ntasks=2, oversubscribe=True, nodes_max=1, req_nodes=["n1"]).reason == "Resources"


def test_sharing_partitions_share_a_node() -> None:
    """O10: FORCE:2 and FORCE jobs on one node: 2 + 2 CPUs, then a 1-CPU job shares (4/0)."""
    a = Anchor()
    for partition, n in (("force2", 2), ("force", 2), ("force", 1)):
        assert _on(a.sbatch(partition, ntasks=n, nodes_max=1, req_nodes=["n1"])) == ["n1"]
    assert a.cpus()[0] == (4, 0)


def test_force_with_exclusive_takes_the_node_and_still_shares() -> None:
    """O13: --exclusive in a FORCE partition: all 4 CPUs, and a later job shares them."""
    a = Anchor()
    job = a.sbatch("force2", ntasks=1, exclusive=True, req_nodes=["n1"])
    assert _on(job) == ["n1"] and job.cpus == [4]
    assert _on(a.sbatch("force2", ntasks=1, nodes_max=1, req_nodes=["n1"])) == ["n1"]


def test_idle_cpus_best_fit_before_sharing() -> None:
    """O16: n2 runs a 3-CPU FORCE job; a 1-CPU job takes n2's idle CPU, a 2-CPU job n1."""
    a = Anchor()
    _on(a.sbatch("force2", ntasks=3, nodes_max=1, req_nodes=["n2"]))
    assert _on(a.sbatch("force2", ntasks=1)) == ["n2"]
    assert _on(a.sbatch("force2", ntasks=2)) == ["n1"]


def test_restart_and_release_keep_rows() -> None:
    from plurm.corescheduler.scheduler import Allocation

    a = Anchor()
    jobs = [a.sbatch("force2", ntasks=3, nodes_max=1, req_nodes=["n1"]) for _ in range(2)]
    assert [j.share_rows for j in jobs] == [(0,), (1,)]
    # A controller restart replays running jobs through allocate().
    fresh = Anchor()
    for j in jobs:
        fresh.sched.allocate(Allocation.of_job(j))
    assert fresh.sched.rows == a.sched.rows == [[3, 3], [], [], []]
    assert fresh.cpus() == a.cpus()
    for j in jobs:
        fresh.sched.release(j)
    assert fresh.sched.rows == [[], [], [], []] and fresh.sched.free_cpus == [4, 4, 4, 4]
    assert fresh.cpus() == [(0, 4)] * 4
    # Plain jobs may use the node again.
    assert fresh.sched.can_hold(Allocation(["n1"], [4], [0], [4]))


def test_never_oversubscribed_assertion_still_holds() -> None:
    from plurm.corescheduler.scheduler import Allocation

    a = Anchor()
    _on(a.sbatch("force2", ntasks=2, nodes_max=1, req_nodes=["n1"]))
    with pytest.raises(AssertionError):
        a.sched.allocate(Allocation(["n1"], [1], [0], [1]))  # a job that does not share, beside it
    with pytest.raises(AssertionError):
        a.sched.allocate(Allocation(["n1"], [3], [0], [3], [], [0]))  # row 0 holds 2 + 3 > 4


ops = st.lists(st.one_of(
    st.tuples(st.just("submit"), st.sampled_from(sorted(MODES)), st.integers(1, 6), st.booleans(),
              st.sampled_from([0, 300, 1500]), st.integers(1, 2)),
    st.tuples(st.just("end"), st.integers(0, 50))), max_size=40)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(ops)
def test_any_mix_of_jobs_keeps_every_node_consistent(steps) -> None:
    """Whatever jobs come and go, allocate() never refuses what the main pass chose, a node
    never runs sharing and non-sharing jobs at once, and rows and memory stay within the node."""
    a = Anchor()
    for step in steps:
        if step[0] == "submit":
            _, partition, ntasks, share, mem, nodes = step
            a.sbatch(partition, ntasks=ntasks, oversubscribe=share, mem_per_node=mem or None, nodes_min=nodes)
        elif a.running:
            a.end(sorted(a.running.values(), key=lambda j: j.job_id)[step[1] % len(a.running)])
        for i, node in enumerate(a.nodes.values()):
            on_node = [j for j in a.running.values() if node.name in j.nodes]
            sharing = [j for j in on_node if j.share_rows]
            assert not sharing or len(sharing) == len(on_node)
            assert all(used <= node.cpus for used in a.sched.rows[i])
            assert sum(j.mem[j.nodes.index(node.name)] for j in on_node) == node.alloc_mem <= node.real_memory
            for j in sharing:
                _, limit = oversubscribe_mode(MODES[j.partition])
                assert j.share_rows[j.nodes.index(node.name)] < limit
            if not sharing:
                assert node.alloc_cpus == sum(j.cpus[j.nodes.index(node.name)] for j in on_node)
