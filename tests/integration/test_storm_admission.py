"""Admission control under a storm of submissions (issue 17 item 4): with a tiny limit, every
submission gets a job id or Slurm's busy refusal ("Resource temporarily unavailable"), never
half of one; sbatch sleeps and retries as Slurm's does, and succeeds; the jobs that exist are
exactly the ids the clients were told (corescheduler/admission.py, wire/busy_retry.py).

The cluster: ``SchedulerParameters=max_submit_per_turn=1`` (one submission per controller
turn; the rest of a turn's are refused) and ``MinJobAge=2`` (ended jobs forgotten quickly,
for the MaxJobCount case).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, command, start_cluster, wait_for

BUSY_LINE = "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying"  # (22.05.8: no period)
SRUN_BUSY_LINE = "srun: error: Slurm controller not responding, sleeping and retrying."


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("storm"), nodes=1, cpus=2, memory=2000)
    c.down()
    text = c.conf.read_text().replace("MinJobAge=300", "MinJobAge=2")
    text = text.replace("SchedulerParameters=bf_interval=1", "SchedulerParameters=bf_interval=1,max_submit_per_turn=1")
    assert "max_submit_per_turn=1" in text and "MinJobAge=2" in text
    c.conf.write_text(text)
    c.up()
    try:
        yield c
    finally:
        c.down()


def _ids_named(cluster: Cluster, name: str) -> set[int]:
    jobs = cluster.request("job_info", {"names": [name], "all_states": True})["jobs"]
    return {int(j["job_id"]) for j in jobs}


def _cancel(cluster: Cluster, name: str) -> None:
    cluster.run("scancel", "-n", name)


def _pipelined(cluster: Cluster, bodies: list[dict], sealed_ago: float = 0.0) -> list[tuple[str, dict]]:
    """Every submission sent on one connection before any reply is read (so that many reach the
    controller in one turn), then the replies: ("reply" | "error", body) in order.  ``sealed_ago``:
    the messages' header time that many seconds in the past."""
    from unittest import mock

    from plurm.wire import envelope
    from plurm.wire.client import Connection, read_settings

    conn = Connection(read_settings(str(cluster.conf)))
    try:
        dealer = conn._connect()
        for body in bodies:
            with mock.patch.object(envelope.time, "time", return_value=time.time() - sealed_ago):
                frames = envelope.seal(conn.auth, "submit_job", body)
            dealer.send([b""] + frames)
        answers = []
        for _ in bodies:
            frames = dealer.recv()
            header, payload, _sender = envelope.open_envelope(conn.auth, frames[1:] if frames[0] == b"" else frames)
            answers.append((header["type"], json.loads(payload)))
        return answers
    finally:
        conn.close()


def test_pipelined_submissions_get_an_id_or_the_busy_refusal(tiny: Cluster, workdir: Path) -> None:
    from plurm.api.jobs import prepare

    name = "storm_adm_pipe"
    told: list[int] = []
    busy = 0
    try:
        for _round in range(5):  # (whether a burst lands in one turn is the kernel's timing: a few tries)
            bodies = [prepare(wrap="true", args=["-H", "-J", name, "-o", "/dev/null", "-D", str(workdir)])
                      for _ in range(20)]
            for kind, body in _pipelined(tiny, bodies):
                if kind == "reply":
                    told.append(int(body["job_id"]))
                else:
                    assert (body["code"], body["message"]) == ("Busy", "Resource temporarily unavailable"), body
                    busy += 1
            if busy:
                break
        assert busy, "20 submissions in a burst, one admitted per turn, and none refused"
        assert len(set(told)) == len(told)
        assert _ids_named(tiny, name) == set(told)  # nothing half-accepted, nothing lost
    finally:
        _cancel(tiny, name)


def test_a_resubmission_with_its_key_is_answered_even_when_busy(tiny: Cluster, workdir: Path) -> None:
    """The retry of a submission whose reply was lost: its job, never a refusal or a second job."""
    from plurm.api.jobs import prepare

    name = "storm_adm_key"
    try:
        first = tiny.request("submit_job", prepare(wrap="true", args=["-H", "-J", name, "-o", "/dev/null"], key="k1"))
        # The same key four times and a burst of others in one go: the keyed ones are never refused.
        bodies = [prepare(wrap="true", args=["-H", "-J", name, "-o", "/dev/null"], key="k1") for _ in range(4)]
        answers = _pipelined(tiny, bodies)
        assert [(kind, body.get("job_id"), body.get("duplicate")) for kind, body in answers] \
            == [("reply", first["job_id"], True)] * 4
        assert _ids_named(tiny, name) == {int(first["job_id"])}
    finally:
        _cancel(tiny, name)


