"""The commands' light JSON and HMAC agree with the standard library's; credentials bind messages."""

from __future__ import annotations

import hashlib
import hmac
import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plurm.wire import auth, envelope, lightjson

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@given(json_values)
def test_lightjson_round_trips_like_json(value) -> None:
    encoded = lightjson.dumps(value)
    assert json.loads(encoded) == value
    assert lightjson.loads(json.dumps(value)) == value
    assert lightjson.loads(encoded.encode()) == value


@pytest.mark.parametrize("text", ["", "{", "[1,]", "{} x", "'a'"])
def test_lightjson_rejects_what_json_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        lightjson.loads(text)


def test_lightjson_refuses_unserialisable() -> None:
    with pytest.raises(TypeError):
        lightjson.dumps({"a": object()})
    with pytest.raises(ValueError):
        lightjson.dumps(float("nan"))


@given(st.binary(min_size=1, max_size=200), st.binary())
def test_hmac_is_hmac_sha256(key: bytes, data: bytes) -> None:
    assert auth.hmac_sha256(key, data) == hmac.new(key, data, hashlib.sha256).hexdigest().encode()


@given(st.lists(st.binary(max_size=40), min_size=1, max_size=4), st.lists(st.binary(max_size=40), min_size=1,
                                                                          max_size=4))
def test_digest_parts_never_collide(a: list[bytes], b: list[bytes]) -> None:
    assert (auth.message_digest(*a) == auth.message_digest(*b)) == (a == b)


def test_seal_and_open() -> None:
    key = auth.KeyAuth(envelope.new_key())
    frames = envelope.seal(key, "ping", {"x": [1, "é"]})
    header, body, sender = envelope.open_envelope(key, frames)
    assert header["type"] == "ping" and json.loads(body) == {"x": [1, "é"]}
    assert sender == (os.getuid(), os.getgid())
    with pytest.raises(envelope.AuthError):
        envelope.open_envelope(auth.KeyAuth(b"other"), frames)
    guard = envelope.ReplayGuard()
    guard.check(header)
    with pytest.raises(envelope.AuthError):
        guard.check(header)


def test_credential_does_not_move_to_another_message() -> None:
    key = auth.KeyAuth(envelope.new_key())
    ping, cancel = envelope.seal(key, "ping", {}), envelope.seal(key, "cancel_job", {"job_ids": ["1"]})
    with pytest.raises(envelope.AuthError):
        envelope.open_envelope(key, cancel[:3] + ping[3:])
    with pytest.raises(envelope.AuthError):  # the header (uid claim, type) is covered too
        envelope.open_envelope(key, [cancel[0], ping[1], cancel[2], cancel[3]])


def test_a_key_owner_cannot_claim_another_uid() -> None:
    """auth/local: whoever holds the key is its owner; a claim of root is refused."""
    key = envelope.new_key()
    owner = auth.KeyAuth(key, owner=os.getuid() + 1)
    with pytest.raises(envelope.AuthError, match="uid"):
        envelope.open_envelope(owner, envelope.seal(auth.KeyAuth(key), "ping", {}))


def test_replay_of_a_message_from_before_a_restart_is_refused() -> None:
    key = auth.KeyAuth(envelope.new_key())
    header = envelope.open_envelope(key, envelope.seal(key, "ping", {})).header
    restarted = envelope.ReplayGuard(not_before=header["time"] + 10)
    with pytest.raises(envelope.AuthError, match="before this daemon started"):
        restarted.check(header)


def test_local_key_readable_by_others_is_refused(tmp_path) -> None:
    path = tmp_path / "slurm.key"
    path.write_bytes(envelope.new_key())
    path.chmod(0o644)
    with pytest.raises(auth.AuthError, match="readable by others"):
        auth.LocalAuth(str(path))
    path.chmod(0o600)
    assert auth.LocalAuth(str(path)).owner == os.getuid()


def test_empty_key_refused(tmp_path) -> None:
    path = tmp_path / "slurm.key"
    path.write_bytes(b"\n")
    with pytest.raises(auth.AuthError):
        envelope.load_key(str(path))
