"""wire/bigjson: a large reply decodes to what the light decoder gives, and malformed input
is a ValueError, as lightjson's."""

from __future__ import annotations

import pytest

from plurm.wire import bigjson, lightjson
from plurm.wire.client import LARGE_REPLY


def _reply(jobs: int) -> bytes:
    job = {"job_id": 1, "spec": {"name": "n\u00e9\\\"x", "hold": True, "nice": -3, "mem": None},
           "submit_time": 1796353032.4137573, "nodes": [], "priority": 4294967294, "big": 2 ** 70}
    return lightjson.dumps({"jobs": [dict(job, job_id=i) for i in range(jobs)], "now": 1.5,
                            "cluster": "c"}).encode()


def test_same_values_as_lightjson() -> None:
    payload = _reply(LARGE_REPLY // 150)
    assert len(payload) >= LARGE_REPLY
    assert bigjson.loads(payload) == lightjson.loads(payload)


@pytest.mark.parametrize("bad", [b'{"jobs": [', b'{"a": NaN}', b'{"a": 1} x', b"\xff"])
def test_malformed_is_a_value_error(bad: bytes) -> None:
    with pytest.raises(ValueError):
        lightjson.loads(bad)
    with pytest.raises(ValueError):
        bigjson.loads(bad)
