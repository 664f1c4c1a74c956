"""Contract test (issue 16, item 2): a Python client generated from the document plurmrestd
serves (``/openapi.json``) drives a job through submit -> watch -> update -> cancel, and every
answer is read by the generated models.

The generator is openapi-python-client (PyPI ``openapi-python-client``): it is maintained,
writes a plain typed package (attrs models, httpx calls) with no runtime of its own to install,
and its models are strict where it matters here: ``from_dict`` raises on an enum value or a
type the document does not allow, and keeps keys the document does not name apart
(``additional_properties``), so an answer that strays from the schema fails this test rather
than passing unnoticed.  The package is generated at test time into a temporary folder, from
what the running plurmrestd serves: the test follows the routes as they are now.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import openapi_python_client  # noqa: F401  (the generator: a test dependency)

from plurmtest import wait_for
from resttest import ME, Rest, call

PACKAGE = "plurm_generated_rest_client"


def _generate(rest: Rest, where: Path) -> ModuleType:
    status, doc = call(rest.url, "GET", "/openapi.json")
    assert status == 200
    (where / "openapi.json").write_text(json.dumps(doc))
    done = subprocess.run([sys.executable, "-m", "openapi_python_client", "generate", "--path",
                           str(where / "openapi.json"), "--meta", "none", "--output-path", str(where / PACKAGE),
                           "--overwrite"], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr  # (every path generated)
    sys.path.insert(0, str(where))
    try:
        return importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where))


def _mod(name: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.{name}")


def test_generated_client_submits_watches_updates_and_cancels(rest: Rest, tmp_path: Path) -> None:
    package = _generate(rest, tmp_path)
    models = _mod("models")
    api = "api.slurm.slurm_v0044_"
    submit, get_job = _mod(api + "post_job_submit"), _mod(api + "get_job")
    update, cancel = _mod(api + "post_job"), _mod(api + "delete_job")
    client = package.AuthenticatedClient(base_url=rest.url, token=rest.token(), prefix="Bearer",
                                         raise_on_unexpected_status=True)

    request = models.V0044JobSubmitReq(job=models.V0044JobDescMsg(
        script="#!/bin/sh\nsleep 600\n", name="generated", current_working_directory=str(rest.work),
        environment=["PATH=/bin:/usr/bin"], time_limit=models.V0044Uint32NoValStruct(set_=True, number=5)))
    answer = submit.sync_detailed(client=client, body=request)
    assert answer.status_code == 200, answer.content
    submitted = answer.parsed
    assert isinstance(submitted, models.V0044OpenapiJobSubmitResponse)
    assert not submitted.errors and not submitted.additional_properties, submitted
    job_id = submitted.job_id
    assert isinstance(job_id, int) and job_id > 0

    def job() -> object:
        got = get_job.sync(str(job_id), client=client)
        assert isinstance(got, models.V0044OpenapiJobInfoResp) and not got.errors, got
        assert len(got.jobs) == 1 and got.jobs[0].job_id == job_id
        record = got.jobs[0]
        assert isinstance(record, models.V0044JobInfo)
        assert not record.additional_properties, sorted(record.additional_properties)  # (nothing off-schema)
        return record

    wait_for(lambda: [s.value for s in job().job_state] == ["RUNNING"], 30, f"job {job_id} RUNNING")
    running = job()
    assert running.name == "generated" and running.user_name == ME
    assert running.time_limit.number == 5

    changed = update.sync_detailed(str(job_id), client=client, body=models.V0044JobDescMsg(
        time_limit=models.V0044Uint32NoValStruct(set_=True, number=9)))
    assert changed.status_code == 200, changed.content
    assert isinstance(changed.parsed, models.V0044OpenapiJobPostResponse) and not changed.parsed.errors
    assert [r.job_id for r in changed.parsed.results] == [job_id]
    assert job().time_limit.number == 9

    gone = cancel.sync_detailed(str(job_id), client=client)
    assert gone.status_code == 200, gone.content
    assert isinstance(gone.parsed, models.V0044OpenapiKillJobResp) and not gone.parsed.errors
    wait_for(lambda: job().job_state[0].value == "CANCELLED", 30, f"job {job_id} CANCELLED")

    # An unknown job: the generated client reads the error answer with the same model.
    missing = get_job.sync_detailed("999999", client=package.Client(base_url=rest.url, headers={
        "X-SLURM-USER-TOKEN": rest.token(), "X-SLURM-USER-NAME": ME}))
    assert missing.status_code == 404
    assert missing.parsed.errors and missing.parsed.errors[0].description, missing.parsed
