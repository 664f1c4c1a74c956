"""``sacctmgr show cluster`` and ``sacctmgr show tres``: the cluster and the trackable
resources as the controller's configuration has them.

Slurm keeps both in slurmdbd: the clusters that registered (with the address and port their
slurmctld registered from, and the RPC version it speaks) and the TRES table (fixed ids 1-8,
then 1001 on for each gres/license/bb entry of AccountingStorageTRES).  plurm's controller is
its own accounting store and has one cluster, so both come from the controller's ``config``
reply.  Rows are dicts for sacctmgr's table writer (tools/sacctmgr.py), which imports this
module and gives it the columns below.
"""

from __future__ import annotations

# The RPC version Slurm 22.05 reports (SLURM_22_05_PROTOCOL_VERSION): tools compare it.
RPC_VERSION = "9728"

# TRES always tracked, with Slurm's fixed ids (AccountingStorageTRES documents the set).
BASE_TRES = (("cpu", "", 1), ("mem", "", 2), ("energy", "", 3), ("node", "", 4), ("billing", "", 5),
             ("fs", "disk", 6), ("vmem", "", 7), ("pages", "", 8))
FIRST_DYNAMIC_ID = 1001

_E = ""
CLUSTER_COLUMNS: dict[str, tuple[str, int, str]] = {
    "cluster": ("Cluster", 10, "cluster"), "controlhost": ("ControlHost", 15, "control_host"),
    "controlport": ("ControlPort", 12, "control_port"), "rpc": ("RPC", 5, "rpc"),
    "fairshare": ("Share", 9, "shares"), "grpjobs": ("GrpJobs", 7, _E), "grptres": ("GrpTRES", 13, _E),
    "grpsubmit": ("GrpSubmit", 9, _E), "maxjobs": ("MaxJobs", 7, _E), "maxtres": ("MaxTRES", 13, _E),
    "maxsubmit": ("MaxSubmit", 9, _E), "maxwall": ("MaxWall", 11, _E), "qos": ("QOS", 20, "qos"),
    "defaultqos": ("Def QOS", 9, _E),
}
TRES_COLUMNS: dict[str, tuple[str, int, str]] = {
    "type": ("Type", 8, "type"), "name": ("Name", 10, "name"), "id": ("ID", 6, "id"),
}
# Slurm's default listings (a field's own width may differ: Name is 10 wide in format=).
DEFAULT_FORMATS = {"tres": "type,name%15,id", "cluster": ",".join(CLUSTER_COLUMNS)}


def tres_rows(options: dict[str, str]) -> list[dict]:
    """The TRES table: the fixed ones, then AccountingStorageTRES's gres/license/bb entries in
    the order it lists them (the order slurmdbd gives them their ids on a fresh database)."""
    rows = [{"type": t, "name": n, "id": i} for t, n, i in BASE_TRES]
    fixed = {t if not n else f"{t}/{n}" for t, n, _ in BASE_TRES}
    next_id = FIRST_DYNAMIC_ID
    # (the controller's options are keyed by slurm.conf's canonical names: grammar/slurmconf.py)
    for entry in (options.get("AccountingStorageTRES") or "").split(","):
        entry = entry.strip().lower()
        kind, _, name = entry.partition("/")
        if not entry or entry in fixed or kind not in ("gres", "license", "bb") or not name:
            continue
        rows.append({"type": kind, "name": name, "id": next_id})
        fixed.add(entry)
        next_id += 1
    return rows


def cluster_rows(reply: dict, control_host: str) -> list[dict]:
    options = reply.get("options", {})
    port = (options.get("SlurmctldPort") or "6817").split("-", 1)[0]
    return [{"cluster": reply.get("cluster") or options.get("ClusterName") or "cluster",
             "control_host": control_host, "control_port": port, "rpc": RPC_VERSION, "shares": 1,
             "qos": "normal"}]


# What each entity's `where` accepts (key -> the row's field); anything else is sacctmgr's
# "Unknown condition".  (name= and names= never get here: sacctmgr.parse makes them names.)
CONDITIONS = {"tres": {"name": "name", "names": "name", "type": "type", "id": "id", "ids": "id"},
              "cluster": {"name": "cluster", "names": "cluster", "cluster": "cluster", "clusters": "cluster"}}


def matches(row: dict, names: list[str], where: dict[str, str], name_key: str, fields: dict[str, str]) -> bool:
    """sacctmgr's conditions: names (the first word after the entity) and key=value lists."""
    if names and str(row.get(name_key, "")).lower() not in {n.lower() for n in names}:
        return False
    return all(str(row.get(fields[key], "")).lower() in {v.lower() for v in value.split(",")}
               for key, value in where.items())


class UnknownCondition(ValueError):
    """A where key the entity does not have: sacctmgr's two-line refusal."""


def configured_rows(entity: str, names: list[str], where: dict[str, str]) -> tuple[str, list[dict]]:
    """(format, rows) of ``sacctmgr show cluster|tres``; the table is sacctmgr's to write.
    Raises UnknownCondition, and ClientError when the controller does not answer."""
    from plurm.wire.client import read_settings, request

    where = dict(where)
    fmt = where.pop("format", None) or DEFAULT_FORMATS[entity]
    for key, value in where.items():
        if key not in CONDITIONS[entity]:
            raise UnknownCondition(f" Unknown condition: {key}={value}\n Use keyword 'set' to modify value")
    reply = request("config", {})
    if entity == "tres":
        rows, key = tres_rows(reply.get("options", {})), "name"
    else:
        rows, key = cluster_rows(reply, read_settings().host), "cluster"
    return fmt, [r for r in rows if matches(r, names, where, key, CONDITIONS[entity])]

