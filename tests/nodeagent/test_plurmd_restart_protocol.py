"""plurmd's side of runs and several controllers, with the controllers played by the test:
two real ZeroMQ ROUTER sockets on the SlurmctldHost addresses (127.0.0.1 and 127.0.0.2),
speaking the wire protocol with the cluster's key, and a real plurmd killed and restarted
between messages.  It checks what the node says (register, ping, job_ended: to every
controller, with the run) and does (terminate of an older run spares the newer one; an end
report is resent, across a restart too, until a controller acknowledges that run)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import zmq

from plurmtest import command, free_ports, wait_for, write_key
from plurm.wire import authtype, envelope, protocol
from plurm.wire.client import key_path_for


class PlayedController:
    """A controller's ROUTER, bound where slurm.conf says one is."""

    def __init__(self, ctx: zmq.Context, auth: Any, addr: str, port: int) -> None:
        self.auth = auth
        self.sock = ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.ROUTER_MANDATORY, 1)  # a send to a daemon that is gone fails loudly
        self.sock.bind(f"tcp://{addr}:{port}")
        self.node: bytes | None = None  # the node daemon's routing id (from its last message)
        self.last_sent = 0.0  # when the node sent the last message received

    def receive(self, kind: str, timeout: float = 15.0, until: Any = None) -> Any:
        """The next message of ``kind`` (others are passed over) that ``until`` accepts."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.sock.poll(100):
                continue
            frames = self.sock.recv_multipart()
            self.node = frames[0]
            header, raw, _sender = envelope.open_envelope(self.auth, frames[2:])
            self.last_sent = header["time"]
            if header["type"] == kind:
                msg = protocol.decode_body(kind, raw)
                if until is None or until(msg):
                    return msg
        raise AssertionError(f"no {kind} within {timeout} s")

    def between_pings(self, after: float = 0.0) -> list[str]:
        """The types of the messages from one ping to the next (a whole resend turn), the
        first ping sent after ``after`` (its header's time: older ones are still queued)."""
        self.receive("node_ping", until=lambda _msg: self.last_sent > after)
        kinds: list[str] = []
        while True:
            assert self.sock.poll(15000), "no ping"
            frames = self.sock.recv_multipart()
            self.node = frames[0]
            header, _raw, _sender = envelope.open_envelope(self.auth, frames[2:])
            if header["type"] == "node_ping":
                return kinds
            kinds.append(header["type"])

    def send(self, kind: str, body: dict) -> None:
        assert self.node is not None, "the node has not spoken yet"
        self.sock.send_multipart([self.node, b""] + envelope.seal(self.auth, kind, body))


@pytest.fixture
def node(tmp_path: Path) -> Iterator[dict]:
    ctld_port, node_port = free_ports(2)
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"""ClusterName=played
SlurmctldHost=primary(127.0.0.1)
SlurmctldHost=standby(127.0.0.2)
SlurmctldPort={ctld_port}
SlurmdSpoolDir={tmp_path}/spool/%n
StateSaveLocation={tmp_path}/state
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port={node_port} CPUs=2 RealMemory=1000
PartitionName=p Nodes=n1 Default=YES State=UP
""")
    write_key(tmp_path / "slurm.key")
    auth = authtype.load(None, key_path_for(str(conf)), None)
    ctx = zmq.Context()
    played = {"conf": conf, "dir": tmp_path, "ctx": ctx, "proc": None,
              "a": PlayedController(ctx, auth, "127.0.0.1", ctld_port),
              "b": PlayedController(ctx, auth, "127.0.0.2", ctld_port)}
    try:
        yield played
    finally:
        if played["proc"] is not None and played["proc"].poll() is None:
            played["proc"].kill()
            played["proc"].wait()
        from plurm.nodeagent.jobstate import kill_recorded

        kill_recorded(str(tmp_path / "spool" / "n1"))
        ctx.destroy(linger=0)


def start_plurmd(node: dict) -> None:
    with open(node["dir"] / "plurmd.log", "ab") as log:
        node["proc"] = subprocess.Popen(command("plurmd") + ["-D", "-N", "n1", "-f", str(node["conf"])],
                                        stdout=log, stderr=log,
                                        env=dict(os.environ, SLURM_CONF=str(node["conf"]), PLURM_PING_INTERVAL="0.3"))


def kill_plurmd(node: dict) -> None:
    node["proc"].kill()
    node["proc"].wait()


def launch(job_id: int, restarts: int, work: Path) -> dict:
    import getpass

    script = f"#!/bin/sh\necho $$ > {work}/pid\nwhile :; do sleep 0.05; done\n"
    job = {"job_id": job_id, "partition": "p", "nodes": ["n1"], "cpus": [1], "tasks": [1], "restarts": restarts,
           "spec": {"name": "played", "user": getpass.getuser(), "user_id": os.getuid(), "group_id": os.getgid(),
                    "work_dir": str(work)}}
    return {"job_id": job_id, "job": job, "script": script, "work_dir": str(work), "uid": os.getuid(),
            "gid": os.getgid(), "environment": {"PATH": "/usr/bin:/bin"}, "stdout": str(work / "out")}


