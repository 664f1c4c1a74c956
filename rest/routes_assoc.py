"""Association writes under ``/slurmdb/vX/``: ``POST associations/`` and ``DELETE
association/`` / ``associations/`` (issue 16), through the ``acctmgr`` message of ``sacctmgr add
user NAME account=A`` and ``sacctmgr delete user NAME account=A`` (operators and administrators
only: the controller decides).

plurm's associations are a user's links to accounts (an account's own association comes and
goes with the account: ``POST accounts/``, ``DELETE account/{name}``), so each object names
a ``user`` and an ``account``; ``partition`` and ``cluster`` are this cluster's (plurm keeps no
per-partition associations: another value is a warning).  Removing a user's last association
removes the user, and removing their default account's leaves the default empty, as
22.05.8's sacctmgr does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plurm.rest.routes import Ctx, Handler, RestError, Result

MAX_ITEMS = 1000
_TAKEN = {"account", "user", "cluster", "partition", "id", "flags", "is_default"}


async def _links(ctx: Ctx, source: str) -> tuple[set[tuple[str, str]], str]:
    reply = await ctx.ask("acctmgr", {"action": "show", "entity": "assoc"}, source)
    return {(link["user"], link["account"]) for link in reply.get("links", []) if link.get("user")}, \
        str(reply.get("cluster") or "")


def _pairs(items: Any, source: str) -> list[tuple[str, str]]:
    if not isinstance(items, list) or not items or len(items) > MAX_ITEMS:
        raise RestError(f"the request needs \"associations\": a list of 1 to {MAX_ITEMS} objects", "BadRequest",
                        source, 400)
    pairs = []
    for item in items:
        user, account = (item.get("user"), item.get("account")) if isinstance(item, dict) else (None, None)
        if not isinstance(account, str) or not account:
            raise RestError("each association needs an account", "BadRequest", source, 400)
        if not isinstance(user, str) or not user:
            raise RestError(f"{account[:64]}: plurm's associations are users' (an account's own comes with "
                            "POST accounts/)", "BadRequest", source, 400)
        pairs.append((user, account))
    return pairs


async def post_associations(ctx: Ctx) -> Result:
    source = "slurmdb_associations_add"
    body = await ctx.body(source)
    items = body.get("associations") if isinstance(body, dict) else None
    pairs = _pairs(items, source)
    have, _ = await _links(ctx, source)
    for user, account in pairs:
        if (user, account) not in have:
            await ctx.ask("acctmgr", {"action": "add", "entity": "user", "names": [user],
                                      "fields": {"account": account}}, source)
            have.add((user, account))
    keys = sorted({str(k)[:64] for item in items for k in item if k not in _TAKEN})
    return {}, [{"description": f"association field {k} is not acted on by plurm (ignored)", "source": source}
                for k in keys[:20]]


async def delete_associations(ctx: Ctx) -> Result:
    source = "slurmdb_associations_remove"
    users = [w for w in (ctx.query("user") or "").split(",") if w]
    accounts = [w for w in (ctx.query("account") or "").split(",") if w]
    if not users or not accounts:
        raise RestError("name the associations to remove with user= and account= (an account's own goes with "
                        "DELETE account/{name})", "BadRequest", source, 400)
    have, cluster = await _links(ctx, source)
    gone = [(u, a) for u in users for a in accounts if (u, a) in have]
    if not gone:
        raise RestError("No association matches", "NotFound", source)
    for user, account in gone:
        await ctx.ask("acctmgr", {"action": "delete", "entity": "user", "names": [user],
                                  "where": {"account": account}}, source)
    return {"removed_associations": [f"C = {cluster} A = {a} U = {u}" for u, a in gone]}, []


def _removed() -> dict[str, Any]:
    return {"removed_associations": []}


ASSOC_ROUTES: list[tuple[str, str, Handler, Callable[[], dict]]] = [
    ("POST", "/slurmdb/{version}/associations/", post_associations, dict),
    ("DELETE", "/slurmdb/{version}/associations/", delete_associations, _removed),
    ("DELETE", "/slurmdb/{version}/association/", delete_associations, _removed),
]
