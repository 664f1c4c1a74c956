"""``AuthAltTypes=auth/jwt``: JSON Web Tokens as a second credential, checked here, in the
controller, where the identity of a request is decided (as slurmctld's auth/jwt does).

slurm.conf::

    AuthAltTypes=auth/jwt
    AuthAltParameters=jwt_key=/etc/slurm/jwt_hs256.key   # readable by SlurmUser only

``scontrol token [lifespan=N] [username=U]`` asks the controller for a token (HS256 over the
claims ``iat``, ``exp`` and ``sun``, the user name, as Slurm's): any user for themselves,
root and SlurmUser for anyone.  A request carries the token beside its sender's own
credential (wire/jwt_cred.py); :class:`TokenAuth` checks the sender's credential with the
AuthType plugin first, then the token: signature, expiry, and the user it names.  The
request is then the token's user's.  A REST client may name another user
(``X-SLURM-USER-NAME``) only with a token of root or SlurmUser, as in Slurm.

A bad token is not dropped like an unproven message: its sender is proven (its own
credential held), so it is told why, and the controller logs it (``refusal``).
"""

from __future__ import annotations

import logging
import os
import pwd
from typing import Any

from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.wire import jwt_cred
from plurm.wire.auth import AuthError, AuthPlugin, Verified
from plurm.wire.authtype import parse_auth_info

log = logging.getLogger("plurmctld")

DEFAULT_LIFESPAN_S = 1800  # Slurm's default token lifespan
ALGORITHM = "HS256"


class TokenSender(Verified):
    """Who a request with a token is from: (uid, gid) of the token's user, its name, and
    ``error``: why the token was refused (then uid and gid are the transport's sender's)."""

    __slots__ = ()

    def __new__(cls, uid: int, gid: int, user: str = "", error: str = "") -> TokenSender:
        return tuple.__new__(cls, (uid, gid, user, error))

    @property
    def user(self) -> str:
        return self[2]

    @property
    def error(self) -> str:
        return self[3]

    def __repr__(self) -> str:
        return f"TokenSender(uid={self[0]}, gid={self[1]}, user={self[2]!r}, error={self[3]!r})"


class JwtKey:
    """The HS256 key of ``AuthAltParameters=jwt_key=``: the file's bytes as they are (Slurm's
    key files are often raw random bytes), refused when empty or readable by others."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise AuthError(f"auth/jwt: cannot read jwt_key {path}: {exc.strerror}") from None
        try:
            mode = os.fstat(fd).st_mode
            key = os.read(fd, 65536)
        finally:
            os.close(fd)
        if mode & 0o077:
            raise AuthError(f"auth/jwt: {path} is readable by others (mode {mode & 0o777:o}): anyone who can "
                            "read it can make tokens for any user; chmod 600 it")
        if not key.strip():
            raise AuthError(f"auth/jwt: empty jwt_key {path}")
        self.key = key


class TokenAuth:
    """The AuthType plugin with auth/jwt beside it: credentials this daemon makes are the
    plugin's; a received credential with a token is checked twice (sender, then token)."""

    def __init__(self, primary: AuthPlugin, key: JwtKey, daemon_uids: frozenset[int]) -> None:
        self.primary = primary
        self.key = key
        self.daemon_uids = daemon_uids  # root and SlurmUser: whose tokens may name another user
        self.name = primary.name

    @property
    def owner(self) -> int | None:
        return getattr(self.primary, "owner", None)

    def credential(self, digest: bytes) -> bytes:
        return self.primary.credential(digest)

    def verify(self, credential: bytes, digest: bytes, allow_replay: bool = False) -> Verified:
        try:
            parts = jwt_cred.split(bytes(credential))
        except ValueError as exc:
            raise AuthError(str(exc)) from None
        if parts is None:
            return self.primary.verify(credential, digest, allow_replay)
        token, claimed, own = parts
        sender = self.primary.verify(own, digest, allow_replay)  # unproven: AuthError, dropped
        return self.check_token(token, claimed, sender)

    def check_token(self, token: str, claimed: str, sender: Verified) -> TokenSender:
        import jwt  # (PyJWT: only the controller verifies)

        try:
            claims = jwt.decode(token, self.key.key, algorithms=[ALGORITHM], options={"require": ["exp", "sun"]})
        except jwt.ExpiredSignatureError:
            return self._refused(sender, "token expired", claimed)
        except jwt.InvalidSignatureError:
            return self._refused(sender, "token signature invalid", claimed)
        except jwt.PyJWTError as exc:
            return self._refused(sender, f"invalid token: {exc}", claimed)
        user = claims.get("sun")
        if not isinstance(user, str) or not user:
            return self._refused(sender, "invalid token: no user name", claimed)
        found = _passwd(user)
        if found is None:
            return self._refused(sender, f"token for unknown user {user}", claimed)
        if claimed and claimed != user:
            # Only the cluster's own users' tokens may act for another (slurmrestd's proxy mode).
            if found.pw_uid not in self.daemon_uids:
                return self._refused(sender, f"token of {user} presented for user {claimed}", claimed)
            other = _passwd(claimed)
            if other is None:
                return self._refused(sender, f"unknown user {claimed}", claimed)
            found = other
        return TokenSender(found.pw_uid, found.pw_gid, found.pw_name)

    @staticmethod
    def _refused(sender: Verified, why: str, claimed: str) -> TokenSender:
        log.warning("auth/jwt: token refused (from uid %s, for user %r): %s", sender.uid, claimed, why)
        return TokenSender(sender.uid, sender.gid, "", why)

    def issue(self, user: str, lifespan: int, now: float) -> str:
        import jwt

        issued = int(now)
        return jwt.encode({"iat": issued, "exp": issued + lifespan, "sun": user}, self.key.key, algorithm=ALGORITHM)


