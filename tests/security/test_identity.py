"""Identities no one can forge: the escalations found on the old protocol, as regression tests.

A real munged (the fixture's own), real users (plurmta, plurmtb), daemons as root, real jobs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import zmq

from osusers import as_user
from plurm.wire import envelope
from plurm.wire.auth_munge import MungeAuth
from plurm.wire.client import read_settings
from plurmtest import command, start_cluster, wait_for

FORGE = Path(__file__).with_name("forge.py")


def _dealer(settings, timeout_ms: int) -> tuple[zmq.Context, zmq.Socket]:
    """A raw DEALER to the controller, for messages the commands would never send."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, timeout_ms)
    sock.connect(f"tcp://{settings.host}:{settings.port}")
    return ctx, sock


def _forge(cluster, user, msg_type: str, body: dict, claimed_uid: int = 0) -> dict:
    proc = cluster.run_as_python(user, str(FORGE), msg_type, json.dumps(body), str(claimed_uid))
    assert proc.returncode == 0, proc
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def users(test_users):
    return test_users["plurmta"], test_users["plurmtb"]


@pytest.fixture(autouse=True)
def _python_as_user(munge_cluster):
    def run_as_python(user, *args: str) -> subprocess.CompletedProcess:
        env = dict(munge_cluster.env, HOME=user.home, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=user.home,
                              timeout=60, **as_user(user))

    munge_cluster.run_as_python = run_as_python  # type: ignore[attr-defined]


def test_a_request_claiming_root_is_acted_on_as_its_real_sender(munge_cluster, users) -> None:
    """The old attack: a header claiming uid 0.  The job runs as the user, not as root, and
    root's job cannot be cancelled by it."""
    a, _ = users
    roots = munge_cluster.sbatch("--wrap", "sleep 30", cwd=munge_cluster.dir)
    out = Path(a.home) / "claimed-root.out"
    out.unlink(missing_ok=True)
    spec = {"script": "#!/bin/sh\nid -u\ncat /etc/shadow >/dev/null 2>&1 && echo READ-SHADOW\n",
            "work_dir": a.home, "stdout": str(out), "name": "forged"}
    submitted = _forge(munge_cluster, a, "submit_job", {"spec": spec}, claimed_uid=0)
    job_id = submitted["reply"]["job_id"]
    job = munge_cluster.wait_state(job_id, {"COMPLETED", "FAILED"})
    assert job["spec"]["user_id"] == a.uid and job["spec"]["user"] == a.name
    assert out.read_text() == f"{a.uid}\n"  # not 0, and /etc/shadow was not readable
    assert os.stat(out).st_uid == a.uid
    cancelled = _forge(munge_cluster, a, "cancel_job", {"job_ids": [str(roots)]}, claimed_uid=0)
    assert cancelled["reply"]["results"][0]["code"] == "AccessDenied", cancelled
    assert munge_cluster.job(roots)["state"] in ("PENDING", "RUNNING")
    drained = _forge(munge_cluster, a, "update_node", {"nodes": ["n1"], "state": "DRAIN", "reason": "x"}, 0)
    assert drained.get("code") == "AccessDenied", drained
    munge_cluster.run("scancel", str(roots), check=True)


def test_a_user_cannot_pose_as_a_node_daemon(munge_cluster, users) -> None:
    a, _ = users
    for msg_type, body in (("node_register", {"node": "n1", "cpus": 64, "real_memory": 1, "boot_time": 0,
                                              "slurmd_start_time": 0}),
                           ("node_ping", {"node": "n1", "running_jobs": []}),
                           ("job_ended", {"node": "n1", "job_id": 1, "exit_code": 0})):
        reply = _forge(munge_cluster, a, msg_type, body, claimed_uid=0)
        assert reply.get("code") == "AccessDenied", (msg_type, reply)
    assert "refused node_register from uid" in munge_cluster.log()
    nodes = {n["name"]: n for n in munge_cluster.request("node_info", {})["nodes"]}
    assert nodes["n1"]["cpus"] == 2  # the forged registration changed nothing


