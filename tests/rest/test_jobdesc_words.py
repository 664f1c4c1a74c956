"""job/submit's list-of-words fields (``flags``, ``shared``; rest/jobdesc.py): a value of the
wrong type is the caller's mistake, answered 400 (JobDescError), never a 500."""

from __future__ import annotations

import pytest

from plurm.rest.jobdesc import JobDescError, submit_body


def _request(**job: object) -> dict:
    return {"job": {"script": "#!/bin/sh\ntrue\n", "current_working_directory": "/tmp", **job}}


@pytest.mark.parametrize("field,value", [("flags", 5), ("flags", [1]), ("flags", {"a": 1}), ("shared", 5),
                                         ("shared", [None, "none"])])
def test_a_wrong_type_is_a_job_desc_error(field: str, value: object) -> None:
    with pytest.raises(JobDescError, match=field):
        submit_body(_request(**{field: value}), "root")


def test_one_word_or_a_list_is_taken() -> None:
    body, _ = submit_body(_request(flags="EXTERNAL_JOB", script=None), "root")  # no script needed
    assert body["spec"]["external"] is True and body["spec"]["batch"] is False
    body, _ = submit_body(_request(shared=["none"]), "root")
    assert body["spec"]["exclusive"] is True
