"""Reservations changed over REST: ``POST reservation`` (one ``reservation_desc_msg``),
``POST reservations/`` (a ``reservation_mod_req``: a list of them) and ``DELETE
reservation/{reservation_name}``, on the controller's ``reservation`` message, the one
``scontrol create|update|delete reservation`` sends (the core checks that the caller is an
operator or administrator, as Slurm's controller does, and every value).

"Create or update", as slurmrestd: a description whose ``name`` is an existing reservation
updates it, any other creates one (named by the controller when it has no ``name``).  The
answer's ``reservations`` are the descriptions as taken, with the name each got.

A description becomes scontrol's Key=Value fields: times (``start_time``, ``end_time``: UNIX
times or the ``*_no_val_struct``, or a time string as scontrol reads it), ``duration``
(minutes), ``node_list``, ``node_count``, ``users``, ``accounts``, ``groups`` (a list or a
comma string), ``partition``, ``features``, ``flags``.  Fields plurm's reservations do not
hold (cores, licenses, TRES, burst buffers ...) are refused with 400 rather than dropped: a
reservation made without them would not be the one asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plurm.rest.jobdesc import JobDescError, _no_val
from plurm.rest.routes import Ctx, Handler, RestError, Result

MAX_RESERVATIONS = 100  # in one reservations/ request (each is one controller request)
_TEXT = {"partition": "PartitionName", "features": "Features"}
_LISTS = {"users": "Users", "accounts": "Accounts", "groups": "Groups", "node_list": "Nodes"}
_REFUSED = ("burst_buffer", "core_count", "licenses", "tres", "max_start_delay", "purge_completed")
_TAKEN = {"name", "start_time", "end_time", "duration", "node_count", "flags", *_TEXT, *_LISTS}


def ignored(desc: Any, source: str) -> list[dict]:
    """Warnings for the keys of a description plurm does not act on (comment, unknown ones)."""
    if not isinstance(desc, dict):
        return []
    return [{"description": f"reservation_desc_msg field {str(k)[:64]} is not acted on by plurm (ignored)",
             "source": source} for k in sorted(desc) if k not in _TAKEN and k not in _REFUSED
            and desc[k] not in (None, "", [], {})][:20]


def _text_list(key: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return ",".join(value)
    raise JobDescError([f"{key}: expected a string or a list of strings"])


def _time(key: str, value: Any) -> str | None:
    """A UNIX time as the controller reads it: digits (or ``now+N``, or a time string scontrol
    would read, turned into digits here as scontrol does)."""
    if isinstance(value, str):
        if value.strip().lower().startswith("now"):
            return value.strip()
        from plurm.grammar.structvalues import parse_begin
        from plurm.grammar.values import OptionValueError

        try:
            return str(parse_begin(value, "begin"))
        except (OptionValueError, ValueError, OverflowError):
            raise JobDescError([f"{key}: Invalid time specification: {value[:64]}"]) from None
    infinite, number = _no_val(value)
    if infinite:
        raise JobDescError([f"{key}: an infinite time is not a reservation's"])
    return None if number is None else str(number)


def fields_of(desc: Any) -> dict[str, str]:
    """scontrol's reservation fields for a ``reservation_desc_msg``; JobDescError."""
    if not isinstance(desc, dict):
        raise JobDescError(["a reservation description must be a reservation_desc_msg object"])
    refused = [k for k in _REFUSED if desc.get(k) not in (None, "", [], {})]
    if refused:
        raise JobDescError([f"plurm reservations do not hold {', '.join(refused)}"])
    fields: dict[str, str] = {}
    name = desc.get("name")
    if name not in (None, ""):
        if not isinstance(name, str):
            raise JobDescError(["name: expected a string"])
        fields["ReservationName"] = name
    for key, word in _TEXT.items():
        value = desc.get(key)
        if value is not None:
            if not isinstance(value, str):
                raise JobDescError([f"{key}: expected a string"])
            fields[word] = value
    for key, word in _LISTS.items():
        if desc.get(key) is not None:
            fields[word] = _text_list(key, desc[key])
    for key, word in (("start_time", "StartTime"), ("end_time", "EndTime")):
        if key in desc:
            when = _time(key, desc[key])
            if when is not None:
                fields[word] = when
    if "duration" in desc:
        infinite, minutes = _no_val(desc["duration"])
        if infinite:
            fields["Duration"] = "UNLIMITED"
        elif minutes is not None:
            fields["Duration"] = str(minutes)
    if "node_count" in desc:
        _, count = _no_val(desc["node_count"])
        if count is not None:
            fields["NodeCnt"] = str(count)
    flags = desc.get("flags")
    if flags:
        fields["Flags"] = _text_list("flags", flags)
    return fields


