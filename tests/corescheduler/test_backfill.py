"""sched/backfill, sans-IO: scenarios with known answers, on both kernel paths."""

from __future__ import annotations

import importlib

import pytest

from plurm.corescheduler import _profile_py, backfill
from plurm.corescheduler.backfill import (
    BackfillParams,
    plan_backfill,
    schedule_with_backfill,
)
from plurm.wire.model import Job, JobSpec, Node, Partition
from plurm.corescheduler.scheduler import Allocation, Scheduler, demand_of
from plurm.corescheduler.timeline import Candidates, Timeline

NOW = 1_000_000.0


def _kernels() -> list:
    kernels = [pytest.param(_profile_py, id="pure")]
    compiled = importlib.import_module("plurm.corescheduler._profile_c")
    if backfill.profile_compiled(compiled):
        kernels.append(pytest.param(compiled, id="compiled"))
    return kernels


@pytest.fixture(params=_kernels())
def kernel(request):
    return request.param


def cluster(n: int = 2, cpus: int = 4, mem: int = 4000, parts: dict[str, list[int]] | None = None
            ) -> Scheduler:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=cpus, real_memory=mem, responding=True)
             for i in range(n)}
    parts = parts or {"p": list(range(n))}
    partitions = {name: Partition(name=name, nodes=[f"n{i}" for i in idx], default=k == 0)
                  for k, (name, idx) in enumerate(parts.items())}
    return Scheduler(nodes, partitions, None)


def job(job_id: int, *, nodes: int = 1, ntasks: int | None = None, minutes: int | None = 60,
        partition: str = "p", exclusive: bool = False, mem: int | None = None,
        req: list[str] | None = None, exc: list[str] | None = None,
        array: int | None = None, sched: Scheduler | None = None) -> tuple[Job, object]:
    spec = JobSpec(nodes_min=nodes, ntasks=ntasks, time_limit=minutes, exclusive=exclusive,
                   mem_per_node=mem, req_nodes=req or [], exc_nodes=exc or [],
                   time_unlimited=minutes is None)
    j = Job(job_id=job_id, spec=spec, partition=partition, time_limit=minutes,
            array_job_id=array, array_task_id=job_id if array else None)
    part = sched.partitions[partition] if sched else None
    return j, demand_of(spec, part, None)


def run(sched: Scheduler, job_id: int, nodes: list[str], cpus: list[int], minutes: int | None,
        started: float = NOW) -> Job:
    """A running job, allocated in the scheduler."""
    mem = [0] * len(nodes)
    sched.allocate(Allocation(nodes, cpus, mem, cpus))
    return Job(job_id=job_id, spec=JobSpec(), partition="p", state="RUNNING",
               time_limit=minutes, start_time=started, nodes=nodes, cpus=cpus, mem=mem)


def test_small_job_backfills_around_a_reservation(kernel) -> None:
    s = cluster()
    running = [run(s, 1, ["n0"], [4], 60)]
    big = job(2, nodes=2, ntasks=8)
    short = job(3, ntasks=4, minutes=30)
    long = job(4, ntasks=4, minutes=120)
    r = plan_backfill(s, [big, short, long], running, NOW, kernel=kernel)
    assert [st.job.job_id for st in r.starts] == [3]
    assert r.starts[0].allocation.nodes == ["n1"]
    assert r.planned_start == {2: NOW + 3600, 4: NOW + 7200}
    assert r.reasons == {2: "Resources", 4: "Resources"}
    assert r.reservations[2].allocation.nodes == ["n0", "n1"]
    assert s.free_cpus == [0, 0]  # the backfilled start went through allocate()


