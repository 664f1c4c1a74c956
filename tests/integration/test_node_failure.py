"""Node failure on real daemons: kill -9 one node's plurmd with three batch jobs on it.

The same scenario as tests/reliability/anchor/capture_node_failure.sh on the real Slurm
22.05 (its outputs: tests/reliability/reference/node_failure/), with the fields that must
match compared (states, reasons, exit codes, restart counts, row order), never times:

- the node goes DOWN after SlurmdTimeout: ``sinfo -N`` shows ``down*``, ``sinfo -R`` the
  reason ``Not responding``;
- ``--no-requeue`` ends NODE_FAIL 0:0 (scontrol: Reason=NodeDown, Requeue=0 Restarts=0);
  ``--requeue`` and a job with neither (JobRequeue=1) are requeued: Restarts=1, the next
  run has SLURM_RESTART_COUNT=1, runs on the other node and completes;
- the plurmd restarted: the old copies it still has (run 0) are killed, the node returns to
  service (ReturnToService=1) and the stale reason goes.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from plurmtest import Cluster, start_cluster, wait_for

REF = Path(__file__).resolve().parents[1] / "reliability" / "reference" / "node_failure"
TIMEOUT_S = 8  # SlurmdTimeout (the anchor's is 10: the same rules, sooner)

# Run 0 waits (its pid in NAME.pids) until killed; a later run records itself and ends.
SCRIPT = """#!/bin/sh
echo "run ${{SLURM_RESTART_COUNT:-0}} $SLURMD_NODENAME" >> {work}/{name}.runs
if [ "${{SLURM_RESTART_COUNT:-0}}" -ge 1 ]; then exit 0; fi
echo $$ >> {work}/{name}.pids
exec sleep 300
"""


@pytest.fixture
def failing(tmp_path: Path) -> Iterator[Cluster]:
    c = start_cluster(tmp_path / "c", nodes=2, cpus=4, memory=4000)
    c.down()
    text = c.conf.read_text().replace("SlurmdTimeout=300", f"SlurmdTimeout={TIMEOUT_S}")
    text = text.replace("ReturnToService=2", "ReturnToService=1")
    c.conf.write_text(text + "AuthInfo=cred_expire=5\n")
    c.up()
    try:
        yield c
    finally:
        c.down()


def _alive(pids: list[int]) -> list[int]:
    live = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                live.append(pid)
        except psutil.NoSuchProcess:
            pass
    return live


def _pids(path: Path) -> list[int]:
    return [int(w) for w in path.read_text().split()] if path.exists() else []


def _node_rows(c: Cluster) -> dict[str, tuple[str, str]]:
    out = c.run("sinfo", "-h", "-N", "-o", "%N|%T|%E", check=True).stdout
    return {name: (state, reason) for name, state, reason in (line.split("|") for line in out.splitlines())}


def _show_job(c: Cluster, job_id: int) -> dict[str, str]:
    text = c.run("scontrol", "show", "job", str(job_id), check=True).stdout
    return dict(re.findall(r"(\w+)=(\S*)", text))


def _ref_show_job(name: str) -> dict[str, str]:
    return dict(re.findall(r"(\w+)=(\S*)", (REF / name).read_text()))


def test_kill_9_of_a_plurmd_requeues_its_jobs_and_its_return_kills_the_old_copies(failing: Cluster,
                                                                                   tmp_path: Path) -> None:
    c = failing
    work = tmp_path / "work"
    work.mkdir()
    ids = {}
    for name, flags in (("rq", ["--requeue"]), ("norq", ["--no-requeue"]), ("dflt", [])):
        script = work / f"{name}.sh"
        script.write_text(SCRIPT.format(work=work, name=name))
        ids[name] = c.sbatch(*flags, "-n1", "-J", name, "-o", str(work / f"{name}.out"), str(script), cwd=work)
    for name, job_id in ids.items():
        c.wait_state(job_id, "RUNNING")
        wait_for(lambda name=name: _pids(work / f"{name}.pids"), what=f"{name} to start")
    [node] = {c.job(job_id)["nodes"][0] for job_id in ids.values()}  # packed on one node, as cons_tres does
    other = next(n for n in ("n1", "n2") if n != node)
    old = {name: _pids(work / f"{name}.pids") for name in ids}

    os.kill(int((c.dir / "run" / f"plurmd-{node}.pid").read_text()), signal.SIGKILL)
    wait_for(lambda: _node_rows(c)[node][0] == "down*", timeout=TIMEOUT_S * 6, what=f"{node} down*")
    assert _node_rows(c)[node] == ("down*", "Not responding")  # 3_down_sinfo_N: "n1 down* Not responding"
    sinfo_r = c.run("sinfo", "-R", check=True).stdout.splitlines()
    ref_r = (REF / "rts1.3_down_sinfo_R.txt").read_text().splitlines()
    assert sinfo_r[0].split() == ref_r[0].split()  # REASON USER TIMESTAMP NODELIST
    assert (sinfo_r[1].split()[:2], sinfo_r[1].split()[-1]) == (["Not", "responding"], node)
    assert ref_r[1].split()[:3] == ["Not", "responding", "root"] and sinfo_r[1].split()[2] == "root"

    norq = c.wait_state(ids["norq"], "NODE_FAIL")
    assert (norq.get("exit_code", 0), norq.get("exit_signal", 0), norq.get("restarts", 0)) == (0, 0, 0)
    mine, ref = _show_job(c, ids["norq"]), _ref_show_job("rts1.3_down_scontrol_show_job_2.txt")
    keys = ("JobState", "Reason", "Requeue", "Restarts", "ExitCode")
    assert [mine[k] for k in keys] == [ref[k] for k in keys] == ["NODE_FAIL", "NodeDown", "0", "0", "0:0"]

    for name in ("rq", "dflt"):
        job = c.wait_state(ids[name], "COMPLETED", timeout=60)
        assert job.get("restarts") == 1 and job["nodes"] == [other]
        assert (work / f"{name}.runs").read_text().splitlines() == [f"run 0 {node}", f"run 1 {other}"]
    mine, ref = _show_job(c, ids["rq"]), _ref_show_job("rts1.8_done_scontrol_show_job_1.txt")
    keys = ("JobState", "Requeue", "Restarts", "ExitCode", "BatchHost")
    assert [mine[k] for k in keys] == ["COMPLETED", "1", "1", "0:0", other]
    assert [ref[k] for k in keys] == ["COMPLETED", "1", "1", "0:0", "n2"]
    # sacct: one record per job, a requeued one as its last run; -D: every run, the failed
    # ones NODE_FAIL; both in Slurm's order (by submit time: a requeue's is later).
    job_list = ",".join(map(str, ids.values()))
    nodes = {"n1": node, "n2": other}  # the anchor's jobs ran on n1, then n2
    for capture, flags in (("rts1.8_done_sacct.txt", ["-X"]), ("rts1.8_done_sacct_D.txt", ["-D", "-X"])):
        rows = c.run("sacct", *flags, "-n", "-P", "-j", job_list, "-o", "JobName,State,ExitCode,NodeList",
                     check=True).stdout.splitlines()
        ref = [line.split("|")[1:5] for line in (REF / capture).read_text().splitlines()[1:]]
        ref = [[name, state, code, nodes[where]] for name, state, code, where in ref if name in ids]
        assert [line.split("|") for line in rows] == ref, capture
    # -D with the steps: each failed run's batch step CANCELLED, its exit code empty.
    rows = c.run("sacct", "-D", "-n", "-P", "-j", job_list, "-o", "JobID,JobName,State,ExitCode,NodeList",
                 check=True).stdout.splitlines()
    anchor_ids = {"1": ids["rq"], "2": ids["norq"], "3": ids["dflt"]}  # (the anchor's job 4 is not run here)
    ref = []
    for line in (REF / "rts1.8_done_sacct_D_steps.txt").read_text().splitlines()[1:]:
        job, name, state, code, where = line.split("|")
        base, dot, step = job.partition(".")
        if base in anchor_ids:
            ref.append([f"{anchor_ids[base]}{dot}{step}", name, state, code, nodes[where]])
    assert [line.split("|") for line in rows] == ref

    # The old copies run on (their plurmd is gone, not the node): its return kills them.
    assert all(_alive(pids) for pids in old.values())
    c.up()  # starts the plurmd that is missing
    wait_for(lambda: not any(_alive(pids) for pids in old.values()), timeout=60, what="the old copies to die")
    wait_for(lambda: _node_rows(c)[node][0] == "idle", timeout=30, what=f"{node} back in service")
    assert _node_rows(c)[node] == ("idle", "none")  # rts1.6_slurmd_back_sinfo_N: "n1 idle none"
    assert c.run("sinfo", "-R", "-h", check=True).stdout == ""
    # Nothing of the old runs reached the jobs' records.
    assert [c.job(ids[n])["state"] for n in ("rq", "norq", "dflt")] == ["COMPLETED", "NODE_FAIL", "COMPLETED"]
    assert [c.job(ids[n]).get("restarts", 0) for n in ("rq", "norq", "dflt")] == [1, 0, 1]


def test_a_stopped_plurmd_is_down_after_slurmd_timeout_and_its_old_copy_dies_when_it_continues(
        failing: Cluster, tmp_path: Path) -> None:
    """SIGSTOP, as the anchor's stop.* captures: DOWN (down*, Not responding) once silent for
    SlurmdTimeout; the job is requeued and completes elsewhere; SIGCONT: the node's next
    ping brings it back (ReturnToService=1: stop.2_sinfo_N "n1 idle none") and its copy of
    the old run is killed, not reported as the job's end."""
    c = failing
    work = tmp_path / "work"
    work.mkdir()
    script = work / "rq.sh"
    script.write_text(SCRIPT.format(work=work, name="rq"))
    job_id = c.sbatch("--requeue", "-n1", "-o", str(work / "rq.out"), str(script), cwd=work)
    c.wait_state(job_id, "RUNNING")
    wait_for(lambda: _pids(work / "rq.pids"), what="run 0 to start")
    node = c.job(job_id)["nodes"][0]
    other = next(n for n in ("n1", "n2") if n != node)
    plurmd = int((c.dir / "run" / f"plurmd-{node}.pid").read_text())
    os.kill(plurmd, signal.SIGSTOP)
    try:
        wait_for(lambda: _node_rows(c)[node] == ("down*", "Not responding"), timeout=TIMEOUT_S * 6,
                 what=f"{node} down*")
        assert (REF / "stop.1_sinfo_N.txt").read_text().splitlines()[1] == "n1 down* Not responding"
        job = c.wait_state(job_id, "COMPLETED", timeout=60)
        assert job.get("restarts") == 1 and job["nodes"] == [other]
        assert _alive(_pids(work / "rq.pids"))  # the stopped daemon's job runs on
    finally:
        os.kill(plurmd, signal.SIGCONT)
    wait_for(lambda: not _alive(_pids(work / "rq.pids")), timeout=60, what="the old copy to die")
    wait_for(lambda: _node_rows(c)[node] == ("idle", "none"), timeout=30, what=f"{node} back in service")
    assert (REF / "stop.2_sinfo_N.txt").read_text().splitlines()[1] == "n1 idle none"
    job = c.job(job_id)
    assert (job["state"], job.get("restarts"), job.get("exit_code", 0)) == ("COMPLETED", 1, 0)
    assert (work / "rq.runs").read_text().splitlines() == [f"run 0 {node}", f"run 1 {other}"]