async def _existing(ctx: Ctx, name: str) -> bool:
    reply = await ctx.ask("reservation", {"action": "show", "name": name}, "slurm_load_reservations")
    return any(r.get("name") == name for r in reply.get("reservations", []))


async def _create_or_update(ctx: Ctx, desc: Any, source: str) -> dict:
    try:
        fields = fields_of(desc)
    except JobDescError as exc:
        raise RestError(str(exc), "BadRequest", source, 400) from None
    name = fields.get("ReservationName", "")
    if name and await _existing(ctx, name):
        await ctx.ask("reservation", {"action": "update", "fields": fields}, "slurm_update_reservation")
    else:
        try:
            reply = await ctx.ask("reservation", {"action": "create", "fields": fields}, "slurm_create_reservation")
        except RestError as exc:  # (InvalidReservation is 404 elsewhere: here the request is at fault)
            if exc.code == "InvalidReservation" and exc.status is None:
                exc.status = 400
            raise
        name = str(reply.get("name") or name)
    return taken(fields, name)


def _number(text: str) -> dict:
    if text.upper() == "UNLIMITED":
        return {"set": False, "infinite": True, "number": 0}
    return {"set": True, "infinite": False, "number": int(text)} if text.isdigit() else {"set": False,
                                                                                      "infinite": False,
                                                                                      "number": 0}


def taken(fields: dict[str, str], name: str) -> dict:
    """The ``reservation_desc_msg`` a request's fields amount to (the answer's; never the
    request's own object, whose other keys would come back unchecked)."""
    out: dict[str, Any] = {"name": name}
    for key, word in _TEXT.items():
        if word in fields:
            out[key] = fields[word]
    for key, word in _LISTS.items():
        if word in fields:
            out[key] = [w for w in fields[word].split(",") if w]
    for key, word in (("start_time", "StartTime"), ("end_time", "EndTime"), ("duration", "Duration"),
                      ("node_count", "NodeCnt")):
        if word in fields:
            out[key] = _number(fields[word])
    if "Flags" in fields:
        out["flags"] = [w for w in fields["Flags"].split(",") if w]
    return out


async def post_reservation(ctx: Ctx) -> Result:
    """``POST reservation``: one ``reservation_desc_msg``, created or updated."""
    desc = await ctx.body("reservation")
    return {"reservations": [await _create_or_update(ctx, desc, "reservation")]}, ignored(desc, "reservation")


async def post_reservations(ctx: Ctx) -> Result:
    """``POST reservations/``: a ``reservation_mod_req``, each created or updated in order (the
    first refused one stops the rest: its error is the answer, those before it stay made)."""
    body = await ctx.body("reservations")
    items = body.get("reservations") if isinstance(body, dict) else None
    if not isinstance(items, list) or not items:
        raise RestError("the request body must be a reservation_mod_req with reservations", "BadRequest",
                        "reservations", 400)
    if len(items) > MAX_RESERVATIONS:
        raise RestError(f"at most {MAX_RESERVATIONS} reservations in one request", "BadRequest",
                        "reservations", 400)
    done = [await _create_or_update(ctx, d, "reservations") for d in items]
    return {"reservations": done}, [w for d in items for w in ignored(d, "reservations")]


async def delete_reservation(ctx: Ctx) -> Result:
    name = ctx.request.match_info["reservation_name"]
    await ctx.ask("reservation", {"action": "delete", "name": name}, "slurm_delete_reservation")
    return {}, []


RESV_ROUTES: list[tuple[str, str, Handler, Callable[[], dict]]] = [
    ("POST", "reservation", post_reservation, lambda: {"reservations": []}),
    ("POST", "reservations/", post_reservations, lambda: {"reservations": []}),
    ("DELETE", "reservation/{reservation_name}", delete_reservation, dict),
]