def test_a_peer_named_after_a_node_receives_no_launches(munge_cluster, users) -> None:
    """Without any credential, a connection under a node's old routing id got that node's
    launches (script and environment).  Now launches go only where a daemon spoke from."""
    settings = read_settings(str(munge_cluster.conf))
    ctx = zmq.Context()
    thieves = []
    for ident in (b"node:n1", b"node:n2"):
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.ROUTING_ID, ident)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"tcp://{settings.host}:{settings.port}")
        thieves.append(sock)
    try:
        time.sleep(0.3)
        a, _ = users
        job_id = munge_cluster.sbatch_as(a, "-N2", "--export=ALL,SECRET=hunter2", "--wrap", "echo done",
                                         cwd=a.home)
        job = munge_cluster.wait_state(job_id, {"COMPLETED", "FAILED"})
        assert job["state"] == "COMPLETED"
        for sock in thieves:
            assert not sock.poll(500), "a peer without a daemon's credential received a message"
    finally:
        for sock in thieves:
            sock.close()
        ctx.term()
    # and the real nodes still get work afterwards
    job_id = munge_cluster.sbatch("-N2", "--wrap", "true", cwd=munge_cluster.dir)
    assert munge_cluster.wait_state(job_id, {"COMPLETED", "FAILED"})["state"] == "COMPLETED"


def test_a_uid_unknown_to_the_user_database_is_refused(munge_cluster) -> None:
    """munge vouches for uid 4242, but no such user exists: Slurm's 'Invalid user id'."""
    env = dict(munge_cluster.env, HOME="/tmp")
    proc = subprocess.run(command("sbatch") + ["--wrap", "true"], capture_output=True, text=True, env=env,
                          cwd="/tmp", timeout=60, user=4242, group=4242, extra_groups=[])
    assert proc.returncode == 1
    assert "Invalid user id" in proc.stderr, proc.stderr


def test_a_munge_credential_cannot_be_replayed(munge_cluster) -> None:
    settings = read_settings(str(munge_cluster.conf))
    munge = MungeAuth({"socket": settings.auth_info.split("=", 1)[1]})
    ctx, sock = _dealer(settings, 2000)
    try:
        frames = envelope.seal(munge, "submit_job", {"spec": {"script": "#!/bin/sh\ntrue\n", "work_dir": "/tmp"}})
        sock.send_multipart([b""] + frames)
        first = sock.recv_multipart()
        assert json.loads(first[2])["type"] == "reply"
        header = json.loads(frames[1])
        frames[1] = json.dumps(dict(header, id=header["id"] + "-again")).encode()  # a fresh id, the old credential
        sock.send_multipart([b""] + frames)
        with pytest.raises(zmq.Again):
            sock.recv_multipart()
    finally:
        sock.close()
        ctx.term()


def test_the_local_default_serves_its_owner_only(test_users) -> None:
    """auth/local (no root, no configuration): another user is told whose cluster it is."""
    base = Path(tempfile.mkdtemp(prefix="plurm-local-"))
    base.chmod(0o755)
    cluster = start_cluster(base, nodes=1, cpus=1, memory=500)
    try:
        (cluster.conf).chmod(0o644)
        a = test_users["plurmta"]
        proc = subprocess.run(command("squeue"), capture_output=True, text=True, cwd="/tmp", timeout=60,
                              env=dict(cluster.env, HOME=a.home), **as_user(a))
        assert proc.returncode == 1
        assert "this cluster belongs to root: only root can use it" in proc.stderr, proc.stderr
        assert cluster.run("squeue").returncode == 0
    finally:
        cluster.down()
        subprocess.run(["rm", "-rf", str(base)])


