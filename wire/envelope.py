"""The envelope of every plurm message: framing, credentials, replay checks.

A message is four ZeroMQ frames (after the ROUTER's identity and the
empty delimiter)::

    b"PLURM1"   protocol tag: the wire protocol's version, apart from the package's
    header      JSON: {"v", "id", "type", "uid", "gid", "time", "parent"?}
    body        JSON: the message type's fields (schemas in protocol.py)
    credential  the sender's AuthType credential (wire/auth.py) over a digest of
                tag + header + body

The header's uid and gid are only what the sender says; :func:`open_envelope`
returns who the credential proves the sender is, and that is what daemons act on.

This module is deliberately free of msgspec and zmq: the user commands
(sbatch, squeue, ...) import it on their start-up path, where every
millisecond is paid by every call.  The daemons validate bodies against the
typed schemas of protocol.py after :func:`open_envelope` has checked the
credential.
"""

from __future__ import annotations

import os
import time
from plurm.wire import lightjson as json
from plurm.wire.auth import AuthError as _AuthError
from plurm.wire.auth import AuthPlugin, Verified, load_key, message_digest, new_key  # noqa: F401 (re-exported)

PROTOCOL_TAG = b"PLURM1"
PROTOCOL_VERSION = 2
# A message older (or newer) than this is refused: it bounds the replay cache.
MAX_CLOCK_SKEW_S = 300.0
# A daemon refuses messages sealed before it started, less this slack for clocks that
# tick apart: a message captured before a restart cannot be replayed after it (the
# replay cache of ids is in memory only).
RESTART_SLACK_S = 1.0
# A header's message type and id are short words; longer ones are refused (the replay
# cache keeps every id it saw for 2 x MAX_CLOCK_SKEW_S).
MAX_HEADER_STRING = 128


class WireError(Exception):
    """A message that cannot be accepted; ``code`` is a Slurm-like errno name."""

    def __init__(self, message: str, code: str = "ProtocolError") -> None:
        super().__init__(message)
        self.code = code


class AuthError(WireError, _AuthError):
    """Bad or missing credential: the peer is not authenticated; drop it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "AuthenticationError")


class Opened(tuple):
    """(header, body, sender) of an opened envelope; ``sender`` is who the credential proves
    sent it (never the header's claim).  A tuple with names, without ``typing``."""

    __slots__ = ()

    def __new__(cls, header: dict, body: bytes, sender: Verified) -> Opened:
        return tuple.__new__(cls, (header, body, sender))

    @property
    def header(self) -> dict:
        return self[0]

    @property
    def body(self) -> bytes:
        return self[1]

    @property
    def sender(self) -> Verified:
        return self[2]


_counter = 0


def make_header(msg_type: str, parent: str | None = None) -> dict:
    global _counter
    _counter += 1
    header = {
        "v": PROTOCOL_VERSION,
        "id": f"{os.getpid():x}-{_counter:x}-{os.urandom(4).hex()}",
        "type": msg_type,
        "uid": os.getuid(),
        "gid": os.getgid(),
        "time": time.time(),
    }
    if parent is not None:
        header["parent"] = parent
    return header


def seal(auth: AuthPlugin, msg_type: str, body: dict, parent: str | None = None) -> list[bytes]:
    """Frames for one message of ``msg_type`` carrying ``body``."""
    return seal_raw(auth, msg_type, json.dumps(body).encode(), parent)


def seal_raw(auth: AuthPlugin, msg_type: str, payload: bytes, parent: str | None = None) -> list[bytes]:
    """Like :func:`seal` for a body that is already encoded JSON."""
    header = json.dumps(make_header(msg_type, parent)).encode()
    try:
        credential = auth.credential(message_digest(PROTOCOL_TAG, header, payload))
    except _AuthError as exc:
        raise AuthError(str(exc)) from None
    return [PROTOCOL_TAG, header, payload, credential]


def open_envelope(auth: AuthPlugin, frames: list[bytes], allow_replay: bool = False) -> Opened:
    """Check tag, credential and age; return the header, raw body and proven sender.

    Raises AuthError for anything whose sender is not proven, WireError for an
    authenticated message that is malformed.
    """
    if len(frames) != 4 or frames[0] != PROTOCOL_TAG:
        raise AuthError(f"not a plurm message ({len(frames)} frames)")
    _tag, header_raw, body, credential = (bytes(f) for f in frames)
    try:
        sender = auth.verify(credential, message_digest(PROTOCOL_TAG, header_raw, body), allow_replay)
    except _AuthError as exc:
        raise AuthError(str(exc)) from None
    try:
        header = json.loads(header_raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
        raise WireError(f"malformed header: {exc}") from None
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise WireError("malformed header: no message type")
    if len(header["type"]) > MAX_HEADER_STRING or len(str(header.get("id", ""))) > MAX_HEADER_STRING:
        raise WireError("malformed header: message type or id too long")
    if header.get("v") != PROTOCOL_VERSION:
        raise WireError(f"unsupported protocol version {_short(header.get('v'))}", "ProtocolVersionError")
    sent = header.get("time")
    if isinstance(sent, bool) or not isinstance(sent, (int, float)) or not -1e12 < sent < 1e12 \
            or abs(time.time() - sent) > MAX_CLOCK_SKEW_S:
        raise AuthError("message too old or clock skew too large")
    return Opened(header, body, sender)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class ReplayGuard:
    """Refuses a message id seen before (remembered for 2 x MAX_CLOCK_SKEW_S) and any
    message sealed before ``not_before`` (the daemon's start): together a replay is
    refused across restarts without writing the cache anywhere."""

    def __init__(self, not_before: float | None = None) -> None:
        self._seen: dict[str, float] = {}
        self._next_sweep = time.monotonic() + 60.0
        self.not_before = (time.time() if not_before is None else not_before) - RESTART_SLACK_S

    def check(self, header: dict) -> None:
        msg_id = header.get("id")
        if not isinstance(msg_id, str):
            raise WireError("malformed header: no message id")
        sent = header.get("time")
        if isinstance(sent, (int, float)) and sent < self.not_before:
            raise AuthError(f"message {msg_id} was sealed before this daemon started (a replay?)")
        if msg_id in self._seen:
            raise AuthError(f"replayed message {msg_id}")
        now = time.monotonic()
        self._seen[msg_id] = now
        if now > self._next_sweep:
            horizon = now - 2 * MAX_CLOCK_SKEW_S
            self._seen = {k: t for k, t in self._seen.items() if t > horizon}
            self._next_sweep = now + 60.0
