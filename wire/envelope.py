"""The envelope of every plurm message: framing, signing, replay checks.

A message is four ZeroMQ frames (after the ROUTER's identity and the
empty delimiter)::

    b"PLURM1"   protocol tag: the wire protocol's version, apart from the package's
    header      JSON: {"v", "id", "type", "uid", "gid", "user", "host", "time", "parent"?}
    body        JSON: the message type's fields (schemas in protocol.py)
    signature   hex HMAC-SHA256 over tag + header + body with the cluster key

This module is deliberately free of msgspec and zmq: the user commands
(sbatch, squeue, ...) import it on their start-up path, where every
millisecond is paid by every call.  The daemons validate bodies against the
typed schemas of protocol.py after :func:`open_envelope` has checked the
signature.
"""

from __future__ import annotations

import os
import time
from _operator import _compare_digest as compare_digest

from plurm.wire import lightjson as json

try:  # the small built-in SHA-256; `hashlib` loads OpenSSL (about 2 ms per command)
    from _sha256 import sha256 as _sha256
except ImportError:  # Python 3.12+: _sha2
    from _sha2 import sha256 as _sha256  # type: ignore[no-redef]

PROTOCOL_TAG = b"PLURM1"
PROTOCOL_VERSION = 1
# A message older (or newer) than this is refused: it bounds the replay cache.
MAX_CLOCK_SKEW_S = 300.0


class WireError(Exception):
    """A message that cannot be accepted; ``code`` is a Slurm-like errno name."""

    def __init__(self, message: str, code: str = "ProtocolError") -> None:
        super().__init__(message)
        self.code = code


class AuthError(WireError):
    """Bad or missing signature: the peer is not authenticated; drop it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "AuthenticationError")


def load_key(path: str) -> bytes:
    """Read the cluster key; refuse an empty one (unlike Jupyter's default)."""
    with open(path, "rb") as handle:
        key = handle.read().strip()
    if not key:
        raise AuthError(f"empty authentication key in {path}")
    return key


def new_key() -> bytes:
    return os.urandom(32).hex().encode()


_BLOCK = 64  # SHA-256's block size
_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))


def _sign(key: bytes, header: bytes, body: bytes) -> bytes:
    """HMAC-SHA256 (RFC 2104) over tag + header + body, written out to avoid
    importing hmac/hashlib; tests compare it with the hmac module."""
    if len(key) > _BLOCK:
        key = _sha256(key).digest()
    key = key.ljust(_BLOCK, b"\0")
    inner = _sha256(key.translate(_IPAD))
    inner.update(PROTOCOL_TAG)
    inner.update(header)
    inner.update(body)
    outer = _sha256(key.translate(_OPAD))
    outer.update(inner.digest())
    return outer.hexdigest().encode()


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


def seal(key: bytes, msg_type: str, body: dict, parent: str | None = None) -> list[bytes]:
    """Frames for one message of ``msg_type`` carrying ``body``."""
    header = json.dumps(make_header(msg_type, parent)).encode()
    payload = json.dumps(body).encode()
    return [PROTOCOL_TAG, header, payload, _sign(key, header, payload)]


def seal_raw(key: bytes, msg_type: str, payload: bytes, parent: str | None = None) -> list[bytes]:
    """Like :func:`seal` for a body that is already encoded JSON."""
    header = json.dumps(make_header(msg_type, parent)).encode()
    return [PROTOCOL_TAG, header, payload, _sign(key, header, payload)]


def open_envelope(key: bytes, frames: list[bytes]) -> tuple[dict, bytes]:
    """Check tag, signature and age; return (header, raw body).

    Raises AuthError for anything that is not provably from a key holder,
    WireError for a signed message that is malformed.
    """
    if len(frames) != 4 or frames[0] != PROTOCOL_TAG:
        raise AuthError(f"not a plurm message ({len(frames)} frames)")
    _tag, header_raw, body, signature = frames
    if not compare_digest(_sign(key, header_raw, body), bytes(signature)):
        raise AuthError("bad message signature")
    try:
        header = json.loads(header_raw)
    except ValueError as exc:
        raise WireError(f"malformed header: {exc}") from None
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise WireError("malformed header: no message type")
    if header.get("v") != PROTOCOL_VERSION:
        raise WireError(f"unsupported protocol version {header.get('v')!r}", "ProtocolVersionError")
    sent = header.get("time")
    if not isinstance(sent, (int, float)) or abs(time.time() - sent) > MAX_CLOCK_SKEW_S:
        raise AuthError("message too old or clock skew too large")
    return header, body


class ReplayGuard:
    """Remembers message ids for MAX_CLOCK_SKEW_S to refuse replays."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}
        self._next_sweep = time.monotonic() + 60.0

    def check(self, header: dict) -> None:
        msg_id = header.get("id")
        if not isinstance(msg_id, str):
            raise WireError("malformed header: no message id")
        if msg_id in self._seen:
            raise AuthError(f"replayed message {msg_id}")
        now = time.monotonic()
        self._seen[msg_id] = now
        if now > self._next_sweep:
            horizon = now - 2 * MAX_CLOCK_SKEW_S
            self._seen = {k: t for k, t in self._seen.items() if t > horizon}
            self._next_sweep = now + 60.0
