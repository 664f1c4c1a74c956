"""Advance reservations against a real local cluster (issue 14 item 1): scontrol creates a
MAINT reservation, a job that would need its node waits with Slurm's reason, a job with
``--reservation`` runs inside it (with SLURM_JOB_RESERVATION), ``sinfo -T`` and ``scontrol show
reservation`` print it as the real 22.05 does, and it survives a ``kill -9`` of plurmctld.

The core's side (timelines, flags, errors) is tests/corescheduler/test_reservations_core.py.
"""

from __future__ import annotations

import os
import pwd
import re
import signal
from pathlib import Path

from collections.abc import Iterator

import pytest

from plurmtest import Cluster, wait_for

RESV_NODES = "ReqNodeNotAvail, May be reserved for other job"


@pytest.fixture
def resv_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """2 nodes of 2 CPUs, whose job ids start at 41001 (ids apart from other tests' clusters
    make their logs easy to tell apart)."""
    from plurm.tools.localcluster import ClusterShape, LocalCluster

    local = LocalCluster(str(tmp_path / "cluster"))
    local.write_files(ClusterShape(nodes=2, cpus_per_node=2, memory_per_node=2000))
    conf = Path(local.conf_path)
    conf.write_text(conf.read_text() + "FirstJobId=41001\n")
    env = dict(os.environ, SLURM_CONF=str(conf))
    env.pop("SLURM_JOB_ID", None)
    c = Cluster(Path(local.dir), conf, env)
    c.up()
    try:
        yield c
    finally:
        c.down()


