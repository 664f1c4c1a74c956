"""Who sent a message: AuthType plugins, as slurm.conf's ``AuthType`` selects them.

Every message carries a credential made by its sender's plugin over a digest of the
message (tag, header and body), and the receiver's plugin turns it back into the uid
and gid the sender *is*, never what the message says about itself:

* ``auth/munge`` (auth_munge.py): the munge daemon, running privileged on every host,
  vouches for the uid and gid the kernel reports for the process that asked it; munge's
  own TTL and replay checks hold.  What a multi-user cluster uses.
* ``auth/local``: the embedded local cluster's default (no root, no configuration
  file).  An HMAC key in the cluster's folder, readable by its owner alone (mode 0600,
  checked): whoever can sign is the owner, so every message is the owner's, and a
  message claiming any other uid is refused.  Anyone else cannot read the key and is
  told whose cluster it is.

slurm.conf's AuthType picks the plugin (wire/authtype.py); other plugins come from
packages through the ``plurm_auth_types`` hook (pluggy, like the other plugin kinds).

This module stays light (no hashlib, no hmac): the commands import it at start-up.
"""

from __future__ import annotations

import os
from _operator import _compare_digest as compare_digest

TYPE_CHECKING = False
if TYPE_CHECKING:  # `typing` costs every command ~5 ms of start-up (common/cli.py does the same)
    from typing import Protocol

try:  # the small built-in SHA-256; `hashlib` loads OpenSSL (about 2 ms per command)
    from _sha256 import sha256 as _sha256
except ImportError:  # Python 3.12+: _sha2
    from _sha2 import sha256 as _sha256  # type: ignore[no-redef]

class AuthError(Exception):
    """A message whose sender is not proven: it is dropped (or refused) unread."""

    code = "AuthenticationError"


class Verified(tuple):
    """(uid, gid) a credential proves; a tuple with names (as a NamedTuple, without typing)."""

    __slots__ = ()

    def __new__(cls, uid: int, gid: int) -> Verified:
        return tuple.__new__(cls, (uid, gid))

    @property
    def uid(self) -> int:
        return self[0]

    @property
    def gid(self) -> int:
        return self[1]

    def __repr__(self) -> str:
        return f"Verified(uid={self[0]}, gid={self[1]})"


if TYPE_CHECKING:
    class AuthPlugin(Protocol):
        """What an AuthType plugin does: make a credential for this process's user over a
        message digest, and turn a credential back into the sender's uid and gid."""

        name: str

        def credential(self, digest: bytes) -> bytes: ...

        def verify(self, credential: bytes, digest: bytes, allow_replay: bool = False) -> Verified: ...
else:
    class AuthPlugin:
        """What an AuthType plugin does (a Protocol for the type checker): make a credential
        for this process's user over a message digest (``credential(digest)``), and turn a
        credential back into the sender's uid and gid (``verify(credential, digest,
        allow_replay=False) -> Verified``); ``name`` is its AuthType."""


def message_digest(*parts: bytes) -> bytes:
    """SHA-256 over the parts, each prefixed with its length (no two splits collide)."""
    h = _sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.digest()


_BLOCK = 64  # SHA-256's block size
_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))


def hmac_sha256(key: bytes, data: bytes) -> bytes:
    """HMAC-SHA256 (RFC 2104), written out to avoid importing hmac/hashlib; tests
    compare it with the hmac module."""
    if len(key) > _BLOCK:
        key = _sha256(key).digest()
    key = key.ljust(_BLOCK, b"\0")
    inner = _sha256(key.translate(_IPAD))
    inner.update(data)
    outer = _sha256(key.translate(_OPAD))
    outer.update(inner.digest())
    return outer.hexdigest().encode()


def new_key() -> bytes:
    return os.urandom(32).hex().encode()


class KeyAuth:
    """An HMAC over the digest with a shared key, the signer's uid and gid in the
    clear beside it: ``b"uid:gid:hexmac"``.  Whoever holds the key can claim any uid,
    so a receiver takes the claim only from senders it trusts with the whole key:
    ``owner`` (auth/local: the key file's owner) restricts the uid that may be
    claimed; a step's I/O key (stepd to srun) is shared by exactly two processes of
    one user."""

    name = "key"

    def __init__(self, key: bytes, owner: int | None = None) -> None:
        if not key:
            raise AuthError("empty authentication key")
        self.key = key
        self.owner = owner
        self._me = f"{os.getuid()}:{os.getgid()}:".encode()

    def credential(self, digest: bytes) -> bytes:
        return self._me + hmac_sha256(self.key, self._me + digest)

    def verify(self, credential: bytes, digest: bytes, allow_replay: bool = False) -> Verified:
        claim, sep, mac = bytes(credential).rpartition(b":")
        if not sep or not compare_digest(hmac_sha256(self.key, claim + b":" + digest), mac):
            raise AuthError("bad message signature")
        try:
            uid_text, gid_text = claim.split(b":")
            uid, gid = int(uid_text), int(gid_text)
        except ValueError:
            raise AuthError("malformed credential") from None
        if self.owner is not None and uid != self.owner:
            raise AuthError(f"credential for uid {uid} from a holder of the key of uid {self.owner}")
        return Verified(uid, gid)


def load_key(path: str) -> bytes:
    """Read a key file; refuse an empty one (unlike Jupyter's default)."""
    with open(path, "rb") as handle:
        key = handle.read().strip()
    if not key:
        raise AuthError(f"empty authentication key in {path}")
    return key


class LocalAuth(KeyAuth):
    """auth/local: the cluster owner's key, ``slurm.key`` beside slurm.conf."""

    name = "auth/local"

    def __init__(self, key_path: str) -> None:
        try:
            fd = os.open(key_path, os.O_RDONLY)
        except OSError as exc:
            raise AuthError(_not_yours(key_path, exc)) from None
        try:
            info = os.fstat(fd)
            key = os.read(fd, 4096).strip()
        finally:
            os.close(fd)
        if info.st_mode & 0o077:
            raise AuthError(f"auth/local: {key_path} is readable by others (mode {info.st_mode & 0o777:o}): "
                            "anyone who can read it can act as its owner; chmod 600 it")
        if not key:
            raise AuthError(f"empty authentication key in {key_path}")
        super().__init__(key, owner=info.st_uid)
        self.key_path = key_path


def _not_yours(key_path: str, exc: OSError) -> str:
    if exc.errno in (1, 13):  # EPERM, EACCES: the key exists and belongs to someone else
        try:
            owner = os.stat(key_path).st_uid
        except OSError:
            owner = -1
        import pwd

        try:
            name = pwd.getpwuid(owner).pw_name
        except KeyError:
            name = str(owner)
        return (f"this cluster belongs to {name}: only {name} can use it (AuthType=auth/local, key {key_path}); "
                "a cluster for many users runs AuthType=auth/munge (see docs/security.md)")
    return f"Unable to read authentication key {key_path}: {exc.strerror}"
