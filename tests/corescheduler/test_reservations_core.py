"""Advance reservations in the core, sans-IO (core_resv.py, reservations.py): events in,
decisions out.  The words and reasons are the real Slurm 22.05's
(tests/tools/reference/reservations); the daemons' side is tests/integration/test_reservations.py.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

ROOT = Identity(0, 0, "root", operator=True)
ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
BOB = Identity(1002, 1002, "bob", frozenset({"bob"}))
T0 = 1_000_000.0
HOUR = 3600.0
RESV_NODES = "ReqNodeNotAvail, May be reserved for other job"


def _core() -> tuple[ClusterCore, Service]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True, boot_time=1.0,
                           slurmd_start_time=2.0) for i in range(1, 5)}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    # (SlurmdTimeout long: the tests move the clock by hours without node pings)
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="t", slurmd_timeout=1e9), now=T0)
    return core, Service(core)


def _resv(service: Service, action: str = "create", who: Identity = ROOT, now: float = T0,
          name: str | None = None, **fields: str) -> dict:
    return service.reservation(protocol.ReservationRequest(action=action, name=name, fields=fields), who, now,
                               lambda user: user in ("root", "alice", "bob"))


def _submit(core: ClusterCore, service: Service, now: float, who: Identity = ALICE, **spec) -> model.Job:
    spec.setdefault("script", "#!/bin/sh\nsleep 100\n")
    job_id = service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), who, now)["job_id"]
    core.schedule(now)
    return core.jobs[job_id]


def _refused(message: str, **fields: str) -> None:
    core, service = _core()
    _resv(service, ReservationName="base", StartTime="now", Duration="60", Nodes="n1", Users="root")
    with pytest.raises(RequestError) as caught:
        _resv(service, **fields)
    assert str(caught.value) == message


def test_create_show_update_delete() -> None:
    core, service = _core()
    assert _resv(service, ReservationName="m", StartTime="now", Duration="60", Nodes="n[1-2]", Users="root",
                 Flags="MAINT") == {"name": "m"}
    # No name: Slurm names it after its creator; NodeCnt takes free nodes of the default partition.
    assert _resv(service, StartTime="now+30minutes", Duration="1:30:00", NodeCnt="1", Accounts="root") == {
        "name": "root_1"}
    shown = _resv(service, "show", now=T0 + 5)["reservations"]
    assert [(r["name"], r["state"], r["nodes"], r["cores"], r["flags"], r.get("partition")) for r in shown] == [
        ("m", "ACTIVE", ["n1", "n2"], 8, ["MAINT", "SPEC_NODES"], None),
        ("root_1", "INACTIVE", ["n3"], 4, [], "debug")]
    assert shown[1]["end_time"] - shown[1]["start_time"] == 1.5 * HOUR
    _resv(service, "update", ReservationName="root_1", Duration="45", Users="alice")
    _resv(service, "update", ReservationName="root_1", Flags="+DAILY")
    record = core.resv["root_1"]
    assert (record.end_time - record.start_time, record.users, record.flags) == (45 * 60.0, ["alice"], ["DAILY"])
    _resv(service, "update", ReservationName="root_1", Flags="-DAILY")
    assert core.resv["root_1"].flags == []
    _resv(service, "delete", name="m")
    assert list(core.resv) == ["root_1"]
    with pytest.raises(RequestError, match="^Requested reservation is invalid$"):
        _resv(service, "delete", name="m")
    with pytest.raises(RequestError, match="^Requested reservation is invalid$"):
        _resv(service, "update", ReservationName="nosuch", Duration="5")


@pytest.mark.parametrize("message, fields", [
    ("Invalid node name specified", {"Nodes": "n9"}),
    ("Invalid node name specified", {"Nodes": "n[1-"}),
    ("Requested reservation overlaps with another reservation", {"Nodes": "n1"}),
    ("Requested nodes are busy", {"NodeCnt": "4"}),
    ("Requested node configuration is not available", {"NodeCnt": "x"}),
    ("Invalid partition name specified", {"Nodes": "n2", "PartitionName": "nopart"}),
    ("Invalid user id", {"Nodes": "n2", "Users": "nobody"}),
    ("Invalid account or account/partition combination specified", {"Nodes": "n2", "Accounts": "nosuch"}),
    ("Error parsing flags BOGUS.  No reservation created.", {"Nodes": "n2", "Flags": "BOGUS"}),
    ("Invalid time specification", {"Nodes": "n2", "StartTime": "yesterday-ish"}),
    ("Invalid time specification", {"Nodes": "n2", "Duration": "-5"}),
    ("Invalid time specification", {"Nodes": "n2", "StartTime": "now+999999999999"}),
    ("Duplicate reservation name", {"ReservationName": "base", "Nodes": "n2"}),
    ("A start time must be given.  No reservation created.", {"Nodes": "n2", "StartTime": ""}),
    ("Either Users/Groups and/or Accounts must be specified.  No reservation created.",
     {"Nodes": "n2", "Users": ""}),
    ("Pathname of a file, directory or other parameter too long", {"ReservationName": "x" * 2000, "Nodes": "n2"}),
])
def test_create_refusals_have_slurms_words(message: str, fields: dict[str, str]) -> None:
    base = {"StartTime": "now", "Duration": "60", "Users": "root"}
    base.update(fields)
    if base["StartTime"] == "":
        del base["StartTime"]
    _refused(message, **base)


def test_only_operators_change_reservations(caplog: pytest.LogCaptureFixture) -> None:
    core, service = _core()
    for action, fields in (("create", {"StartTime": "now", "Duration": "5", "NodeCnt": "1", "Users": "alice"}),
                           ("update", {"ReservationName": "x", "Duration": "5"}), ("delete", {})):
        with pytest.raises(RequestError, match="^Invalid user id$"):
            _resv(service, action, who=ALICE, name="x", **fields)
    assert core.resv == {}
    assert _resv(service, "show", who=ALICE)["reservations"] == []  # (anyone may look)
    assert "reservation delete by alice refused: Invalid user id" in caplog.text


def test_overlap_and_maint_may_share_nodes_and_running_jobs_make_nodes_busy() -> None:
    core, service = _core()
    _resv(service, ReservationName="m", StartTime="now", Duration="60", Nodes="n1", Users="root", Flags="MAINT")
    _resv(service, ReservationName="over", StartTime="now", Duration="60", Nodes="n1", Users="root")  # MAINT
    _resv(service, ReservationName="o2", StartTime="now", Duration="60", Nodes="n1", Users="root", Flags="OVERLAP")
    job = _submit(core, service, T0, req_nodes=["n2"], time_limit=30)
    assert job.state == model.RUNNING
    with pytest.raises(RequestError, match="^Requested nodes are busy$"):
        _resv(service, ReservationName="b", StartTime="now", Duration="60", Nodes="n2", Users="root")
    # After the job's end: free; IGNORE_JOBS (or MAINT) takes a busy node anyway.
    _resv(service, ReservationName="b", StartTime="now+1hour", Duration="60", Nodes="n2", Users="root")
    _resv(service, ReservationName="c", StartTime="now", Duration="60", Nodes="n2", Users="root",
          Flags="IGNORE_JOBS")
    with pytest.raises(RequestError, match="^Reservation request busy$"):
        _resv(service, ReservationName="d", StartTime="now", Duration="60", Nodes="n3", Users="alice")
        _submit(core, service, T0, reservation="d")
        _resv(service, "delete", name="d")


def test_other_jobs_never_start_where_their_run_would_meet_a_reservation() -> None:
    core, service = _core()
    # n1 and n2 reserved from in 30 minutes (as the real Slurm's session2: 60 min waits, 10 min runs).
    _resv(service, ReservationName="fut", StartTime="now+30minutes", Duration="30", Nodes="n[1-2]", Users="root")
    long = _submit(core, service, T0, nodes_min=4, time_limit=60)
    short = _submit(core, service, T0, nodes_min=4, ntasks=16, time_limit=10)
    assert (long.state, long.reason) == (model.PENDING, RESV_NODES)
    assert short.state == model.RUNNING
    unlimited = _submit(core, service, T0, req_nodes=["n1"])  # no time limit: it would meet any
    assert (unlimited.state, unlimited.reason) == (model.PENDING, RESV_NODES)
    elsewhere = _submit(core, service, T0 + 1, nodes_min=1, time_limit=600)
    assert elsewhere.state == model.PENDING and elsewhere.reason == "Resources"  # n3, n4 only: busy
    core.job_ended(short.job_id, 0, 0, T0 + 60, T0 + 60)
    core.schedule(T0 + 61)
    assert elsewhere.state == model.RUNNING and set(elsewhere.nodes) <= {"n3", "n4"}
    # The reservation ends: the others may have its nodes.
    core.tick(T0 + HOUR + 1)
    core.schedule(T0 + HOUR + 1)
    assert core.resv == {} and unlimited.state == model.RUNNING


def test_a_reservations_jobs_run_only_inside_it_while_it_is_active() -> None:
    core, service = _core()
    _resv(service, ReservationName="r", StartTime="now+1hour", Duration="60", Nodes="n[3-4]", Users="alice")
    job = _submit(core, service, T0, reservation="r", nodes_min=2, ntasks=8, time_limit=10)
    assert (job.state, job.reason) == (model.PENDING, "Reservation")
    with pytest.raises(RequestError, match="^Access denied to requested reservation$"):
        _submit(core, service, T0, who=BOB, reservation="r")
    with pytest.raises(RequestError, match="^Requested reservation is invalid$"):
        _submit(core, service, T0, reservation="nosuch")
    core.tick(T0 + HOUR)  # it starts
    core.schedule(T0 + HOUR)
    assert job.state == model.RUNNING and job.nodes == ["n3", "n4"]
    assert _resv(service, "show", now=T0 + HOUR)["reservations"][0]["state"] == "ACTIVE"
    third = _submit(core, service, T0 + HOUR, reservation="r", time_limit=10)
    assert (third.state, third.reason) == (model.PENDING, "Resources")  # its nodes are taken


def test_flex_jobs_may_use_more_nodes_and_accounts_admit_too() -> None:
    core, service = _core()
    _resv(service, ReservationName="f", StartTime="now", Duration="60", Nodes="n1", Accounts="root", Flags="FLEX")
    core.accounts.add_account("physics", "root", None, None, 1)
    core.accounts.add_user("alice", "physics", None, 1, None)
    with pytest.raises(RequestError, match="^Access denied to requested reservation$"):
        _submit(core, service, T0, reservation="f")
    job = _submit(core, service, T0, reservation="f", account="root", nodes_min=3, time_limit=10)
    assert job.state == model.RUNNING and "n1" in job.nodes and len(job.nodes) == 3


def test_daily_reservations_roll_forward_and_a_deleted_ones_jobs_say_so() -> None:
    core, service = _core()
    _resv(service, ReservationName="d", StartTime="now", Duration="60", Nodes="n1", Users="alice", Flags="DAILY")
    _resv(service, ReservationName="w", StartTime="now", Duration="60", Nodes="n2", Users="alice",
          Flags="WEEKLY")
    core.tick(T0 + 2 * HOUR)
    assert (core.resv["d"].start_time, core.resv["w"].start_time) == (T0 + 86400, T0 + 7 * 86400)
    assert core.resv["d"].state(T0 + 2 * HOUR) == "INACTIVE"
    job = _submit(core, service, T0 + 2 * HOUR, reservation="d", time_limit=10)
    assert job.reason == "Reservation"
    _resv(service, "delete", name="d", now=T0 + 2 * HOUR)
    core.schedule(T0 + 2 * HOUR + 1)
    assert (job.state, job.reason) == (model.PENDING, "ReservationDeleted")
    _resv(service, "delete", name="w", now=T0 + 2 * HOUR)  # the last one gone: it still waits
    core.schedule(T0 + 2 * HOUR + 2)
    assert (job.state, job.reason) == (model.PENDING, "ReservationDeleted")


def test_reservations_survive_a_restart_through_the_store_text() -> None:
    core, service = _core()
    assert core.take_reservations() is None
    _resv(service, ReservationName="m", StartTime="now", Duration="60", Nodes="n1", Users="root", Flags="MAINT")
    text = core.take_reservations()
    assert text is not None and core.take_reservations() is None  # (only when changed)
    again, _ = _core()
    again.restore_reservations(text, T0 + 1)
    assert again.resv == core.resv
    job = _submit(again, Service(again), T0 + 1, req_nodes=["n1"], time_limit=5)
    assert job.reason == RESV_NODES
    later, _ = _core()  # a controller back after the end: the first tick ends it (DAILY: moves it on)
    later.restore_reservations(text, T0 + 2 * HOUR)
    later.tick(T0 + 2 * HOUR)
    assert later.resv == {}
    broken, _ = _core()
    broken.restore_reservations("[{\"name\": 5}]", T0)  # logged, nothing restored
    assert broken.resv == {}


def test_private_data_reservations_shows_users_only_theirs() -> None:
    core, service = _core()
    core.settings.private_data = frozenset({"reservations"})
    _resv(service, ReservationName="mine", StartTime="now", Duration="60", Nodes="n1", Users="alice")
    _resv(service, ReservationName="other", StartTime="now", Duration="60", Nodes="n2", Users="bob")
    assert [r["name"] for r in _resv(service, "show", who=ALICE)["reservations"]] == ["mine"]
    assert [r["name"] for r in _resv(service, "show")["reservations"]] == ["mine", "other"]  # an operator


def test_an_ended_reservations_pending_jobs_are_held_unless_no_hold_jobs_after_end() -> None:
    core, service = _core()
    _resv(service, ReservationName="h", StartTime="now", Duration="10", Nodes="n1", Users="alice")
    _resv(service, ReservationName="k", StartTime="now", Duration="10", Nodes="n2", Users="alice",
          Flags="NO_HOLD_JOBS_AFTER_END")
    _resv(service, ReservationName="g", StartTime="now", Duration="60", Nodes="n3", Users="root", Groups="alice")
    assert _submit(core, service, T0, reservation="g", time_limit=5).state == model.RUNNING  # by its group
    busy = [_submit(core, service, T0, reservation=name, ntasks=4, time_limit=30) for name in ("h", "k")]
    held, free = (_submit(core, service, T0, reservation=name, ntasks=4, time_limit=5) for name in ("h", "k"))
    assert [j.state for j in busy] == [model.RUNNING] * 2 and held.state == free.state == model.PENDING
    core.tick(T0 + 601)
    core.schedule(T0 + 601)
    assert (held.state, held.reason, held.spec.reservation) == (model.PENDING, "JobHeldAdmin", None)
    assert free.state == model.RUNNING and free.spec.reservation is None
    assert [j.state for j in busy] == [model.RUNNING] * 2  # (running jobs run on)


def test_a_key_the_controller_does_not_know_refuses_the_request() -> None:
    core, service = _core()
    with pytest.raises(RequestError, match=r"^Unknown parameter Bogus=1\.  No reservation created\.$"):
        _resv(service, ReservationName="x", StartTime="now", Duration="5", Nodes="n1", Users="root", Bogus="1")
    assert core.resv == {}


_JOB = st.tuples(st.integers(1, 4), st.integers(1, 120), st.integers(0, 7200), st.booleans())  # nodes, min, at, in r
_RESV = st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 5400), st.integers(10, 90),
                  st.sampled_from(["", "MAINT", "FLEX"]))


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_RESV, min_size=1, max_size=3), st.lists(_JOB, min_size=1, max_size=8))
def test_no_job_starts_where_its_run_meets_a_reservation_it_is_not_in(resvs, jobs) -> None:
    """Property: whatever the reservations and the queue, a job started outside a reservation
    never holds one of its nodes during its time, and a job of a (non-FLEX) reservation runs on
    its nodes only and only while it is ACTIVE."""
    core, service = _core()
    made: list[str] = []
    for k, (first, last, start, minutes, flag) in enumerate(resvs):
        nodes = f"n[{min(first, last) + 1}-{max(first, last) + 1}]"
        fields = dict(ReservationName=f"r{k}", StartTime=f"now+{start}", Duration=str(minutes), Nodes=nodes,
                      Users="alice", Flags=flag or "OVERLAP")
        try:
            _resv(service, **fields)
            made.append(f"r{k}")
        except RequestError:
            pass  # overlapping: refused, as Slurm
    if not made:
        return
    records = {name: core.resv[name] for name in made}
    for i, (nodes, minutes, at, inside) in enumerate(sorted(jobs, key=lambda j: j[2])):
        core.tick(T0 + at)
        spec = dict(nodes_min=nodes, time_limit=minutes)
        if inside:
            spec["reservation"] = made[i % len(made)]
        try:
            _submit(core, service, T0 + at, **spec)
        except RequestError:
            assert inside and spec["reservation"] not in core.resv  # (ended already: refused)
    for job in core.jobs.values():
        if job.state != model.RUNNING:
            continue
        start, end = job.start_time, job.start_time + job.time_limit * 60
        own = records.get(job.spec.reservation or "")
        for record in records.values():
            if record is not own and record.overlaps(start, end):
                assert not set(job.nodes) & set(record.nodes), (job, record)
        if own is not None:
            assert own.start_time <= start < own.end_time
            if "FLEX" not in own.flags:
                assert set(job.nodes) <= set(own.nodes)


def test_nodes_of_an_active_reservation_say_so_in_their_state() -> None:
    core, service = _core()
    _resv(service, ReservationName="m", StartTime="now", Duration="60", Nodes="n1", Users="root", Flags="MAINT")
    _resv(service, ReservationName="r", StartTime="now", Duration="60", Nodes="n2", Users="root")
    _resv(service, ReservationName="f", StartTime="now+2hours", Duration="60", Nodes="n3", Users="root")
    core.nodes["n2"].responding = False
    states = {n["name"]: n["state"] for n in service.node_info(protocol.NodeInfoRequest())["nodes"]}
    assert states == {"n1": "IDLE+MAINTENANCE+RESERVED", "n2": "IDLE+RESERVED*", "n3": "IDLE", "n4": "IDLE"}
