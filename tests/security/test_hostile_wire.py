"""Hostile peers against both daemons (plurmctld's ROUTER, plurmd's srun ROUTER).

Raw TCP speaking ZMTP where pyzmq would refuse to misbehave: a frame announced at 8 GiB,
a message of endless 1 MiB frames, half a greeting, a handshake and then silence.  Then
floods of unsigned and wrongly signed messages (the log grows by a bounded number of
lines), Hypothesis over the wire (random frames, signed messages with random headers and
bodies: an error reply or silence, never a dead daemon, bounded memory), and the
listening address slurm.conf gives.  The cluster runs MessageTimeout=1 (handshake 1 s,
heartbeats every 1 s, silent peers closed after 3 s).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

import psutil
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plurm.grammar.slurmconf import load_slurm_conf
from plurm.tools.localcluster import ClusterShape, LocalCluster
from plurm.wire import auth, envelope, protocol, zmtp
from plurm.wire.client import client_auth, read_settings, request
from plurmtest import Cluster, command, free_ports, wait_for, write_key

MESSAGE_TIMEOUT = 1  # slurm.conf's MessageTimeout for this module's cluster
MB = 1024 * 1024
RSS_SLACK = 100 * MB
FUZZ = settings(max_examples=120, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


# ----------------------------------------------------------------- the cluster and its daemons
class Target:
    """One daemon's ROUTER: where it listens, its pid and log, and a signed probe it answers."""

    def __init__(self, name: str, cluster: Cluster, port: int, pidfile: str, logfile: str) -> None:
        self.name = name
        self.cluster = cluster
        self.port = port
        self.pid = int((cluster.dir / "run" / pidfile).read_text())
        self.log = cluster.dir / "log" / logfile
        self.auth = client_auth(read_settings(str(cluster.conf)))

    def rss(self) -> int:
        return psutil.Process(self.pid).memory_info().rss

    def probe(self) -> tuple[str, dict]:
        """A message the daemon answers: ping (controller), signal 0 to no step (plurmd)."""
        if self.name == "plurmctld":
            return "ping", {}
        return "signal_tasks", {"job_id": 999999, "step_id": 0, "signal": 0}

    def answers(self, timeout: float = 5.0) -> bool:
        conn = zmtp.DealerConnection("127.0.0.1", self.port, timeout)
        try:
            msg_type, body = self.probe()
            conn.send([b""] + envelope.seal(self.auth, msg_type, body))
            frames = conn.recv()
            return json.loads(frames[2])["type"] == "reply" and json.loads(frames[3]).get("ok") is True
        finally:
            conn.close()

    def log_lines(self) -> list[str]:
        return self.log.read_text(errors="replace").splitlines()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory):
    """A one-node cluster with MessageTimeout=1."""
    directory = tmp_path_factory.mktemp("hostile") / "cluster"
    LocalCluster(str(directory)).write_files(ClusterShape(nodes=1, cpus_per_node=1, memory_per_node=500))
    conf = directory / "slurm.conf"
    conf.write_text(conf.read_text() + f"MessageTimeout={MESSAGE_TIMEOUT}\n")
    env = dict(os.environ, SLURM_CONF=str(conf))
    env.pop("SLURM_JOB_ID", None)
    cluster = Cluster(directory, conf, env)
    cluster.up()
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="module")
def ctld(hostile: Cluster) -> Target:
    return Target("plurmctld", hostile, load_slurm_conf(str(hostile.conf)).slurmctld_port, "plurmctld.pid",
                  "plurmctld.log")


@pytest.fixture(scope="module")
def noded(hostile: Cluster) -> Target:
    conf = load_slurm_conf(str(hostile.conf))
    return Target("plurmd", hostile, conf.nodes["n1"].port or conf.slurmd_port, "plurmd-n1.pid", "plurmd-n1.log")


@pytest.fixture(params=["plurmctld", "plurmd"])
def target(request, ctld: Target, noded: Target) -> Target:
    return ctld if request.param == "plurmctld" else noded


