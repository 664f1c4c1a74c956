"""The event journal and its subscribers, without a controller (corescheduler/journal.py,
journal_hub.py): the ring's bound, event derivation from the core's effects, filters,
PrivateData, the credit window and the lease."""

from __future__ import annotations

from types import SimpleNamespace

import msgspec
import pytest

from plurm.corescheduler import effects as fx
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.journal import Deriver, Filter, Journal, Viewer, job_event_name
from plurm.corescheduler.journal_hub import Hub
from plurm.wire import model

encode = msgspec.json.encode


def make_job(job_id: int, state: str = model.PENDING, uid: int = 1000, user: str = "alice",
             partition: str = "debug") -> model.Job:
    return model.Job(job_id=job_id, spec=model.JobSpec(user=user, user_id=uid, name=f"j{job_id}"),
                     state=state, partition=partition)


def body(event: str, job_id: int = 1, uid: int = 1000, user: str = "alice", partition: str = "debug") -> dict:
    return {"event": event, "job_id": job_id, "user_id": uid, "user": user, "partition": partition}


def test_ring_keeps_the_last_n_and_numbers_them() -> None:
    journal = Journal(encode, size=3)
    for i in range(5):
        journal.append(body("submit", job_id=i + 1))
    assert [e.seq for e in journal.ring] == [3, 4, 5]
    everyone = Viewer(0)
    assert [e.body["job_id"] for e in journal.backlog(0, Filter(), everyone)] == [3, 4, 5]
    assert [e.seq for e in journal.backlog(4, Filter(), everyone)] == [5]
    assert journal.backlog(5, Filter(), everyone) == []
    assert [e.seq for e in journal.backlog(0, Filter(), everyone, until=4)] == [3, 4]  # (not yet sent: not backlog)
    assert msgspec.json.decode(journal.ring[-1].raw)["seq"] == 5  # encoded once, seq included


@pytest.mark.parametrize(("previous", "state", "name"), [
    (None, model.PENDING, "submit"), (model.PENDING, model.RUNNING, "start"),
    (None, model.RUNNING, "start"),  # an array task split off its record as it starts
    (model.RUNNING, model.SUSPENDED, "suspend"), (model.SUSPENDED, model.RUNNING, "resume"),
    (model.RUNNING, model.PENDING, "requeue"), (model.RUNNING, model.COMPLETED, "complete"),
    (model.RUNNING, model.TIMEOUT, "complete"), (model.PENDING, model.CANCELLED, "cancel"),
    (model.RUNNING, model.RUNNING, None)])
def test_event_names_follow_state_changes(previous, state, name) -> None:
    assert job_event_name(previous, state) == name


def test_deriver_turns_effects_into_events_once() -> None:
    job = make_job(7)
    core = SimpleNamespace(jobs={7: job}, nodes={})
    deriver = Deriver()
    assert [b["event"] for b in deriver.job_events([fx.SaveJob(job), fx.SaveJob(job)], core, 1.0)] == ["submit"]
    job.state, job.nodes = model.RUNNING, ["n1"]
    step = model.StepRecord(job_id=7, step_id="batch", name="batch", nodes=["n1"])
    out = deriver.job_events([fx.SaveJob(job), fx.SaveAcctStep(step), fx.SaveAcctStep(step)], core, 2.0)
    assert [b["event"] for b in out] == ["start", "step_start"]
    assert out[0]["nodes"] == ["n1"] and out[1]["user_id"] == 1000
    step.end_time, step.state = 3.0, model.COMPLETED
    job.state = model.COMPLETED
    out = deriver.job_events([fx.SaveAcctStep(step), fx.SaveJob(job), fx.DeleteJob(7)], core, 3.0)
    assert [(b["event"], b["state"]) for b in out] == [("step_end", "COMPLETED"), ("complete", "COMPLETED")]
    assert deriver.jobs == {} and deriver.open_steps == set()  # bounded by what the core holds


def test_seeded_jobs_are_not_news_and_nodes_are_diffed() -> None:
    node = SimpleNamespace(state="IDLE", reason=None, partitions=["debug"])
    core = SimpleNamespace(jobs={3: make_job(3, model.RUNNING)}, nodes={"n1": node})
    deriver = Deriver()
    deriver.seed(core)
    assert deriver.job_events([fx.SaveJob(core.jobs[3])], core, 1.0) == []
    assert deriver.node_events(core, 1.0) == []
    node.state, node.reason = "DOWN", "gone"
    (event,) = deriver.node_events(core, 2.0)
    assert (event["node"], event["previous"], event["state"], event["reason"]) == ("n1", "IDLE", "DOWN", "gone")
    assert deriver.node_events(core, 3.0) == []


