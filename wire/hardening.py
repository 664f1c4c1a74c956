"""Bounds on what any peer may cost a daemon, set on its ZeroMQ sockets.

The daemons (plurmctld, plurmd) import this; the user commands never do (it imports
zmq).  What the bounds buy: a frame announced larger than MAX_MESSAGE_BYTES is
refused at its header, before anything is buffered (the peer is disconnected); at
most PEER_RCVHWM messages are read ahead from one peer (the rest waits in the
kernel: back-pressure, not memory); a connection that does not finish the ZMTP
greeting within HANDSHAKE_S is closed; a peer that stops answering ZMTP PINGs (a
half-open connection, a peer that connected and went silent) is closed after
HEARTBEAT_TIMEOUT_S.
"""

from __future__ import annotations

import socket

import zmq

# A batch script is at most 4 MB (max_script_size); its environment rides beside it.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
PEER_RCVHWM = 64
HANDSHAKE_S = 5.0  # a connection that does not finish the ZMTP greeting in this is closed
HEARTBEAT_S = 10.0  # peers are PINGed this often; one silent for HEARTBEAT_TIMEOUT_S is closed
HEARTBEAT_TIMEOUT_S = 30.0


def harden(sock: zmq.Socket) -> None:
    """Bounds on what any peer may cost a daemon's ROUTER socket (see the constants)."""
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    sock.setsockopt(zmq.RCVHWM, PEER_RCVHWM)
    sock.setsockopt(zmq.HANDSHAKE_IVL, int(HANDSHAKE_S * 1000))
    sock.setsockopt(zmq.HEARTBEAT_IVL, int(HEARTBEAT_S * 1000))
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(HEARTBEAT_TIMEOUT_S * 1000))
    sock.setsockopt(zmq.HEARTBEAT_TTL, int(HEARTBEAT_TIMEOUT_S * 1000))


def bind_address(addr: str) -> str:
    """The address slurm.conf gives the daemon, resolved: it listens there and nowhere else."""
    if addr in ("", "localhost"):
        return "127.0.0.1"
    try:
        return socket.getaddrinfo(addr, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except OSError:
        return addr