def test_a_maintenance_reservation_holds_its_node_for_its_jobs(resv_cluster: Cluster, tmp_path: Path) -> None:
    c = resv_cluster
    user = pwd.getpwuid(os.getuid()).pw_name
    made = c.run("scontrol", "create", "reservation", "ReservationName=maint", "StartTime=now", "Duration=60",
                 "Nodes=n1", f"Users={user}", "Flags=MAINT")
    assert (made.returncode, made.stdout, made.stderr) == (0, "Reservation created: maint\n", "")
    shown = c.run("scontrol", "show", "reservation", check=True).stdout
    assert re.fullmatch(
        r"ReservationName=maint StartTime=(\S+) EndTime=(\S+) Duration=01:00:00\n"
        r"   Nodes=n1 NodeCnt=1 CoreCnt=2 Features=\(null\) PartitionName=\(null\) Flags=MAINT,SPEC_NODES\n"
        r"   TRES=cpu=2\n"
        rf"   Users={user} Groups=\(null\) Accounts=\(null\) Licenses=\(null\) State=ACTIVE BurstBuffer=\(null\) "
        r"Watts=n/a\n   MaxStartDelay=\(null\)\n\n", shown), shown
    table = c.run("sinfo", "-T", check=True).stdout.splitlines()
    assert table[0] == "RESV_NAME     STATE           START_TIME             END_TIME     DURATION  NODELIST"
    assert re.fullmatch(r"maint {8}ACTIVE  \S{19}  \S{19}     01:00:00  n1", table[1]), table
    # Its node's state, as the real 22.05's (reference/reservations/session6_node_states.txt).
    assert c.run("sinfo", "-h", "-N", "-o", "%N %t %T", check=True).stdout == "n1 maint maint\nn2 idle idle\n"
    assert "   State=IDLE+MAINTENANCE+RESERVED " in c.run("scontrol", "show", "node", "n1", check=True).stdout

    # Both nodes wanted: n1 is reserved, so the job waits (and holds nobody back).
    wide = c.sbatch("-N", "2", "-t", "5", "-o", "/dev/null", "--wrap", "true", cwd=tmp_path)
    wait_for(lambda: c.job(wide).get("reason") == RESV_NODES, what="the reservation's reason")
    squeue = c.run("squeue", "-h", "-j", str(wide), "-o", "%t %R", check=True).stdout
    assert squeue == f"PD ({RESV_NODES})\n"
    inside = c.sbatch("--reservation=maint", "-o", "inside.out", "--wrap",
                      "echo $SLURM_JOB_RESERVATION $SLURMD_NODENAME", cwd=tmp_path)
    c.wait_state(inside, "COMPLETED")
    assert (tmp_path / "inside.out").read_text() == "maint n1\n"
    assert "   Reservation=maint\n" in c.run("scontrol", "show", "job", str(inside), check=True).stdout
    assert c.run("sacct", "-X", "-n", "-P", "-j", str(inside), "-o", "Reservation", check=True).stdout == "maint\n"
    assert c.run("squeue", "-h", "-j", str(wide), "-o", "%v", check=True).stdout == "(null)\n"
    # salloc names it too (tests/tools/reference/reservations/session5_env.txt).
    shell = c.run("salloc", "--reservation=maint", "sh", "-c", "echo $SLURM_JOB_NODELIST $SLURM_JOB_RESERVATION",
                  cwd=tmp_path, check=True)
    assert shell.stdout == "n1 maint\n"
    # A job of a reservation still to come waits with reason Reservation; squeue -R lists it.
    c.run("scontrol", "create", "reservation", "ReservationName=later", "StartTime=now+1hour", "Duration=10",
          "Nodes=n2", f"Users={user}", check=True)
    later = c.sbatch("--reservation=later", "-t", "5", "-o", "/dev/null", "--wrap", "true", cwd=tmp_path)
    wait_for(lambda: c.job(later).get("reason") == "Reservation", what="reason Reservation")
    assert c.run("squeue", "-h", "-R", "later", "-o", "%i %v %r", check=True).stdout == f"{later} later Reservation\n"
    assert c.run("squeue", "-h", "-R", "maint", check=True).stdout == ""
    c.run("scancel", str(later), check=True)
    c.run("scontrol", "delete", "ReservationName=later", check=True)
    refused = c.run("sbatch", "--reservation=nosuch", "--wrap", "true", cwd=tmp_path)
    assert (refused.returncode, refused.stderr) == (
        1, "sbatch: error: Batch job submission failed: Requested reservation is invalid\n")

    # The reservation is durable: a controller killed with -9 comes back with it.
    os.kill(int((c.dir / "run" / "plurmctld.pid").read_text()), signal.SIGKILL)
    c.up()
    assert c.run("scontrol", "show", "reservation", "maint", check=True).stdout == shown
    # Deleted: the waiting job starts.
    assert c.run("scontrol", "delete", "ReservationName=maint", check=True).stdout == ""
    c.wait_state(wide, "COMPLETED")
    assert c.run("scontrol", "show", "reservation", check=True).stdout == "No reservations in the system\n"
    gone = c.run("scontrol", "delete", "ReservationName=maint")
    assert (gone.returncode, gone.stderr) == (
        1, "delete_reservation ReservationName=maint: Requested reservation is invalid\n")


# ------------------------------------------------------------------ scontrol update job Reservation=
RESV_REFERENCE = Path(__file__).parent / "reference" / "immediate" / "captures_resv.txt"


def resv_case(title: str) -> tuple[list[str], int]:
    """A case the real 22.05 answered (captures_resv.txt, job ids as J): its lines and status."""
    for block in RESV_REFERENCE.read_text().split("=== ")[1:]:
        head, _, body = block.partition("\n")
        if head == title:
            lines = body.rstrip("\n").split("\n")
            return lines[:-1], int(lines[-1][3:])
    raise KeyError(title)


def resv_lines(proc) -> tuple[list[str], int]:
    return re.sub(r"\b(job |JobId=)\d+", r"\1J", proc.stdout + proc.stderr).splitlines(), proc.returncode


