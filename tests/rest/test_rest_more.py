"""plurmrestd's paths of issue 16 (items 1-2) against a real local cluster: ``job/allocate``
(an allocation with no script: RUNNING until cancelled), reservations made, changed and
deleted over REST (``reservation``, ``reservations/``, ``DELETE reservation/{name}``: operators
only, seen by ``scontrol show reservation``), ``jobs/state/`` and ``reconfigure/``.  Every
answer is validated against slurmrestd's schema of its path and version.
"""

from __future__ import annotations

import time

import pytest

from plurmtest import wait_for
from resttest import ME, VERSIONS, Rest, call, get_job, validate, wait_job_state

# ----------------------------------------------------------------------------- job/allocate


@pytest.mark.parametrize("version", VERSIONS)
def test_allocate_runs_an_allocation_without_a_script_until_cancelled(rest: Rest, version: str) -> None:
    token = rest.token()
    desc = {"job": {"name": f"alloc-{version}", "time_limit": {"set": True, "number": 7}, "nodes": "1",
                    "current_working_directory": "/tmp", "environment": ["A=1"]}}
    status, body = call(rest.url, "POST", f"/slurm/{version}/job/allocate", token, ME, body=desc)
    assert status == 200, body
    validate(body, version, "POST", "job/allocate")
    job_id = body["job_id"]
    job = wait_job_state(rest, token, job_id, "RUNNING")
    assert job["name"] == f"alloc-{version}"
    assert job["time_limit"]["number"] == 7
    assert job["batch_flag"] is False  # (an allocation: no batch script, as salloc's)
    assert job["user_name"] == ME
    shown = rest.cluster.run("scontrol", "show", "job", str(job_id), check=True).stdout
    assert "BatchFlag=0" in shown and "JobState=RUNNING" in shown, shown
    status, body = call(rest.url, "DELETE", f"/slurm/{version}/job/{job_id}", token, ME)
    assert status == 200, body
    wait_job_state(rest, token, job_id, "CANCELLED")


@pytest.mark.parametrize("payload, words", [
    ({"job": {"script": "#!/bin/sh\ntrue\n"}}, "job/allocate takes no script"),
    ({"job": {"tasks": "many"}}, "tasks: expected an integer"),
    ({"hetjob": [{"name": "a"}, {"name": "b"}]}, "heterogeneous"),
    ({"nojob": {}}, "no \"job\" object"),
    ([1, 2], "job_alloc_req"),
    ({"job": {"partition": "nosuch"}}, "Invalid partition name"),
])
def test_bad_allocations_are_refused_with_the_reason(rest: Rest, payload, words: str) -> None:
    status, body = call(rest.url, "POST", "/slurm/v0.0.44/job/allocate", rest.token(), ME, body=payload)
    assert status in (400, 500), body
    validate(body, "v0.0.44", "POST", "job/allocate")
    assert words in body["errors"][0]["description"], body["errors"]


def test_allocate_is_not_the_update_of_a_job_named_allocate(rest: Rest) -> None:
    """``job/allocate`` and ``job/{job_id}`` (update) are both POST: the literal path wins."""
    status, body = call(rest.url, "POST", "/slurm/v0.0.45/job/allocate", rest.token(), ME,
                        body={"job": {"hold": True, "current_working_directory": "/tmp"}})
    assert status == 200 and "results" not in body, body
    job = get_job(rest, rest.token(), body["job_id"])
    assert job["job_state"][0] == "PENDING" and job["priority"]["number"] == 0  # (held, as asked)
    call(rest.url, "DELETE", f"/slurm/v0.0.44/job/{body['job_id']}", rest.token(), ME)


# ----------------------------------------------------------------------------- reservations


def _show(rest: Rest, name: str) -> str:
    return rest.cluster.run("scontrol", "show", "reservation", name).stdout