def _passwd(name: str) -> Any:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def enabled(conf: Any) -> bool:
    types = [t.strip().lower() for t in (conf.get("AuthAltTypes") or "").split(",")]
    return "auth/jwt" in types


def with_tokens(primary: AuthPlugin, conf: Any, daemon_uids: frozenset[int]) -> AuthPlugin:
    """``primary`` wrapped to accept tokens where slurm.conf asks for auth/jwt; a key that
    cannot be used is logged and tokens stay off (every token request is refused)."""
    if not enabled(conf):
        return primary
    params = parse_auth_info(conf.get("AuthAltParameters"))
    path = params.get("jwt_key")
    for other in sorted(set(params) - {"jwt_key"}):  # (jwks=, disable_token_creation, ...: not yet)
        log.warning("AuthAltParameters=%s is not supported by plurm's auth/jwt: ignored", other)
    if not path:
        log.error("AuthAltTypes=auth/jwt without AuthAltParameters=jwt_key=<file>: tokens are refused")
        return primary
    try:
        key = JwtKey(path)
    except AuthError as exc:
        log.error("%s: tokens are refused", exc)
        return primary
    log.info("auth/jwt: tokens accepted (key %s)", path)
    return TokenAuth(primary, key, daemon_uids)


def refusal(sender: Verified, msg_type: str, node_messages: frozenset[str]) -> tuple[str, str] | None:
    """Why a request with a token is refused outright (None: not a token's, or acceptable)."""
    if not isinstance(sender, TokenSender):
        return None
    if sender.error:
        return f"Invalid authentication token: {sender.error}", "AuthenticationError"
    if msg_type in node_messages:  # a token is a user's: never a node daemon's
        return "Access/permission denied: node messages come from node daemons only", "AccessDenied"
    return None


def token_reply(auth: AuthPlugin, lifespan: int | None, username: str | None, who: Identity,
                now: float) -> dict:
    """``scontrol token``: a token for ``who`` (root and SlurmUser: for ``username``)."""
    if not isinstance(auth, TokenAuth):
        raise RequestError("auth/jwt is not configured (AuthAltTypes=auth/jwt, AuthAltParameters=jwt_key=)",
                           "NotSupported")
    user = who.user
    if username and username != who.user:
        if not who.operator:
            log.warning("token for %s refused to %s: only root and SlurmUser may name another user",
                        username, who.user)
            raise RequestError("Invalid user id", "InvalidUserId")
        if _passwd(username) is None:
            raise RequestError("Invalid user id", "InvalidUserId")
        user = username
    span = DEFAULT_LIFESPAN_S if lifespan is None else lifespan
    if span <= 0:
        raise RequestError(f"Invalid lifespan: {span}", "InvalidLifespan")
    log.info("auth/jwt: token for %s (lifespan %ss) issued to %s", user, span, who.user)
    return {"token": auth.issue(user, span, now), "user": user, "lifespan": span}
