"""The core and the service layer, driven sans-IO: events in, decisions out, no files.

The clock, the user database, SQLite and sockets are booby-trapped for the whole
module: if the core or the service layer reached for any of them, the test would fail.
"""

from __future__ import annotations

import grp
import pwd
import socket
import sqlite3
import sys
import time
from collections.abc import Iterator

import pytest

from plurm.corescheduler import effects as fx
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service, parse_job_changes
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

ROOT = Identity(0, 0, "root", operator=True)
ALICE = Identity(1001, 1001, "alice", frozenset({"alice", "physics"}))
BOB = Identity(1002, 1002, "bob", frozenset({"bob"}))
T0 = 1_000_000.0


@pytest.fixture(autouse=True)
def no_io(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each trap fails when plurm's code calls it; others (logging stamps its records
    with time.time(): a log line is not a decision) pass through."""
    for owner, name in [(time, "time"), (time, "monotonic"), (sqlite3, "connect"), (pwd, "getpwuid"),
                        (pwd, "getpwnam"), (grp, "getgrgid"), (socket, "socket")]:
        real = getattr(owner, name)

        def trap(*args, _real=real, _name=name, **kwargs):
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if caller.startswith("plurm."):
                raise AssertionError(f"the core did I/O: {caller} called {_name}")
            return _real(*args, **kwargs)

        monkeypatch.setattr(owner, name, trap)
    yield


def _core(**settings) -> tuple[ClusterCore, Service]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True, boot_time=1.0)
             for i in range(1, 3)}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True),
                  "phys": Partition(name="phys", nodes=list(nodes), allow_groups=["physics"])}
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="t", **settings), now=T0)
    return core, Service(core)


def _submit(service: Service, who: Identity, now: float, **spec) -> int:
    spec.setdefault("script", "#!/bin/sh\nsleep 1\n")
    return service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), who, now)["job_id"]


def test_a_job_runs_and_ends_with_its_writes_as_effects() -> None:
    core, service = _core()
    job_id = _submit(service, ALICE, T0, ntasks=2, time_limit=5, environment={"A": "1"})
    effects = core.take_effects()
    assert fx.SaveScript(job_id, "#!/bin/sh\nsleep 1\n", {"A": "1"}) in effects
    assert any(isinstance(e, fx.SaveJob) and e.job.job_id == job_id for e in effects)
    assert fx.SetNextJobId(job_id + 1) in effects
    job = core.jobs[job_id]
    assert (job.spec.user, job.spec.user_id, job.submit_time) == ("alice", 1001, T0)
    assert job.spec.script is None  # the script is the store's, not the core's
    out = core.schedule(T0 + 1)
    [launch] = out
    assert (launch.node, launch.msg_type, launch.body["job_id"], launch.body["uid"]) == ("n1", "launch_job",
                                                                                       job_id, 1001)
    assert "script" not in launch.body  # the controller adds it from the store
    assert job.state == model.RUNNING and job.start_time == T0 + 1 and job.end_time == T0 + 1 + 300
    core.take_effects()
    assert core.job_ended(job_id, 0, 0, T0 + 30, T0 + 31) == []
    effects = core.take_effects()
    assert job.state == model.COMPLETED and job.end_time == T0 + 30
    assert any(isinstance(e, fx.SaveAcctJob) and e.job.job_id == job_id for e in effects)
    assert any(isinstance(e, fx.SaveAcctStep) and e.step.step_id == "batch" for e in effects)
    assert [state for _, state, _ in job.events] == ["PENDING", "RUNNING", "COMPLETED"]
    assert [when for when, _, _ in job.events] == [T0, T0 + 1, T0 + 31]


def test_time_limits_and_purges_follow_the_clock_given() -> None:
    core, service = _core(min_job_age=60)
    job_id = _submit(service, ALICE, T0, time_limit=1)
    core.schedule(T0)
    assert core.tick(T0 + 59) == []
    [term, *_] = core.tick(T0 + 60)
    assert term.msg_type == "terminate_job" and core.jobs[job_id].state == model.TIMEOUT
    core.job_ended(job_id, 0, 15, None, T0 + 61)
    assert core.jobs[job_id].state == model.TIMEOUT and core.jobs[job_id].end_time == T0 + 61
    core.take_effects()
    core.tick(T0 + 61 + 61)
    assert job_id not in core.jobs and fx.DeleteJob(job_id) in core.take_effects()


def test_authorization_comes_from_the_identity() -> None:
    core, service = _core()
    job_id = _submit(service, ALICE, T0, hold=True)
    reply = service.update_job(protocol.UpdateJob(job_ids=[str(job_id)], fields={"TimeLimit": "10"}), BOB, T0)
    assert reply["results"][0]["code"] == "AccessDenied"
    reply = service.update_job(protocol.UpdateJob(job_ids=[str(job_id)], fields={"TimeLimit": "10"}), ALICE, T0)
    assert "error" not in reply["results"][0] and core.jobs[job_id].time_limit == 10
    reply = service.cancel(protocol.CancelJob(job_ids=[str(job_id)]), BOB, T0)
    assert reply["results"][0]["code"] == "AccessDenied" and core.jobs[job_id].state == model.PENDING
    with pytest.raises(RequestError, match="Invalid user id"):
        service.update_node(protocol.UpdateNode(nodes=["n1"], state="DRAIN", reason="x"), ALICE, T0)
    service.update_node(protocol.UpdateNode(nodes=["n1"], state="DRAIN", reason="fan"), ROOT, T0 + 5)
    assert (core.nodes["n1"].drain, core.nodes["n1"].reason_user, core.nodes["n1"].reason_time) == (True, "root",
                                                                                                    T0 + 5)
    # AllowGroups reads the groups the shell resolved, not a user database.
    assert _submit(service, ALICE, T0, partition="phys")
    with pytest.raises(RequestError, match="group not permitted"):
        _submit(service, BOB, T0, partition="phys")


def test_scontrol_update_is_parsed_by_the_service_layer() -> None:
    changes = parse_job_changes({"TimeLimit": "1:00:00", "NumNodes": "1-2", "Name": "x", "hold": "admin"})
    assert (changes.time_limit, changes.nodes, changes.name, changes.hold) == (60, (1, 2), "x", "admin")
    assert parse_job_changes({"TimeLimit": "UNLIMITED"}).time_limit is None
    with pytest.raises(RequestError, match="Update of Bogus is not supported"):
        parse_job_changes({"Bogus": "1"})
    with pytest.raises(RequestError) as caught:
        parse_job_changes({"Priority": "high"})
    assert caught.value.code == "InvalidUpdate"


def test_sacctmgr_and_fair_share_live_in_memory() -> None:
    core, service = _core()
    with pytest.raises(RequestError, match="permission denied"):
        service.acctmgr(protocol.AcctMgr(action="add", entity="account", names=["phys"]), ALICE, T0)
    service.acctmgr(protocol.AcctMgr(action="add", entity="account", names=["phys"]), ROOT, T0)
    for who in ("alice", "bob"):
        service.acctmgr(protocol.AcctMgr(action="add", entity="user", names=[who], fields={"account": "phys"}),
                        ROOT, T0)
    assert core.accounts.dirty  # the controller writes the book back in its next commit
    heavy = _submit(service, ALICE, T0, ntasks=4)
    assert core.jobs[heavy].spec.account == "phys"  # the user's default account
    core.schedule(T0)
    core.job_ended(heavy, 0, 0, T0 + 3600, T0 + 3600)
    shares = {s["user"]: s for s in service.share_info(T0 + 3600)["shares"] if s["user"]}
    assert shares["alice"]["raw_usage"] == 4 * 3600 and shares["bob"]["raw_usage"] == 0
    assert shares["bob"]["fairshare"] > shares["alice"]["fairshare"]


def test_a_dependency_on_a_purged_job_reads_the_archive() -> None:
    core, service = _core()
    core.archive[77] = (model.FAILED, None, None)  # what the controller seeds from accounting
    ok_id = _submit(service, ALICE, T0, dependency="afterok:77")
    notok_id = _submit(service, ALICE, T0, dependency="afternotok:77")
    core.schedule(T0)
    assert core.jobs[ok_id].reason == "DependencyNeverSatisfied"
    assert core.jobs[notok_id].state == model.RUNNING
    assert core.dependencies.referenced_ids() == {77}


def test_silent_nodes_stop_responding_each_time_they_fall_silent() -> None:
    """SlurmdTimeout, with the node walk skipped until the earliest deadline: a node silent
    for a third of it is flagged not responding, for all of it DOWN and its job fails
    (NODE_FAIL: --no-requeue); one that comes back (ReturnToService=1) and falls silent
    again is caught again."""
    core, service = _core(slurmd_timeout=99, return_to_service=1)
    for name in core.nodes:
        core.node_register(name, {}, T0)
    job_id = _submit(service, ALICE, T0, nodes_min=1, ntasks=1, requeue=False)
    core.schedule(T0)
    node = core.jobs[job_id].nodes[0]
    other = next(n for n in core.nodes if n != node)
    core.node_ping(other, [], None, None, T0 + 90)
    assert core.tick(T0 + 33) == [] and core.nodes[node].responding
    assert core.tick(T0 + 99) == [] and not core.nodes[node].responding and not core.nodes[node].down
    core.tick(T0 + 100)
    assert core.nodes[node].down and core.jobs[job_id].state == model.NODE_FAIL
    assert core.nodes[other].responding  # seen at T0 + 90
    core.tick(T0 + 190)
    assert not core.nodes[other].responding and core.nodes[other].down
    core.node_ping(other, [], None, None, T0 + 500)  # back
    assert core.nodes[other].responding and not core.nodes[other].down
    core.tick(T0 + 599)
    assert not core.nodes[other].responding and not core.nodes[other].down
    core.tick(T0 + 600)
    assert core.nodes[other].down