def test_filters() -> None:
    node = {"event": "node_state", "node": "n1", "partitions": ["debug"]}
    assert Filter().matches(body("submit")) and Filter().matches(node)
    assert Filter(job_ids=frozenset({1})).matches(body("submit", job_id=1))
    assert not Filter(job_ids=frozenset({1})).matches(body("submit", job_id=2))
    assert not Filter(job_ids=frozenset({1})).matches(node)  # a node is no job's
    assert Filter(job_ids=frozenset({5})).matches(dict(body("start", job_id=9), array_job_id=5))
    assert Filter(users=frozenset({"alice"})).matches(body("start"))
    assert Filter(users=frozenset({"1000"})).matches(body("start"))
    assert not Filter(users=frozenset({"bob"})).matches(body("start"))
    assert Filter(partitions=frozenset({"debug"})).matches(node)
    assert not Filter(partitions=frozenset({"gpu"})).matches(body("start"))
    assert not Filter(partitions=frozenset({"gpu"})).matches(node)
    assert Filter(events=frozenset({"complete"})).matches(body("complete"))
    assert not Filter(events=frozenset({"complete"})).matches(body("start"))


def test_private_data_hides_others_jobs_and_nodes() -> None:
    mine, theirs = body("start", uid=1000), body("start", uid=2000)
    node = {"event": "node_state", "node": "n1", "partitions": []}
    assert Viewer(1000).may_see(theirs)
    private = Viewer(1000, private_jobs=True, private_nodes=True)
    assert private.may_see(mine) and not private.may_see(theirs) and not private.may_see(node)
    journal = Journal(encode)
    for b in (mine, theirs, node):
        journal.append(dict(b))
    assert [e.body["user_id"] for e in journal.backlog(0, Filter(), private)] == [1000]
    hub = Hub()
    hub.subscribe(b"a", private, Filter(), 0, 0.0)
    hub.subscribe(b"b", Viewer(0), Filter(), 0, 0.0)
    deliveries, _ = hub.fanout(list(journal.ring))
    assert {sub.ident: len(batch) for sub, batch in deliveries} == {b"a": 1, b"b": 3}


def test_a_subscriber_that_does_not_acknowledge_is_dropped_at_its_window() -> None:
    journal = Journal(encode)
    hub = Hub()
    hub.subscribe(b"slow", Viewer(1), Filter(), 4, 0.0)
    hub.subscribe(b"fast", Viewer(2), Filter(), 4, 0.0)
    for round_ in range(3):
        events = [journal.append(body("submit", job_id=round_ * 2 + i)) for i in range(2)]
        deliveries, dropped = hub.fanout(events)
        hub.renew(b"fast", 2, hub.subs[b"fast"].sent, 1.0)  # the fast one reads and says so
    assert b"slow" not in hub.subs and b"fast" in hub.subs
    assert dropped and dropped[0][0] == b"slow" and "too slow" in dropped[0][1]
    with pytest.raises(RequestError) as err:
        hub.renew(b"slow", 1, 4, 2.0)
    assert err.value.code == "NoSubscription"


def test_renewals_are_checked_and_leases_expire() -> None:
    hub = Hub(max_subscribers=2, timeout_s=10.0)
    hub.subscribe(b"a", Viewer(1), Filter(), 0, 0.0)
    hub.subscribe(b"b", Viewer(2), Filter(), 0, 0.0)
    with pytest.raises(RequestError) as err:
        hub.subscribe(b"c", Viewer(3), Filter(), 0, 0.0)
    assert err.value.code == "TooManySubscribers"
    with pytest.raises(RequestError):
        hub.renew(b"a", 2, 0, 1.0)  # another user's connection id is not theirs to renew
    with pytest.raises(RequestError) as err:
        hub.renew(b"a", 1, 5, 1.0)  # acknowledging more than was sent
    assert err.value.code == "InvalidAck"
    hub.renew(b"a", 1, 0, 8.0)
    assert [ident for ident, _ in hub.expire(15.0)] == [b"b"]
    assert list(hub.subs) == [b"a"]
    assert hub.subscribe(b"a", Viewer(1), Filter(), 10**9, 16.0).window == 100_000  # capped
