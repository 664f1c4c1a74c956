"""The accounting database's accounts, users, associations and QOS under ``/slurmdb/vX/``,
read and deleted on the controller's ``acctmgr`` message, the one sacctmgr sends (plurm has no
slurmdbd: the controller holds the book, corescheduler/accounts.py).  Who may see what is the
controller's decision (PrivateData=accounts/users), as for ``sacctmgr show``; deleting is for
operators and administrators (the controller checks, as for ``sacctmgr delete``).

GET: ``accounts/``, ``account/{account_name}``, ``users/`` (``admin_level``,
``default_account``), ``user/{name}``, ``associations/`` and ``association/`` (``account``,
``user``, ``partition``, ``parent_account``: comma lists), ``qos/`` (``name``), ``qos/{qos}``.
DELETE: ``account/{account_name}``, ``user/{name}``, ``qos/{qos}``.  A name the book does not
have is a 404.  Adding over REST (POST) is not served yet: sacctmgr add does it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from plurm.rest.routes import Ctx, Handler, RestError, Result

_PREEMPT_MODES = {"off": "DISABLED", "cluster": "DISABLED", "suspend": "SUSPEND", "requeue": "REQUEUE",
                  "cancel": "CANCEL", "gang": "GANG"}


def _no_val(number: int | None) -> dict:
    if number is None:
        return {"set": False, "infinite": True, "number": 0}
    return {"set": True, "infinite": False, "number": int(number)}


async def _book(ctx: Ctx, source: str, entity: str) -> dict:
    """``sacctmgr show ENTITY``'s answer (the whole book, as the controller lets the caller see it)."""
    return await ctx.ask("acctmgr", {"action": "show", "entity": entity}, source)


def _short(cluster: str, link: dict) -> dict:
    return {"account": link["account"], "cluster": cluster, "partition": "", "user": link.get("user") or ""}


def account_obj(account: dict, links: list[dict], cluster: str) -> dict:
    mine = [_short(cluster, {"account": account["account"]})] + [
        _short(cluster, link) for link in links if link["account"] == account["account"]]
    return {"name": account["account"], "description": account.get("description") or account["account"],
            "organization": account.get("organization") or account["account"], "coordinators": [], "flags": [],
            "associations": mine}


def user_obj(user: dict, links: list[dict], cluster: str) -> dict:
    level = user.get("admin") or "None"
    return {"name": user["user"], "administrator_level": [level if level in ("Operator", "Administrator") else "None"],
            "default": {"account": user.get("default_account") or "", "wckey": ""}, "coordinators": [],
            "flags": [], "wckeys": [],
            "associations": [_short(cluster, link) for link in links if link["user"] == user["user"]]}


def assoc_objs(reply: dict) -> list[dict]:
    """Every association: each account's own (user ""), then each user's, as sacctmgr lists them."""
    cluster = reply.get("cluster", "")
    parents = {a["account"]: a.get("parent") for a in reply.get("accounts", [])}
    defaults = {u["user"]: u.get("default_account") for u in reply.get("users", [])}

    def lineage(name: str) -> str:
        path, seen = [], set()
        while name and name not in seen:
            seen.add(name)
            path.append(name)
            name = parents.get(name) or ""
        return "/" + "/".join(reversed(path)) + "/"

    def one(account: str, user: str, shares: int, index: int) -> dict:
        parent = parents.get(account) if not user else account
        return {"account": account, "cluster": cluster, "user": user, "partition": "", "id": index,
                "parent_account": parent or "", "shares_raw": int(shares), "qos": ["normal"],
                "default": {"qos": ""}, "is_default": bool(user) and defaults.get(user) == account,
                "lineage": lineage(account) + (f"0-{user}/" if user else ""), "flags": [], "comment": "",
                "priority": _no_val(None)}

    out: list[dict] = []
    for account in reply.get("accounts", []):
        out.append(one(account["account"], "", account.get("shares", 1), len(out) + 1))
    for link in reply.get("links", []):
        out.append(one(link["account"], link["user"], link.get("shares", 1), len(out) + 1))
    return out


def qos_obj(qos: dict, index: int) -> dict:
    mode = _PREEMPT_MODES.get(str(qos.get("preempt_mode") or "cluster").lower(), "DISABLED")
    limit = qos.get("max_jobs_per_user")
    return {"name": qos["name"], "description": qos.get("description") or "", "id": index, "flags": [],
            "priority": _no_val(qos.get("priority") or 0),
            "preempt": {"list": [p for p in (qos.get("preempt") or "").split(",") if p], "mode": [mode],
                        "exempt_time": _no_val(None)},
            "limits": {"max": {"jobs": {"active_jobs": {"per": {"user": _no_val(limit)}}}}},
            "usage_factor": {"set": True, "infinite": False, "number": 1.0},
            "usage_threshold": {"set": False, "infinite": True, "number": 0.0}}


def _names(ctx: Ctx, key: str) -> set[str]:
    return {w for w in (ctx.query(key) or "").split(",") if w}


def _one(items: list[dict], what: str, name: str) -> list[dict]:
    if not items:
        raise RestError(f"No {what} named {name[:64]}", "NotFound", f"slurmdb_{what}s_get")
    return items


