"""Two controllers on one PostgreSQL store (ctl1 on 127.0.0.1, ctl2 on 127.0.0.2): kill -9 of
the active one, SIGSTOP and SIGCONT (the old primary is fenced: its write fails), the
primary restarted (control handed back).  Commands work through it all; no job is lost;
running jobs keep running; queued jobs start."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from plurmtest import Cluster, command, wait_for, write_script

TIMEOUT_S = 3  # SlurmctldTimeout: the lease
PRIMARY, BACKUP = "127.0.0.1", "127.0.0.2"


def start_pair(postgres, base: Path, nodes: int = 2) -> Cluster:
    url = postgres.create_database(f"h_{uuid.uuid4().hex[:12]}")
    directory = base / "cluster"
    env = dict(os.environ, SLURM_CONF=str(directory / "slurm.conf"))
    env.pop("SLURM_JOB_ID", None)
    cluster = Cluster(directory, directory / "slurm.conf", env)
    cluster.up("--nodes", str(nodes), "--cpus-per-node", "2", "--memory-per-node", "2000", "--controllers", "2",
               "--state", url, "--slurmctld-timeout", str(TIMEOUT_S))
    wait_for(lambda: active(cluster, PRIMARY), what="the primary to hold control")
    # `cluster up` returns once the primary answers; the backup may still be binding its socket.
    wait_for(lambda: ping(cluster, BACKUP) is not None, what="the backup to answer")
    return cluster


def ping(c: Cluster, host: str) -> dict | None:
    from plurm.wire.client import ClientError, Connection, read_settings

    conn = Connection(read_settings(str(c.conf)), host=host, timeout=1.0)
    try:
        return conn.request("ping", {})
    except ClientError:
        return None
    finally:
        conn.close()


def active(c: Cluster, host: str) -> bool:
    reply = ping(c, host)
    return bool(reply and reply.get("active"))


def pid(c: Cluster, name: str) -> int:
    return int((c.dir / "run" / f"{name}.pid").read_text())


@pytest.fixture
def pair(postgres, tmp_path: Path):
    c = start_pair(postgres, tmp_path)
    try:
        yield c
    finally:
        for name in ("plurmctld", "plurmctld-ctl2"):
            try:
                os.kill(pid(c, name), signal.SIGCONT)  # a stopped daemon cannot take SIGTERM
            except (OSError, ValueError):
                pass
        c.down()
        shutil.rmtree(c.dir / "spool", ignore_errors=True)


def test_kill9_of_the_active_controller(pair: Cluster, workdir: Path) -> None:
    c = pair
    write_script(workdir, "long.sh", "#!/bin/sh\necho start\nsleep 5\necho long-done\n")
    long_id = c.sbatch("-c", "2", "long.sh", cwd=workdir)
    c.wait_state(long_id, "RUNNING")
    start_time = c.job(long_id)["start_time"]
    queued_id = c.sbatch("-N", "2", "--exclusive", "--wrap", "echo queued-ran", cwd=workdir)  # waits for n1
    held_id = c.sbatch("-H", "--wrap", "true", cwd=workdir)
    os.kill(pid(c, "plurmctld"), signal.SIGKILL)
    killed = time.monotonic()
    wait_for(lambda: active(c, BACKUP), timeout=TIMEOUT_S + 10, what="the backup to take over")
    assert time.monotonic() - killed < TIMEOUT_S + 2  # the lease, and a little
    assert c.run("scontrol", "ping").stdout == "Slurmctld(primary) at ctl1 is DOWN\nSlurmctld(backup) at ctl2 is UP\n"
    # Commands find the backup by themselves (the primary's address refuses connections).
    job = c.job(long_id)
    assert job["state"] == "RUNNING" and job["start_time"] == start_time
    assert c.job(held_id)["reason"] == "JobHeldUser"
    assert c.wait_state(long_id, "COMPLETED", timeout=30)
    assert (workdir / f"slurm-{long_id}.out").read_text() == "start\nlong-done\n"
    c.wait_state(queued_id, "COMPLETED", timeout=30)
    assert (workdir / f"slurm-{queued_id}.out").read_text() == "queued-ran\n"
    new_id = c.sbatch("--wrap", "true", cwd=workdir)
    assert new_id == held_id + 1  # the id sequence goes on from the store
    c.wait_state(new_id, "COMPLETED")
    sacct = c.run("sacct", "-X", "-P", "-n", "-o", "JobID,State", "-j", f"{long_id},{queued_id}", check=True).stdout
    assert sacct.split() == [f"{long_id}|COMPLETED", f"{queued_id}|COMPLETED"]


def _only_primary_conf(c: Cluster) -> Path:
    """A slurm.conf beside the cluster's that names only ctl1: a command that asks it alone."""
    path = c.dir / "primary-only.conf"
    path.write_text("".join(line for line in c.conf.read_text().splitlines(keepends=True)
                            if not line.startswith("SlurmctldHost=ctl2")))
    return path


