"""The commands' ZMTP client (wire/zmtp.py) and a peer that closes right after its last message:
a heartbeat PING read before that message is answered if it can be, and the message is still
read -- an event-stream reader learns why it was dropped (the controller sends the reason, then
closes), instead of "Broken pipe" (CI, tests/integration/test_event_stream.py)."""

from __future__ import annotations

import socket

import pytest

from plurm.wire.zmtp import DealerConnection, ZmtpError


def _client(sock: socket.socket) -> DealerConnection:
    conn = DealerConnection.__new__(DealerConnection)  # (the handshake is not what is tested)
    conn._sock, conn._buf = sock, bytearray()
    return conn


def _ping_then_message_then_close() -> DealerConnection:
    mine, peer = socket.socketpair()
    ping = b"\x04PING" + b"\x00\x10" + b"ctx"
    peer.sendall(bytes([0x04, len(ping)]) + ping + bytes([0x00, 5]) + b"hello")
    peer.close()
    return _client(mine)


def test_the_message_after_a_ping_is_read_though_the_peer_has_gone() -> None:
    conn = _ping_then_message_then_close()
    assert conn.readable(1.0)
    assert conn.recv() == [b"hello"]
    with pytest.raises(ZmtpError):  # then the end, as before
        conn.readable(1.0)


def test_recv_alone_reads_past_the_ping_too() -> None:
    conn = _ping_then_message_then_close()
    assert conn.recv() == [b"hello"]
