"""auth/jwt in the controller (corescheduler/jwt_auth.py), without daemons: a token is taken
only beside a sender's own valid credential, then checked (signature, expiry, user); a bad
token is a refusal with its reason, never a node daemon's word; the key file is guarded.
The same paths against real daemons and HTTP: tests/rest/test_rest.py.
"""

from __future__ import annotations

import getpass
import logging
import os
import pwd
import time
from pathlib import Path

import jwt
import pytest

from plurm.corescheduler import jwt_auth
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.wire import jwt_cred
from plurm.wire.auth import AuthError, KeyAuth, message_digest

ME = getpass.getuser()
NOBODY = pwd.getpwnam("nobody")
NODE_MESSAGES = frozenset({"node_register"})


class Conf(dict):
    def get(self, key, default=None):  # (slurm.conf's get: case as written here)
        return super().get(key, default)


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "jwt.key"
    path.write_bytes(os.urandom(32))
    path.chmod(0o600)
    return path


@pytest.fixture
def tokens(key_file: Path) -> jwt_auth.TokenAuth:
    conf = Conf(AuthAltTypes="auth/jwt", AuthAltParameters=f"jwt_key={key_file}")
    auth = jwt_auth.with_tokens(KeyAuth(b"transport-key"), conf, frozenset({0, os.getuid()}))
    assert isinstance(auth, jwt_auth.TokenAuth)
    return auth


def _sealed(tokens: jwt_auth.TokenAuth, token: str, claimed: str = "", transport: KeyAuth | None = None):
    digest = message_digest(b"PLURM1", b"header", b"body")
    credential = jwt_cred.TokenCredential(transport or KeyAuth(b"transport-key"), token, claimed).credential(digest)
    return tokens.verify(credential, digest)


def test_a_valid_token_is_its_users(tokens: jwt_auth.TokenAuth) -> None:
    sender = _sealed(tokens, tokens.issue("nobody", 60, time.time()), "nobody")
    assert isinstance(sender, jwt_auth.TokenSender) and not sender.error
    assert (sender.uid, sender.gid, sender.user) == (NOBODY.pw_uid, NOBODY.pw_gid, "nobody")
    assert jwt_auth.refusal(sender, "job_info", NODE_MESSAGES) is None
    assert jwt_auth.refusal(sender, "node_register", NODE_MESSAGES)[1] == "AccessDenied"


def test_a_message_without_a_token_is_the_transports(tokens: jwt_auth.TokenAuth) -> None:
    digest = message_digest(b"x")
    sender = tokens.verify(KeyAuth(b"transport-key").credential(digest), digest)
    assert not isinstance(sender, jwt_auth.TokenSender) and sender.uid == os.getuid()


def test_a_token_beside_an_unproven_credential_is_dropped(tokens: jwt_auth.TokenAuth) -> None:
    with pytest.raises(AuthError):
        _sealed(tokens, tokens.issue(ME, 60, time.time()), transport=KeyAuth(b"another-key"))


@pytest.mark.parametrize("case, why", [("expired", "token expired"), ("forged", "signature invalid"),
                                       ("no_user", "invalid token"), ("unknown", "unknown user"),
                                       ("other", "presented for user")])
def test_bad_tokens_are_refused_with_the_reason(tokens: jwt_auth.TokenAuth, case: str, why: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    now = int(time.time())
    claims = {"iat": now, "exp": now + 60, "sun": ME}
    key = tokens.key.key
    claimed = ""
    if case == "expired":
        claims.update(iat=now - 200, exp=now - 100)
    elif case == "forged":
        key = b"x" * 32
    elif case == "no_user":
        del claims["sun"]
    elif case == "unknown":
        claims["sun"] = "no-such-user-x"
    else:  # nobody's token presented for the owner: only root's and SlurmUser's may name another
        claims["sun"], claimed = "nobody", ME
    with caplog.at_level(logging.WARNING, "plurmctld"):
        sender = _sealed(tokens, jwt.encode(claims, key, algorithm="HS256"), claimed)
    assert why in sender.error, sender
    text, code = jwt_auth.refusal(sender, "job_info", NODE_MESSAGES)
    assert code == "AuthenticationError" and why in text
    assert any("auth/jwt: token refused" in r.getMessage() for r in caplog.records)


def test_the_cluster_users_token_may_name_another_user(tokens: jwt_auth.TokenAuth) -> None:
    sender = _sealed(tokens, tokens.issue(ME, 60, time.time()), "nobody")  # (the owner: a daemon uid)
    assert (sender.user, sender.uid, sender.error) == ("nobody", NOBODY.pw_uid, "")


def test_a_key_others_can_read_turns_tokens_off(key_file: Path, caplog: pytest.LogCaptureFixture) -> None:
    key_file.chmod(0o644)
    primary = KeyAuth(b"k")
    conf = Conf(AuthAltTypes="auth/jwt", AuthAltParameters=f"jwt_key={key_file}")
    with caplog.at_level(logging.ERROR, "plurmctld"):
        assert jwt_auth.with_tokens(primary, conf, frozenset({0})) is primary
    assert "readable by others" in caplog.text
    assert jwt_auth.with_tokens(primary, Conf(), frozenset({0})) is primary  # (no AuthAltTypes: off)


def test_token_reply_follows_slurms_rule(tokens: jwt_auth.TokenAuth) -> None:
    user = Identity(NOBODY.pw_uid, NOBODY.pw_gid, "nobody")
    admin = Identity(0, 0, "root", operator=True)
    reply = jwt_auth.token_reply(tokens, None, None, user, time.time())
    claims = jwt.decode(reply["token"], tokens.key.key, algorithms=["HS256"])
    assert claims["sun"] == "nobody" and claims["exp"] - claims["iat"] == 1800
    with pytest.raises(RequestError, match="Invalid user id"):
        jwt_auth.token_reply(tokens, 60, "root", user, time.time())
    assert jwt_auth.token_reply(tokens, 60, "nobody", admin, time.time())["user"] == "nobody"
    with pytest.raises(RequestError, match="Invalid user id"):
        jwt_auth.token_reply(tokens, 60, "no-such-user-x", admin, time.time())
    with pytest.raises(RequestError) as off:
        jwt_auth.token_reply(KeyAuth(b"k"), None, None, user, time.time())
    assert off.value.code == "NotSupported"


def test_malformed_token_credentials_are_refused() -> None:
    with pytest.raises(ValueError):
        jwt_cred.split(jwt_cred.PREFIX + b"only-a-token")
    with pytest.raises(ValueError):
        jwt_cred.TokenCredential(KeyAuth(b"k"), "a\0b")
    assert jwt_cred.split(b"1000:1000:abcd") is None
