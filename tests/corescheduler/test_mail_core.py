"""Job mail in the core (issue 14 item 3), sans-IO with a fake clock: which events mail whom, and
the subjects, compared with what Slurm 22.05.8 gave its MailProg for the same jobs
(tests/integration/reference/mail/: the same job ids, names and timings, replayed here).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from plurm.corescheduler import mail
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

ROOT = Identity(0, 0, "root", operator=True)
T0 = 1_000_000.0
REFERENCE = Path(__file__).parents[1] / "integration" / "reference" / "mail" / "subjects-22.05.8.txt"
ALL = ["BEGIN", "END", "FAIL", "REQUEUE", "INVALID_DEPEND", "STAGE_OUT"]  # what sbatch makes of ALL


def _core(first_id: int) -> tuple[ClusterCore, Service]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=2800, responding=True, boot_time=1.0)
             for i in range(1, 5)}
    core = ClusterCore(nodes, {"debug": Partition(name="debug", nodes=list(nodes), default=True)},
                       CoreSettings(cluster_name="t"), now=T0, next_job_id=first_id)
    return core, Service(core)


def _submit(service: Service, name: str, **spec) -> int:
    spec.setdefault("script", "#!/bin/sh\ntrue\n")
    return service.submit(protocol.SubmitJob(spec=JobSpec(name=name, **spec)), ROOT, T0)["job_id"]


def _lines(core: ClusterCore) -> list[str]:
    return [f"{m.subject} {m.user}" for m in core.take_mail()]


def _reference(job_ids: set[int]) -> set[str]:
    lines = REFERENCE.read_text().splitlines()
    return {line for line in lines if int(re.search(r"Job_id=(\d+)", line).group(1)) in job_ids}


def _loose(line: str) -> str:
    """Slurm looks at time limits about every 30 s, plurm every tick: their run times differ."""
    return re.sub(r"Run time \d\d:\d\d:\d\d", "Run time *", line) if re.search(r"Job_id=(26|111) ", line) else line


def test_the_mails_of_the_captured_jobs_are_slurms() -> None:
    core, service = _core(21)
    ids = [_submit(service, "mok", mail_type=ALL), _submit(service, "mfail", mail_type=ALL),
           _submit(service, "marr", mail_type=ALL, array_spec="1-2", array_indices=[1, 2]),
           _submit(service, "marrt", mail_type=ALL + ["ARRAY_TASKS"], mail_user="bob", array_spec="1-2",
                   array_indices=[1, 2]),
           _submit(service, "mreq", mail_type=ALL, requeue=True, requeue_given=True, time_limit=100),
           _submit(service, "mtl", mail_type=ALL, time_limit=1),
           _submit(service, "mdep", mail_type=ALL, dependency="afterok:22",
                   other_options={"kill-on-invalid-dep": "yes"}),
           _submit(service, "mcan", mail_type=ALL, time_limit=100)]
    assert ids == list(range(21, 29))
    assert core.take_mail() == []  # nothing mails at submission
    core.schedule(T0 + 1)
    tasks = sorted(j.job_id for j in core.jobs.values() if j.array_job_id in (23, 24))
    assert tasks == [23, 24, 29, 30]  # the first task of each array split off, as in Slurm
    for job_id in (22, 23, 24, 29, 30):
        core.job_ended(job_id, 3 if job_id == 22 else 0, 0, T0 + 1, T0 + 1)
    core.schedule(T0 + 1.5)  # 27's dependency can never be satisfied: cancelled
    core.job_ended(21, 0, 0, T0 + 3, T0 + 3)
    core.cancel(core.jobs[28], ROOT, T0 + 12)
    core.job_ended(28, 0, 15, T0 + 12, T0 + 12)
    core.requeue_job(core.jobs[25], ROOT, T0 + 12)
    core.job_ended(25, 0, 15, T0 + 12, T0 + 12)
    core.cancel(core.jobs[25], ROOT, T0 + 15)
    core.tick(T0 + 61)  # 26 reaches its time limit
    got = sorted(_loose(line) for line in _lines(core))
    assert got == sorted(_loose(line) for line in _reference(set(range(21, 29))))


def test_time_limit_mails_come_once_each_at_their_share_of_the_limit() -> None:
    core, service = _core(111)
    job_id = _submit(service, "mtl50", time_limit=1,
                     mail_type=["TIME_LIMIT_50", "TIME_LIMIT_80", "TIME_LIMIT_90", "TIME_LIMIT"])
    core.schedule(T0)
    seen: list[tuple[float, str]] = []
    for second in range(1, 62):
        core.tick(T0 + second)
        seen += [(second, line) for line in _lines(core)]
    assert [s for s, _ in seen] == [30, 48, 54, 60]  # 50%, 80%, 90% and the limit of 60 s, once each
    assert {_loose(line) for _, line in seen} == {_loose(line) for line in _reference({111})}
    assert seen[0][1] == "Slurm Job_id=111 Name=mtl50 Reached 50% of time limit, Run time 00:00:30 root"
    assert core.jobs[job_id].state == model.TIMEOUT


def test_no_mail_without_mail_type_and_end_only_for_failures_when_fail_is_not_asked() -> None:
    core, service = _core(1)
    quiet = _submit(service, "quiet")
    end_only = _submit(service, "endonly", mail_type=["END"], mail_user="carol@example.org")
    core.schedule(T0 + 5)
    core.job_ended(quiet, 1, 0, T0 + 6, T0 + 6)
    core.job_ended(end_only, 2, 0, T0 + 3605, T0 + 3605)
    [sent] = core.take_mail()
    assert sent.user == "carol@example.org"
    assert sent.subject == "Slurm Job_id=2 Name=endonly Ended, Run time 01:00:00, FAILED, ExitCode 2"
    assert sent.env["SLURM_JOB_ID"] == "2" and sent.env["SLURM_JOB_STATE"] == model.FAILED


def test_array_summary_waits_for_the_last_task_and_gives_the_exit_code_range() -> None:
    core, service = _core(40)
    array = _submit(service, "arr", mail_type=["BEGIN", "END", "FAIL"], array_spec="1-3", array_indices=[1, 2, 3])
    core.schedule(T0 + 1)
    assert _lines(core) == [f"Slurm Array Summary Job_id={array}_* ({array}) Name=arr Began root"]
    tasks = sorted(j.job_id for j in core.jobs.values() if j.array_job_id == array)
    for n, job_id in enumerate(tasks):
        core.job_ended(job_id, n, 0, T0 + 2, T0 + 2)
        if job_id != tasks[-1]:
            assert core.take_mail() == []
    # As 22.05.8's (show_job_and_arrays.txt): "... Job_id=226_* (226) Name=amix Failed, Mixed, ExitCode [0-2]"
    summary = f"Slurm Array Summary Job_id={array}_* ({array}) Name=arr"
    assert _lines(core) == [f"{summary} Failed, Mixed, ExitCode [0-2] root"]
    other = _submit(service, "aend", mail_type=["END"], array_spec="1-2", array_indices=[1, 2])
    core.schedule(T0 + 3)
    for job in [j for j in core.jobs.values() if j.array_job_id == other]:
        core.job_ended(job.job_id, job.array_task_id, 0, T0 + 4, T0 + 4)
    assert _lines(core) == [f"Slurm Array Summary Job_id={other}_* ({other}) Name=aend Ended, FAILED, ExitCode [1-2] "
                            "root"]


def test_durations_as_slurm_writes_them() -> None:
    assert [mail.duration(s) for s in (0, 59, 3600, 86399, 90061, -5)] == [
        "00:00:00", "00:00:59", "01:00:00", "23:59:59", "1-01:01:01", "00:00:00"]


def test_hostile_mail_requests_are_refused_with_a_log_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", "plurmctld")
    core, service = _core(1)
    for spec in ({"mail_type": ["BEGIN", "RM -RF"]}, {"mail_type": ["END"], "mail_user": "-oQ/tmp/x"},
                 {"mail_type": ["END"], "mail_user": "a\nb"}, {"mail_type": ["END"], "mail_user": "x" * 2000}):
        with pytest.raises(RequestError) as err:
            _submit(service, "bad", **spec)
        assert err.value.code == "InvalidMail"
    assert not core.jobs and "submission refused: --mail-type" in caplog.text


def test_scontrol_show_job_mail_line_as_22_05() -> None:
    from plurm.tools.showmail import mail_lines

    captured = (REFERENCE.parent / "show_job_mailtype.txt").read_text().splitlines()
    mail_type = ALL + ["TIME_LIMIT", "TIME_LIMIT_50", "TIME_LIMIT_90", "TIME_LIMIT_80", "ARRAY_TASKS"]
    assert mail_lines({"user": "root", "mail_type": mail_type}) == [captured[3].strip()]
    assert mail_lines({"user": "root", "mail_type": ["FAIL", "END"]}) == [captured[6].strip()]
    assert mail_lines({"user": "root", "mail_user": "carol", "mail_type": []}) == []  # no line without mail