def test_job_that_would_delay_the_reservation_waits_with_reason_priority(kernel) -> None:
    s = cluster()
    running = [run(s, 1, ["n0"], [4], 60), run(s, 5, ["n1"], [2], 600)]
    big = job(2, nodes=1, ntasks=4)  # n0 at +60 min
    # 2 CPUs are free on n1 now, but it runs 12 h and would not delay job 2
    # (which goes to n0) -> starts.
    fits = job(3, ntasks=2, minutes=720)
    r = plan_backfill(s, [big, fits], running, NOW, kernel=kernel)
    assert [st.job.job_id for st in r.starts] == [3]
    # Now n0 is the only place and a 2 h job would overlap job 2's reservation.
    s2 = cluster(n=1)
    running2 = [run(s2, 1, ["n0"], [2], 60)]
    r2 = plan_backfill(s2, [job(2, ntasks=4), job(3, ntasks=2, minutes=120),
                            job(4, ntasks=2, minutes=59)], running2, NOW, kernel=kernel)
    assert [st.job.job_id for st in r2.starts] == [4]  # ends before job 2 needs the node
    assert r2.reasons[3] == "Priority"  # fits the free CPUs, held back by job 2's reservation
    assert r2.planned_start[2] == NOW + 3600
    assert r2.planned_start[3] == NOW + 7200


def test_window_bounds_reservations(kernel) -> None:
    s = cluster(n=1)
    running = [run(s, 1, ["n0"], [4], 180)]
    params = BackfillParams(window_min=120)
    r = plan_backfill(s, [job(2, ntasks=4), job(3, ntasks=1, minutes=10)], running, NOW, params,
                      kernel=kernel)
    assert r.planned_start == {}  # job 1 ends past the window: no plan for job 2
    assert r.reasons == {2: "Resources", 3: "Resources"}
    r = plan_backfill(s, [job(2, ntasks=4)], running, NOW, BackfillParams(window_min=240),
                      kernel=kernel)
    assert r.planned_start == {2: NOW + 3 * 3600}


def test_resolution_rounds_ends_up(kernel) -> None:
    s = cluster(n=1)
    running = [run(s, 1, ["n0"], [4], None, started=NOW - 10)]
    running[0].end_time = NOW + 61  # ends between two 60 s slots
    r = plan_backfill(s, [job(2, ntasks=4)], running, NOW, kernel=kernel)
    assert r.planned_start == {2: NOW + 120}
    r = plan_backfill(s, [job(2, ntasks=4)], running, NOW, BackfillParams(resolution_s=300),
                      kernel=kernel)
    assert r.planned_start == {2: NOW + 300}


def test_unlimited_jobs_hold_their_nodes_for_ever(kernel) -> None:
    s = cluster()
    running = [run(s, 1, ["n0"], [4], None)]
    r = plan_backfill(s, [job(2, nodes=2, ntasks=8), job(3, ntasks=4, minutes=None)], running,
                      NOW, kernel=kernel)
    assert 2 not in r.planned_start
    # With no reservation in the way, the unlimited job takes the free node.
    assert [st.job.job_id for st in r.starts] == [3]


def test_max_job_test_caps_the_cycle(kernel) -> None:
    s = cluster(n=1)
    running = [run(s, 1, ["n0"], [4], 60)]
    pending = [job(i, ntasks=4, minutes=10) for i in range(2, 12)]
    r = plan_backfill(s, pending, running, NOW, BackfillParams(max_job_test=3), kernel=kernel)
    assert r.tested == 3
    assert sorted(r.reasons) == [2, 3, 4]
    assert r.planned_start == {2: NOW + 3600, 3: NOW + 4200, 4: NOW + 4800}


def test_max_job_start(kernel) -> None:
    s = cluster(n=4)
    pending = [job(i, ntasks=1) for i in range(1, 6)]
    r = plan_backfill(s, pending, [], NOW, BackfillParams(max_job_start=2), kernel=kernel)
    assert [st.job.job_id for st in r.starts] == [1, 2]


def test_array_reservations_are_capped(kernel) -> None:
    s = cluster(n=1)
    running = [run(s, 1, ["n0"], [4], 60)]
    pending = [job(i, ntasks=4, minutes=5, array=100) for i in range(2, 10)]
    r = plan_backfill(s, pending, running, NOW, BackfillParams(max_job_array_resv=3),
                      kernel=kernel)
    assert sorted(r.planned_start) == [2, 3, 4]
    assert r.tested == 3


