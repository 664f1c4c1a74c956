"""Node failure in the pure core: DOWN after SlurmdTimeout, NODE_FAIL, requeue, stale runs,
ReturnToService.  Driven sans-IO with an explicit clock, through Service(core) where a node
daemon's message is what comes in.

The rules are Slurm 22.05's as measured on the real one
(tests/reliability/reference/node_failure/, captured by tests/reliability/anchor/
capture_node_failure.sh): a killed slurmd's node goes ``down*`` with reason "Not responding";
a batch job that may be requeued comes back PENDING with its id, Restarts=1, a new
SubmitTime and EligibleTime = failure + cred_expire + 1 (BeginTime); ``--no-requeue`` ends
NODE_FAIL 0:0 (Reason=NodeDown in scontrol); accounting keeps the failed run as NODE_FAIL
with its batch step CANCELLED; ReturnToService 1 returns a node DOWN for not responding
when its daemon is back, 2 also one an administrator set DOWN, 0 neither.
"""

from __future__ import annotations

import pytest

from plurm.corescheduler import effects as fx
from plurm.corescheduler.configure import settings_from_conf
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.grammar.slurmconf import parse_slurm_conf_text
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

ROOT = Identity(0, 0, "root", frozenset({"root"}), operator=True)
ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
T0 = 1_000_000.0
TIMEOUT = 30.0
CRED = 10.0


def _cluster(nodes: int = 2, **settings) -> tuple[ClusterCore, Service]:
    table = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True, boot_time=1.0)
             for i in range(1, nodes + 1)}
    partitions = {"debug": Partition(name="debug", nodes=list(table), default=True)}
    settings.setdefault("slurmd_timeout", TIMEOUT)
    settings.setdefault("cred_expire", CRED)
    settings.setdefault("kill_wait", 5.0)
    core = ClusterCore(table, partitions, CoreSettings(cluster_name="t", **settings), now=T0)
    for name in table:
        core.node_register(name, {"boot_time": 1.0, "slurmd_start_time": 2.0}, T0)
    return core, Service(core)


def _submit(core: ClusterCore, service: Service, now: float = T0, **spec) -> int:
    spec.setdefault("script", "#!/bin/sh\nsleep 600\n")
    spec.setdefault("ntasks", 1)
    job_id = service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), ALICE, now)["job_id"]
    return job_id


def _ping(core: ClusterCore, name: str, now: float, runs: dict[int, int] | None = None) -> list:
    runs = dict(runs or {})
    return core.node_ping(name, list(runs), None, None, now, None, runs)


def _keep_alive(core: ClusterCore, names: list[str], now: float) -> None:
    """The nodes that stay healthy report their current runs."""
    for name in names:
        runs = {j.job_id: j.restarts for j in core.jobs.values()
                if j.nodes[:1] == [name] and j.state == model.RUNNING}
        _ping(core, name, now, runs)


def _three_jobs_on_n1(core: ClusterCore, service: Service) -> tuple[int, int, int]:
    rq = _submit(core, service, requeue=True, requeue_given=True, req_nodes=[])
    norq = _submit(core, service, requeue=False, requeue_given=True)
    dflt = _submit(core, service)
    core.schedule(T0)
    assert [core.jobs[j].nodes for j in (rq, norq, dflt)] == [["n1"]] * 3  # packed on n1
    return rq, norq, dflt


def _fail_n1(core: ClusterCore, at: float) -> list:
    """n1 falls silent at T0; n2 keeps pinging; time runs to ``at``."""
    out: list = []
    t = T0
    while t < at:
        t = min(at, t + 5)
        _keep_alive(core, ["n2"], t)
        out.extend(core.tick(t))
    return out