def test_runs_and_end_reports_across_restarts_with_two_controllers(node: dict) -> None:
    a, b = node["a"], node["b"]
    work = node["dir"] / "work"
    work.mkdir()
    start_plurmd(node)
    assert a.receive("node_register").runs == {} and b.receive("node_register").runs == {}
    # The standby (b) may speak for the controller too: the node takes its launch.
    b.send("launch_job", launch(77, 1, work))
    wait_for(lambda: (work / "pid").exists() and (work / "pid").read_text().strip(), what="the job to start")
    pid = int((work / "pid").read_text())
    assert a.receive("node_ping", until=lambda m: m.runs).runs == {77: 1}
    assert b.receive("node_ping", until=lambda m: m.runs).runs == {77: 1}
    # A terminate of run 0 (a copy the controller believes stale) spares run 1.
    b.send("terminate_job", {"job_id": 77, "kill_wait": 0.0, "signal": 15, "restarts": 0})
    assert b.between_pings() == []
    assert psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    # A new plurmd adopts the run and reports it as before.
    kill_plurmd(node)
    start_plurmd(node)
    assert a.receive("node_register").runs == {77: 1}
    a.send("terminate_job", {"job_id": 77, "kill_wait": 5.0, "signal": 15, "restarts": 1})
    for played in (a, b):
        ended = played.receive("job_ended")
        assert (ended.job_id, ended.restarts, ended.exit_signal) == (77, 1, signal.SIGTERM)
    wait_for(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
             what="the job to die")
    # Unacknowledged: resent by the next plurmd as it registers.
    kill_plurmd(node)
    start_plurmd(node)
    a.receive("node_register")
    b.receive("node_register")
    assert a.receive("job_ended").restarts == 1
    # An acknowledgement of another run is not this one's; from either controller, this run's is.
    b.send("job_ended_ack", {"job_id": 77, "restarts": 0})
    acked = time.time()
    b.between_pings(after=acked)  # (the ack may arrive during this turn: the next one is after it)
    assert "job_ended" in b.between_pings(after=acked)
    a.send("job_ended_ack", {"job_id": 77, "restarts": 1})
    runs = node["dir"] / "spool" / "n1" / "runs"
    wait_for(lambda: not [p for p in runs.iterdir() if p.is_dir()], what="the run to be forgotten")
    assert "job_ended" not in a.between_pings(after=time.time())


def test_a_damaged_spool_is_logged_and_skipped(node: dict) -> None:
    """Unreadable records (a disk that filled, a hand edit) never stop plurmd from serving."""
    runs = node["dir"] / "spool" / "n1" / "runs"
    (runs / "5.0").mkdir(parents=True)
    (runs / "5.0" / "job.json").write_text("{not json")
    (runs / "6.0").mkdir()  # no job.json at all
    (runs / "7.0").mkdir()
    (runs / "7.0" / "job.json").write_text('{"job_id": "seven", "restarts": 0, "started": 1}')
    (runs / "step9.1.json").write_text("[]")
    epilogs = node["dir"] / "spool" / "n1" / "epilogs"
    epilogs.mkdir()
    (epilogs / "8.json").write_text('{"env": 3}')
    start_plurmd(node)
    assert node["a"].receive("node_register").runs == {}
    node["a"].receive("node_ping")
    assert node["proc"].poll() is None
    log = (node["dir"] / "plurmd.log").read_text()
    for name in ("5.0", "6.0", "7.0", "step9.1.json", "8.json"):
        assert name in log, log


def test_a_newer_run_replaces_an_older_copy(node: dict) -> None:
    """The controller launches run 2 of a job whose run 1 this node still has (it was away
    when the job was requeued): never two copies; the old one's end names its run."""
    a = node["a"]
    first, second = node["dir"] / "first", node["dir"] / "second"
    first.mkdir()
    second.mkdir()
    start_plurmd(node)
    a.receive("node_register")
    a.send("launch_job", launch(78, 1, first))
    wait_for(lambda: (first / "pid").exists() and (first / "pid").read_text().strip(), what="run 1 to start")
    old = int((first / "pid").read_text())
    a.send("launch_job", launch(78, 2, second))
    ended = a.receive("job_ended")
    assert (ended.job_id, ended.restarts, ended.exit_signal) == (78, 1, signal.SIGKILL)
    assert not psutil.pid_exists(old) or psutil.Process(old).status() == psutil.STATUS_ZOMBIE
    assert a.receive("node_ping", until=lambda m: m.runs).runs == {78: 2}
    a.send("terminate_job", {"job_id": 78, "kill_wait": 5.0, "signal": 9, "restarts": -1, "batch_host": "n1"})
    assert a.receive("job_ended", until=lambda m: m.restarts == 2).exit_signal == signal.SIGKILL
