"""``POST /slurmdb/vX/accounts/``, ``users/`` and ``qos/``: each object of the body added to the
controller's book, or, when the book has it already, changed, as slurmdbd's "add or update"
does, through the ``acctmgr`` message of ``sacctmgr add`` / ``sacctmgr modify`` (operators and
administrators only; an AdminLevel is an administrator's to give: the controller decides).

What is taken: an account's ``name``, ``description``, ``organization`` (a new one goes under
``root``); a user's ``name``, ``default.account`` (a new user needs it, or an
``associations`` entry: plurm's users always have an association), ``administrator_level``;
a QOS's ``name``, ``description``, ``priority``, ``preempt.list``, ``preempt.mode`` and
``limits.max.jobs.active_jobs.per.user`` (MaxJobsPerUser).  Anything else is a warning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plurm.rest.jobdesc import JobDescError, _no_val
from plurm.rest.routes import Ctx, Handler, RestError, Result

MAX_ITEMS = 1000
_MODES = {"DISABLED": "off", "SUSPEND": "suspend", "REQUEUE": "requeue", "CANCEL": "cancel", "GANG": "gang"}
_TAKEN = {"account": {"name", "description", "organization", "associations", "coordinators", "flags"},
          "user": {"name", "default", "administrator_level", "associations", "coordinators", "flags", "wckeys"},
          "qos": {"name", "description", "priority", "preempt", "limits", "flags", "id"}}


def _text(obj: dict, key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 1024:
        raise JobDescError([f"{key}: expected a string"])
    return value


def account_fields(obj: dict) -> dict[str, str]:
    fields = {}
    for key in ("description", "organization"):
        value = _text(obj, key)
        if value:
            fields[key] = value
    return fields


def user_fields(obj: dict) -> tuple[dict[str, str], str | None]:
    """(sacctmgr fields, the account of a new user's association)."""
    fields: dict[str, str] = {}
    default = obj.get("default") or {}
    if not isinstance(default, dict):
        raise JobDescError(["default: expected an object"])
    account = _text(default, "account")
    if account:
        fields["defaultaccount"] = account
    levels = obj.get("administrator_level") or []
    if not isinstance(levels, list) or not all(isinstance(x, str) for x in levels) or len(levels) > 1:
        raise JobDescError(["administrator_level: expected one of None, Operator, Administrator"])
    if levels and levels[0] != "Not Set":
        fields["adminlevel"] = levels[0]
    assocs = obj.get("associations") or []
    if not isinstance(assocs, list) or not all(isinstance(a, dict) for a in assocs):
        raise JobDescError(["associations: expected a list of assoc_short objects"])
    named = [str(a["account"]) for a in assocs if a.get("account")]
    return fields, account or (named[0] if named else None)


def qos_fields(obj: dict) -> dict[str, str]:
    fields: dict[str, str] = {}
    description = _text(obj, "description")
    if description is not None:
        fields["description"] = description
    if "priority" in obj:
        _, number = _no_val(obj["priority"])
        if number is not None:
            fields["priority"] = str(number)
    preempt = obj.get("preempt") or {}
    if not isinstance(preempt, dict):
        raise JobDescError(["preempt: expected an object"])
    names = preempt.get("list")
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise JobDescError(["preempt.list: expected a list of QOS names"])
        fields["preempt"] = ",".join(names)
    modes = preempt.get("mode") or []
    if modes:
        if not isinstance(modes, list) or len(modes) != 1 or modes[0] not in _MODES:
            raise JobDescError([f"preempt.mode: one of {', '.join(_MODES)}"])
        fields["preemptmode"] = _MODES[modes[0]]
    limits = obj.get("limits") or {}
    per_user = (((((limits.get("max") or {}) if isinstance(limits, dict) else {}).get("jobs") or {})
                 .get("active_jobs") or {}).get("per") or {}).get("user")
    if per_user is not None:
        infinite, number = _no_val(per_user)
        if number is not None and not infinite:
            fields["maxjobsperuser"] = str(number)
    return fields


async def _names(ctx: Ctx, entity: str, source: str) -> set[str]:
    reply = await ctx.ask("acctmgr", {"action": "show", "entity": entity}, source)
    key, field = {"account": ("accounts", "account"), "user": ("users", "user"), "qos": ("qos", "name")}[entity]
    return {item[field] for item in reply.get(key, [])}


def _items(body: Any, key: str, source: str) -> list[dict]:
    items = body.get(key) if isinstance(body, dict) else None
    if not isinstance(items, list) or not items or len(items) > MAX_ITEMS:
        raise RestError(f"the request needs \"{key}\": a list of 1 to {MAX_ITEMS} objects", "BadRequest", source, 400)
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise RestError(f"each of \"{key}\" needs a name", "BadRequest", source, 400)
    return items


def _warnings(items: list[dict], entity: str, source: str) -> list[dict]:
    keys = sorted({str(k)[:64] for item in items for k in item if k not in _TAKEN[entity]})
    return [{"description": f"{entity} field {k} is not acted on by plurm (ignored)", "source": source}
            for k in keys[:20]]


async def _change(ctx: Ctx, entity: str, items: list[dict], source: str) -> None:
    have = await _names(ctx, entity, source)
    for item in items:
        name = item["name"]
        try:
            if entity == "account":
                fields, account = account_fields(item), None
            elif entity == "user":
                fields, account = user_fields(item)
            else:
                fields, account = qos_fields(item), None
        except JobDescError as exc:
            raise RestError(f"{name[:64]}: {exc}", "BadRequest", source, 400) from None
        if name in have:
            if fields:
                await ctx.ask("acctmgr", {"action": "modify", "entity": entity, "names": [name], "fields": fields},
                              source)
            continue
        if entity == "user":
            if not account:
                raise RestError(f"{name[:64]}: a new user needs default.account (its association)", "BadRequest",
                                source, 400)
            fields = {**fields, "account": account}
        added = {k: v for k, v in fields.items() if not (entity == "qos" and k == "description")}
        await ctx.ask("acctmgr", {"action": "add", "entity": entity, "names": [name], "fields": added}, source)
        if entity == "qos" and "description" in fields:  # (sacctmgr add qos takes none: a modify after)
            await ctx.ask("acctmgr", {"action": "modify", "entity": "qos", "names": [name],
                                      "fields": {"description": fields["description"]}}, source)
        have.add(name)


def _poster(entity: str, key: str, source: str) -> Handler:
    async def post(ctx: Ctx) -> Result:
        items = _items(await ctx.body(source), key, source)
        await _change(ctx, entity, items, source)
        return {}, _warnings(items, entity, source)

    post.__name__ = f"post_{key}"
    return post


DBADD_ROUTES: list[tuple[str, str, Handler, Callable[[], dict]]] = [
    ("POST", "/slurmdb/{version}/accounts/", _poster("account", "accounts", "slurmdb_accounts_add"), dict),
    ("POST", "/slurmdb/{version}/users/", _poster("user", "users", "slurmdb_users_add"), dict),
    ("POST", "/slurmdb/{version}/qos/", _poster("qos", "qos", "slurmdb_qos_add"), dict),
]