@pytest.mark.parametrize("version", VERSIONS)
def test_create_update_and_delete_a_reservation(rest: Rest, version: str) -> None:
    token = rest.token()
    name = f"rest_{version.replace('.', '_')}"
    start = int(time.time()) + 7200
    desc = {"name": name, "start_time": {"set": True, "number": start}, "duration": {"set": True, "number": 30},
            "node_list": ["n1"], "users": [ME], "flags": ["MAINT"]}
    status, body = call(rest.url, "POST", f"/slurm/{version}/reservation", token, ME, body=desc)
    assert status == 200, body
    validate(body, version, "POST", "reservation")
    assert [r["name"] for r in body["reservations"]] == [name]
    shown = _show(rest, name)
    assert f"ReservationName={name}" in shown and "Nodes=n1" in shown and "MAINT" in shown, shown
    status, body = call(rest.url, "GET", f"/slurm/{version}/reservation/{name}", token, ME)
    assert status == 200, body
    record = body["reservations"][0]
    assert record["node_list"] == "n1" and record["start_time"]["number"] == start, record
    assert record["end_time"]["number"] == start + 30 * 60, record

    # the same name again: an update (here the duration), not a duplicate
    status, body = call(rest.url, "POST", f"/slurm/{version}/reservation", token, ME,
                        body={"name": name, "duration": 90})
    assert status == 200, body
    validate(body, version, "POST", "reservation")
    status, body = call(rest.url, "GET", f"/slurm/{version}/reservation/{name}", token, ME)
    assert body["reservations"][0]["end_time"]["number"] == start + 90 * 60, body["reservations"][0]

    status, body = call(rest.url, "DELETE", f"/slurm/{version}/reservation/{name}", token, ME)
    assert status == 200, body
    validate(body, version, "DELETE", "reservation/{reservation_name}")
    assert f"ReservationName={name}" not in _show(rest, name)
    status, body = call(rest.url, "DELETE", f"/slurm/{version}/reservation/{name}", token, ME)
    assert status == 404 and body["errors"], body
    validate(body, version, "DELETE", "reservation/{reservation_name}")


def test_reservations_list_and_a_name_the_controller_gives(rest: Rest) -> None:
    token = rest.token()
    start = int(time.time()) + 3 * 86400
    batch = {"reservations": [
        {"start_time": start, "duration": 10, "node_count": 1, "accounts": [], "users": ME},
        {"name": "rest_many", "start_time": start + 3600, "end_time": start + 4200, "node_list": ["n1"], "users": [ME],
         "comment": "kept nowhere"}]}
    status, body = call(rest.url, "POST", "/slurm/v0.0.44/reservations/", token, ME, body=batch)
    assert status == 200, body
    validate(body, "v0.0.44", "POST", "reservations/")
    named, given = body["reservations"][0]["name"], body["reservations"][1]["name"]
    assert named.startswith(f"{ME}_") and given == "rest_many", body["reservations"]
    assert any("comment" in w["description"] for w in body["warnings"]), body["warnings"]
    status, listed = call(rest.url, "GET", "/slurm/v0.0.44/reservations/", token, ME)
    assert {named, given} <= {r["name"] for r in listed["reservations"]}
    for name in (named, given):
        assert call(rest.url, "DELETE", f"/slurm/v0.0.44/reservation/{name}", token, ME)[0] == 200
    status, listed = call(rest.url, "GET", "/slurm/v0.0.44/reservations/", token, ME)
    assert not {named, given} & {r["name"] for r in listed["reservations"]}


def test_reservations_are_for_operators_only(rest: Rest) -> None:
    nobody = rest.token("username=nobody")
    desc = {"name": "rest_nobody", "start_time": int(time.time()) + 7200, "duration": 10, "node_list": ["n1"],
            "users": ["nobody"]}
    status, body = call(rest.url, "POST", "/slurm/v0.0.44/reservation", nobody, "nobody", body=desc)
    assert status != 200 and body["errors"], body
    validate(body, "v0.0.44", "POST", "reservation")
    assert "ReservationName=rest_nobody" not in _show(rest, "rest_nobody")
    status, body = call(rest.url, "DELETE", "/slurm/v0.0.44/reservation/later", nobody, "nobody")
    assert status != 200 and body["errors"], body
    assert "ReservationName=later" in _show(rest, "later")  # (the fixture's: still there)


