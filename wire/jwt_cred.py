"""A JWT carried beside a message's own credential (``AuthAltTypes=auth/jwt``).

slurmrestd passes the token of each REST request on to slurmctld, whose auth/jwt plugin
decides who the request is from; plurm does the same.  plurmrestd (or any client holding a
token) seals its messages with its own AuthType credential, as every client does, and puts
the token and the user name it was presented with in front of it::

    b"jwt1\\0" + token + b"\\0" + user name + b"\\0" + the sender's own credential

The controller checks the sender's own credential first (the message is whole and really
comes from that process: an unproven one is dropped as any other), then the token
(corescheduler/jwt_auth.py): the request is acted on as the token's user, never as the
user plurmrestd says it serves.

Light on purpose (no PyJWT here): a client only carries the token; the controller alone
verifies it, with the key that only it (and SlurmUser) can read.
"""

from __future__ import annotations

from plurm.wire.auth import AuthPlugin, Verified

PREFIX = b"jwt1\0"
MAX_TOKEN = 8192  # a token longer than this is refused unread (Slurm's are ~200 bytes)


class TokenCredential:
    """An AuthType plugin that wraps another and adds a token to every credential it makes;
    replies (the controller's own credentials) are checked by the wrapped plugin."""

    def __init__(self, primary: AuthPlugin, token: str, user_name: str = "") -> None:
        if not token or "\0" in token or "\0" in user_name:
            raise ValueError("a token and user name without NUL bytes are needed")
        self.primary = primary
        self.name = getattr(primary, "name", "auth/jwt")
        self._prefix = PREFIX + token.encode() + b"\0" + user_name.encode() + b"\0"

    @property
    def owner(self) -> int | None:  # (the client reads auth/local's key owner: the daemons' uid)
        return getattr(self.primary, "owner", None)

    def credential(self, digest: bytes) -> bytes:
        return self._prefix + self.primary.credential(digest)

    def verify(self, credential: bytes, digest: bytes, allow_replay: bool = False) -> Verified:
        return self.primary.verify(credential, digest, allow_replay)


def split(credential: bytes) -> tuple[str, str, bytes] | None:
    """(token, user name, the sender's own credential) of a credential with a token, None for
    any other; ValueError for one that starts as a token credential and is malformed."""
    if not credential.startswith(PREFIX):
        return None
    parts = credential[len(PREFIX):].split(b"\0", 2)
    if len(parts) != 3 or not parts[0] or len(parts[0]) > MAX_TOKEN or len(parts[1]) > 256:
        raise ValueError("malformed token credential")
    try:
        return parts[0].decode("ascii"), parts[1].decode("utf-8"), parts[2]
    except UnicodeDecodeError:
        raise ValueError("malformed token credential") from None