def test_partitions_exclusive_and_node_lists(kernel) -> None:
    s = cluster(n=3, parts={"a": [0, 1], "b": [2]})
    running = [run(s, 1, ["n0"], [1], 30), run(s, 2, ["n2"], [4], 60)]
    pending = [
        job(3, ntasks=1, exclusive=True, partition="a", sched=s),  # n1 whole, now
        job(4, ntasks=1, exclusive=True, partition="a", sched=s),  # n0 once job 1 ends
        job(5, ntasks=1, partition="b", sched=s),  # only n2
        job(6, ntasks=1, partition="a", req=["n0"], sched=s),  # n0 is job 4's at +30 min
        job(7, ntasks=1, partition="a", exc=["n0"], minutes=5, sched=s),  # n1 taken: later
    ]
    r = plan_backfill(s, pending, running, NOW, kernel=kernel)
    assert [(st.job.job_id, st.allocation.nodes, st.allocation.cpus) for st in r.starts] == \
        [(3, ["n1"], [4])]
    assert r.planned_start[4] == NOW + 1800
    assert r.reservations[4].allocation.nodes == ["n0"]
    assert r.reservations[4].allocation.cpus == [4]
    assert r.planned_start[5] == NOW + 3600
    assert r.planned_start[6] == NOW + 1800 + 3600  # after job 4, on n0
    assert r.reasons[6] == "Priority"  # n0 has a free CPU now, but job 4 comes first
    assert r.planned_start[7] == NOW + 3600
    assert r.reservations[7].allocation.nodes == ["n1"]


def test_required_node_job_waits_for_its_node(kernel) -> None:
    s = cluster(n=2)
    running = [run(s, 1, ["n0"], [4], 30)]
    r = plan_backfill(s, [job(2, ntasks=1, req=["n0"])], running, NOW, kernel=kernel)
    assert r.starts == []
    assert r.planned_start == {2: NOW + 1800}
    assert r.reservations[2].allocation.nodes == ["n0"]


def test_memory_is_planned_too(kernel) -> None:
    s = cluster(n=1, cpus=8, mem=1000)
    s.allocate(Allocation(["n0"], [1], [900], [1]))
    running = [Job(job_id=1, spec=JobSpec(), partition="p", state="RUNNING", time_limit=30,
                   start_time=NOW, nodes=["n0"], cpus=[1], mem=[900])]
    r = plan_backfill(s, [job(2, ntasks=1, mem=500)], running, NOW, kernel=kernel)
    assert r.planned_start == {2: NOW + 1800}


def test_down_nodes_are_not_planned(kernel) -> None:
    s = cluster(n=2)
    s.nodes["n1"].down = True
    running = [run(s, 1, ["n0"], [4], 30)]
    r = plan_backfill(s, [job(2, ntasks=1)], running, NOW, kernel=kernel)
    assert r.starts == [] and r.planned_start == {2: NOW + 1800}


def test_bf_continue_resumes_with_the_reservations_made(kernel) -> None:
    s = cluster(n=1)
    running = [run(s, 1, ["n0"], [4], 60)]
    pending = [job(2, ntasks=4, minutes=60), job(3, ntasks=4, minutes=60), job(4, ntasks=4)]
    params = BackfillParams(yield_jobs=1, bf_continue=True)
    r1 = plan_backfill(s, pending, running, NOW, params, kernel=kernel)
    assert r1.planned_start == {2: NOW + 3600} and r1.cursor is not None
    r2 = plan_backfill(s, pending, running, NOW + 5, params, cursor=r1.cursor, kernel=kernel)
    # Job 2's reservation is kept, on the slot grid of the new "now" (rounded up).
    assert r2.planned_start[2] == NOW + 5 + 3600
    assert r2.planned_start[3] == NOW + 5 + 7200
    assert r2.cursor is not None and r2.tested == 2
    # Without bf_continue, a yielded cycle starts again from the top.
    plain = BackfillParams(yield_jobs=1)
    r3 = plan_backfill(s, pending, running, NOW, plain, cursor=r1.cursor, kernel=kernel)
    assert list(r3.planned_start) == [2]


