"""corescheduler/stats.py, pure: the counters and the aggregates of a core driven sans-IO (no
clock, no user database: the names come from the caller's function)."""

from __future__ import annotations

from plurm.corescheduler import stats
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import protocol
from plurm.wire.model import JobSpec, Node, Partition

ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
BOB = Identity(1002, 1002, "bob", frozenset({"bob"}))
T0 = 1_000_000.0
NAMES = {1001: "alice", 1002: "bob"}


def test_rpc_counters_count_total_and_max_per_type_and_user() -> None:
    s = stats.Stats(T0)
    s.rpc("job_info", 1001, 0.002)
    s.rpc("job_info", 1001, 0.005)
    s.rpc("submit_job", 1002, 0.001)
    snap = s.snapshot(NAMES.__getitem__)
    assert snap["rpc"] == {"job_info": [2, 7000, 5000], "submit_job": [1, 1000, 1000]}
    assert snap["rpc_user"] == {"alice": [2, 7000, 5000, 1001], "bob": [1, 1000, 1000, 1002]}
    assert (snap["started"], snap["reset_time"]) == (T0, T0)


def test_cycles_keep_last_max_mean_and_depth_apart_for_backfill() -> None:
    s = stats.Stats(T0)
    s.cycle(False, 0.001, 3, T0 + 1)
    s.cycle(False, 0.003, 5, T0 + 2)
    s.cycle(True, 0.010, 7, T0 + 3)
    main, bf = s.snapshot()["main"], s.snapshot()["backfill"]
    assert (main["count"], main["last_us"], main["max_us"], main["mean_us"]) == (2, 3000, 3000, 2000)
    assert (main["last_depth"], main["mean_depth"], main["total_depth"]) == (5, 4, 8)
    assert (bf["count"], bf["last_us"], bf["last_depth"], bf["last_at"]) == (1, 10000, 7, T0 + 3)


def test_reset_clears_counters_but_keeps_the_start_time() -> None:
    s = stats.Stats(T0)
    s.rpc("ping", 0, 0.1)
    s.cycle(True, 0.1, 1, T0)
    s.reset(T0 + 50)
    snap = s.snapshot()
    assert snap["rpc"] == {} and snap["rpc_user"] == {} and snap["backfill"]["count"] == 0
    assert (snap["started"], snap["reset_time"]) == (T0, T0 + 50)


def test_tables_are_bounded_against_a_flood_of_identities() -> None:
    s = stats.Stats(T0)
    for uid in range(stats.MAX_KEYS + 100):
        s.rpc("ping", uid, 0.0)
    assert len(s.by_uid) == stats.MAX_KEYS + 1
    assert s.by_uid[stats.OTHER].count == 100
    assert s.snapshot()["rpc_user"][stats.OTHER][3] == -1


def _core() -> tuple[ClusterCore, Service]:
    nodes = {"n1": Node(name="n1", cpus=4, real_memory=4000, responding=True, boot_time=1.0, gres=["gpu:2"],
                        devices=[{"vendor": "nvidia", "model": "H200", "uuid": "u0", "index": 0, "backend": "nvml"}]),
             "n2": Node(name="n2", cpus=4, real_memory=4000, responding=True, boot_time=1.0, drain=True,
                        reason="x")}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="t"), now=T0)
    return core, Service(core)


def _submit(service: Service, who: Identity, **spec) -> int:
    spec.setdefault("script", "#!/bin/sh\nsleep 1\n")
    return service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), who, T0)["job_id"]


def test_aggregates_count_jobs_users_accounts_nodes_and_gpus() -> None:
    core, service = _core()
    _submit(service, ALICE, ntasks=3, gres="gpu:1", account="phys",
            gres_req=[{"name": "gpu", "type": None, "count": 1, "per": "node"}])
    _submit(service, ALICE, ntasks=4, account="phys")  # no room beside the first: pending
    _submit(service, BOB, ntasks=1, account="chem", array_spec="1-5", array_indices=[1, 2, 3, 4, 5], hold=True)
    core.schedule(T0 + 1)
    assert core.sched_depth >= 1  # the pass counted what it considered
    agg = stats.aggregates(core, NAMES.__getitem__)
    jobs = {(s, p): c for s, p, c in agg["jobs"]}
    assert jobs == {("RUNNING", "debug"): 1, ("PENDING", "debug"): 6}  # an array's pending tasks count
    assert agg["users"] == {"alice": [1, 1, 3], "bob": [5, 0, 0]}
    assert agg["accounts"] == {"phys": [1, 1, 3], "chem": [5, 0, 0]}
    n1, n2 = agg["nodes"]
    assert (n1["state"], n1["alloc_cpus"], n1["gpus"], n1["alloc_gpus"]) == ("MIXED", 3, 2, 1)
    assert n2["state"].startswith("IDLE+DRAIN") and not stats.available(n2["state"])
    [part] = agg["partitions"]
    assert (part["cpus_total"], part["cpus_alloc"], part["cpus_other"], part["cpus_idle"]) == (8, 3, 4, 1)
    assert (part["jobs_pending"], part["jobs_running"]) == (6, 1)
    assert agg["devices"] == [{"node": "n1", "vendor": "nvidia", "model": "H200", "backend": "nvml",
                               "health": "ok", "kind": "gpu"}]


def test_metrics_access_follows_slurm_25_11s_rules() -> None:
    from plurm.corescheduler.stats_shell import metrics_refusal

    root = Identity(0, 0, "root", operator=True)
    assert metrics_refusal({}, ALICE) is None  # nothing set: open
    assert "PrivateData" in metrics_refusal({"PrivateData": "jobs"}, ALICE)
    assert metrics_refusal({"PrivateData": "jobs", "MetricsParameters": "ignore_private_data"}, ALICE) is None
    only_bob = {"MetricsAuthUsers": "bob", "PrivateData": "jobs"}  # (the list wins over PrivateData)
    assert metrics_refusal(only_bob, BOB) is None and metrics_refusal(only_bob, root) is None
    assert "MetricsAuthUsers" in metrics_refusal(only_bob, ALICE)