@pytest.mark.parametrize("payload, words", [
    ({"name": "x", "start_time": "whenever", "duration": 5, "users": [ME], "node_list": ["n1"]},
     "Invalid time specification"),
    ({"name": "x", "start_time": int(time.time()) + 60, "duration": 5, "users": [ME], "core_count": 2},
     "do not hold core_count"),
    ({"name": "x", "start_time": int(time.time()) + 60, "duration": 5, "node_list": ["n1"]}, "Users"),
    ({"name": "x", "users": 5}, "users: expected a string"),
    ([1], "reservation_desc_msg"),
])
def test_bad_reservations_are_refused_with_the_reason(rest: Rest, payload, words: str) -> None:
    status, body = call(rest.url, "POST", "/slurm/v0.0.44/reservation", rest.token(), ME, body=payload)
    assert status in (400, 500), body
    validate(body, "v0.0.44", "POST", "reservation")
    assert words in body["errors"][0]["description"], body["errors"]
    assert "ReservationName=x " not in _show(rest, "x")


def test_reservations_batch_refuses_an_empty_or_huge_list(rest: Rest) -> None:
    for payload in ({"reservations": []}, {"reservations": [{}] * 101}, {"other": 1}):
        status, body = call(rest.url, "POST", "/slurm/v0.0.44/reservations/", rest.token(), ME, body=payload)
        assert status == 400 and body["errors"], body
        validate(body, "v0.0.44", "POST", "reservations/")


# ----------------------------------------------------------------------------- jobs/state, reconfigure


@pytest.mark.parametrize("version", VERSIONS)
def test_jobs_state_lists_ids_and_states(rest: Rest, version: str) -> None:
    token = rest.token()
    desc = {"job": {"script": "#!/bin/sh\ntrue\n", "hold": True, "current_working_directory": "/tmp"}}
    ids = [call(rest.url, "POST", "/slurm/v0.0.44/job/submit", token, ME, body=desc)[1]["job_id"] for _ in range(2)]
    call(rest.url, "DELETE", f"/slurm/v0.0.44/job/{ids[1]}", token, ME)
    status, body = call(rest.url, "GET", f"/slurm/{version}/jobs/state/", token, ME)
    assert status == 200, body
    validate(body, version, "GET", "jobs/state/")
    states = {j["job_id"]: j["job_state"] for j in body["jobs"]}
    assert states[ids[0]] == ["PENDING"] and states[ids[1]][0] == "CANCELLED", states
    status, body = call(rest.url, "GET", f"/slurm/{version}/jobs/state/?job_id={ids[0]}", token, ME)
    assert status == 200, body
    validate(body, version, "GET", "jobs/state/")
    assert [j["job_id"] for j in body["jobs"]] == [ids[0]]
    assert "script" not in body["jobs"][0] and "command" not in body["jobs"][0]
    status, body = call(rest.url, "GET", f"/slurm/{version}/jobs/state/?job_id=1,x;y", token, ME)
    assert status == 400 and body["errors"], body
    call(rest.url, "DELETE", f"/slurm/v0.0.44/job/{ids[0]}", token, ME)


def test_reconfigure_for_administrators_only(rest: Rest) -> None:
    status, body = call(rest.url, "GET", "/slurm/v0.0.44/reconfigure/", rest.token(), ME)
    assert status == 200, body
    validate(body, "v0.0.44", "GET", "reconfigure/")
    assert not body["errors"], body
    status, body = call(rest.url, "GET", "/slurm/v0.0.43/reconfigure/", rest.token("username=nobody"), "nobody")
    assert status != 200 and body["errors"], body
    validate(body, "v0.0.43", "GET", "reconfigure/")
    assert call(rest.url, "GET", "/slurm/v0.0.44/ping/", rest.token(), ME)[0] == 200


# ----------------------------------------------------------------------------- later versions' paths


def _running_job(rest: Rest, token: str, name: str) -> int:
    desc = {"job": {"script": "#!/bin/sh\nsleep 600\n", "name": name, "current_working_directory": "/tmp",
                    "requeue": True, "memory_per_node": {"set": True, "number": 100}}}
    status, body = call(rest.url, "POST", "/slurm/v0.0.44/job/submit", token, ME, body=desc)
    assert status == 200, body
    wait_job_state(rest, token, body["job_id"], "RUNNING")
    return body["job_id"]