def test_silent_node_is_flagged_then_down_with_the_reason_slurm_gives() -> None:
    core, service = _cluster()
    _three_jobs_on_n1(core, service)
    _fail_n1(core, T0 + TIMEOUT / 3 + 1)
    n1 = core.nodes["n1"]
    assert (n1.responding, n1.down, n1.reason) == (False, False, None)  # idle*: not yet DOWN
    assert all(j.state == model.RUNNING for j in core.jobs.values())  # (jobs run on until DOWN)
    _fail_n1(core, T0 + TIMEOUT + 1)
    assert (n1.responding, n1.down, n1.reason, n1.reason_user) == (False, True, "Not responding", "root")
    assert n1.state == "DOWN*"  # sinfo: down* (DOWN, not responding)
    assert core.nodes["n2"].responding and not core.nodes["n2"].down


def test_jobs_of_a_failed_node_are_requeued_or_end_node_fail() -> None:
    core, service = _cluster()
    rq, norq, dflt = _three_jobs_on_n1(core, service)
    core.take_effects()
    failed_at = T0 + TIMEOUT + 5
    _fail_n1(core, failed_at)
    effects = core.take_effects()
    down_at = core.nodes["n1"].reason_time
    assert down_at is not None and T0 + TIMEOUT < down_at <= failed_at
    no = core.jobs[norq]
    assert (no.state, no.exit_code, no.exit_signal, no.restarts, no.end_time) == (model.NODE_FAIL, 0, 0, 0, down_at)
    for job_id in (rq, dflt):  # --requeue, and JobRequeue=1 without --no-requeue
        job = core.jobs[job_id]
        assert (job.state, job.restarts, job.reason, job.nodes) == (model.PENDING, 1, "BeginTime", [])
        assert job.submit_time == down_at  # Slurm: SubmitTime is the requeue's
        assert job.spec.begin_time == down_at + CRED + 1  # EligibleTime = failure + cred_expire + 1
    # Accounting: the job that ended has its row; the requeued ones keep their failed run
    # for sacct -D (NODE_FAIL); every failed run's batch step is CANCELLED.
    rows = [e.job for e in effects if isinstance(e, fx.SaveAcctJob)]
    assert [(r.job_id, r.state, r.exit_code, r.restarts, r.nodes) for r in rows] == [
        (norq, model.NODE_FAIL, 0, 0, ["n1"])]
    for job_id in (rq, dflt):
        [run] = core.jobs[job_id].earlier_runs
        assert (run.state, run.nodes, run.start_time, run.end_time, run.submit_time) == (
            model.NODE_FAIL, ["n1"], T0, down_at, T0)
    steps = [e.step for e in effects if isinstance(e, fx.SaveAcctStep)]
    assert sorted((s.job_id, s.step_id, s.state) for s in steps) == [
        (rq, "batch", model.CANCELLED), (norq, "batch", model.CANCELLED), (dflt, "batch", model.CANCELLED)]
    # Not before BeginTime, then on the other node, as run 1 (SLURM_RESTART_COUNT=1).
    assert core.schedule(down_at + CRED) == []
    launches = core.schedule(down_at + CRED + 1)
    assert sorted((o.node, o.body["job_id"], o.body["job"]["restarts"]) for o in launches) == [
        ("n2", rq, 1), ("n2", dflt, 1)]
    assert core.jobs[rq].state == model.RUNNING and core.jobs[rq].start_time == down_at + CRED + 1
    assert core.jobs[rq].eligible_time == down_at + CRED + 1


def test_job_requeue_0_ends_a_default_job_but_not_a_requeue_one() -> None:
    core, service = _cluster(job_requeue=False)
    rq, norq, dflt = _three_jobs_on_n1(core, service)
    _fail_n1(core, T0 + TIMEOUT + 5)
    assert [core.jobs[j].state for j in (rq, norq, dflt)] == [model.PENDING, model.NODE_FAIL, model.NODE_FAIL]


def test_slurm_conf_values_job_requeue_and_return_to_service() -> None:
    def settings(text: str) -> CoreSettings:
        return settings_from_conf(parse_slurm_conf_text("ClusterName=c\nSlurmctldHost=h\n" + text))

    assert (settings("").job_requeue, settings("").return_to_service) == (True, 0)  # Slurm's defaults
    assert (settings("JobRequeue=0\nReturnToService=2\n").job_requeue,
            settings("ReturnToService=2\n").return_to_service) == (False, 2)
    assert settings("ReturnToService=7\n").return_to_service == 0  # out of range: the default