def test_concurrent_sbatch_all_accepted_and_the_jobs_match_the_ids(tiny: Cluster, workdir: Path) -> None:
    name = "storm_adm_conc"
    procs = [subprocess.Popen(command("sbatch") + ["--parsable", "-H", "-J", name, "-o", "/dev/null", "--wrap", "true"],
                              cwd=workdir, env=tiny.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(24)]
    try:
        results = [(p.wait(timeout=180), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
        for rc, out, err in results:
            assert rc == 0, err
            assert set(err.splitlines()) <= {BUSY_LINE}, err  # a busy turn: Slurm's line, then success
        told = [int(out.strip()) for _rc, out, _err in results]
        assert len(set(told)) == 24
        assert _ids_named(tiny, name) == set(told)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        _cancel(tiny, name)


@pytest.mark.parametrize("prog", ["sbatch", "srun"])
def test_max_job_count_refuses_then_the_command_retries_and_succeeds(tiny: Cluster, workdir: Path, prog: str) -> None:
    name = "storm_adm_full"
    original = tiny.conf.read_text()
    tiny.conf.write_text(original + "MaxJobCount=2\n")
    try:
        tiny.run("scontrol", "reconfigure", check=True)
        wait_for(lambda: not tiny.request("job_info", {"all_states": True})["jobs"], timeout=60,
                 what="the earlier tests' jobs purged (MinJobAge=2)")
        held = [tiny.sbatch("-H", "-J", name, "-o", "/dev/null", "--wrap", "true", cwd=workdir) for _ in range(2)]
        argv = ["--parsable", "-H", "-J", name, "-o", "/dev/null", "--wrap", "true"] if prog == "sbatch" \
            else ["-n", "1", "-J", name, "true"]
        third = subprocess.Popen(command(prog) + argv, cwd=workdir, env=tiny.env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        import select

        # Refused (the line comes at the first refusal), and sleeping before it tries again.
        assert select.select([third.stderr], [], [], 60)[0], "sbatch neither refused nor done in 60 s"
        first = third.stderr.readline().rstrip("\n")  # type: ignore[union-attr]
        assert first == (BUSY_LINE if prog == "sbatch" else SRUN_BUSY_LINE) and third.poll() is None
        assert _ids_named(tiny, name) == set(held)  # the refused one is nowhere
        tiny.run("scancel", str(held[0]), check=True)  # gone after MinJobAge: room for one
        out, err = third.communicate(timeout=60)
        assert third.returncode == 0, err
        assert err == ""  # once, as Slurm's: the later retries say nothing
        if prog == "sbatch":  # (srun's job has ended: MinJobAge=2 forgets it at any moment)
            assert _ids_named(tiny, name) == {held[1], int(out.strip())}
    finally:
        tiny.conf.write_text(original)
        tiny.run("scontrol", "reconfigure")
        _cancel(tiny, name)


def test_a_submission_its_client_gave_up_on_is_refused_not_recorded(tiny: Cluster, workdir: Path) -> None:
    """Sealed longer ago than MessageTimeout (10 s) + 5 s: no client waits for its answer any more
    (each resend is sealed anew), so it is refused, and nothing is recorded."""
    from plurm.api.jobs import prepare

    import psutil

    name = "storm_adm_stale"
    # (a message sealed before the controller started is a replay, dropped unanswered: envelope.py)
    started = psutil.Process(int((tiny.dir / "run" / "plurmctld.pid").read_text())).create_time()
    time.sleep(max(0.0, started + 18.0 - time.time()))
    try:
        body = prepare(wrap="true", args=["-H", "-J", name, "-o", "/dev/null"])
        [(kind, answer)] = _pipelined(tiny, [body], sealed_ago=16.0)
        assert (kind, answer["code"]) == ("error", "Busy")
        assert _ids_named(tiny, name) == set()
        [(kind, answer)] = _pipelined(tiny, [body], sealed_ago=2.0)  # late, but its client still waits
        assert kind == "reply" and _ids_named(tiny, name) == {int(answer["job_id"])}
    finally:
        _cancel(tiny, name)


def test_a_paused_controller_queues_a_storm_of_connections_in_the_kernel(tiny: Cluster) -> None:
    """The listen backlog is Slurm's 4096, not libzmq's 100: while the controller cannot accept
    (stopped here), 300 connections still complete their TCP handshake at once, instead of
    having their SYNs dropped and retried a second or more later."""
    import os
    import signal
    import socket

    from plurm.wire.client import read_settings

    settings = read_settings(str(tiny.conf))
    pid = int((tiny.dir / "run" / "plurmctld.pid").read_text())
    socks: list[socket.socket] = []
    os.kill(pid, signal.SIGSTOP)
    try:
        for _ in range(300):
            sock = socket.socket()
            sock.settimeout(0.9)  # (a dropped SYN is retried after 1 s)
            socks.append(sock)
            sock.connect((settings.host, settings.port))
    finally:
        os.kill(pid, signal.SIGCONT)
        for sock in socks:
            sock.close()
    assert len(socks) == 300
    assert tiny.request("ping", {}) is not None  # and it carries on
