"""Licenses in the core (issue 14 item 2), sans-IO: Licenses= totals, -L at submission, the
pass's gate (reason Licenses, planned over time), what holds them, reconfigure.

Slurm 22.05.8's answers these compare with are in tests/corescheduler/reference/licenses/.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from plurm.corescheduler import licenses as lic
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.tools.scontrol_licenses import format_licenses
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

ROOT = Identity(0, 0, "root", operator=True)
ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
T0 = 1_000_000.0
REFERENCE = Path(__file__).parent / "reference" / "licenses"


def _core(nodes: int = 4) -> tuple[ClusterCore, Service]:
    names = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True, boot_time=1.0)
             for i in range(1, nodes + 1)}
    core = ClusterCore(names, {"debug": Partition(name="debug", nodes=list(names), default=True)},
                       CoreSettings(cluster_name="t"), now=T0)
    core.set_license_totals(lic.parse_configured("fluent:4,matlab:2"))
    return core, Service(core)


def _submit(service: Service, now: float, **spec) -> int:
    spec.setdefault("script", "#!/bin/sh\nsleep 1\n")
    return service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), ALICE, now)["job_id"]


def test_configured_totals_and_bad_lines() -> None:
    assert lic.parse_configured("fluent:4,matlab:2") == {"fluent": 4, "matlab": 2}
    assert lic.parse_configured("foo") == {"foo": 1}
    assert lic.parse_configured(None) == {}
    for bad in ("fluent:x", "a:1,a:2", "bad name", ",", "a:" + "9" * 12):
        with pytest.raises(lic.LicenseSpecError):
            lic.parse_configured(bad)


@pytest.mark.parametrize("request_text", ["nosuch", "fluent:5", "fluent:2|matlab:1", "fluent:x", "fluent:3,fluent:2",
                                          "", "fluent:-1", "x" * 5000, "fluent;rm", "fluent@slurmdb:1"])
def test_invalid_requests_are_refused_with_slurms_words(request_text: str) -> None:
    core, service = _core()
    with pytest.raises(RequestError) as err:
        _submit(service, T0, licenses=request_text)
    assert str(err.value) == "Invalid license specification"  # as sbatch prints it (reference: submit.txt)
    assert not core.jobs


def test_valid_requests_are_kept_as_written() -> None:
    core, service = _core()
    for text, held in [("fluent:1,fluent:2", {"fluent": 3}), ("fluent:0", {"fluent": 0}),
                       ("matlab,fluent:3", {"matlab": 1, "fluent": 3}), ("fluent", {"fluent": 1})]:
        job = core.jobs[_submit(service, T0, licenses=text, hold=True)]
        assert job.spec.licenses == text  # scontrol show job: Licenses=fluent:1,fluent:2 (22.05 does not sum)
        assert lic.parse_held(job.spec.licenses) == held


def test_jobs_wait_with_reason_licenses_and_get_them_back_at_the_end() -> None:
    core, service = _core()
    first = _submit(service, T0, licenses="matlab:2,fluent", time_limit=10)
    second = _submit(service, T0, licenses="matlab:1", time_limit=1)
    plain = _submit(service, T0, time_limit=1)
    core.schedule(T0 + 1)
    jobs = core.jobs
    assert jobs[first].state == model.RUNNING and jobs[plain].state == model.RUNNING
    assert (jobs[second].state, jobs[second].reason) == (model.PENDING, "Licenses")
    # Planned after the holder's end (its time limit), as backfill plans licenses over time.
    assert jobs[second].planned_start == jobs[first].end_time
    report = {r["name"]: r for r in core.license_report()}
    assert (report["matlab"]["used"], report["matlab"]["free"], report["fluent"]["used"]) == (2, 0, 1)
    core.job_ended(first, 0, 0, T0 + 30, T0 + 30)
    assert core.license_report(["matlab"])[0]["used"] == 0  # given back at the end
    core.schedule(T0 + 31)
    assert jobs[second].state == model.RUNNING


def test_a_small_job_does_not_take_licenses_a_higher_priority_job_is_planned_to_use() -> None:
    core, service = _core()
    holder = _submit(service, T0, licenses="fluent:3", time_limit=10)
    core.schedule(T0 + 1)
    big = _submit(service, T0 + 2, licenses="fluent:4", time_limit=10)
    core.jobs[big].priority = 1000
    short_fits = _submit(service, T0 + 2, licenses="fluent:1", time_limit=5)  # ends before holder: fine
    too_long = _submit(service, T0 + 2, licenses="fluent:1", time_limit=30)  # would overlap big's plan
    for job_id in (short_fits, too_long):
        core.jobs[job_id].priority = 10
    core.schedule(T0 + 3)
    jobs = core.jobs
    assert jobs[holder].state == model.RUNNING
    assert jobs[big].reason == "Licenses" and jobs[big].planned_start == jobs[holder].end_time
    assert jobs[short_fits].state == model.RUNNING  # backfilled: done before the big job's start
    assert (jobs[too_long].state, jobs[too_long].reason) == (model.PENDING, "Licenses")
    assert jobs[too_long].planned_start == jobs[big].planned_start + 600


def test_requeue_and_node_failure_give_licenses_back() -> None:
    core, service = _core()
    job_id = _submit(service, T0, licenses="matlab:2", time_limit=10, requeue=True, requeue_given=True)
    core.schedule(T0 + 1)
    assert core.license_report(["matlab"])[0]["used"] == 2
    core.requeue_job(core.jobs[job_id], ROOT, T0 + 2)
    assert core.jobs[job_id].state == model.PENDING and core.jobs[job_id].completing
    assert core.license_report(["matlab"])[0]["used"] == 2  # held until its node has cleaned up
    core.job_ended(job_id, 0, 15, T0 + 3, T0 + 3)
    assert not core.jobs[job_id].completing and core.license_report(["matlab"])[0]["used"] == 0
    core.schedule(T0 + 400)  # (after its requeue delay)
    job = core.jobs[job_id]
    assert job.state == model.RUNNING and core.license_report(["matlab"])[0]["used"] == 2
    core.update_nodes(job.nodes, "DOWN", "test", ROOT, T0 + 401)  # its node fails: requeued again
    assert (job.state, job.restarts) == (model.PENDING, 2)
    assert core.license_report(["matlab"])[0]["used"] == 0


def test_reconfigure_changes_the_totals() -> None:
    core, service = _core()
    assert core.set_license_totals({"fluent": 8}) is True
    assert [(r["name"], r["total"]) for r in core.license_report()] == [("fluent", 8)]
    with pytest.raises(RequestError):
        _submit(service, T0, licenses="matlab")  # no longer configured
    assert core.set_license_totals({"fluent": 8}) is False


def test_scontrol_show_licenses_text_matches_slurm() -> None:
    core, service = _core()
    expected = (REFERENCE / "show_licenses_idle.txt").read_text()
    assert format_licenses(core.license_report()) == expected
    oneliner = (REFERENCE / "show_licenses_oneliner.txt").read_text()
    assert format_licenses(core.license_report(), oneliner=True) == oneliner
    _submit(service, T0, licenses="matlab:2,fluent", time_limit=2)
    core.schedule(T0 + 1)
    assert format_licenses(core.license_report()) == (REFERENCE / "show_licenses_used.txt").read_text()


def test_scontrol_update_licenses_as_22_05() -> None:
    """22.05.8 (reference/update.txt): a pending or a running job's Licenses= changes; a bad one is
    'Invalid license specification for job N' (scontrol adds 'for job N'), exit 1; '' empties it."""
    from plurm.corescheduler.service import parse_job_changes

    core, service = _core()
    held = _submit(service, T0, licenses="fluent", hold=True)
    running = _submit(service, T0, licenses="fluent", time_limit=5)
    core.schedule(T0 + 1)
    reply = service.update_job(protocol.UpdateJob(job_ids=[str(held)], fields={"Licenses": "matlab:2"}), ROOT, T0 + 2)
    assert reply == {"results": [{"job": str(held), "job_id": held}]} and core.jobs[held].spec.licenses == "matlab:2"
    reply = service.update_job(protocol.UpdateJob(job_ids=[str(held)], fields={"Licenses": "nosuch"}), ROOT, T0 + 2)
    assert reply["results"][0]["error"] == "Invalid license specification"
    assert core.jobs[held].spec.licenses == "matlab:2"  # unchanged
    core.update_job(core.jobs[running], parse_job_changes({"Licenses": "matlab"}), ROOT, T0 + 3)
    assert core.license_report(["matlab"])[0]["used"] == 1 and core.license_report(["fluent"])[0]["used"] == 0
    core.update_job(core.jobs[held], parse_job_changes({"licenses": ""}), ROOT, T0 + 3)
    assert core.jobs[held].spec.licenses == ""
    with pytest.raises(RequestError):
        core.update_job(core.jobs[held], parse_job_changes({"Licenses": "fluent:1," * 1000}), ROOT, T0 + 3)


_EVENT = st.one_of(st.tuples(st.just("submit"), st.sampled_from(["fluent", "fluent:3", "fluent:4", "matlab:2",
                                                                 "matlab,fluent:2", None]),
                             st.integers(1, 30), st.integers(0, 100)),
                   st.tuples(st.just("end"), st.integers(0, 20), st.just(0), st.just(0)),
                   st.tuples(st.just("requeue"), st.integers(0, 20), st.just(0), st.just(0)),
                   st.tuples(st.just("wait"), st.integers(1, 90), st.just(0), st.just(0)))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(_EVENT, min_size=1, max_size=25))
def test_property_licenses_in_use_never_exceed_the_totals(events: list[tuple]) -> None:
    """Whatever arrives and ends, the jobs that hold licenses never hold more than Licenses= says,
    and a job waits with reason Licenses only while what it asks for is not free for it."""
    core, service = _core(nodes=8)
    now = T0
    for kind, a, b, c in events:
        now += 7
        if kind == "wait":  # time passes: time limits run out (TIMEOUT, completing until it ends)
            now += a
            core.tick(now)
        elif kind == "submit":
            job_id = _submit(service, now, licenses=a, time_limit=b, requeue=True, requeue_given=True)
            core.jobs[job_id].priority = c
        else:
            running = sorted(j.job_id for j in core.jobs.values() if j.state == model.RUNNING or j.completing)
            if running:
                victim = running[a % len(running)]
                if kind == "requeue" and core.jobs[victim].state == model.RUNNING:
                    core.requeue_job(core.jobs[victim], ROOT, now)
                core.job_ended(victim, 0, 0, now, now)
        core.schedule(now)
        for record in core.license_report():
            assert record["used"] <= record["total"], (record, events)
        for job in core.jobs.values():
            if job.state == model.PENDING and job.reason == "Licenses":
                assert lic.parse_held(job.spec.licenses)


def test_deep_in_the_queue_licenses_are_checked_but_not_planned() -> None:
    """Past PLAN_LIMIT waiting jobs a pass plans no more license starts (their cost grows with the
    plan), and still starts none that would take licenses from under the planned ones."""
    from plurm.corescheduler.core_licenses import PLAN_LIMIT

    core, service = _core(nodes=2)
    holder = _submit(service, T0, licenses="fluent:4", time_limit=10)
    core.schedule(T0 + 1)
    waiting = [_submit(service, T0 + 2, licenses="fluent", time_limit=5) for _ in range(PLAN_LIMIT + 5)]
    core.schedule(T0 + 3)
    jobs = core.jobs
    assert all(jobs[j].reason == "Licenses" for j in waiting)
    assert jobs[waiting[0]].planned_start == jobs[holder].end_time
    assert jobs[waiting[PLAN_LIMIT - 1]].planned_start is not None
    assert [jobs[j].planned_start for j in waiting[PLAN_LIMIT:]] == [None] * 5


def test_a_job_past_its_time_limit_holds_its_licenses_until_it_is_gone() -> None:
    core, service = _core()
    late = _submit(service, T0, licenses="matlab:2", time_limit=1)
    core.schedule(T0 + 1)
    waiting = _submit(service, T0 + 2, licenses="matlab", time_limit=1)
    core.schedule(T0 + 90)  # (no tick yet: the late one still RUNNING, past its end)
    assert core.jobs[late].state == model.RUNNING and core.jobs[waiting].reason == "Licenses"
    assert core.license_report(["matlab"])[0]["used"] == 2
    core.tick(T0 + 91)  # timed out: completing, still holding
    core.schedule(T0 + 91)
    assert core.jobs[waiting].state == model.PENDING
    core.job_ended(late, 0, 15, T0 + 92, T0 + 92)
    core.schedule(T0 + 93)
    assert core.jobs[waiting].state == model.RUNNING