def test_resources_show_the_nodes_memory_and_cores_a_job_holds(rest: Rest) -> None:
    token = rest.token()
    job_id = _running_job(rest, token, "layout")
    job = get_job(rest, token, job_id)
    for version in ("v0.0.44", "v0.0.45"):
        status, body = call(rest.url, "GET", f"/slurm/{version}/resources/{job_id}", token, ME)
        assert status == 200, body
        validate(body, version, "GET", "resources/{job_id}")
        assert [n["node"] for n in body["nodes"]] == [job["nodes"]], body["nodes"]
        layout = body["nodes"][0]
        assert layout["mem_alloc"] == 100 and layout["core_bitmap"] == "0", layout
        assert layout["sockets_per_node"] >= 1 and layout["cores_per_socket"] >= 1
    status, body = call(rest.url, "GET", f"/slurm/v0.0.43/resources/{job_id}", token, ME)
    assert status == 404, body  # (v0.0.44 added it)
    call(rest.url, "DELETE", f"/slurm/v0.0.44/job/{job_id}", token, ME)
    held = call(rest.url, "POST", "/slurm/v0.0.44/job/submit", token, ME,
                body={"job": {"script": "#!/bin/sh\ntrue\n", "hold": True, "current_working_directory": "/tmp"}})[1]
    status, body = call(rest.url, "GET", f"/slurm/v0.0.45/resources/{held['job_id']}", token, ME)
    assert status == 400 and "not running" in body["errors"][0]["description"], body
    validate(body, "v0.0.45", "GET", "resources/{job_id}")
    status, body = call(rest.url, "GET", "/slurm/v0.0.45/resources/999999", token, ME)
    assert status == 404, body
    call(rest.url, "DELETE", f"/slurm/v0.0.44/job/{held['job_id']}", token, ME)


def test_requeue_one_job_and_a_list(rest: Rest) -> None:
    token = rest.token()
    job_id = _running_job(rest, token, "requeue-one")
    status, body = call(rest.url, "GET", f"/slurm/v0.0.45/job/{job_id}/requeue?Hold", token, ME)
    assert status == 200, body
    validate(body, "v0.0.45", "GET", "job/{job_id}/requeue")
    assert [(s["job_id"], s["error_code"]) for s in body["status"]] == [(job_id, 0)], body
    job = wait_job_state(rest, token, job_id, "PENDING")
    # (RUNNING, now PENDING: requeued; and held after it, as asked)
    assert job["priority"]["number"] == 0 and job["state_reason"].startswith("JobHeld"), job["state_reason"]
    call(rest.url, "DELETE", f"/slurm/v0.0.44/job/{job_id}", token, ME)

    other = _running_job(rest, token, "requeue-list")
    status, body = call(rest.url, "POST", "/slurm/v0.0.45/jobs/requeue", token, ME,
                        body={"jobs": [str(other), "999999"], "flags": []})
    assert status == 200, body
    validate(body, "v0.0.45", "POST", "jobs/requeue")
    assert [[(s["job_id"], s["error_code"] == 0) for s in group] for group in body["status"]] == [
        [(other, True)], [(999999, False)]], body["status"]
    assert "Invalid job id" in body["status"][1][0]["error"]
    # requeued, not held: back in the queue, then it runs again (its restart count says it did)
    wait_for(lambda: get_job(rest, token, other)["restart_cnt"] >= 1, 30, f"job {other} requeued")
    call(rest.url, "DELETE", f"/slurm/v0.0.44/job/{other}", token, ME)
    for payload in ({"jobs": []}, {"jobs": ["x y"]}, {"jobs": ["1"], "flags": ["Never"]}, [1]):
        status, body = call(rest.url, "POST", "/slurm/v0.0.45/jobs/requeue", token, ME, body=payload)
        assert status == 400 and body["errors"], (payload, body)
    status, body = call(rest.url, "GET", "/slurm/v0.0.45/job/999999/requeue", token, ME)
    assert status == 404, body
    assert call(rest.url, "GET", "/slurm/v0.0.44/job/1/requeue", token, ME)[0] == 404  # (v0.0.45's path)
