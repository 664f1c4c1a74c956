"""Running steps seen as Slurm 22.05 shows them: squeue -s, scontrol show step(s), sstat,
scontrol listpids, against the captures of the real commands in
tests/tools/reference/point10/ (capture.sh steps: a batch job -N1 -n2 running
``srun -n2 sleep 120``), with what is host- or time-specific normalised: the job id, the
elapsed time, the start time, pids, the step's memory (the two clusters' DefMemPerCPU
differ) and SrunHost:Pid (plurm does not learn srun's host and pid: docs/compatibility.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, wait_for

REF = Path(__file__).resolve().parents[1] / "tools" / "reference" / "point10"
REAL_JOB = (REF / "steps_jobid.txt").read_text().strip()


def _ref(name: str) -> str:
    return (REF / name).read_text()


def _norm(text: str, job: str) -> list[list[str]]:
    """Lines split into cells, the job id made J, elapsed times T and the node N (which
    node of the cluster the job got is the session's)."""
    rows = []
    for line in text.splitlines():
        line = re.sub(rf"(?<![\w.]){re.escape(job)}(?=\.)", "J", line)
        line = re.sub(r"(?<![\w.])n\d+(?=[| ]|$)", "N", line)
        rows.append([re.sub(r"^\d+:\d\d$", "T", cell) for cell in line.split()])
    return rows


@pytest.fixture(scope="module")
def running(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A job with the capture's shape, its step 0 running."""
    work = tmp_path_factory.mktemp("steps")
    job = str(cluster.sbatch("-N1", "-n2", "-o", str(work / "s.out"), "--wrap", "srun -n2 sleep 120", cwd=work))
    wait_for(lambda: f"{job}.0" in cluster.run("squeue", "-h", "-s", "-j", job, "-o", "%i").stdout.split(),
             what=f"step {job}.0 running")
    # The step is listed once it is created; its two tasks start a moment later (confined:
    # each enters its cgroup first), and sstat counts the tasks it finds running.
    wait_for(lambda: cluster.run("sstat", "-j", f"{job}.0", "-n", "-P", "-o", "NTasks").stdout.strip() == "2",
             what=f"the two tasks of {job}.0 running")
    try:
        yield job
    finally:
        cluster.run("scancel", job)
        cluster.wait_state(job, "CANCELLED")


def _out(cluster: Cluster, *args: str) -> str:
    proc = cluster.run(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("capture,args", [
    ("steps_squeue_s.txt", ["squeue", "-s", "-j", "{J}"]),
    ("steps_squeue_s_o.txt", ["squeue", "-s", "-j", "{J}", "-o", "%.15i %.9P %.8j %.8u %.10M %N"]),
    ("steps_squeue_steps_J0.txt", ["squeue", "--steps={J}.0"]),
    ("steps_sstat_a_P.txt", ["sstat", "-j", "{J}", "-a", "-P", "-o", "JobID,NTasks,MaxRSSNode"]),
    ("steps_sstat_J0_n_p.txt", ["sstat", "-j", "{J}.0", "-n", "-p", "-o", "JobID,NTasks"]),
    ("steps_sstat_J0_format.txt", ["sstat", "-j", "{J}.0", "--format=JobID,NTasks,Nodelist"]),
])
def test_step_tables_as_slurm(cluster: Cluster, running: str, capture: str, args: list[str]) -> None:
    ours = _out(cluster, *[a.replace("{J}", running) for a in args])
    want = _ref(capture)
    assert _norm(ours, running) == _norm(want, REAL_JOB)
    if "-n" not in args:  # the header, to the byte (its widths, sstat's trailing blanks)
        assert ours.splitlines()[0] == want.splitlines()[0]


def _blocks(text: str, job: str) -> dict[str, dict[str, str]]:
    """scontrol show step's blocks by StepId, each its Key=Value fields."""
    out = {}
    for block in text.strip().split("\n\n"):
        fields = dict(token.split("=", 1) for token in block.split())
        out[fields["StepId"].replace(f"{job}.", "J.")] = fields
    return out


def _comparable(fields: dict[str, str]) -> dict[str, str]:
    fields = dict(fields)
    fields.pop("StepId")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", fields.pop("StartTime"))
    # The step's memory is DefMemPerCPU x CPUs: the clusters' settings differ, not the rule.
    fields["TRES"] = re.sub(r"mem=\d+M", "mem=M", fields["TRES"])
    fields["NodeList"] = re.sub(r"^n\d+$", "N", fields["NodeList"])
    # plurm does not learn srun's host and pid (Slurm's value for none; docs/compatibility.md).
    fields.pop("SrunHost:Pid")
    return fields


@pytest.mark.parametrize("capture,args", [
    ("steps_scontrol_show_step_J0.txt", ["show", "step", "{J}.0"]),
    ("steps_scontrol_show_steps.txt", ["show", "steps"]),
])
def test_scontrol_show_step_as_slurm(cluster: Cluster, running: str, capture: str, args: list[str]) -> None:
    ours = _blocks(_out(cluster, "scontrol", *[a.replace("{J}", running) for a in args]), running)
    want = _blocks(_ref(capture), REAL_JOB)
    ours = {k: v for k, v in ours.items() if k.startswith("J.")}  # (the session's other jobs)
    assert sorted(ours) == sorted(want)
    for step_id, fields in want.items():
        assert _comparable(ours[step_id]) == _comparable(fields), step_id
        assert list(ours[step_id]) == list(fields), step_id  # the same fields in the same order


def test_scontrol_show_step_oneliner_and_missing(cluster: Cluster, running: str) -> None:
    one = _out(cluster, "scontrol", "-o", "show", "step", f"{running}.0")
    assert one.count("\n") == 1 and one.startswith(f"StepId={running}.0 UserId=")
    proc = cluster.run("scontrol", "show", "step", f"{running}.7")
    assert (proc.returncode, proc.stdout) == (1, f"Job step {running}.7 not found\n")


def _pid_rows(text: str, job: str) -> tuple[str, list[tuple[str, ...]]]:
    header, *rows = text.splitlines(keepends=True)
    cells = []
    for row in rows:
        # Slurm's "%-8s %-8s %-8s %-7s %-8s": the pid, then the ids, each padded.
        assert re.fullmatch(r"\d+ +\S+ +\S+ +\S+ +\S+ +\n", row) and len(row) == 44, repr(row)
        pid, job_id, step, local, glob = row.split()
        assert job_id == job
        cells.append((step, local, glob))
    return header, cells


@pytest.mark.parametrize("suffix,capture", [("", "steps_scontrol_listpids_J.txt"),
                                            (".0", "steps_scontrol_listpids_J0.txt")])
def test_scontrol_listpids_as_slurm(cluster: Cluster, running: str, suffix: str, capture: str) -> None:
    header, ours = _pid_rows(_out(cluster, "scontrol", "listpids", running + suffix), running)
    want_header, want = _pid_rows(_ref(capture), REAL_JOB)
    assert header == want_header
    # Each task's first process carries its ids; a step's other processes "-" (how many
    # there are is the process tree's: Slurm's batch step also has srun's helper).
    assert sorted(r for r in ours if r[1] != "-") == sorted(r for r in want if r[1] != "-")
    assert {r[0] for r in ours if r[1] == "-"} == {r[0] for r in want if r[1] == "-"}