def test_a_local_message_replayed_after_a_controller_restart_is_refused(fresh_cluster) -> None:
    """The replay cache was lost on restart: a captured submission re-sent after it ran again."""
    from plurm.wire.client import client_auth

    settings = read_settings(str(fresh_cluster.conf))
    frames = envelope.seal(client_auth(settings), "submit_job",
                           {"spec": {"script": "#!/bin/sh\ntrue\n", "work_dir": "/tmp", "name": "captured"}})

    def send() -> list[bytes] | None:
        ctx, sock = _dealer(settings, 3000)
        try:
            sock.send_multipart([b""] + frames)
            return sock.recv_multipart()
        except zmq.Again:
            return None
        finally:
            sock.close()
            ctx.term()

    assert send() is not None
    pid = int((fresh_cluster.dir / "run" / "plurmctld.pid").read_text())
    os.kill(pid, 9)
    wait_for(lambda: not os.path.exists(f"/proc/{pid}"), what="the controller to die")
    time.sleep(1.1)  # the restart fence's slack
    fresh_cluster.up()
    assert send() is None
    named = [j for j in fresh_cluster.request("job_info", {"all_states": True})["jobs"]
             if j["spec"]["name"] == "captured"]
    assert len(named) == 1


def test_job_files_are_the_users_own_through_the_cluster(munge_cluster, users) -> None:
    """End to end, as plurmta: output owned by the user with the submit umask; -i /etc/shadow
    and -o into root's folder fail the job without reading or creating anything."""
    a, _ = users
    home = Path(a.home)
    env = dict(munge_cluster.env, HOME=a.home, USER=a.name)
    proc = subprocess.run(["/bin/sh", "-c", f"umask 077; exec {command('sbatch')[0]} --parsable "
                           "-o umask.out --wrap 'id -un; id -Gn; echo $HOME'"], capture_output=True, text=True,
                          env=env, cwd=a.home, timeout=60, user=a.uid, group=a.gid, extra_groups=list(a.groups))
    assert proc.returncode == 0, proc
    job = munge_cluster.wait_state(int(proc.stdout.strip()), {"COMPLETED", "FAILED"})
    assert job["state"] == "COMPLETED"
    out = home / "umask.out"
    info = os.stat(out)
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (a.uid, a.gid, 0o600)
    name, groups, job_home = out.read_text().splitlines()
    assert name == a.name and "plurmtgrp" in groups.split() and job_home == a.home

    shadow = munge_cluster.sbatch_as(a, "-i", "/etc/shadow", "-o", "shadow.out", "--wrap", "cat", cwd=a.home)
    failed = munge_cluster.wait_state(shadow, {"COMPLETED", "FAILED"})
    assert (failed["state"], failed["reason"]) == ("FAILED", "JobLaunchFailure")  # as Slurm's (s10_*)
    assert "root:" not in ((home / "shadow.out").read_text() if (home / "shadow.out").exists() else "")
    forbidden = Path(tempfile.mkdtemp(prefix="plurm-rootonly-"))  # mode 0700, root's
    target = forbidden / "owned.out"
    job_id = munge_cluster.sbatch_as(a, "-o", str(target), "--wrap", "echo hi", cwd=a.home)
    assert munge_cluster.wait_state(job_id, {"COMPLETED", "FAILED"})["state"] == "FAILED"
    assert not target.exists()
    forbidden.rmdir()


