"""Fair-share objects (``v0.0.4x_shares_resp_msg``): what ``sshare --json`` prints, from the
lines the controller answers ``share_info`` with (accounts in tree order, each user under its
account; ``depth`` is the account's depth under root).
"""

from __future__ import annotations

from plurm.tools.dataparser import values as v


def _float(value) -> dict:
    return v.number(None) if value is None else v.number(float(value))


def share(line: dict, parent: str, cluster: str = "", index: int = 0) -> dict:
    """One ``assoc_shares_obj_wrap``: an account (ASSOCIATION) or a user under one (USER)."""
    is_user = line.get("user") is not None
    return {
        "id": line.get("id", index),
        "cluster": cluster,
        "name": line["user"] if is_user else line["account"],
        "parent": parent,
        "partition": line.get("partition") or "",
        "shares_normalized": _float(line.get("norm_shares")),
        "shares": v.number(line.get("raw_shares")),
        "tres": {"run_seconds": [], "group_minutes": [], "usage": []},
        "effective_usage": _float(line.get("effective_usage")),
        "usage_normalized": _float(line.get("norm_usage", line.get("effective_usage"))),
        "usage": int(line.get("raw_usage") or 0),
        "fairshare": {"factor": _float(line.get("fairshare")), "level": _float(line.get("level_fs"))},
        "type": ["USER" if is_user else "ASSOCIATION"],
    }


def shares_resp(lines: list[dict], meta: dict, cluster: str = "", errors: list[dict] | None = None) -> dict:
    """``openapi_shares_resp``: every association with its parent, and the root's shares."""
    out: list[dict] = []
    path: list[str] = []  # the account at each depth, down to the line being read
    for index, line in enumerate(lines):
        depth = int(line.get("depth", 0))
        if line.get("user") is not None:
            parent = line["account"]
        else:
            del path[depth:]
            parent = path[-1] if path else ""
            path.append(line["account"])
        out.append(share(line, parent, cluster, index))
    total = sum(int(line.get("raw_shares") or 0) for line in lines
                if line.get("user") is None and int(line.get("depth", 0)) == 1)
    return v.envelope({"shares": {"shares": out, "total_shares": total}}, meta, errors)