def test_schedule_with_backfill_runs_main_pass_first(kernel) -> None:
    s = cluster(n=2)
    running = [run(s, 1, ["n0"], [4], 60)]
    pending = [job(2, ntasks=2, minutes=600), job(3, nodes=2, ntasks=8),
               job(4, ntasks=1, minutes=30), job(5, ntasks=1, minutes=601)]
    starts, r = schedule_with_backfill(s, pending, running, NOW, kernel=kernel)
    # Main pass: job 2 starts on n1, job 3 blocks the partition (4, 5: Priority).
    # Backfill: job 3 planned when n0 frees and job 2 ends (+600 min), job 4 fits
    # before that, job 5 (1 CPU is free on n1) would delay job 3.
    assert [st.job.job_id for st in starts] == [2, 4]
    assert r.planned_start[3] == NOW + 600 * 60
    reasons = {j.job_id: j.reason for j, _ in pending}
    assert reasons == {2: "None", 3: "Resources", 4: "None", 5: "Priority"}


def test_scheduler_parameters() -> None:
    p = BackfillParams.from_scheduler_parameters(
        "bf_window=2880,bf_resolution=120,bf_continue,bf_max_job_test=1000,default_queue_depth=5,"
        "bf_interval=10")
    assert (p.window_min, p.resolution_s, p.max_job_test, p.bf_continue, p.interval_s) == \
        (2880, 120, 1000, True, 10)
    assert BackfillParams.from_scheduler_parameters(None) == BackfillParams()
    with pytest.raises(ValueError):
        BackfillParams.from_scheduler_parameters("bf_resolution=0")


# -- the kernel alone

def test_kernel_reserve_and_window_min(kernel) -> None:
    t = Timeline(kernel, [4, 8], [100, 200], [99, 99], [9999, 9999],
                 [(0, 5, 4, 50), (1, 3, 2, 10)], 10)
    assert [t.segments(0), t.segments(1)] == [([0, 5], [4, 8], [100, 150]),
                                              ([0, 3], [8, 10], [200, 210])]
    assert t.steps_at(5) == [0] and t.steps_at(3) == [1]
    assert t.reserve(0, 2, 7, 3, 20) is True
    assert t.segments(0)[:2] == ([0, 2, 5, 7], [4, 1, 5, 8])
    assert t.window_min(0, 0, 3) == (1, 80)
    assert t.window_min(0, 7, 8) == (8, 150)
    # A reservation to the end of the window holds for ever.
    assert t.reserve(1, 4, 99, 10, 0) is True
    assert t.segments(1)[1] == [8, 10, 0]
    assert t.reserve(1, 0, 1, 9, 0) is False  # oversubscribed


def test_kernel_values_are_capped_at_the_node_size(kernel) -> None:
    """A job list that disagrees with the allocations never makes a node look bigger."""
    t = Timeline(kernel, [4], [100], [4], [100], [(0, 2, 4, 50)], 10)
    assert t.segments(0) == ([0], [4], [100])  # nothing changes at 2: no step there
    assert t.steps_at(2) == []


def test_kernel_drops_steps_that_change_nothing(kernel) -> None:
    """A reservation that takes exactly what a release gives back leaves no step behind."""
    t = Timeline(kernel, [0, 0], [0, 0], [4, 4], [100, 100], [(0, 3, 4, 100), (1, 3, 4, 100)], 10)
    assert t.reserve(0, 3, 6, 4, 100) is True
    assert t.segments(0) == ([0, 6], [0, 4], [0, 100])
    assert t.steps_at(3) == [1] and t.steps_at(6) == [0]
    assert t.reserve(0, 3, 6, -4, -100) is True  # given back: as before
    assert t.segments(0) == ([0, 3], [0, 4], [0, 100])
    assert t.steps_at(3) == [0, 1] and t.steps_at(6) == []


