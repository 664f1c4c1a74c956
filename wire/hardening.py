"""Bounds on what any peer may cost a daemon, set on its ZeroMQ sockets.

The daemons (plurmctld, plurmd) import this; the user commands never do (it imports
zmq).  What the bounds buy: a frame announced larger than MAX_MESSAGE_BYTES is
refused at its header, before anything is buffered (the peer is disconnected); at
most PEER_RCVHWM messages are read ahead from one peer (the rest waits in the
kernel: back-pressure, not memory); a connection that does not finish the ZMTP
greeting within the handshake interval is closed; a peer that stops answering ZMTP
PINGs (a half-open connection, a peer that connected and went silent) is closed after
the heartbeat timeout.  The intervals follow slurm.conf's MessageTimeout (Slurm's
default 10 s): handshake MessageTimeout/2 (at least 1 s), PINGs every MessageTimeout,
closed after 3 x MessageTimeout of silence.

libzmq checks MAXMSGSIZE per frame, not per message, and keeps the frames of a
multipart message until its last one arrives: a peer sending endless frames of 1 MiB
with the MORE flag would be buffered without end, before any credential is looked
at.  :class:`PeerGuard` closes such a peer: it compares what the kernel received on
each connection (TCP_INFO) with what the socket delivered from it (each message's
source descriptor, ZMQ_SRCFD), and shuts down a connection holding more than
PEER_BUFFER_BYTES undelivered, or the biggest ones while all of them together hold
more than TOTAL_BUFFER_BYTES.
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import struct
import termios
import threading
import time
from typing import Any

import zmq

log = logging.getLogger("plurm.hardening")

# A batch script is at most 4 MB (max_script_size); its environment rides beside it.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
PEER_RCVHWM = 64
MESSAGE_TIMEOUT_S = 10.0  # slurm.conf's MessageTimeout, when it says nothing
# Undelivered bytes one connection may hold in the daemon (a whole message being
# received and one read ahead), and all of them together.
PEER_BUFFER_BYTES = 2 * MAX_MESSAGE_BYTES + 64 * 1024
TOTAL_BUFFER_BYTES = 256 * 1024 * 1024
GUARD_INTERVAL_S = 0.05
# While some connection holds more than WATCH_BYTES undelivered, the guard looks every
# WATCH_INTERVAL_S: on loopback a sender pushes ~100 MB in 50 ms, well past PEER_BUFFER_BYTES.
WATCH_BYTES = 1024 * 1024
WATCH_INTERVAL_S = 0.002


def message_timeout(conf: Any = None) -> float:
    """slurm.conf's MessageTimeout in seconds (10 when unset or unreadable)."""
    raw = conf.get("MessageTimeout") if conf is not None else None
    try:
        value = float(raw) if raw not in (None, "") else MESSAGE_TIMEOUT_S
    except (TypeError, ValueError):
        return MESSAGE_TIMEOUT_S
    return value if value > 0 else MESSAGE_TIMEOUT_S


def intervals(timeout_s: float = MESSAGE_TIMEOUT_S) -> tuple[float, float, float]:
    """(handshake, heartbeat interval, heartbeat timeout) in seconds for a MessageTimeout."""
    return max(1.0, timeout_s / 2), timeout_s, 3 * timeout_s


def harden(sock: zmq.Socket, conf: Any = None) -> None:
    """Bounds on what any peer may cost a daemon's ROUTER socket (see the module's text);
    ``conf`` (a SlurmConf, or MessageTimeout in seconds) sets the intervals."""
    timeout_s = float(conf) if isinstance(conf, (int, float)) else message_timeout(conf)
    handshake, heartbeat, heartbeat_timeout = intervals(timeout_s)
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    sock.setsockopt(zmq.RCVHWM, PEER_RCVHWM)
    sock.setsockopt(zmq.HANDSHAKE_IVL, int(handshake * 1000))
    sock.setsockopt(zmq.HEARTBEAT_IVL, int(heartbeat * 1000))
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(heartbeat_timeout * 1000))
    sock.setsockopt(zmq.HEARTBEAT_TTL, int(heartbeat_timeout * 1000))


