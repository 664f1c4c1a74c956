"""scontrol requeue / requeuehold / suspend / resume: arguments, requests and Slurm's words.

Against a fake controller answering as plurm's service layer does
(tests/corescheduler/test_requeue_suspend.py holds the service side); the refusals'
words are the captures s2_b_requeue, s2_b_suspend, s2_b_resume, s2_a_suspend_own.
"""

from __future__ import annotations

import pytest

from plurm.tools import scontrol
from plurm.tools.scontrol_jobctl import job_tokens, requeue_flag
from plurm.wire.client import ClientError
from scontroltest import run


class FakeScontrol(scontrol.Scontrol):
    def __init__(self, results: list[dict] | None = None) -> None:
        super().__init__()
        self.results = results
        self.sent: list[tuple[str, dict]] = []

    def request(self, msg_type: str, body: dict) -> dict:
        self.sent.append((msg_type, body))
        if self.results is None:
            raise ClientError("Unable to contact slurm controller (connect failure): [Errno 111] refused")
        return {"results": self.results}


@pytest.mark.parametrize("word, msg_type, extra", [
    ("requeue", "requeue_job", {"hold": False, "incomplete": False}),
    ("req", "requeue_job", {"hold": False, "incomplete": False}),
    ("requeuehold", "requeue_job", {"hold": True, "incomplete": False}),
    ("suspend", "suspend_job", {"resume": False}),
    ("su", "suspend_job", {"resume": False}),
    ("resume", "suspend_job", {"resume": True}),
    ("res", "suspend_job", {"resume": True}),
])
def test_the_commands_and_their_requests(word, msg_type, extra) -> None:
    sc = FakeScontrol([{"job": "2", "job_id": 2}])
    assert run(sc, word, "2") == (0, "", "")
    assert sc.sent == [(msg_type, dict(extra, job_ids=["2"]))]


def test_refusals_in_slurms_words() -> None:
    """s2_b_requeue, s2_b_suspend, s2_b_resume, s2_a_suspend_own: `Access/permission denied for job 2`, exit 1."""
    denied = [{"job": "2", "error": "Access/permission denied", "code": "AccessDenied"}]
    for word in ("requeue", "suspend", "resume", "requeuehold"):
        assert run(FakeScontrol(denied), word, "2") == (1, "", "Access/permission denied for job 2\n")
    sc = FakeScontrol(denied)
    sc.quiet = True
    assert run(sc, "suspend", "2") == (1, "", "")
    assert run(FakeScontrol([]), "suspend") == (1, "", "too few arguments for keyword:suspend\n")
    assert run(FakeScontrol([]), "requeue") == (1, "", "too few arguments for keyword:requeue\n")
    assert run(FakeScontrol([]), "suspend", "abc") == (1, "", "Invalid job id specified for job abc\n")
    assert run(FakeScontrol(None), "requeue", "2,3") == (
        1, "", "Unable to contact slurm controller (connect failure) for job 2\n"
               "Unable to contact slurm controller (connect failure) for job 3\n")


def test_an_arrays_outcomes_and_several_lists() -> None:
    mixed = [{"job": "12", "array": [{"job": "12_1-2", "error": None},
                                     {"job": "12_3-4", "error": "Job is pending execution"}]}]
    assert run(FakeScontrol(mixed), "requeue", "12") == (
        1, "", "12_1-2: No error\n12_3-4: Job is pending execution\n")
    fine = [{"job": "12", "array": [{"job": "12_1-4", "error": None}]}]
    assert run(FakeScontrol(fine), "suspend", "12") == (0, "", "")
    sc = FakeScontrol([{"job": "5", "job_id": 5}])
    assert run(sc, "requeue", "Incomplete", "JobId=5", "6,7") == (0, "", "")
    assert sc.sent == [("requeue_job", {"hold": False, "incomplete": True, "job_ids": ["5"]}),
                       ("requeue_job", {"hold": False, "incomplete": True, "job_ids": ["6", "7"]})]
    sc = FakeScontrol([{"job": "5", "job_id": 5}])
    run(sc, "requeue", "State=SpecialExit", "5")
    assert sc.sent[0][1]["hold"] is True


def test_job_lists_and_options_as_scontrol_splits_them() -> None:
    assert job_tokens("1,2 3") == ["1", "2", "3"]
    assert job_tokens("12_[1-3],14") == ["12_1-3", "14"]
    assert job_tokens("1[2-4]") == ["12", "13", "14"]
    assert job_tokens("12-14") is None and job_tokens("1_2_3") is None and job_tokens("12_[1") is None
    assert job_tokens("") == []
    assert [requeue_flag(w) for w in ("Incomplete", "inc", "State=SE", "state=specialexit", "12", "State=x")] == [
        "incomplete", "incomplete", "special_exit", "special_exit", None, None]