# ----------------------------------------------------------------- raw ZMTP
def _handshake(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(zmtp._GREETING + zmtp._ready_command(b"DEALER"))
    got = b""
    while len(got) < 64 + 2:  # the daemon's greeting and the start of its READY
        chunk = sock.recv(4096)
        assert chunk, "the daemon closed a well-behaved handshake"
        got += chunk
    return sock


def _seconds_to_close(sock: socket.socket, limit: float) -> float:
    """Read (and never answer: no PONG) until the daemon closes; seconds it took."""
    start = time.monotonic()
    sock.settimeout(0.2)
    while time.monotonic() - start < limit:
        try:
            if not sock.recv(65536):
                return time.monotonic() - start
        except socket.timeout:
            continue
        except OSError:  # reset
            return time.monotonic() - start
    return float("inf")


def _send_until_closed(sock: socket.socket, chunks, limit: int) -> int:
    """Send chunks until the daemon shuts the connection; bytes it took first."""
    sent = 0
    sock.settimeout(5)
    try:
        for chunk in chunks:
            sock.sendall(chunk)
            sent += len(chunk)
            if sent > limit:
                break
    except OSError:
        return sent
    return sent if _seconds_to_close(sock, 10) != float("inf") else -1


def test_a_frame_announced_at_8_gib_is_refused_at_its_header(target: Target) -> None:
    before = target.rss()
    sock = _handshake(target.port)
    sock.sendall(b"\x02" + struct.pack(">Q", 8 << 30))  # a long frame of 8 GiB, no MORE
    sent = _send_until_closed(sock, (b"x" * MB for _ in range(8)), 8 * MB)
    sock.close()
    assert sent != -1, "the daemon kept a connection announcing an 8 GiB frame"
    grown = target.rss() - before
    print(f"{target.name}: 8 GiB frame: closed after {sent} bytes of it; rss {before // MB} -> "
          f"{(before + grown) // MB} MB")
    assert grown < RSS_SLACK
    assert target.answers()


def test_a_message_of_endless_frames_is_cut_off(target: Target) -> None:
    """libzmq caps frames (MAXMSGSIZE), not messages: 1 MiB frames with MORE, unauthenticated,
    were all kept until the last frame (400 MB here).  The PeerGuard shuts the connection."""
    before = target.rss()
    peak = [before]

    def frames():
        frame = b"\x03" + struct.pack(">Q", MB) + b"x" * MB  # MORE | LONG, 1 MiB
        for i in range(400):
            if i % 10 == 0:
                peak[0] = max(peak[0], target.rss())
            yield frame

    sock = _handshake(target.port)
    sent = _send_until_closed(sock, frames(), 400 * MB)
    peak[0] = max(peak[0], target.rss())
    sock.close()
    grown = peak[0] - before
    print(f"{target.name}: endless message: closed after {sent // MB} MB; rss {before // MB} MB, "
          f"at most {peak[0] // MB} MB")
    assert 0 < sent < 200 * MB, "the daemon kept reading a message of endless frames"
    assert grown < RSS_SLACK
    assert target.answers()


def test_a_silent_peer_is_closed_within_the_heartbeat_timeout(target: Target) -> None:
    sock = _handshake(target.port)
    took = _seconds_to_close(sock, 15)
    sock.close()
    print(f"{target.name}: silent peer closed after {took:.2f} s (heartbeat timeout {3 * MESSAGE_TIMEOUT} s)")
    assert 2 * MESSAGE_TIMEOUT <= took <= 3 * MESSAGE_TIMEOUT + 2.5
    assert target.answers()


def test_half_a_greeting_is_closed_within_the_handshake_interval(target: Target) -> None:
    sock = socket.create_connection(("127.0.0.1", target.port), timeout=5)
    sock.sendall(zmtp._GREETING[:5])
    took = _seconds_to_close(sock, 15)
    sock.close()
    print(f"{target.name}: half a greeting closed after {took:.2f} s (handshake interval 1 s)")
    assert took <= 1 + 1.5
    assert target.answers()


def test_a_well_behaved_peer_is_kept_past_the_heartbeat_timeout(target: Target) -> None:
    """The other side of the heartbeat: a peer that answers PINGs is not closed."""
    conn = zmtp.DealerConnection("127.0.0.1", target.port, 10)
    try:
        time.sleep(0.2)
        deadline = time.monotonic() + 3 * MESSAGE_TIMEOUT + 1
        while time.monotonic() < deadline:  # answer PINGs (recv does) while waiting for the reply
            msg_type, body = target.probe()
            conn.send([b""] + envelope.seal(target.auth, msg_type, body))
            assert json.loads(conn.recv()[2])["type"] == "reply"
            time.sleep(0.5)
    finally:
        conn.close()


# ----------------------------------------------------------------- floods
def test_a_flood_of_bad_messages_writes_a_bounded_log(target: Target) -> None:
    before = len(target.log_lines())
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDHWM, 0)
    sock.connect(f"tcp://127.0.0.1:{target.port}")
    wrong = auth.KeyAuth(b"not-the-cluster-key")
    try:
        for i in range(2000):
            kind = i % 4
            if kind == 0:
                frames = [b"", b"junk %d" % i]
            elif kind == 1:
                frames = [b""] + envelope.seal(target.auth, "ping", {})[:3] + [b""]  # unsigned
            elif kind == 2:
                frames = [b""] + envelope.seal(wrong, "ping", {})  # wrongly signed
            else:
                frames = [b"", b"PLURM1", b"{", b"}", b"0:0:" + b"0" * 64]  # truncated, bad credential
            sock.send_multipart(frames)
        wait_for(target.answers, timeout=30, what=f"{target.name} to answer after the flood")
        assert not sock.poll(200), "an unauthenticated message got an answer"
    finally:
        sock.close()
        ctx.term()
    new = target.log_lines()[before:]
    print(f"{target.name}: 2000 bad messages -> {len(new)} log lines")
    assert len(new) <= 25, "\n".join(new[:40])
    assert any("suppressing" in line for line in new), "\n".join(new)


