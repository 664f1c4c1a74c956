"""A large reply's JSON, decoded by msgspec where it is installed (issue 17: squeue at 100,000 jobs).

The commands decode replies with ``_json``'s scanner (wire/lightjson.py) to keep msgspec
(~15-30 ms to import) off their start-up.  Past ``client.LARGE_REPLY`` bytes (~15,000 jobs)
msgspec's decoder, about twice as fast on the controller's job lists, more than pays for its
import; wire/client.Connection.request comes here for those.  Without msgspec (a client-only
install), the light decoder still does it.
"""

from __future__ import annotations

from typing import Any

from plurm.wire import lightjson


def loads(payload: bytes) -> Any:
    """``lightjson.loads`` (same values, same ValueError on malformed input), faster on large input."""
    try:
        import msgspec
    except ImportError:
        return lightjson.loads(payload)
    try:
        return msgspec.json.decode(payload)
    except msgspec.DecodeError as exc:
        raise ValueError(f"malformed JSON: {exc}") from None