def test_nothing_starts_on_a_silent_or_down_node() -> None:
    core, service = _cluster()
    _fail_n1(core, T0 + TIMEOUT / 3 + 1)
    job_id = _submit(core, service, now=T0 + 20, nodes_min=2, ntasks=2)  # needs both nodes
    one = _submit(core, service, now=T0 + 20)
    core.schedule(T0 + 20)
    assert core.jobs[job_id].state == model.PENDING and core.jobs[one].nodes == ["n2"]
    _fail_n1(core, T0 + TIMEOUT + 1)
    core.schedule(T0 + TIMEOUT + 1)
    assert core.jobs[job_id].state == model.PENDING


def test_a_launch_to_an_unreachable_node_is_requeued_when_the_node_is_declared_down() -> None:
    """As Slurm: the job shows RUNNING on the node until the node is DOWN, then the
    failed-run rules apply (here: requeued, and started on the other node)."""
    core, service = _cluster()
    _keep_alive(core, ["n1", "n2"], T0 + 9)  # n1's last word
    job_id = _submit(core, service, now=T0 + 9, req_nodes=[])
    [launch] = core.schedule(T0 + 9)
    assert launch.node == "n1"
    t = T0 + 9
    while core.jobs[job_id].restarts == 0:
        t += 1
        _keep_alive(core, ["n2"], t)
        core.tick(t)
        assert t < T0 + 9 + TIMEOUT + 2
    assert core.jobs[job_id].state == model.PENDING and core.nodes["n1"].down
    launches = core.schedule(t + CRED + 1)
    assert [(o.node, o.body["job_id"]) for o in launches] == [("n2", job_id)]


def test_a_returning_node_has_its_stale_runs_killed_and_its_late_ends_ignored() -> None:
    core, service = _cluster(return_to_service=1)
    rq, norq, dflt = _three_jobs_on_n1(core, service)
    down_at = T0 + TIMEOUT + 5
    _fail_n1(core, down_at)
    core.schedule(down_at + CRED + 1)  # rq and dflt run again on n2, as run 1
    assert core.jobs[rq].nodes == ["n2"] and core.jobs[rq].restarts == 1
    # n1's plurmd comes back: its old copies still run (run 0 of all three).
    out = core.node_register("n1", {"boot_time": 1.0, "slurmd_start_time": 3.0, "running_jobs": [rq, norq, dflt],
                                    "runs": {str(rq): 0, str(norq): 0, str(dflt): 0}}, down_at + 20)
    kills = sorted((o.node, o.body["job_id"], o.body["restarts"]) for o in out if o.msg_type == "terminate_job")
    assert kills == [("n1", rq, 0), ("n1", norq, 0), ("n1", dflt, 0)]
    assert not core.nodes["n1"].down and core.nodes["n1"].reason is None  # ReturnToService=1
    # Told once: the next pings do not repeat it while the copies are on their way out.
    assert [o for o in _ping(core, "n1", down_at + 22, {rq: 0, norq: 0, dflt: 0})
            if o.msg_type == "terminate_job"] == []
    # The old copy's end report: acknowledged, nothing changes (Slurm: "sent from wrong node").
    core.take_effects()
    service.job_ended("n1", protocol.JobEnded(node="n1", job_id=rq, exit_code=0, restarts=0, end_time=down_at + 23),
                      down_at + 23)
    assert core.jobs[rq].state == model.RUNNING and core.jobs[rq].nodes == ["n2"]
    assert not [e for e in core.take_effects() if isinstance(e, (fx.SaveAcctJob, fx.SaveJob))]
    # An end report without a run number, from the wrong node, is ignored too.
    core.job_ended(dflt, 0, 0, down_at + 24, down_at + 24, node="n1")
    assert core.jobs[dflt].state == model.RUNNING
    # The current run's end is the job's end.
    core.job_ended(rq, 0, 0, down_at + 30, down_at + 30, restarts=1, node="n2")
    assert core.jobs[rq].state == model.COMPLETED and core.jobs[rq].restarts == 1