def test_steps_run_as_the_jobs_owner_and_only_the_owner_launches_them(munge_cluster, users) -> None:
    """srun as plurmta: tasks run as plurmta on both nodes.  plurmtb cannot start tasks in
    plurmta's job: not with srun --jobid, not with a launch request of its own, not even
    with a genuine step credential that names plurmta."""
    from plurm.wire import stepcred
    from plurm.wire.client import Connection

    a, b = users
    proc = munge_cluster.run_as(a, "srun", "-N2", "-n2", "-l", "sh", "-c", "id -u")
    assert proc.returncode == 0, proc
    assert sorted(proc.stdout.splitlines()) == [f"0: {a.uid}", f"1: {a.uid}"]
    job_id = munge_cluster.sbatch_as(a, "-o", "/dev/null", "--wrap", "sleep 60", cwd=a.home)
    munge_cluster.wait_state(job_id, "RUNNING")
    try:
        stolen = munge_cluster.run_as(b, "srun", f"--jobid={job_id}", "id", "-u")
        assert stolen.returncode != 0 and str(a.uid) not in stolen.stdout, stolen
        node = munge_cluster.job(job_id)["nodes"][0]
        addr = next(n for n in munge_cluster.request("node_info", {})["nodes"] if n["name"] == node)
        settings = read_settings(str(munge_cluster.conf))
        controller = MungeAuth({"socket": settings.auth_info.split("=", 1)[1]})  # root: a daemon's uid
        genuine = stepcred.issue(controller, job_id, 7, a.uid, a.gid, [node])
        marker = Path(a.home) / "launched-by-b"
        marker.unlink(missing_ok=True)
        body = {"job_id": job_id, "step_id": 7, "node_id": 0, "task_ids": [0], "ntasks": 1, "nodelist": [node],
                "tasks_per_node": [1], "argv": ["/bin/touch", str(marker)], "work_dir": a.home,
                "uid": a.uid, "gid": a.gid, "credential": genuine, "io_key": "k" * 64}
        for credential in ({}, genuine):
            reply = munge_cluster.run_as_python(
                b, "-c", "import json,sys; from plurm.wire.client import *; s=read_settings();"
                f"c=Connection(s, host='127.0.0.1', port={addr['port']});"
                "\ntry: print(json.dumps(c.request('launch_tasks', json.loads(sys.argv[1]))))"
                "\nexcept ClientError as e: print(json.dumps({'error': str(e)}))",
                json.dumps(dict(body, credential=credential)))
            assert "Invalid job credential" in reply.stdout, reply
        time.sleep(1)
        assert not marker.exists()
    finally:
        munge_cluster.run("scancel", str(job_id))


def test_a_user_runs_a_local_cluster_of_their_own_without_root(test_users) -> None:
    """`plurm cluster up` as a plain user, no configuration file: auth/local, the user's key."""
    a = test_users["plurmta"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(HOME=a.home, USER=a.name, LOGNAME=a.name, PLURM_HOME=f"{a.home}/.plurm-test")

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(command(argv[0]) + list(argv[1:]), capture_output=True, text=True, env=env,
                              cwd=a.home, timeout=120, **as_user(a))

    up = run("plurm", "cluster", "up", "--nodes", "1", "--cpus-per-node", "1", "--memory-per-node", "500")
    try:
        assert up.returncode == 0, up
        key = Path(a.home) / ".plurm-test" / "cluster" / "slurm.key"
        assert (os.stat(key).st_uid, os.stat(key).st_mode & 0o777) == (a.uid, 0o600)
        submitted = run("sbatch", "--parsable", "-o", "own.out", "--wrap", "id -un")
        assert submitted.returncode == 0, submitted
        wait_for(lambda: (Path(a.home) / "own.out").exists() and (Path(a.home) / "own.out").read_text(),
                 timeout=30, what="the job's output")
        assert (Path(a.home) / "own.out").read_text() == f"{a.name}\n"
    finally:
        run("plurm", "cluster", "down")
        subprocess.run(["rm", "-rf", f"{a.home}/.plurm-test", f"{a.home}/own.out"])


def test_root_submits_as_another_user_with_uid(munge_cluster, users) -> None:
    """sbatch --uid as root: the job is the user's and runs as the user (with root's group,
    as in Slurm, unless --gid names another); the same request from a user is refused."""
    a, b = users
    out = Path(a.home) / "as-a.out"
    out.unlink(missing_ok=True)
    job_id = munge_cluster.sbatch(f"--uid={a.name}", f"--gid={a.gid}", "-o", str(out), "--wrap", "id -u; id -g",
                                  cwd=a.home)
    job = munge_cluster.wait_state(job_id, {"COMPLETED", "FAILED"})
    assert (job["state"], job["spec"]["user"], job["spec"]["user_id"]) == ("COMPLETED", a.name, a.uid)
    assert out.read_text().split() == [str(a.uid), str(a.gid)]
    forged = _forge(munge_cluster, b, "submit_job", {"spec": {"script": "#!/bin/sh\nid\n", "work_dir": b.home,
                                                               "other_options": {"uid": "0"}}}, claimed_uid=0)
    assert forged.get("code") == "AccessDenied", forged