def test_run_tree_learns_only_the_run_around_the_first_slot(kernel) -> None:
    """A node with no room at a sweep's first slot (in a run the tree did not hold) is
    skipped by later sweeps inside that run, and found again right after it."""
    t = Timeline(kernel, [4], [100], [4], [100], [], 20)
    t.reserve(0, 2, 4, 4, 0)
    t.reserve(0, 6, 8, 4, 0)  # free: 4, 0 from 2, 4 from 4, 0 from 6, 4 from 8 on
    cands = Candidates([0], 1, [4])
    for first, want in ((6, 8), (8, 8), (9, 9), (7, 8), (3, 4), (0, 0)):
        assert cands.sweep(t, first, 1, 1, 1, 1, 0, 0, 0, 0, 0)[0] == want, first


def test_kernel_arrays_grow_as_reservations_split_segments(kernel) -> None:
    t = Timeline(kernel, [64], [64_000], [64], [64_000], [], 4000)
    for k in range(1500):  # far more steps than the room laid out at first
        assert t.reserve(0, 2 * k + 1, 2 * k + 2, 1, 10) is True
    slots, cpus, mem = t.segments(0)
    assert len(slots) == 3001 and slots[:4] == [0, 1, 2, 3] and cpus[:3] == [64, 63, 64]
    assert t.window_min(0, 0, 4000) == (63, 63_990)
    assert t.steps_at(2999) == [0] and t.steps_at(3000) == [0]


def test_reserve_nodes_matches_reserve_one_by_one_while_growing(kernel) -> None:
    """One kernel call for a whole allocation, growing the arrays midway, ends where
    reserving node by node does."""
    one = Timeline(kernel, [64] * 3, [64_000] * 3, [64] * 3, [64_000] * 3, [], 4000)
    many = Timeline(kernel, [64] * 3, [64_000] * 3, [64] * 3, [64_000] * 3, [], 4000)
    for k in range(600):
        start, nodes, cpus, mem = 2 * k + 1, [2, 0, 1], [1, 2, 3], [10, 20, 30]
        assert many.reserve_nodes(nodes, cpus, mem, start, start + 1) is True
        for i, c, m in zip(nodes, cpus, mem):
            assert one.reserve(i, start, start + 1, c, m) is True
    assert [many.segments(i) for i in range(3)] == [one.segments(i) for i in range(3)]
    assert many.reserve_nodes([0, 1], [64, 64], [0, 0], 1, 2) is False  # oversubscribed
    assert many.reserve_nodes([0, 1], [64, 64], [0, 0], 1, 2, sign=-1) is True


def test_kernel_capacity_matches_placement() -> None:
    from plurm.corescheduler import _placement_py

    for args in [(4, 100, 4, 1, 0, 10, 0), (3, 100, 4, 1, 0, 0, 1), (8, 30, 8, 2, 0, 10, 0),
                 (8, 30, 8, 2, 40, 0, 0), (0, 0, 4, 1, 0, 0, 0)]:
        assert _profile_py.capacity(*args, 0) == _placement_py.node_capacity(*args)


def test_sweep_sees_a_reservation_entering_its_window(kernel) -> None:
    """A node free at first and reserved later must stop counting once the run would overlap."""
    s = cluster(n=3, cpus=4)
    running = [run(s, 1, ["n1"], [4], 30), run(s, 2, ["n2"], [4], 40)]
    pending = [
        job(3, nodes=2, ntasks=8, req=["n0", "n2"], minutes=10),  # n0+n2 at +40 for 10 min
        job(4, nodes=2, ntasks=8, exc=["n2"], minutes=20),  # n0+n1: n1 frees at +30, but
    ]                                                       # [30, 50) overlaps job 3
    r = plan_backfill(s, pending, running, NOW, kernel=kernel)
    assert r.starts == []
    assert r.planned_start == {3: NOW + 2400, 4: NOW + 3000}


def gpu_job(job_id: int, gpus: int, minutes: int) -> tuple[Job, object]:
    spec = JobSpec(ntasks=1, time_limit=minutes, gres_req=[{"name": "gpu", "count": gpus}])
    return Job(job_id=job_id, spec=spec, partition="p", time_limit=minutes), \
        demand_of(spec, None, None)