# ----------------------------------------------------------------- Hypothesis over the wire
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20) | st.sampled_from([10**4000, -10**400, 2**63, 2**64, 1e308, -0.0]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12)
header_keys = st.sampled_from(["v", "id", "type", "uid", "gid", "time", "parent", "extra", "v2"])
message_types = st.sampled_from(sorted(protocol.MESSAGE_TYPES) + ["make_coffee", ""])


def _dumps(value) -> bytes:
    import sys

    sys.set_int_max_str_digits(0) if hasattr(sys, "set_int_max_str_digits") else None
    try:
        return json.dumps(value).encode()
    finally:
        sys.set_int_max_str_digits(4300) if hasattr(sys, "set_int_max_str_digits") else None


def _deep(draw) -> bytes:
    """JSON nested deeper than any decoder recurses (arrays, or objects of unknown fields)."""
    depth = draw(st.integers(100, 20000))
    if draw(st.booleans()):
        return b"[" * depth + b"]" * depth
    return b'{"x":' * depth + b"1" + b"}" * depth


@st.composite
def raw_bodies(draw) -> bytes:
    """Bodies: random JSON, known fields with wrong values and unknown ones, truncated, deep."""
    shape = draw(st.sampled_from(["json", "fields", "truncated", "deep", "bytes"]))
    if shape == "json":
        return _dumps(draw(json_values))
    if shape == "deep":
        return _deep(draw)
    if shape == "bytes":
        return draw(st.binary(max_size=64))
    fields = ["job_id", "step_id", "job_ids", "spec", "nodes", "node", "signal", "credential", "argv",
              "environment", "nodelist", "task_ids", "state", "unknown_field"]
    body = draw(st.dictionaries(st.sampled_from(fields), json_values, max_size=5))
    text = _dumps(body)
    if shape == "truncated":
        return text[:draw(st.integers(0, max(0, len(text) - 1)))]
    return text


@st.composite
def signed_headers(draw, signer) -> list[bytes]:
    """A validly signed message whose header is random (missing, wrong, huge, unknown)."""
    header = envelope.make_header(draw(message_types))
    for key in draw(st.lists(header_keys, max_size=4)):
        if draw(st.booleans()):
            header.pop(key, None)
        else:
            header[key] = draw(json_values)
    shape = draw(st.sampled_from(["whole", "truncated", "deep"]))
    raw = _dumps(header)
    if shape == "truncated":
        raw = raw[:draw(st.integers(0, 40))]
    elif shape == "deep":
        raw = raw[:-1] + b', "deep": ' + _deep(draw) + b"}"
    body = draw(raw_bodies())
    credential = signer.credential(auth.message_digest(envelope.PROTOCOL_TAG, raw, body))
    return [envelope.PROTOCOL_TAG, raw, body, credential]