def bind_address(addr: str) -> str:
    """The address slurm.conf gives the daemon, resolved: it listens there and nowhere else."""
    if addr in ("", "localhost"):
        return "127.0.0.1"
    try:
        return socket.getaddrinfo(addr, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
    except OSError:
        return addr


# ----------------------------------------------------------------- undelivered bytes
_TCP_INFO_LEN = 136  # up to tcpi_bytes_received (Linux 4.1+)
_BYTES_RECEIVED = struct.Struct("=Q")
_BYTES_RECEIVED_AT = 128


def wire_bytes(frames: list) -> int:
    """What ``frames`` (a message as a peer sent it, without the ROUTER's routing id)
    took on the wire: ZMTP 3 frames carry 2 header bytes, 9 from 256 bytes on."""
    total = 0
    for frame in frames:
        n = len(frame)
        total += n + (2 if n < 256 else 9)
    return total


class _Peer:
    __slots__ = ("peer", "seen", "delivered")

    def __init__(self, peer: object, now: float) -> None:
        self.peer = peer
        self.seen = now
        self.delivered = 0


class PeerGuard:
    """Shuts down connections of a ROUTER socket that hold too many undelivered bytes.

    Runs a thread of its own (it reads the socket's monitor for accepted connections and
    looks at each one's TCP_INFO every GUARD_INTERVAL_S); the thread that reads the socket
    calls :meth:`delivered` for each message (GuardedRouter does).  Allowance for what
    is not a message (the greeting, READY, PONGs): 4 KiB plus 64 bytes per second of the
    connection's life.
    """

    def __init__(self, sock: zmq.Socket, port: int, per_peer: int = PEER_BUFFER_BYTES,
                 total: int = TOTAL_BUFFER_BYTES, interval_s: float = GUARD_INTERVAL_S) -> None:
        self.port = port
        self.per_peer = per_peer
        self.total = total
        self.interval_s = interval_s
        self.closed = 0  # connections shut down, for tests and logs
        self._peers: dict[int, _Peer] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._endpoint = f"inproc://plurm-peer-guard-{id(self):x}"
        self._ctx = sock.context
        sock.monitor(self._endpoint, zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_CLOSED)
        self._thread = threading.Thread(target=self._run, name="peer-guard", daemon=True)
        self._thread.start()

    def delivered(self, fd: int, nbytes: int) -> None:
        with self._lock:
            state = self._peers.get(fd)
            if state is not None:
                state.delivered += nbytes

    def stop(self) -> None:
        self._stop.set()

    # -- the guard's thread
    def _run(self) -> None:
        mon = self._ctx.socket(zmq.PAIR)
        mon.setsockopt(zmq.LINGER, 0)
        mon.connect(self._endpoint)
        try:
            next_check = time.monotonic()
            while not self._stop.is_set():
                if mon.poll(max(0.0, next_check - time.monotonic()) * 1000):
                    self._events(mon)
                if time.monotonic() >= next_check:
                    held = 0
                    try:
                        held = self.check()
                    except Exception:  # never let the guard die: log and go on
                        log.exception("peer guard check failed")
                    next_check = time.monotonic() + (WATCH_INTERVAL_S if held > WATCH_BYTES else self.interval_s)
        finally:
            mon.close()

    def _events(self, mon: zmq.Socket) -> None:
        while True:
            try:
                parts = mon.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if len(parts) < 2 or len(parts[0]) < 6:
                continue
            event, value = struct.unpack("=HI", parts[0][:6])
            with self._lock:
                if event == zmq.EVENT_ACCEPTED:
                    self._peers[value] = _Peer(None, time.monotonic())
                else:
                    self._peers.pop(value, None)

    def _received(self, fd: int, state: _Peer) -> int | None:
        """Bytes the kernel received on ``fd`` and passed on to libzmq (None: not ours)."""
        try:
            sock = socket.socket(fileno=os.dup(fd))
        except OSError:
            return None
        try:
            if sock.type != socket.SOCK_STREAM or sock.getsockname()[1] != self.port:
                return None
            peer = sock.getpeername()
            if state.peer is None:
                state.peer = peer
            elif state.peer != peer:  # the descriptor now is another connection
                return None
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
            if len(info) < _TCP_INFO_LEN:
                return None
            (received,) = _BYTES_RECEIVED.unpack_from(info, _BYTES_RECEIVED_AT)
            queued = struct.unpack("i", fcntl.ioctl(sock, termios.FIONREAD, b"\0\0\0\0"))[0]
            return received - queued
        except OSError:
            return None
        finally:
            sock.close()

    def check(self) -> int:
        """Shut what holds too much; the most any connection still holds undelivered."""
        now = time.monotonic()
        with self._lock:
            peers = list(self._peers.items())
        held: list[tuple[int, int]] = []
        for fd, state in peers:
            received = self._received(fd, state)
            if received is None:
                with self._lock:
                    if self._peers.get(fd) is state:
                        del self._peers[fd]
                continue
            allowance = 4096 + int(64 * (now - state.seen))
            held.append((max(0, received - state.delivered - allowance), fd))
        held.sort(reverse=True)
        total = sum(h for h, _ in held)
        kept = list(held)
        for nbytes, fd in held:
            if nbytes <= self.per_peer and total <= self.total:
                break
            if nbytes == 0:
                break
            self._shut(fd, nbytes)
            kept.remove((nbytes, fd))
            total -= nbytes
        return kept[0][0] if kept else 0

    def _shut(self, fd: int, nbytes: int) -> None:
        with self._lock:
            state = self._peers.pop(fd, None)
        try:
            sock = socket.socket(fileno=os.dup(fd))
        except OSError:
            return
        try:
            if state is None or sock.getpeername() != state.peer:
                return
            sock.shutdown(socket.SHUT_RDWR)  # libzmq sees the end and drops what it held
            self.closed += 1
            log.warning("closed connection from %s: %d bytes received and not yet a message", state.peer[0],
                        nbytes)
        except OSError:
            pass
        finally:
            sock.close()


class GuardedRouter(zmq.Socket):
    """A ROUTER whose recv_multipart tells its PeerGuard (``guard``) what each connection
    delivered.  Make it with ``ctx.socket(zmq.ROUTER, socket_class=GuardedRouter)``."""

    guard: PeerGuard | None = None

    def recv_multipart(self, flags: int = 0, copy: bool = True, track: bool = False) -> list:  # type: ignore[override]
        parts = super().recv_multipart(flags, copy=False, track=track)
        guard = self.guard
        if guard is not None and parts:
            try:
                fd = parts[-1].get(zmq.SRCFD)
            except zmq.ZMQError:
                fd = -1
            guard.delivered(fd, wire_bytes(parts[1:]))
        return [p.bytes for p in parts] if copy else parts


def guarded_router(ctx: zmq.Context, conf: Any = None) -> GuardedRouter:
    """A hardened ROUTER (see :func:`harden`); call :func:`guard` once it is bound."""
    sock = ctx.socket(zmq.ROUTER, socket_class=GuardedRouter)
    harden(sock, conf)
    return sock


def guard(sock: GuardedRouter, port: int) -> PeerGuard:
    """Start the PeerGuard of a GuardedRouter bound on ``port``."""
    sock.guard = PeerGuard(sock, port)
    return sock.guard