def test_sigstop_fences_the_old_primary_then_hand_back(pair: Cluster, workdir: Path) -> None:
    c = pair
    running_id = c.sbatch("--wrap", "sleep 8", cwd=workdir)
    c.wait_state(running_id, "RUNNING")
    primary = pid(c, "plurmctld")
    os.kill(primary, signal.SIGSTOP)
    wait_for(lambda: active(c, BACKUP), timeout=TIMEOUT_S + 10, what="the backup to take over")
    during_id = c.sbatch("--wrap", "echo during", cwd=workdir)  # the stopped primary is skipped

    # The old primary comes back believing it is active; a write sent to it alone fails.
    only = _only_primary_conf(c)
    writer = subprocess.Popen(command("sbatch") + ["--parsable", "--wrap", "echo fenced"], cwd=workdir,
                              env=dict(c.env, SLURM_CONF=str(only)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)  # the request waits in the stopped daemon's socket
    os.kill(primary, signal.SIGCONT)
    out, err = writer.communicate(timeout=30)
    assert writer.returncode != 0, out
    assert "Slurm backup controller in standby mode" in err
    wait_for(lambda: (ping(c, PRIMARY) or {}).get("active") is False, what="the old primary to stand by")
    log = (c.dir / "log" / "plurmctld.log").read_text()
    assert "steps down to standby" in log and "no longer ctl1's" in log
    # Nothing of the fenced write exists; everything accepted does.
    ids = {int(x) for x in c.run("squeue", "-h", "-t", "all", "-o", "%i", check=True).stdout.split()}
    assert ids <= {running_id, during_id}
    assert active(c, BACKUP)

    # The primary restarted takes control back (slurm.conf(5)): the backup hands over.
    os.kill(primary, signal.SIGTERM)
    wait_for(lambda: not Path(f"/proc/{primary}").exists() or "Z" in Path(f"/proc/{primary}/stat").read_text().split()[2],
             what="the old primary to exit")
    c.up()
    wait_for(lambda: active(c, PRIMARY), timeout=TIMEOUT_S + 10, what="control handed back to the primary")
    assert not active(c, BACKUP)
    assert "handing control to ctl1" in (c.dir / "log" / "plurmctld-ctl2.log").read_text()
    c.wait_state(running_id, "COMPLETED", timeout=30)
    c.wait_state(during_id, "COMPLETED", timeout=30)
    after_id = c.sbatch("--wrap", "echo after", cwd=workdir)
    c.wait_state(after_id, "COMPLETED")
    assert (workdir / f"slurm-{during_id}.out").read_text() == "during\n"


def test_standby_answers_with_slurms_standby_error(pair: Cluster, workdir: Path) -> None:
    from plurm.wire.client import ClientError, Connection, read_settings

    conn = Connection(read_settings(str(pair.conf)), host=BACKUP, timeout=5.0)
    try:
        with pytest.raises(ClientError) as info:
            conn.request("job_info", {})
    finally:
        conn.close()
    assert str(info.value) == "Slurm backup controller in standby mode"
    assert ping(pair, BACKUP) == {"ok": True, "host": "ctl2", "mode": "backup", "active": False, "store_ok": True}
    assert pair.run("squeue", check=True).returncode == 0  # the commands go to the primary
    ping_out = pair.run("scontrol", "ping", check=True).stdout
    assert ping_out == "Slurmctld(primary) at ctl1 is UP\nSlurmctld(backup) at ctl2 is UP\n"


def test_scontrol_takeover_moves_control_to_the_backup(pair: Cluster, workdir: Path) -> None:
    c = pair
    running_id = c.sbatch("--wrap", "sleep 3", cwd=workdir)
    c.wait_state(running_id, "RUNNING")
    proc = c.run("scontrol", "takeover")
    assert proc.returncode == 0 and proc.stdout == proc.stderr == ""
    wait_for(lambda: active(c, BACKUP), timeout=TIMEOUT_S + 5, what="the backup to take control")
    assert not active(c, PRIMARY)
    assert "handing control to ctl2" in (c.dir / "log" / "plurmctld.log").read_text()
    c.wait_state(running_id, "COMPLETED", timeout=30)
    after_id = c.sbatch("--wrap", "true", cwd=workdir)
    c.wait_state(after_id, "COMPLETED")


def test_a_cut_session_after_takeover_still_answers_standby(postgres, tmp_path: Path, workdir: Path) -> None:
    """The paused primary's database session is cut (as a network cut or the server would)
    while the backup takes over: on resuming, its write fails on the lost connection; it asks
    the server, finds the lease taken, and answers as a standby (not as a failing store)."""
    import psycopg

    c = start_pair(postgres, tmp_path)
    primary = pid(c, "plurmctld")
    try:
        url = next(line.split("=", 1)[1].strip() for line in c.conf.read_text().splitlines()
                   if line.startswith("StateSaveLocation="))
        os.kill(primary, signal.SIGSTOP)
        wait_for(lambda: active(c, BACKUP), timeout=TIMEOUT_S + 10, what="the backup to take over")
        with psycopg.connect(url, autocommit=True) as db:
            cut = db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                             "AND pid <> pg_backend_pid() AND pid <> (SELECT backend_pid FROM lease)").fetchall()
        assert cut == [(True,)]  # the paused primary's session, and only it
        only = _only_primary_conf(c)
        writer = subprocess.Popen(command("sbatch") + ["--parsable", "--wrap", "true"], cwd=workdir,
                                  env=dict(c.env, SLURM_CONF=str(only)), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        os.kill(primary, signal.SIGCONT)
        out, err = writer.communicate(timeout=30)
        assert writer.returncode != 0 and "Slurm backup controller in standby mode" in err, err
        assert c.run("squeue", "-h", "-t", "all", "-o", "%i", check=True).stdout.split() == []
        assert active(c, BACKUP) and not active(c, PRIMARY)
        log = (c.dir / "log" / "plurmctld.log").read_text()
        assert "ctl1 steps down to standby: the lease is no longer ctl1's" in log
    finally:
        try:
            os.kill(primary, signal.SIGCONT)
        except OSError:
            pass
        c.down()
        shutil.rmtree(c.dir / "spool", ignore_errors=True)