def test_the_end_report_of_an_older_run_is_ignored_while_the_job_pends() -> None:
    core, service = _cluster()
    rq, _, _ = _three_jobs_on_n1(core, service)
    _fail_n1(core, T0 + TIMEOUT + 5)
    assert core.jobs[rq].state == model.PENDING
    core.job_ended(rq, 1, 0, T0 + 40, T0 + 40, restarts=0, node="n1")
    core.job_ended(rq, 1, 0, T0 + 40, T0 + 40)  # (no run, no node: an old node daemon) — pending: no node has it
    assert core.jobs[rq].state == model.PENDING


def test_a_node_with_a_copy_of_a_job_now_elsewhere_or_ended_kills_it() -> None:
    core, service = _cluster()
    job_id = _submit(core, service)
    core.schedule(T0)
    core.job_ended(job_id, 0, 0, T0 + 1, T0 + 1, restarts=0, node="n1")
    out = _ping(core, "n1", T0 + 2, {job_id: 0, 999: 0})  # an ended job; one the controller never had
    assert sorted((o.body["job_id"], o.body["restarts"]) for o in out if o.msg_type == "terminate_job") == [
        (job_id, 0), (999, 0)]
    # The current run of a running job is left alone.
    other = _submit(core, service, now=T0 + 3)
    core.schedule(T0 + 3)
    node = core.jobs[other].nodes[0]
    assert [o for o in _ping(core, node, T0 + 4, {other: 0}) if o.msg_type == "terminate_job"] == []


def test_a_batch_job_missing_from_its_node_fails_with_it() -> None:
    core, service = _cluster(node_fail_grace_s=10.0)
    rq = _submit(core, service, requeue=True, requeue_given=True)
    norq = _submit(core, service, requeue=False, requeue_given=True)
    core.schedule(T0)
    # The node reports an older run of rq (not the current one) and nothing of norq.
    for t in (T0 + 11, T0 + 22):
        _ping(core, "n1", t, {})
    assert core.jobs[rq].state == model.PENDING and core.jobs[rq].restarts == 1
    assert core.jobs[norq].state == model.NODE_FAIL
    assert not core.nodes["n1"].down  # the node itself is fine


@pytest.mark.parametrize("rts, reason, registered, back", [
    (0, "Not responding", True, False),
    (1, "Not responding", True, True),
    (1, "Not responding", False, True),  # a ping after the silence is enough
    (1, "maintenance", True, False),
    (2, "maintenance", True, True),
    (2, "Not responding", False, True),
])
def test_return_to_service(rts: int, reason: str, registered: bool, back: bool) -> None:
    core, service = _cluster(return_to_service=rts)
    if reason == "Not responding":
        _fail_n1(core, T0 + TIMEOUT + 1)
    else:
        service.update_node(protocol.UpdateNode(nodes=["n1"], state="DOWN", reason=reason), ROOT, T0)
        _fail_n1(core, T0 + TIMEOUT + 1)  # and its daemon falls silent (killed)
    assert core.nodes["n1"].down and core.nodes["n1"].reason == reason
    now = T0 + TIMEOUT + 10
    if registered:
        core.node_register("n1", {"boot_time": 1.0, "slurmd_start_time": 5.0}, now)
    else:
        _ping(core, "n1", now)
    node = core.nodes["n1"]
    assert node.responding
    assert (not node.down, node.reason is None) == (back, back)
    if not back:
        service.update_node(protocol.UpdateNode(nodes=["n1"], state="RESUME"), ROOT, now + 1)
        assert not node.down and node.reason is None


def test_a_drained_node_that_fails_and_returns_stays_drained() -> None:
    core, service = _cluster(return_to_service=2)
    service.update_node(protocol.UpdateNode(nodes=["n1"], state="DRAIN", reason="disk"), ROOT, T0)
    _fail_n1(core, T0 + TIMEOUT + 1)
    node = core.nodes["n1"]
    assert node.down and node.drain and node.reason == "disk"
    core.node_register("n1", {"boot_time": 1.0, "slurmd_start_time": 5.0}, T0 + TIMEOUT + 5)
    assert not node.down and node.drain and node.reason == "disk"