def test_update_job_reservation_moves_a_job_into_and_out_of_a_reservation(resv_cluster: Cluster,
                                                                          tmp_path: Path) -> None:
    c = resv_cluster
    user = pwd.getpwuid(os.getuid()).pw_name
    c.run("scontrol", "create", "reservation", "ReservationName=imr", "StartTime=now", "Duration=10",
          "Nodes=n2", f"Users={user}", check=True)
    job = c.sbatch("-H", "-o", "resv.out", "--wrap", "echo $SLURM_JOB_RESERVATION $SLURMD_NODENAME", cwd=tmp_path)

    def update(*args: str) -> tuple[list[str], int]:
        return resv_lines(c.run("scontrol", "update", *args))

    assert update(f"JobId={job}", "Reservation=imr") == resv_case(
        "scontrol update JobId=J Reservation=imr (pending, held)")
    assert c.run("squeue", "-h", "-j", str(job), "-o", "%v %r", check=True).stdout == "imr JobHeldUser\n"
    assert "\n   Reservation=imr\n" in c.run("scontrol", "show", "job", str(job), check=True).stdout
    assert update(f"JobId={job}", "Reservation=nosuch") == resv_case("scontrol update JobId=J Reservation=nosuch")
    assert update(f"JobId={job}", "Reservation=") == resv_case("scontrol update JobId=J Reservation=")
    assert c.run("squeue", "-h", "-j", str(job), "-o", "%v", check=True).stdout == "(null)\n"
    assert "Reservation=" not in c.run("scontrol", "show", "job", str(job), check=True).stdout  # (22.05: no line)
    assert update("job", str(job), "Reservation=imr") == resv_case("scontrol update job J Reservation=imr")
    assert update("Reservation=", f"JobId={job}") == resv_case("scontrol update Reservation= JobId=J")
    assert c.run("squeue", "-h", "-j", str(job), "-o", "%v", check=True).stdout == "(null)\n"
    # Moved in and released: it runs in the reservation, on its node.
    update(f"JobId={job}", "Reservation=imr")
    c.run("scontrol", "release", str(job), check=True)
    c.wait_state(job, "COMPLETED")
    assert (tmp_path / "resv.out").read_text() == "imr n2\n"
    assert update(f"JobId={job}", "Reservation=imr") == resv_case(
        "scontrol update JobId=J Reservation=imr (finished)")
    # A running job takes it too, and stays where it runs (22.05).
    running = c.sbatch("-x", "n2", "-o", "/dev/null", "--wrap", "sleep 300", cwd=tmp_path)
    c.wait_state(running, "RUNNING")
    lines, rc = update(f"JobId={running}", "Reservation=imr")
    assert (lines, rc) == resv_case("scontrol update JobId=K Reservation=imr (running, not on n4)")
    assert c.run("squeue", "-h", "-j", str(running), "-o", "%t %v %N", check=True).stdout == "R imr n1\n"
    c.run("scancel", str(running), check=True)


def test_update_job_reservation_needs_the_jobs_user_in_it(munge_cluster, test_users) -> None:
    """The job's user must be admitted (whoever asks); another user's job is not one's own."""
    c = munge_cluster
    a = test_users["plurmta"]
    c.run("scontrol", "create", "reservation", "ReservationName=imr", "StartTime=now", "Duration=10",
          "Nodes=n2", "Users=root", check=True)
    c.run("scontrol", "create", "reservation", "ReservationName=ima", "StartTime=now", "Duration=10",
          "Nodes=n1", f"Users={a.name}", check=True)
    try:
        theirs = c.sbatch_as(a, "-H", "-o", "/dev/null", "--wrap", "true")
        roots = c.sbatch("-H", "-o", "/dev/null", "--wrap", "true", cwd=c.dir)
        as_a = lambda job, name: resv_lines(c.run_as(a, "scontrol", "update", f"JobId={job}", f"Reservation={name}"))
        assert as_a(theirs, "imr") == resv_case(
            "plurmta: scontrol update JobId=J Reservation=imr (imr: Users=root)")
        assert as_a(theirs, "ima") == resv_case(
            "plurmta: scontrol update JobId=J Reservation=ima (ima: Users=plurmta)")
        assert c.run("squeue", "-h", "-j", str(theirs), "-o", "%v", check=True).stdout == "ima\n"
        assert resv_lines(c.run("scontrol", "update", f"JobId={theirs}", "Reservation=imr")) == resv_case(
            "root: scontrol update JobId=J Reservation=imr (plurmta's job)")
        assert as_a(roots, "ima") == resv_case("plurmta: scontrol update JobId=J Reservation=ima (root's job)")
        c.run("scancel", str(theirs), str(roots), check=True)
    finally:
        for name in ("imr", "ima"):
            c.run("scontrol", "delete", f"ReservationName={name}")