def test_gres_jobs_start_now_or_reserve_their_units(kernel) -> None:
    nodes = {f"g{i}": Node(name=f"g{i}", cpus=4, real_memory=4000, responding=True,
                           gres=["gpu:2"]) for i in range(2)}
    s = Scheduler(nodes, {"p": Partition(name="p", nodes=list(nodes), default=True)}, None)
    running = [run(s, 1, ["g0"], [4], 60)]
    big = job(2, nodes=2, ntasks=8)  # both nodes, CPUs only: planned at +60
    gpu = gpu_job(3, 2, 30)
    too_long = gpu_job(4, 1, 120)
    r = plan_backfill(s, [big, gpu, too_long], running, NOW, kernel=kernel)
    assert [(st.job.job_id, st.allocation.nodes, st.allocation.gres) for st in r.starts] == \
        [(3, ["g1"], [{"gpu": [0, 1]}])]
    # Job 3 ends before job 2 needs g1; job 4 runs after job 2, with a unit of its own.
    assert r.planned_start == {2: NOW + 3600, 4: NOW + 7200}
    assert r.reservations[4].allocation.gres == [{"gpu": [0]}]
    assert r.reasons[4] == "Resources"


def test_a_gpu_reservation_is_not_taken_by_a_lower_priority_gpu_job(kernel) -> None:
    """The top job waits for both GPUs of g0 (one is busy for an hour): a later 1-GPU job
    may use the free GPU only if it gives it back before the top job starts."""
    nodes = {"g0": Node(name="g0", cpus=4, real_memory=4000, responding=True, gres=["gpu:2"])}
    s = Scheduler(nodes, {"p": Partition(name="p", nodes=["g0"], default=True)}, None)
    s.allocate(Allocation(["g0"], [1], [0], [1], [{"gpu": [0]}]))
    holder = Job(job_id=1, spec=JobSpec(), partition="p", state="RUNNING", time_limit=60,
                 start_time=NOW, nodes=["g0"], cpus=[1], mem=[0], gres_alloc=[{"gpu": [0]}])
    top, long_low, short_low = gpu_job(2, 2, 30), gpu_job(3, 1, 120), gpu_job(4, 1, 30)
    r = plan_backfill(s, [top, long_low, short_low], [holder], NOW, kernel=kernel)
    assert [(st.job.job_id, st.allocation.gres) for st in r.starts] == [(4, [{"gpu": [1]}])]
    assert r.planned_start == {2: NOW + 3600, 3: NOW + 5400}
    assert r.reservations[2].allocation.gres == [{"gpu": [0, 1]}]
    # Job 3 would fit the free GPU now: only job 2's reservation holds it back.
    assert r.reasons[2] == "Resources" and r.reasons[3] == "Priority"


def test_an_array_record_listed_once_per_task(kernel) -> None:
    """The controller lists an array's pending record once per task: each is one task."""
    s = cluster(n=1)
    running = [run(s, 1, ["n0"], [2], 60)]
    blocker = job(2, ntasks=4)  # planned at +60
    record, demand = job(3, ntasks=1, minutes=30, array=3)
    pending = [blocker] + [(record, demand)] * 3
    r = plan_backfill(s, pending, running, NOW, kernel=kernel)
    assert [st.job.job_id for st in r.starts] == [3, 3]  # two tasks fit before job 2
    assert r.planned_start == {2: NOW + 3600, 3: NOW + 1800}  # the third: when those end
    assert r.tested == 4
    starts, _ = schedule_with_backfill(cluster(n=1), [(record, demand)] * 3, [], NOW, kernel=kernel)
    assert len(starts) == 3


def test_kernel_sweep_counts_a_drop_entering_on_the_right(kernel) -> None:
    """n0 is free but for slots 10-11; n1 frees at 5: an 8-slot, 2-node run fits first at 12."""
    t = Timeline(kernel, [4, 0], [1000, 1000], [4, 4], [1000, 1000], [], 30)
    t.reserve(0, 10, 12, 4, 0)
    t.reserve(1, 5, 99, -4, 0)
    cands = Candidates([0, 1], 2, [4, 4])
    assert cands.sweep(t, 0, 8, 2, 2, 1, 0, 0, 0, 0, 0) == (12, 2)
    assert list(cands.wcpu) == [4, 4]