def test_a_requeue_in_flight_and_a_cancel_in_flight_end_as_they_were_going_to() -> None:
    core, service = _cluster(kill_wait=60.0)
    a = _submit(core, service)
    b = _submit(core, service)
    core.schedule(T0)
    service.requeue_job(protocol.RequeueJob(job_ids=[str(a)]), ROOT, T0 + 1)
    service.cancel(protocol.CancelJob(job_ids=[str(b)]), ALICE, T0 + 1)
    _fail_n1(core, T0 + TIMEOUT + 5)
    assert (core.jobs[a].state, core.jobs[a].restarts) == (model.PENDING, 1)
    assert core.jobs[a].spec.begin_time == T0 + 1 + CRED + 1  # scontrol requeue's, kept
    assert core.jobs[b].state == model.CANCELLED and not core.jobs[b].completing


def test_a_multi_node_job_on_a_failed_node_is_killed_on_its_other_nodes() -> None:
    core, service = _cluster(nodes=3)
    job_id = _submit(core, service, nodes_min=2, ntasks=2, requeue=False, requeue_given=True)
    core.schedule(T0)
    job = core.jobs[job_id]
    assert job.nodes == ["n1", "n2"]
    out: list = []
    t = T0
    while not core.nodes["n2"].down:
        t += 5
        _keep_alive(core, ["n1", "n3"], t)
        out.extend(core.tick(t))
    assert job.state == model.NODE_FAIL
    assert [(o.node, o.msg_type, o.body["restarts"]) for o in out] == [("n1", "terminate_job", 0)]


def test_hostile_runs_in_a_report_are_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    core, _ = _cluster()
    out = core.node_register("n1", {"boot_time": 1.0, "runs": {"x": 0, "5": "y"}}, T0 + 1)
    assert out == [] and "bad run" in caplog.text


def test_the_failed_run_is_charged_to_fair_share_as_any_run() -> None:
    core, service = _cluster()
    service.acctmgr(protocol.AcctMgr(action="add", entity="account", names=["phys"]), ROOT, T0)
    service.acctmgr(protocol.AcctMgr(action="add", entity="user", names=["alice"], fields={"account": "phys"}),
                    ROOT, T0)
    job_id = _submit(core, service, ntasks=2)
    core.schedule(T0)
    _fail_n1(core, T0 + TIMEOUT + 5)
    job = core.jobs[job_id]
    assert job.state == model.PENDING and job.restarts == 1
    usage = core.accounts.links_by_key[("phys", "alice")].usage
    assert usage == pytest.approx(2 * (job.submit_time - T0), rel=1e-3)  # 2 CPUs from T0 to the failure


def test_a_terminate_lost_while_the_node_daemon_was_down_is_sent_again() -> None:
    """scancel while the node's plurmd was down: the node comes back still running the job
    (the terminate never reached it); after KillWait and three pings it is told again, that
    run only, and not before (the first terminate may still be on its way)."""
    core, service = _cluster(nodes=1)
    job_id = _submit(core, service)
    core.schedule(T0)
    core.cancel(core.jobs[job_id], ROOT, T0 + 1)
    assert core.jobs[job_id].completing
    assert _terminates(_ping(core, "n1", T0 + 2, {job_id: 0})) == []
    assert _terminates(_ping(core, "n1", T0 + 5, {job_id: 0})) == []
    again = _terminates(_ping(core, "n1", T0 + 2 + 5 + 6, {job_id: 0}))
    assert again == [(job_id, 0)]
    assert _terminates(_ping(core, "n1", T0 + 15, {job_id: 0})) == []  # not at every ping


def _terminates(out: list) -> list[tuple[int, int]]:
    return [(o.body["job_id"], o.body["restarts"]) for o in out if o.msg_type == "terminate_job"]
