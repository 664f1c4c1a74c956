"""A minimal ZMTP 3 client (DEALER, NULL mechanism) over a plain socket.

Why not pyzmq here: `import zmq` costs about 30 ms on this kind of machine,
and sbatch/squeue are called in loops by workflow engines, so the user
commands speak the ZeroMQ wire protocol (RFC 23/ZMTP) themselves for their
single request/reply.  The daemons use pyzmq (ROUTER sockets); the test
suite runs this client against them, and PLURM_CLIENT_TRANSPORT=pyzmq
switches the commands to pyzmq for comparison.

Only what a request/reply client needs: greeting, READY handshake,
multipart frames, and answering the daemon's heartbeat PINGs with PONG (a daemon
closes a peer that stays silent past its heartbeat timeout).
"""

from __future__ import annotations

# The C modules, not `socket`/`struct`: their Python wrappers import enum,
# selectors and more (about 3 ms of every command's start-up).
import _socket
import _struct

_GREETING = (
    b"\xff" + b"\x00" * 8 + b"\x7f"  # signature
    + b"\x03\x00"  # version 3.0
    + b"NULL".ljust(20, b"\x00")  # mechanism
    + b"\x00"  # as-server: no
    + b"\x00" * 31  # filler
)

_FLAG_MORE = 0x01
_FLAG_LONG = 0x02
_FLAG_COMMAND = 0x04


class ZmtpError(OSError):
    pass


def _pack_u32(value: int) -> bytes:
    return _struct.pack(">I", value)


def _connect(host: str, port: int, timeout: float) -> _socket.socket:
    last: OSError | None = None
    # An ASCII host name goes in as bytes: a str would load the idna codec (and `re`),
    # about 5 ms of every command's start-up.
    name: str | bytes = host.encode("ascii") if host.isascii() else host
    for family, kind, proto, _name, address in _socket.getaddrinfo(name, port, 0, _socket.SOCK_STREAM):
        sock = _socket.socket(family, kind, proto)
        sock.settimeout(timeout)
        try:
            sock.connect(address)
            return sock
        except OSError as exc:
            sock.close()
            last = exc
    raise last or OSError(f"cannot resolve {host}")


def _ready_command(socket_type: bytes) -> bytes:
    name = b"Socket-Type"
    body = b"\x05READY" + bytes([len(name)]) + name + _pack_u32(len(socket_type)) + socket_type
    return bytes([_FLAG_COMMAND, len(body)]) + body


def _frame(data: bytes, more: bool) -> bytes:
    flags = _FLAG_MORE if more else 0
    if len(data) < 256:
        return bytes([flags, len(data)]) + data
    return bytes([flags | _FLAG_LONG]) + _struct.pack(">Q", len(data)) + data


def _pong(context: bytes) -> bytes:
    body = b"\x04PONG" + context[:16]
    return bytes([_FLAG_COMMAND, len(body)]) + body


class DealerConnection:
    """One connected DEALER peer; send() and recv() multipart messages."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        self._sock = _connect(host, port, timeout)
        self._sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        self._buf = bytearray()
        self._sock.sendall(_GREETING + _ready_command(b"DEALER"))
        greeting = self._read(64)
        if greeting[0] != 0xFF or greeting[9] != 0x7F or greeting[10] < 3:
            raise ZmtpError("peer does not speak ZMTP 3")
        if greeting[12:16] != b"NULL":
            raise ZmtpError("peer wants a security mechanism other than NULL")
        flags, body = self._read_frame()
        if not flags & _FLAG_COMMAND or not body.startswith(b"\x05READY"):
            raise ZmtpError("peer did not send READY")

    def _read(self, count: int) -> bytes:
        while len(self._buf) < count:
            chunk = self._sock.recv(max(65536, count - len(self._buf)))
            if not chunk:
                raise ZmtpError("connection closed by peer")
            self._buf += chunk
        data = bytes(self._buf[:count])
        del self._buf[:count]
        return data

    def _read_frame(self) -> tuple[int, bytes]:
        flags = self._read(1)[0]
        if flags & _FLAG_LONG:
            (size,) = _struct.unpack(">Q", self._read(8))
        else:
            size = self._read(1)[0]
        return flags, self._read(size)

    def set_timeout(self, timeout: float) -> None:
        """The limit on each later read or write (the handshake may have had a shorter one)."""
        self._sock.settimeout(timeout)

    def send(self, frames: list[bytes]) -> None:
        last = len(frames) - 1
        self._sock.sendall(b"".join(_frame(f, i < last) for i, f in enumerate(frames)))

    def recv(self) -> list[bytes]:
        frames: list[bytes] = []
        while True:
            flags, body = self._read_frame()
            if flags & _FLAG_COMMAND:
                if body.startswith(b"\x04PING") and len(body) >= 7:
                    self._pong(body[7:])  # echo the ping's context
                continue  # other commands: nothing to do for a one-shot client
            frames.append(body)
            if not flags & _FLAG_MORE:
                return frames

    def fileno(self) -> int:
        """The socket's descriptor, for an event loop to wait on (rest/routes_events.py)."""
        return self._sock.fileno()

    def readable(self, timeout: float) -> bool:
        """Whether a message has begun to arrive within ``timeout`` s (then recv() reads it whole):
        a stream's reader waits here, never inside a frame (journal_client.py).  Heartbeats
        (ZMTP PING commands) that arrive meanwhile are answered here and are no message."""
        import select
        import time

        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            self._skip_commands()
            if self._buf and not self._buf[0] & _FLAG_COMMAND:
                return True
            if not select.select([self._sock], [], [], max(0.0, deadline - time.monotonic()))[0]:
                return False
            chunk = self._sock.recv(65536)  # (readable: it does not block)
            if not chunk:
                raise ZmtpError("connection closed by peer")
            self._buf += chunk

    def _skip_commands(self) -> None:
        """Complete command frames at the head of what has been read: PING answered, all dropped."""
        buf = self._buf
        while len(buf) >= 2 and buf[0] & _FLAG_COMMAND:
            if buf[0] & _FLAG_LONG:
                if len(buf) < 9:
                    return
                (size,), head = _struct.unpack(">Q", bytes(buf[1:9])), 9
            else:
                size, head = buf[1], 2
            if len(buf) < head + size:
                return
            body = bytes(buf[head:head + size])
            del buf[:head + size]
            if body.startswith(b"\x04PING") and len(body) >= 7:
                self._pong(body[7:])

    def _pong(self, context: bytes) -> None:
        """Answer a heartbeat.  A peer that has closed since (a controller dropping a stream's
        reader sends its reason, then closes) cannot take the answer: what it sent before is
        still here to read, so that is no error; reading past it reports the end."""
        try:
            self._sock.sendall(_pong(context))
        except OSError:
            pass

    def close(self) -> None:
        self._sock.close()
