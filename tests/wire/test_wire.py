"""The commands' light JSON and HMAC agree with the standard library's."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from plurm.wire import lightjson, envelope

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


@given(st.binary(min_size=1, max_size=200), st.binary(), st.binary())
def test_signature_is_hmac_sha256(key: bytes, header: bytes, body: bytes) -> None:
    expected = hmac.new(key, envelope.PROTOCOL_TAG + header + body, hashlib.sha256).hexdigest().encode()
    assert envelope._sign(key, header, body) == expected


def test_seal_and_open() -> None:
    key = envelope.new_key()
    frames = envelope.seal(key, "ping", {"x": [1, "é"]})
    header, body = envelope.open_envelope(key, frames)
    assert header["type"] == "ping" and json.loads(body) == {"x": [1, "é"]}
    with pytest.raises(envelope.AuthError):
        envelope.open_envelope(b"other", frames)
    guard = envelope.ReplayGuard()
    guard.check(header)
    with pytest.raises(envelope.AuthError):
        guard.check(header)


def test_empty_key_refused(tmp_path) -> None:
    path = tmp_path / "slurm.key"
    path.write_bytes(b"\n")
    with pytest.raises(envelope.AuthError):
        envelope.load_key(str(path))