async def get_accounts(ctx: Ctx) -> Result:
    reply = await _book(ctx, "slurmdb_accounts_get", "account")
    cluster, links = reply.get("cluster", ""), reply.get("links", [])
    return {"accounts": [account_obj(a, links, cluster) for a in reply.get("accounts", [])]}, []


async def get_account(ctx: Ctx) -> Result:
    name = ctx.request.match_info["account_name"]
    reply = await _book(ctx, "slurmdb_accounts_get", "account")
    cluster, links = reply.get("cluster", ""), reply.get("links", [])
    found = [account_obj(a, links, cluster) for a in reply.get("accounts", []) if a["account"] == name]
    return {"accounts": _one(found, "account", name)}, []


async def get_users(ctx: Ctx) -> Result:
    reply = await _book(ctx, "slurmdb_users_get", "user")
    cluster, links = reply.get("cluster", ""), reply.get("links", [])
    users = [user_obj(u, links, cluster) for u in reply.get("users", [])]
    levels, defaults = _names(ctx, "admin_level"), _names(ctx, "default_account")
    users = [u for u in users if (not levels or u["administrator_level"][0] in levels)
             and (not defaults or u["default"]["account"] in defaults)]
    return {"users": users}, []


async def get_user(ctx: Ctx) -> Result:
    name = ctx.request.match_info["name"]
    reply = await _book(ctx, "slurmdb_users_get", "user")
    cluster, links = reply.get("cluster", ""), reply.get("links", [])
    found = [user_obj(u, links, cluster) for u in reply.get("users", []) if u["user"] == name]
    return {"users": _one(found, "user", name)}, []


async def get_associations(ctx: Ctx) -> Result:
    reply = await _book(ctx, "slurmdb_associations_get", "assoc")
    wanted = {key: _names(ctx, key) for key in ("account", "user", "partition", "parent_account", "cluster")}
    assocs = [a for a in assoc_objs(reply) if all(not want or a[key] in want for key, want in wanted.items())]
    return {"associations": assocs}, []


async def get_qos_list(ctx: Ctx) -> Result:
    reply = await _book(ctx, "slurmdb_qos_get", "qos")
    names = _names(ctx, "name")
    return {"qos": [qos_obj(q, i + 1) for i, q in enumerate(reply.get("qos", []))
                    if not names or q["name"] in names]}, []


async def get_qos(ctx: Ctx) -> Result:
    name = ctx.request.match_info["qos"]
    reply = await _book(ctx, "slurmdb_qos_get", "qos")
    found = [qos_obj(q, i + 1) for i, q in enumerate(reply.get("qos", [])) if q["name"] == name]
    return {"qos": _one(found, "qos", name)}, []


async def _delete(ctx: Ctx, entity: str, name: str, source: str) -> None:
    """sacctmgr delete ENTITY NAME: a name the book lacks is a 404, not a silent success."""
    reply = await _book(ctx, source, entity)
    key = {"account": ("accounts", "account"), "user": ("users", "user"), "qos": ("qos", "name")}[entity]
    if not any(item[key[1]] == name for item in reply.get(key[0], [])):
        raise RestError(f"No {entity} named {name[:64]}", "NotFound", source)
    await ctx.ask("acctmgr", {"action": "delete", "entity": entity, "names": [name]}, source)


async def delete_account(ctx: Ctx) -> Result:
    name = ctx.request.match_info["account_name"]
    await _delete(ctx, "account", name, "slurmdb_accounts_remove")
    return {"removed_accounts": [name]}, []


async def delete_user(ctx: Ctx) -> Result:
    await _delete(ctx, "user", ctx.request.match_info["name"], "slurmdb_users_remove")
    return {}, []


async def delete_qos(ctx: Ctx) -> Result:
    name = ctx.request.match_info["qos"]
    await _delete(ctx, "qos", name, "slurmdb_qos_remove")
    return {"removed_qos": [name]}, []


def _empty(key: str) -> Callable[[], dict[str, Any]]:
    return lambda: {key: []}


DBMORE_ROUTES: list[tuple[str, str, Handler, Callable[[], dict]]] = [
    ("GET", "/slurmdb/{version}/accounts/", get_accounts, _empty("accounts")),
    ("GET", "/slurmdb/{version}/account/{account_name}", get_account, _empty("accounts")),
    ("DELETE", "/slurmdb/{version}/account/{account_name}", delete_account, _empty("removed_accounts")),
    ("GET", "/slurmdb/{version}/users/", get_users, _empty("users")),
    ("GET", "/slurmdb/{version}/user/{name}", get_user, _empty("users")),
    ("DELETE", "/slurmdb/{version}/user/{name}", delete_user, dict),
    ("GET", "/slurmdb/{version}/associations/", get_associations, _empty("associations")),
    ("GET", "/slurmdb/{version}/association/", get_associations, _empty("associations")),
    ("GET", "/slurmdb/{version}/qos/", get_qos_list, _empty("qos")),
    ("GET", "/slurmdb/{version}/qos/{qos}", get_qos, _empty("qos")),
    ("DELETE", "/slurmdb/{version}/qos/{qos}", delete_qos, _empty("removed_qos")),
]
