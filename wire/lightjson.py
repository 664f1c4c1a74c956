"""JSON for the user commands' start-up path, without importing `json`.

`import json` pulls in `re` and compiles regular expressions (about 6 ms of
a command's start-up here).  The C parts of the json package need none of
that: `_json.make_scanner` parses a document and
`_json.encode_basestring_ascii` escapes strings.  The encoder below covers
the plain data the wire carries (dict, list, str, int, float, bool, None);
anything else raises TypeError, as json.dumps does.  tests/corescheduler
compares both with the json module.
"""

from __future__ import annotations

import _json

_WS = " \t\n\r"


class _Context:
    """The attributes _json.make_scanner reads from json.JSONDecoder."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = None
    memo: dict = {}


def _constant(name: str) -> float:
    raise ValueError(f"JSON constant {name} is not allowed")


_Context.parse_constant = staticmethod(_constant)  # type: ignore[assignment]
_scan = _json.make_scanner(_Context())
_escape = _json.encode_basestring_ascii


def loads(data: bytes | str) -> object:
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    start = len(text) - len(text.lstrip(_WS))
    try:
        value, end = _scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"malformed JSON at position {exc.value}") from None
    if text[end:].strip(_WS):
        raise ValueError(f"extra data after JSON value at position {end}")
    return value


def _encode(obj: object, out: list[str]) -> None:
    if isinstance(obj, str):
        out.append(_escape(obj))
    elif obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, int):
        out.append(int.__repr__(obj))
    elif isinstance(obj, float):
        if obj != obj or obj in (float("inf"), float("-inf")):
            raise ValueError(f"out of range float value {obj!r}")
        out.append(float.__repr__(obj))
    elif isinstance(obj, dict):
        out.append("{")
        first = True
        for key, value in obj.items():
            if not isinstance(key, str):
                raise TypeError(f"keys must be str, not {type(key).__name__}")
            if not first:
                out.append(",")
            first = False
            out.append(_escape(key))
            out.append(":")
            _encode(value, out)
        out.append("}")
    elif isinstance(obj, (list, tuple)):
        out.append("[")
        for i, value in enumerate(obj):
            if i:
                out.append(",")
            _encode(value, out)
        out.append("]")
    else:
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _unserialisable(obj: object) -> object:
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


# The json package's C encoder, without the package: what json.dumps(obj, separators=(",", ":"),
# allow_nan=False) writes, about 15x faster than _encode on a launch message's body (the
# controller seals one per job: issue 17).  Unlike _encode it writes int/float/bool/None
# keys as strings, as json.dumps does.  _encode stays for an interpreter without it.
_c_encode = _json.make_encoder(None, _unserialisable, _escape, None, ":", ",", False, False, False) \
    if getattr(_json, "make_encoder", None) is not None else None


def dumps(obj: object) -> str:
    if _c_encode is not None:
        return "".join(_c_encode(obj, 0))
    out: list[str] = []
    _encode(obj, out)
    return "".join(out)
