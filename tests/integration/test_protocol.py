"""Bad messages: an error reply or, for unauthenticated peers, silence; the daemon carries on."""

from __future__ import annotations

import json

import pytest
import zmq

from plurm.wire import auth, envelope
from plurm.wire.client import client_auth, read_settings
from plurmtest import Cluster


@pytest.fixture
def peer(cluster: Cluster):
    settings = read_settings(str(cluster.conf))
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 2000)
    sock.connect(f"tcp://{settings.host}:{settings.port}")
    key = client_auth(settings)
    yield sock, key
    sock.close()
    ctx.term()


def _reply(sock) -> tuple[dict, dict] | None:
    try:
        frames = sock.recv_multipart()
    except zmq.Again:
        return None
    header = json.loads(frames[2])
    return header, json.loads(frames[3])


def _alive(sock, key) -> None:
    sock.send_multipart([b""] + envelope.seal(key, "ping", {}))
    assert _reply(sock)[1]["ok"] is True


def test_unknown_message_type_gets_error(peer) -> None:
    sock, key = peer
    sock.send_multipart([b""] + envelope.seal(key, "make_coffee", {}))
    header, body = _reply(sock)
    assert header["type"] == "error" and body["code"] == "UnknownMessage"
    _alive(sock, key)


def test_malformed_body_gets_error(peer) -> None:
    sock, key = peer
    sock.send_multipart([b""] + envelope.seal_raw(key, "submit_job", b'{"spec": {"nodes_min": "many"}}'))
    header, body = _reply(sock)
    assert header["type"] == "error" and body["code"] == "MalformedMessage"
    assert "nodes_min" in body["message"]
    sock.send_multipart([b""] + envelope.seal_raw(key, "job_info", b"not json"))
    assert _reply(sock)[1]["code"] == "MalformedMessage"
    _alive(sock, key)


def test_unsigned_and_forged_messages_are_dropped(peer) -> None:
    sock, key = peer
    sock.send_multipart([b"", b"hello"])
    assert _reply(sock) is None
    frames = envelope.seal(auth.KeyAuth(b"not-the-key"), "job_info", {})
    sock.send_multipart([b""] + frames)
    assert _reply(sock) is None
    _alive(sock, key)


def test_replayed_message_is_dropped(peer) -> None:
    sock, key = peer
    frames = [b""] + envelope.seal(key, "ping", {})
    sock.send_multipart(frames)
    assert _reply(sock) is not None
    sock.send_multipart(frames)
    assert _reply(sock) is None


def test_wrong_protocol_version_gets_error(peer) -> None:
    sock, key = peer
    header = envelope.make_header("ping")
    header["v"] = 99
    raw = json.dumps(header).encode()
    body = b"{}"
    credential = key.credential(auth.message_digest(envelope.PROTOCOL_TAG, raw, body))
    sock.send_multipart([b"", envelope.PROTOCOL_TAG, raw, body, credential])
    header, reply = _reply(sock)
    assert reply["code"] == "ProtocolVersionError"


def test_plain_zmtp_client_and_pyzmq_client_agree(cluster: Cluster, monkeypatch) -> None:
    from plurm.wire.client import request

    settings = read_settings(str(cluster.conf))
    plain = request("node_info", {}, settings)
    monkeypatch.setenv("PLURM_CLIENT_TRANSPORT", "pyzmq")
    via_pyzmq = request("node_info", {}, settings)
    assert [n["name"] for n in plain["nodes"]] == [n["name"] for n in via_pyzmq["nodes"]]
