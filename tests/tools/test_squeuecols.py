"""squeuecols.format_rows writes what squeuefmt.format_line writes, byte for byte, for every
field letter and long name, every width and justification, over jobs of every kind."""

from __future__ import annotations

import time

import pytest

from plurm.tools import squeuecols, squeuefmt
from plurm.tools.display import FormatField

NOW = time.time()


def _jobs() -> list[dict]:
    base = {"partition": "debug", "priority": 1000, "submit_time": NOW - 20}
    jobs = [
        dict(base, job_id=1, spec={"name": "plain", "user": "alice"}, reason="Priority"),
        dict(base, job_id=2, spec={"name": "a_very_long_job_name", "nodes_min": 3}, reason="JobHeldUser"),
        dict(base, job_id=3, spec={}, state="PENDING"),  # no reason, no name, no user
        dict(base, job_id=15, spec={"nodes_min": 4}, nodes=["n1", "n2"], reason="BeginTime"),  # requeued: nodes kept
        dict(base, job_id=4, spec={"name": "run"}, state="RUNNING", nodes=["n1", "n2"], cpus=[4, 4],
             start_time=NOW - 3725, time_limit=120),
        dict(base, job_id=5, spec={"name": "cfg"}, state="RUNNING", configuring=True, nodes=["n3"], cpus=[1],
             start_time=NOW - 5, time_limit=None),
        dict(base, job_id=6, spec={"name": "done"}, state="COMPLETED", completing=True, nodes=["n4"], cpus=[1],
             start_time=NOW - 100, end_time=NOW - 2),
        dict(base, job_id=7, spec={"name": "arr", "array_max_running": 2}, array_pending=[1, 2, 3, 7],
             array_job_id=7, reason="JobArrayTaskLimit"),
        dict(base, job_id=9, spec={"name": "task"}, array_job_id=7, array_task_id=0, reason="Priority"),
        dict(base, job_id=10, spec={"name": "het", "het_job_id": 10, "het_job_offset": 1}, reason="None"),
        dict(base, job_id=11, spec={"name": "oom"}, state="OUT_OF_MEMORY", reason="None", nodes=["n1"]),
        dict(base, job_id=12, spec={"name": "frz"}, state="SUSPENDED", frozen=True, reason="FrozenByNode",
             nodes=["n2"], start_time=NOW - 50, suspend_time=NOW - 10),
        dict(base, job_id=13, spec={"name": "gpu", "gres": "gres=gpu:2", "mem_per_node": 2048,
                                     "stdout": "/tmp/o", "account": "acct", "qos": "high"},
             state="PENDING", reason="Resources", planned_start=NOW + 600),
        dict(base, job_id=14, spec={"name": 42, "user": None}, reason=7),  # odd types: str() as the fields do
    ]
    return jobs


def _expected(fields: list[FormatField], jobs: list[dict], ctx: squeuefmt.Context) -> list[str]:
    return [squeuefmt.format_line(fields, job, ctx) for job in jobs]


LETTERS = sorted(squeuefmt.FIELDS)


@pytest.mark.parametrize("width,right", [(0, False), (3, False), (3, True), (12, False), (12, True)])
def test_every_letter_matches_format_line(width: int, right: bool) -> None:
    ctx = squeuefmt.Context(NOW, 512, cluster="c1")
    jobs = _jobs()
    for letter in LETTERS:
        fields = [FormatField(None, suffix=">"), FormatField(letter, width, right, "|")]
        assert squeuecols.format_rows(fields, jobs, ctx, squeuefmt._field_value) == _expected(fields, jobs, ctx), letter


@pytest.mark.parametrize("fmt", [squeuefmt.DEFAULT_FORMAT, squeuefmt.LONG_FORMAT, squeuefmt.START_FORMAT,
                                 "%all", "x%i %5R%j"])
def test_formats_match_format_line(fmt: str) -> None:
    ctx = squeuefmt.Context(NOW)
    fields, _ = squeuefmt.build_fields(fmt, None)
    jobs = _jobs()
    assert squeuecols.format_rows(fields, jobs, ctx, squeuefmt._field_value) == _expected(fields, jobs, ctx)


def test_long_names_match_format_line() -> None:
    ctx = squeuefmt.Context(NOW, cluster="c1")
    fields, errors = squeuefmt.build_fields(
        None, "jobid:8,jobarrayid:.20,name,username,statecompact:4,timeused:.3,numnodes,reasonlist:.6,"
              "eligibletime,cluster,stdout,stdin:30")
    assert not errors
    jobs = _jobs()
    assert squeuecols.format_rows(fields, jobs, ctx, squeuefmt._field_value) == _expected(fields, jobs, ctx)


def test_no_rows_and_many_rows() -> None:
    ctx = squeuefmt.Context(NOW)
    fields, _ = squeuefmt.build_fields(None, None)
    assert squeuecols.format_rows(fields, [], ctx, squeuefmt._field_value) == []
    jobs = _jobs() * 50
    assert squeuecols.format_rows(fields, jobs, ctx, squeuefmt._field_value) == _expected(fields, jobs, ctx)


def test_default_order_is_the_four_stable_sorts() -> None:
    """One sort on (P, t, -p, -start) gives what squeue's stable sorts give; "P,t,-p," is the
    same -S spec, which takes the four-sort path."""
    import random

    rnd = random.Random(17)
    jobs = []
    for i in range(3000):
        state = rnd.choice(["PENDING", "PENDING", "RUNNING", "SUSPENDED", "COMPLETED"])
        job = {"job_id": i, "partition": rnd.choice(["debug", "gpu", "long"]), "state": state,
               "priority": rnd.choice([0, 1, 1000, 4294967294]), "spec": {"name": f"j{i}"}}
        if rnd.random() < 0.3:
            job["start_time"] = NOW - rnd.choice([0, 10, 100])
        if rnd.random() < 0.2:
            job["planned_start"] = NOW + rnd.choice([-5, 60, 600])
        if rnd.random() < 0.1:
            job["spec"]["begin_time"] = NOW + rnd.choice([-60, 3600])
        if rnd.random() < 0.05:
            job["completing"] = True
        jobs.append(job)
    fast = squeuefmt.sort_jobs(jobs, None, NOW)
    assert [j["job_id"] for j in fast] == [j["job_id"] for j in squeuefmt.sort_jobs(jobs, "P,t,-p,", NOW)]
    assert [j["job_id"] for j in fast] != [j["job_id"] for j in jobs]  # (it did reorder)