class Wire:
    """One DEALER to a daemon: send anything, then the probe; every answer before the
    probe's must be a typed error (or a reply), and the probe must be answered."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(f"tcp://127.0.0.1:{target.port}")
        self.answers: list[dict] = []

    def exchange(self, frames: list[bytes]) -> None:
        if frames:
            self.sock.send_multipart(frames)
        msg_type, body = self.target.probe()
        probe = envelope.seal(self.target.auth, msg_type, body)
        probe_id = json.loads(probe[1])["id"]
        self.sock.send_multipart([b""] + probe)
        while True:
            assert self.sock.poll(10000), f"{self.target.name} stopped answering after {frames!r:.300}"
            reply = self.sock.recv_multipart()
            opened = envelope.open_envelope(self.target.auth, reply[1:], allow_replay=True)
            if opened.header.get("parent") == probe_id:
                assert opened.header["type"] == "reply", opened
                return
            answer = json.loads(opened.body)
            assert opened.header["type"] in ("error", "reply"), opened
            if opened.header["type"] == "error":
                assert isinstance(answer.get("code"), str) and answer["code"] != "InternalError", answer
            self.answers.append(answer)

    def close(self) -> None:
        self.sock.close()
        self.ctx.term()


@pytest.fixture
def wire(target: Target):
    w = Wire(target)
    before = target.rss()
    log_before = len(target.log_lines())
    yield w
    w.close()
    new = target.log_lines()[log_before:]
    assert not [line for line in new if "Traceback" in line or "error handling" in line], "\n".join(new)
    grown = target.rss() - before
    print(f"{target.name}: fuzzed, {len(w.answers)} error replies; rss {before // MB} -> {(before + grown) // MB} MB")
    assert grown < 50 * MB


@FUZZ
@given(frames=st.lists(st.binary(max_size=80), max_size=6))
def test_random_frames_get_silence_or_an_error(wire: Wire, frames: list[bytes]) -> None:
    wire.exchange(frames)


@FUZZ
@given(data=st.data())
def test_signed_messages_with_random_headers(wire: Wire, data) -> None:
    wire.exchange([b""] + data.draw(signed_headers(wire.target.auth)))


@FUZZ
@given(msg_type=message_types, body=raw_bodies())
def test_signed_messages_with_random_bodies(wire: Wire, msg_type: str, body: bytes) -> None:
    if wire.target.name == "plurmctld" and msg_type in ("update_node", "acctmgr", "submit_job", "cancel_job",
                                                        "update_job"):
        return  # the owner may drain nodes and submit jobs: valid bodies would act (not what is tested)
    wire.exchange([b""] + envelope.seal_raw(wire.target.auth, msg_type, body))


@FUZZ
@given(msg_type=st.sampled_from(["launch_tasks", "signal_tasks"]), body=raw_bodies(),
       credential=st.none() | json_values | st.fixed_dictionaries({"payload": st.text(max_size=40),
                                                                   "credential": st.text(max_size=40)}))
def test_plurmd_launches_nothing_without_a_step_credential(noded: Target, msg_type: str, body: bytes,
                                                           credential) -> None:
    """launch_tasks with junk, or a well-formed launch with a junk step credential: refused."""
    w = Wire(noded)
    try:
        w.exchange([b""] + envelope.seal_raw(noded.auth, msg_type, body))
        launch = {"job_id": 1, "step_id": 0, "node_id": 0, "task_ids": [0], "ntasks": 1, "nodelist": ["n1"],
                  "tasks_per_node": [1], "argv": ["/bin/touch", str(noded.cluster.dir / "launched")],
                  "credential": credential}
        w.exchange([b""] + envelope.seal(noded.auth, "launch_tasks", launch))
        assert w.answers and all("code" in a for a in w.answers), w.answers
    finally:
        w.close()
    assert not psutil.Process(noded.pid).children(), "plurmd started something"
    assert not (noded.cluster.dir / "launched").exists()


# ----------------------------------------------------------------- where the daemons listen
def test_the_daemons_listen_only_on_the_address_slurm_conf_gives(tmp_path: Path) -> None:
    ctld_port, node_port = free_ports(2)
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"""ClusterName=bound
SlurmctldHost=localhost(127.0.0.2)
SlurmctldPort={ctld_port}
MessageTimeout={MESSAGE_TIMEOUT}
StateSaveLocation={tmp_path}/state
SlurmdSpoolDir={tmp_path}/spool/%n
NodeName=b1 NodeHostname=localhost NodeAddr=127.0.0.2 Port={node_port} CPUs=1 RealMemory=500
PartitionName=main Nodes=b1 Default=YES State=UP
""")
    write_key(tmp_path / "slurm.key")
    env = dict(os.environ, SLURM_CONF=str(conf))
    procs = [subprocess.Popen(command("plurmctld") + ["-D", "-f", str(conf)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen(command("plurmd") + ["-D", "-N", "b1"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        settings_ = read_settings(str(conf))
        assert settings_.host == "127.0.0.2"

        def pinged() -> bool:
            try:
                return request("ping", {}, settings_).get("ok") is True
            except Exception:
                return False

        wait_for(pinged, timeout=30, what="plurmctld on 127.0.0.2")
        wait_for(lambda: _accepts("127.0.0.2", node_port), timeout=30, what="plurmd on 127.0.0.2")
        for port in (ctld_port, node_port):
            for addr in ("127.0.0.3", "127.0.0.1"):
                assert not _accepts(addr, port), f"{addr}:{port} accepted a connection"
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=15)


def _accepts(addr: str, port: int) -> bool:
    try:
        socket.create_connection((addr, port), timeout=2).close()
        return True
    except OSError:
        return False
