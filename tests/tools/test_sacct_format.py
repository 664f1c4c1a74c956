"""sacct's layouts against what Slurm 22.05 printed with slurmdbd (reference/slurm-22.05/dbd).

The jobs of the reference session are rebuilt as the dicts acct_query returns (job records
with their nested spec, step records), then rendered and compared byte for byte.
"""

from __future__ import annotations

import io
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from plurm.tools import sacct, sacctfmt

REF = Path(__file__).resolve().parents[3] / "shared" / "reference" / "slurm-22.05" / "dbd"
if not REF.is_dir():
    REF = Path("/work/shared/reference/slurm-22.05/dbd")

pytestmark = pytest.mark.skipif(not REF.is_dir(), reason="Slurm reference outputs not available")

T0 = time.mktime((2026, 11, 29, 15, 45, 0, 0, 0, -1))
NOW = T0 + 600


def ref(name: str) -> str:
    return (REF / name).read_text()


def job(job_id: int, name: str, cpus: int, state: str, node: str | None = None, exit_code: int = 0,
        array: tuple[int, int] | None = None, nodes_n: int = 1, mem: int | None = None, gres: str | None = None,
        pending: list[int] | None = None, ran: bool = True) -> dict:
    spec: dict = {"name": name, "account": "anchor"}
    if gres:
        spec["gres"] = gres
    record: dict = {"job_id": job_id, "spec": spec, "state": state, "partition": "debug",
                    "submit_time": T0, "exit_code": exit_code}
    if ran and node:
        names = [f"n{i}" for i in range(int(node[1]), int(node[1]) + nodes_n)] if nodes_n > 1 else [node]
        per = cpus // len(names)
        record.update(nodes=names, cpus=[per] * len(names), mem=[(mem or 256 * cpus) // len(names)] * len(names),
                      start_time=T0, end_time=T0)
    else:
        spec["cpus_per_task"] = cpus
        spec["mem_per_cpu"] = 256
        record["end_time"] = T0
    if array:
        record["array_job_id"], record["array_task_id"] = array
    if pending:
        record["array_pending"] = pending
    return record


def step(job_id: int, step_id: str, name: str, cpus: int, state: str = "COMPLETED", signal: int = 0,
         exit_code: int = 0, node: str = "n1") -> dict:
    return {"job_id": job_id, "step_id": step_id, "name": name, "nodes": [node], "cpus": cpus, "state": state,
            "start_time": T0, "end_time": T0, "exit_signal": signal, "exit_code": exit_code}


def session() -> tuple[list[dict], list[dict]]:
    """The jobs of the reference capture, in the order slurmdbd listed them."""
    jobs: list[dict] = []
    steps: list[dict] = []

    def ok(job_id, name, cpus, node, array=None, srun=None, gres=None):
        jobs.append(job(job_id, name, cpus, "COMPLETED", node, array=array, gres=gres))
        steps.append(step(job_id, "batch", "batch", cpus, node=node))
        if srun:
            steps.append(step(job_id, "0", srun, cpus, node=node))

    ok(3, "env.sh", 1, "n3")
    ok(4, "gpus3", 1, "n3", gres="gpus=3")
    ok(6, "pat", 1, "n4")
    ok(1, "x", 2, "n1", array=(1, 0), gres="gres=gpu:2")
    ok(7, "x", 2, "n1", array=(1, 1), gres="gres=gpu:2")
    ok(2, "y", 2, "n2", array=(2, 0), srun="bash", gres="gres=gpu:2")
    ok(8, "y", 2, "n2", array=(2, 1), srun="bash", gres="gres=gpu:2")
    ok(5, "arrdef", 1, "n3", array=(5, 3))
    ok(9, "arrdef", 1, "n3", array=(5, 5))
    ok(10, "ok.sh", 1, "n1")
    for job_id in (11, 12, 13):
        jobs.append(job(job_id, "ok.sh", 1, "FAILED", exit_code=1, ran=False))
    for job_id in (14, 15):
        jobs.append(job(job_id, "ok.sh", 99, "CANCELLED", ran=False))
    ok(16, "ok.sh", 1, "n1")
    ok(18, "ok.sh", 1, "n1")
    ok(19, "ok.sh", 1, "n3")
    jobs.append(job(21, "hostname", 4, "COMPLETED", "n1", nodes_n=2))
    steps.append(step(21, "0", "hostname", 4))
    jobs.append(job(22, "bash", 1, "COMPLETED", "n1", gres="gpus=1"))
    steps.append(step(22, "0", "bash", 1))
    jobs.append(job(23, "run_multi", 8, "CANCELLED", "n1", nodes_n=2))
    jobs[-1]["exit_signal"] = 15  # the batch script's end; the job line still shows 0:0
    steps.append(step(23, "batch", "batch", 4, "CANCELLED", 15))
    jobs.append(job(24, "run_one", 1, "CANCELLED", "n3"))
    steps.append(step(24, "batch", "batch", 1, "CANCELLED", 15))
    jobs.append(job(25, "run_gpu", 1, "CANCELLED", "n3", mem=1024, gres="gres=gpu:4"))
    steps.append(step(25, "batch", "batch", 1, "CANCELLED", 15))
    jobs.append(job(27, "pend_res", 8, "CANCELLED", ran=False))
    jobs.append(job(32, "done_ok", 1, "COMPLETED", "n4"))
    steps.append(step(32, "batch", "batch", 1, node="n4"))
    jobs.append(job(33, "done_fail", 1, "FAILED", "n4", exit_code=3))
    steps.append(step(33, "batch", "batch", 1, "FAILED", exit_code=3, node="n4"))
    jobs.append(job(34, "arr_lim", 1, "CANCELLED", "n3", array=(26, 0)))
    steps.append(step(34, "batch", "batch", 1, "CANCELLED", 15, node="n3"))
    jobs.append(job(35, "arr_lim", 1, "CANCELLED", "n4", array=(26, 1)))
    steps.append(step(35, "batch", "batch", 1, "CANCELLED", 15, node="n4"))
    jobs.append(job(31, "pend_arr", 8, "CANCELLED", array=(31, 0), pending=list(range(10)), ran=False))
    return jobs, steps


def render(fmt: str, allocations: bool = False, delimiter: str | None = None, trailing: bool = False,
           only: set[int] | None = None) -> str:
    jobs, steps = session()
    if only is not None:
        jobs = [j for j in jobs if j["job_id"] in only]
    rows = sacctfmt.acct_rows(jobs, steps, NOW, "anchor", allocations)
    return sacctfmt.sacct_table(sacctfmt.parse_sacct_format(fmt), rows, delimiter=delimiter, trailing=trailing)


def test_default_layout():
    assert render(sacctfmt.SACCT_DEFAULT) == ref("sacct_default.txt")


def test_allocations_only():
    assert render(sacctfmt.SACCT_DEFAULT, allocations=True) == ref("sacct_X.txt")


def test_parsable2():
    assert render(sacctfmt.SACCT_DEFAULT, delimiter="|") == ref("sacct_parsable.txt")


def test_parsable_trailing_delimiter():
    text = render(sacctfmt.SACCT_DEFAULT, delimiter="|", trailing=True)
    assert text.splitlines() == [line + "|" for line in ref("sacct_parsable.txt").splitlines()]


def test_format_with_width_and_truncation():
    text = render("JobID,JobName,Partition,State,ExitCode,AllocTRES%40,NodeList", allocations=True)
    assert text == ref("sacct_format.txt")


def test_array_job_selection():
    assert render(sacctfmt.SACCT_DEFAULT, only={1, 7}) == ref("sacct_j_array.txt")


def test_long_one_job():
    assert render(sacctfmt.SACCT_LONG, only={33}) == ref("sacct_long_one.txt")


def test_select_rows_step_and_task_filters():
    jobs, steps = session()
    reply = {"jobs": [j for j in jobs if j["job_id"] in (1, 7, 33)], "steps": steps, "cluster": "anchor"}
    opts = sacct.parse_args(["-j", "33.batch"])
    rows = sacct.select_rows(reply, opts, NOW)
    assert [r["JobID"] for r in rows] == ["33.batch"]
    opts = sacct.parse_args(["-j", "1_1", "-X"])
    rows = sacct.select_rows(reply, opts, NOW)
    assert [r["JobID"] for r in rows] == ["1_1"]


def test_field_names_and_errors():
    assert sacctfmt.parse_sacct_format("jobid%-20,state%5,alloctres") == [
        ("JobID", 20, False), ("State", 5, True), ("AllocTRES", 10, True)]
    with pytest.raises(sacctfmt.FieldError):
        sacctfmt.parse_sacct_format("nosuchfield")
    assert sacctfmt.sacct_table([("State", 5, True)], [{"State": "COMPLETED"}], header=False) == "COMP+ \n"


def test_time_forms():
    now = time.mktime((2026, 11, 29, 15, 0, 0, 0, 0, -1))
    midnight = time.mktime((2026, 11, 29, 0, 0, 0, 0, 0, -1))
    assert sacct.parse_time("now-1hour", now) == now - 3600
    assert sacct.parse_time("now-2days", now) == now - 2 * 86400
    assert sacct.parse_time("2026-11-29", now) == midnight
    assert sacct.parse_time("2026-11-29T10:30", now) == midnight + 10.5 * 3600
    assert sacct.parse_time("1129", now) == midnight
    assert sacct.parse_time("11/29/26", now) == midnight
    assert sacct.parse_time("11/29-10:30:00", now) == midnight + 10.5 * 3600
    assert sacct.parse_time("10:30", now) == midnight + 10.5 * 3600
    assert sacct.parse_time("10:30 PM", now) == midnight + 22.5 * 3600
    with pytest.raises(ValueError):
        sacct.parse_time("notatime", now)


def test_help_and_bad_option():
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert sacct.main(["--help"]) == 0
    assert out.getvalue() == ref("help_sacct.txt")
    with redirect_stdout(out), redirect_stderr(err):
        assert sacct.main(["--bogus"]) == 1
    assert "sacct: unrecognized option '--bogus'" in err.getvalue()


def test_state_codes():
    assert sacct._state_names(["cd", "F", "running", "CA"]) == ["COMPLETED", "FAILED", "RUNNING", "CANCELLED"]
    with pytest.raises(sacct.UsageError):
        sacct._state_names(["bogus"])


def test_run_request_body(monkeypatch):
    import os

    from plurm.wire import client

    sent = []
    jobs, steps = session()

    def fake(msg_type, body):
        sent.append((msg_type, body))
        return {"jobs": [j for j in jobs if j["job_id"] == 33], "steps": steps, "cluster": "anchor"}

    monkeypatch.setattr(client, "request", fake)
    out = io.StringIO()
    with redirect_stdout(out):
        assert sacct.main(["-j", "33", "-l"]) == 0
    assert out.getvalue() == ref("sacct_long_one.txt")
    assert sent[-1][1]["job_ids"] == ["33"] and sent[-1][1]["start_time"] is None
    with redirect_stdout(io.StringIO()):
        assert sacct.main([]) == 0
    body = sent[-1][1]
    lt = time.localtime()
    assert body["start_time"] == time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, 0, 0, 0, 0, 0, -1))
    assert body["users"] == ([] if os.getuid() == 0 else [str(os.getuid())])
    with redirect_stdout(io.StringIO()):
        assert sacct.main(["-s", "CD,f", "-u", "alice"]) == 0
    assert sent[-1][1]["states"] == ["COMPLETED", "FAILED"] and sent[-1][1]["users"] == ["alice"]