def test_jobs_that_share_cpus_are_left_to_the_main_pass(kernel) -> None:
    """OverSubscribe: a sharing job is not backfilled, and a node running sharing jobs has no
    CPU for anyone else until the last of them ends."""
    nodes = {"n0": Node(name="n0", cpus=4, real_memory=4000, responding=True)}
    parts = {"f": Partition(name="f", nodes=["n0"], default=True, oversubscribe="FORCE:2"),
             "p": Partition(name="p", nodes=["n0"])}
    s = Scheduler(nodes, parts, None)
    s.prepare()
    shared = JobSpec(ntasks=4, time_limit=30)
    holders = []
    for job_id, minutes in ((1, 30), (2, 50)):  # two rows on n0, ending at +30 and +50
        alloc = s.try_place(demand_of(shared, parts["f"], None), parts["f"])
        assert alloc is not None and alloc.share_rows
        s.allocate(alloc)
        holders.append(Job(job_id=job_id, spec=shared, partition="f", state="RUNNING",
                           time_limit=minutes, start_time=NOW, nodes=alloc.nodes, cpus=alloc.cpus,
                           mem=alloc.mem, tasks=alloc.tasks, share_rows=tuple(alloc.share_rows)))
    sharer = (Job(job_id=3, spec=shared, partition="f", time_limit=30),
              demand_of(shared, parts["f"], None))
    plain = job(4, ntasks=4, minutes=10, partition="p", sched=s)
    r = plan_backfill(s, [sharer, plain], holders, NOW, kernel=kernel)
    assert r.starts == [] and r.tested == 1  # job 3 is the main pass's
    assert r.planned_start == {4: NOW + 3000}  # not at +30: job 2 still shares n0


def test_bf_continue_keeps_a_gpu_reservation_only_while_its_units_are_free(kernel) -> None:
    """A kept reservation holds its units again in the next call; when a job took one of them
    in between, the reservation is dropped and the job planned afresh on what is left."""
    nodes = {"g0": Node(name="g0", cpus=4, real_memory=4000, responding=True, gres=["gpu:2"])}
    s = Scheduler(nodes, {"p": Partition(name="p", nodes=["g0"], default=True)}, None)
    s.allocate(Allocation(["g0"], [4], [0], [4], [{"gpu": [0]}]))
    holder = Job(job_id=1, spec=JobSpec(), partition="p", state="RUNNING", time_limit=60,
                 start_time=NOW, nodes=["g0"], cpus=[4], mem=[0], gres_alloc=[{"gpu": [0]}])
    pending = [gpu_job(2, 2, 30), gpu_job(3, 1, 30)]
    params = BackfillParams(yield_jobs=1, bf_continue=True)
    r1 = plan_backfill(s, pending, [holder], NOW, params, kernel=kernel)
    assert r1.planned_start == {2: NOW + 3600} and r1.cursor is not None
    r2 = plan_backfill(s, pending, [holder], NOW, params, cursor=r1.cursor, kernel=kernel)
    assert r2.reservations[2].allocation.gres == [{"gpu": [0, 1]}]
    assert r2.planned_start[3] == NOW + 5400  # after job 2: its units are held
    # Meanwhile a job took gpu 1 until +120 min: job 2's kept plan no longer holds.
    s.allocate(Allocation(["g0"], [0], [0], [0], [{"gpu": [1]}]))
    taker = Job(job_id=9, spec=JobSpec(), partition="p", state="RUNNING", time_limit=120,
                start_time=NOW, nodes=["g0"], cpus=[0], mem=[0], gres_alloc=[{"gpu": [1]}])
    r3 = plan_backfill(s, pending, [holder, taker], NOW, params, cursor=r1.cursor, kernel=kernel)
    assert r3.planned_start[2] == NOW + 7200  # planned again: when gpu 1 is back too
    assert r3.reservations[2].allocation.gres == [{"gpu": [0, 1]}]
