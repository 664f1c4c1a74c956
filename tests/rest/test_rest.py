"""plurmrestd (issue 16, item 1) against a real local cluster started by ``plurm cluster up
--rest``: tokens from ``scontrol token``, checked by the controller; forged, expired, missing
and misused tokens refused with 401 in slurmrestd's shape (and a log line); submit -> get ->
list -> signal -> cancel over HTTP; and every answer of every implemented path, in v0.0.43,
v0.0.44 and v0.0.45, validated against slurmrestd's OpenAPI schema of that path.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import jwt
import pytest

from plurmtest import wait_for
from resttest import ME, VERSIONS, Rest, call, get_job, validate, wait_job_state

REFERENCE = Path(__file__).parent / "reference" / "rest"

# ----------------------------------------------------------------------------- tokens


def test_scontrol_token_is_an_hs256_jwt_of_the_caller(rest: Rest) -> None:
    claims = jwt.decode(rest.token(), rest.key, algorithms=["HS256"])
    assert claims["sun"] == ME and claims["exp"] - claims["iat"] == 1800  # Slurm's default lifespan
    short = jwt.decode(rest.token("lifespan=60"), rest.key, algorithms=["HS256"])
    assert short["exp"] - short["iat"] == 60
    other = jwt.decode(rest.token("username=nobody"), rest.key, algorithms=["HS256"])  # (root, SlurmUser only)
    assert other["sun"] == "nobody"


def test_scontrol_token_errors_are_slurms(rest: Rest) -> None:
    reference = (REFERENCE / "scontrol_token.txt").read_text()
    bad = rest.cluster.run("scontrol", "token", "badarg")
    assert (bad.returncode, bad.stdout) == (1, "")
    assert f"stderr: {bad.stderr.strip()}" in reference
    for value in ("abc", "\u00b3", "0"):  # (a superscript digit is no number either)
        lifespan = rest.cluster.run("scontrol", "token", f"lifespan={value}")
        assert (lifespan.returncode, lifespan.stdout, lifespan.stderr) == (1, "", "Error fetching token\n")
    assert "stderr: Error fetching token" in reference


def _forged(rest: Rest) -> str:
    now = int(time.time())
    return jwt.encode({"iat": now, "exp": now + 600, "sun": ME}, b"not-the-cluster-key" * 2, algorithm="HS256")


def _expired(rest: Rest) -> str:
    now = int(time.time())
    return jwt.encode({"iat": now - 700, "exp": now - 100, "sun": ME}, rest.key, algorithm="HS256")


@pytest.mark.parametrize("case", ["missing", "forged", "expired", "garbage", "other_user", "unknown_user"])
def test_refused_tokens_are_401_with_slurms_error_shape(rest: Rest, case: str) -> None:
    user: str | None = ME
    if case == "missing":
        token = None
    elif case == "forged":
        token = _forged(rest)
    elif case == "expired":
        token = _expired(rest)
    elif case == "garbage":
        token = "not.a.token"
    elif case == "other_user":  # nobody's own token, presented as the cluster owner's
        token = rest.token("username=nobody")
    else:
        now = int(time.time())
        token = jwt.encode({"iat": now, "exp": now + 60, "sun": "no-such-user-x"}, rest.key, algorithm="HS256")
    for version in VERSIONS:
        status, body = call(rest.url, "GET", f"/slurm/{version}/jobs/", token, user)
        assert status == 401, (case, body)
        validate(body, version, "GET", "jobs/")
        assert body["jobs"] == [] and [e["error_number"] for e in body["errors"]] == [1011], body["errors"]
    assert re.search(r"GET /slurm/v0\.0\.44/jobs/ -> 401", rest.log("plurmrestd"))
    if case != "missing":  # decided by the controller, which says why in its log
        why = {"forged": "signature", "expired": "expired", "garbage": "invalid token",
               "other_user": "presented for user", "unknown_user": "unknown user"}[case]
        assert re.search(rf"auth/jwt: token refused .*{why}", rest.log("plurmctld")), case


def test_the_tokens_user_owns_what_it_submits(rest: Rest) -> None:
    """plurmrestd runs as the cluster owner; a job submitted with nobody's token is nobody's."""
    token = rest.token("username=nobody")
    desc = {"job": {"script": "#!/bin/sh\ntrue\n", "hold": True, "name": "nobodys",
                    "current_working_directory": "/tmp", "environment": ["PATH=/bin:/usr/bin"]}}
    status, body = call(rest.url, "POST", "/slurm/v0.0.44/job/submit", token, "nobody", body=desc)
    assert status == 200, body
    job = get_job(rest, token, body["job_id"])
    assert (job["user_name"], job["name"]) == ("nobody", "nobodys")
    status, body = call(rest.url, "DELETE", f"/slurm/v0.0.44/job/{job['job_id']}", token, "nobody")
    assert status == 200 and body["status"][0]["error"]["code"] == 0, body
    assert get_job(rest, token, job["job_id"])["job_state"][0] == "CANCELLED"


# ----------------------------------------------------------------------------- jobs

def test_submit_get_list_signal_cancel(rest: Rest) -> None:
    token = rest.token()
    flag = rest.work / "got-usr1"
    script = (f"#!/bin/bash\n#SBATCH --time=5\ntrap 'echo usr1 > {flag}' USR1\n"
              "for i in $(seq 600); do sleep 0.1; done\n")
    desc = {"job": {"script": script, "name": "resttest", "tasks": 1, "memory_per_node": {"set": True, "number": 100},
                    "current_working_directory": str(rest.work), "standard_output": "/dev/null",
                    "environment": ["PATH=/bin:/usr/bin", "REST_TEST=1"]}}
    status, body = call(rest.url, "POST", "/slurm/v0.0.44/job/submit", token, bearer=True, body=desc)
    assert status == 200, body
    validate(body, "v0.0.44", "POST", "job/submit")
    job_id = body["job_id"]
    assert body["step_id"] == "batch" and isinstance(job_id, int) and job_id >= 46001
    job = wait_job_state(rest, token, job_id, "RUNNING")
    assert (job["name"], job["time_limit"]["number"], job["memory_per_node"]["number"]) == ("resttest", 5, 100)
    assert job["current_working_directory"] == str(rest.work)
    older = get_job(rest, token, job_id, "v0.0.43")  # the same job in the older version's shape
    assert older["job_id"] == job_id
    for version in VERSIONS:
        status, listing = call(rest.url, "GET", f"/slurm/{version}/jobs/", token, ME)
        assert status == 200
        validate(listing, version, "GET", "jobs/")
        assert job_id in [j["job_id"] for j in listing["jobs"]]
    # update_time: nothing changed since a time to come, so no jobs (SLURM_NO_CHANGE_IN_DATA)
    status, unchanged = call(rest.url, "GET", f"/slurm/v0.0.44/jobs?update_time={int(time.time()) + 3600}", token, ME)
    assert status == 200 and unchanged["jobs"] == []
    status, since = call(rest.url, "GET", "/slurm/v0.0.44/jobs?update_time=0", token, ME)
    assert job_id in [j["job_id"] for j in since["jobs"]]
    # a signal to the batch shell, then the cancel
    status, body = call(rest.url, "DELETE", f"/slurm/v0.0.44/job/{job_id}?signal=USR1&flags=BATCH_JOB", token, ME)
    assert status == 200, body
    validate(body, "v0.0.44", "DELETE", "job/{job_id}")
    wait_for(flag.exists, 20, "the batch script's USR1 trap")
    assert get_job(rest, token, job_id)["job_state"][0] == "RUNNING"
    status, body = call(rest.url, "DELETE", f"/slurm/v0.0.43/job/{job_id}", token, ME)
    assert status == 200 and body["status"][0]["job_id"]["number"] == job_id, body
    validate(body, "v0.0.43", "DELETE", "job/{job_id}")
    wait_job_state(rest, token, job_id, "CANCELLED")


def test_update_then_release_a_held_job(rest: Rest) -> None:
    token = rest.token()
    desc = {"job": {"script": "#!/bin/sh\nsleep 300\n", "hold": True, "name": "held",
                    "current_working_directory": str(rest.work), "standard_output": "/dev/null"}}
    status, body = call(rest.url, "POST", "/slurm/v0.0.44/job/submit", token, ME, body=desc)
    assert status == 200, body
    job_id = body["job_id"]
    update = {"time_limit": {"set": True, "number": 7}, "name": "renamed", "comment": "via rest", "mcs_label": "x"}
    for version in VERSIONS:
        status, body = call(rest.url, "POST", f"/slurm/{version}/job/{job_id}", token, ME, body=update)
        assert status == 200, body
        validate(body, version, "POST", "job/{job_id}")
        assert [(r["job_id"], r["error_code"]) for r in body["results"]] == [(job_id, 0)], body
        assert any("mcs_label" in w["description"] for w in body["warnings"])
    job = get_job(rest, token, job_id)
    assert (job["name"], job["comment"], job["time_limit"]["number"]) == ("renamed", "via rest", 7)
    assert job["job_state"][0] == "PENDING"
    status, body = call(rest.url, "POST", f"/slurm/v0.0.44/job/{job_id}", token, ME, body={"hold": False})
    assert status == 200, body
    wait_job_state(rest, token, job_id, "RUNNING")
    call(rest.url, "DELETE", f"/slurm/v0.0.44/job/{job_id}", token, ME)
    wait_job_state(rest, token, job_id, "CANCELLED")


def test_drain_and_resume_a_node(rest: Rest) -> None:
    token = rest.token()
    for version, state, reason, shown in [("v0.0.44", "DRAIN", "k8s took it", "DRAIN"),
                                          ("v0.0.43", "RESUME", None, "IDLE")]:
        update = {"state": [state], **({"reason": reason} if reason else {})}
        status, body = call(rest.url, "POST", f"/slurm/{version}/node/n2", token, ME, body=update)
        assert status == 200, body
        validate(body, version, "POST", "node/{node_name}")
        status, node = call(rest.url, "GET", f"/slurm/{version}/node/n2", token, ME)
        assert shown in node["nodes"][0]["state"], node["nodes"][0]["state"]
        if reason:
            assert node["nodes"][0]["reason"] == reason
    nobody = rest.token("username=nobody")  # not an administrator: refused, nothing changed
    status, body = call(rest.url, "POST", "/slurm/v0.0.44/node/n2", nobody, "nobody", body={"state": ["DRAIN"],
                                                                                              "reason": "no"})
    assert status != 200 and body["errors"], body
    status, node = call(rest.url, "GET", "/slurm/v0.0.44/node/n2", token, ME)
    assert "DRAIN" not in node["nodes"][0]["state"]
    status, body = call(rest.url, "POST", "/slurm/v0.0.44/node/n2", token, ME, body={"state": ["FUTURE"]})
    assert status == 400, body


def test_delete_jobs_cancels_each_namedget_job(rest: Rest) -> None:
    token = rest.token()
    desc = {"job": {"script": "#!/bin/sh\ntrue\n", "hold": True, "current_working_directory": "/tmp"}}
    ids = [call(rest.url, "POST", "/slurm/v0.0.44/job/submit", token, ME, body=desc)[1]["job_id"] for _ in range(2)]
    status, body = call(rest.url, "DELETE", "/slurm/v0.0.44/jobs/", token, ME, body={"jobs": [str(i) for i in ids]})
    assert status == 200, body
    validate(body, "v0.0.44", "DELETE", "jobs/")
    assert sorted(s["job_id"]["number"] for s in body["status"]) == sorted(ids), body
    for job_id in ids:
        assert get_job(rest, token, job_id)["job_state"][0] == "CANCELLED"
    status, body = call(rest.url, "DELETE", "/slurm/v0.0.43/jobs/", token, ME, body={})
    assert status == 400, body


@pytest.mark.parametrize("payload, words", [
    (b"{not json", "Unable to parse request body"),
    ({"job": {"name": "x"}}, "Batch script is empty"),
    ({"job": {"script": "#!/bin/sh\ntrue\n", "tasks": "many"}}, "tasks: expected an integer"),
    ({"job": {"script": "#!/bin/sh\ntrue\n", "time_limit": "soon"}}, "expected a number"),
    ({"job": {"script": "#!/bin/sh\ntrue\n", "partition": "nosuch", "hold": True}}, "Invalid partition name"),
])
def test_bad_submissions_are_refused_with_the_reason(rest: Rest, payload, words: str) -> None:
    raw = payload if isinstance(payload, bytes) else None
    status, body = call(rest.url, "POST", "/slurm/v0.0.44/job/submit", rest.token(), ME,
                        body=None if raw else payload, raw=raw)
    assert status in (400, 500), body
    validate(body, "v0.0.44", "POST", "job/submit")
    assert words in body["errors"][0]["description"], body["errors"]


@pytest.mark.parametrize("raw, status", [(b"[" * 100000, 400), (b"[1, 2]", 400), (b"\xff\xfe", 400),
                                         (b"x" * (17 * 1024 * 1024), 413)])
def test_hostile_bodies_get_an_error_not_a_crash(rest: Rest, raw: bytes, status: int) -> None:
    token = rest.token()
    for path in ("job/submit", "job/46001", "node/n1"):
        got, body = call(rest.url, "POST", f"/slurm/v0.0.44/{path}", token, ME, raw=raw)
        assert got == status and body["errors"], (path, got, body)
    assert call(rest.url, "GET", "/slurm/v0.0.44/ping", token, ME)[0] == 200  # (and it carries on)


def test_fields_not_acted_on_are_warnings(rest: Rest) -> None:
    token = rest.token()
    desc = {"job": {"script": "#!/bin/sh\ntrue\n", "hold": True, "mcs_label": "x",
                    "current_working_directory": "/tmp"}}
    status, body = call(rest.url, "POST", "/slurm/v0.0.44/job/submit", token, ME, body=desc)
    assert status == 200, body
    validate(body, "v0.0.44", "POST", "job/submit")
    assert any("mcs_label" in w["description"] for w in body["warnings"]), body["warnings"]
    call(rest.url, "DELETE", f"/slurm/v0.0.44/job/{body['job_id']}", token, ME)


def test_slurmdb_jobs_are_sacct_s(rest: Rest) -> None:
    token = rest.token()
    desc = {"job": {"script": "#!/bin/sh\nexit 3\n", "name": "acct", "current_working_directory": "/tmp",
                    "standard_output": "/dev/null"}}
    job_id = call(rest.url, "POST", "/slurm/v0.0.44/job/submit", token, ME, body=desc)[1]["job_id"]
    wait_job_state(rest, token, job_id, "FAILED")
    for version in VERSIONS:
        status, body = call(rest.url, "GET", f"/slurmdb/{version}/job/{job_id}", token, ME)
        assert status == 200, body
        validate(body, version, "GET", "/slurmdb/{version}/job/{job_id}")
        job = body["jobs"][0]
        assert (job["job_id"], job["name"], job["state"]["current"], job["exit_code"]["return_code"]["number"]) \
            == (job_id, "acct", ["FAILED"], 3)
        assert body["meta"]["plugin"]["accounting_storage"] == "accounting_storage/slurmdbd"
        status, body = call(rest.url, "GET", f"/slurmdb/{version}/jobs/?state=FAILED&job_name=acct&skip_steps=true"
                            "&wckey=x", token, ME)
        assert status == 200, body
        validate(body, version, "GET", "/slurmdb/{version}/jobs/")
        assert [j["job_id"] for j in body["jobs"]] == [job_id] and body["jobs"][0]["steps"] == []
        assert any("wckey" in w["description"] for w in body["warnings"])
        status, body = call(rest.url, "GET", f"/slurmdb/{version}/job/999999", token, ME)
        assert status == 404 and body["errors"][0]["error_number"] == 2017, body
        validate(body, version, "GET", "/slurmdb/{version}/job/{job_id}")


# ----------------------------------------------------------------------------- every path

GET_PATHS = [("ping/", "ping"), ("diag/", "diag"), ("nodes/", "nodes"), ("node/{node_name}", "node/n1"),
             ("partitions/", "partitions"), ("partition/{partition_name}", "partition/debug"),
             ("reservations/", "reservations"), ("reservation/{reservation_name}", "reservation/later"),
             ("licenses/", "licenses"), ("shares", "shares")]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_get_path_answers_its_schema(rest: Rest, version: str) -> None:
    token = rest.token()
    answers = {}
    for spec_path, path in GET_PATHS:
        status, body = call(rest.url, "GET", f"/slurm/{version}/{path}", token, ME)
        assert status == 200, (path, body)
        assert body["errors"] == [], (path, body["errors"])
        validate(body, version, "GET", spec_path)
        answers[path] = body
    assert answers["ping"]["pings"][0]["pinged"] == "UP" and answers["ping"]["pings"][0]["primary"]
    assert [n["name"] for n in answers["nodes"]["nodes"]] == ["n1", "n2"]
    assert [n["name"] for n in answers["node/n1"]["nodes"]] == ["n1"]
    assert [p["name"] for p in answers["partitions"]["partitions"]] == ["debug"]
    assert [p["name"] for p in answers["partition/debug"]["partitions"]] == ["debug"]
    assert [r["name"] for r in answers["reservation/later"]["reservations"]] == ["later"]
    assert isinstance(answers["shares"]["shares"]["shares"], list)
    assert [(r["name"], r["node_list"]) for r in answers["reservations"]["reservations"]] == [("later", "n2")]
    assert [(lic["LicenseName"], lic["Total"]) for lic in answers["licenses"]["licenses"]] == [("fluent", 3)]
    assert answers["diag"]["statistics"]["jobs_submitted"] >= 0
    assert answers["ping"]["meta"]["plugin"]["data_parser"] == f"data_parser/{version}"


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_objects_are_404_in_their_schema(rest: Rest, version: str) -> None:
    token = rest.token()
    for method, spec_path, path, number in [("GET", "job/{job_id}", "job/999999", 2017),
                                            ("GET", "node/{node_name}", "node/nosuch", 2009),
                                            ("GET", "partition/{partition_name}", "partition/nosuch", 2000),
                                            ("GET", "reservation/{reservation_name}", "reservation/nosuch", 2050),
                                            ("POST", "job/{job_id}", "job/999999", 2017),
                                            ("DELETE", "job/{job_id}", "job/999999", 2017)]:
        status, body = call(rest.url, method, f"/slurm/{version}/{path}", token, ME,
                            body={"comment": "x"} if method == "POST" else None)
        assert status == 404, (path, body)
        validate(body, version, method, spec_path)
        assert body["errors"][0]["error_number"] == number, body["errors"]
    status, body = call(rest.url, "DELETE", f"/slurm/{version}/job/%C2%B3", token, ME)  # "³": no job id
    assert status == 404, body
    status, body = call(rest.url, "GET", f"/slurm/{version}/nosuch", token, ME)
    assert status == 404 and body["errors"], body


def test_openapi_document_holds_exactly_the_implemented_paths(rest: Rest) -> None:
    from openapi_spec_validator import validate as validate_spec

    status, doc = call(rest.url, "GET", "/openapi.json")
    assert status == 200
    validate_spec(doc)
    expected = {f"/slurm/{v}/{p}" for v in VERSIONS for p in
                ["ping/", "diag/", "jobs/", "job/{job_id}", "job/submit", "nodes/", "node/{node_name}",
                 "partitions/", "reservations/", "licenses/", "partition/{partition_name}",
                 "reservation/{reservation_name}", "shares", "job/allocate", "jobs/state/", "reconfigure/",
                 "reservation"]}
    expected |= {f"/slurmdb/{v}/{p}" for v in VERSIONS for p in ["jobs/", "job/{job_id}"]}
    expected |= {f"/slurmdb/{v}/{p}" for v in VERSIONS for p in  # (rest/routes_dbmore.py)
                 ["accounts/", "account/{account_name}", "users/", "user/{name}", "associations/", "association/",
                  "qos/", "qos/{qos}"]}
    expected |= {f"/slurm/{v}/resources/{{job_id}}" for v in VERSIONS[1:]}  # (v0.0.44+; requeue: v0.0.45's)
    expected |= {"/slurm/v0.0.45/job/{job_id}/requeue", "/slurm/v0.0.45/jobs/requeue"}
    expected |= {f"/slurm/{v}/new/node/" for v in VERSIONS[1:]}  # (dynamic nodes: rest/routes_nodes.py)
    assert set(doc["paths"]) == expected
    assert set(doc["paths"]["/slurm/v0.0.44/job/{job_id}"]) == {"get", "delete", "post"}
    assert set(doc["paths"]["/slurm/v0.0.43/reservation/{reservation_name}"]) == {"get", "delete"}
    assert set(doc["paths"]["/slurm/v0.0.45/reservations/"]) == {"get", "post"}
    assert set(doc["paths"]["/slurm/v0.0.44/node/{node_name}"]) == {"get", "post", "delete"}
    assert set(doc["paths"]["/slurm/v0.0.44/jobs/"]) == {"get", "delete"}
    assert call(rest.url, "GET", "/openapi/v3")[1] == doc
    assert json.dumps(doc).count("v0.0.42") == 0  # (not served)


# ----------------------------------------------------------------------------- schemathesis

@pytest.mark.slow
def test_schemathesis_over_the_implemented_paths(rest: Rest) -> None:
    """Property-based requests generated from the served document (schemathesis) for the
    paths that read or signal: no server error, and every answer in its schema.  (job/submit
    is left out: generated valid descriptions would be real jobs.)"""
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings
    from schemathesis import checks as st_checks

    # (not positive_data_acceptance: Slurm's spec types update_time and signal as any string,
    # and slurmrestd refuses most strings too, with 400)
    chosen = [st_checks.not_a_server_error, st_checks.response_schema_conformance,
              st_checks.content_type_conformance, st_checks.ignored_auth]

    schema = schemathesis.openapi.from_url(rest.url + "/openapi.json")
    headers = {"X-SLURM-USER-NAME": ME, "X-SLURM-USER-TOKEN": rest.token("lifespan=3600")}
    checked = []
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.method.upper() == "POST":
            continue

        @settings(max_examples=30, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def run(case) -> None:
            case.call_and_validate(base_url=rest.url, headers=headers, checks=chosen)

        run()
        checked.append(f"{operation.method.upper()} {operation.path}")
    assert len(checked) == 102, checked  # 33 paths and methods (no POST) x 3 versions, resources/ x 2, requeue
