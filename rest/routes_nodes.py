"""Dynamic nodes over REST (issue 16 item 6): ``POST new/node/`` (v0.0.44 and v0.0.45: an
``openapi_create_node_req`` whose ``node_conf`` is a slurm.conf node line, as ``scontrol
create``) and ``DELETE node/{node_name}`` (v0.0.43 to v0.0.45: ``scontrol delete``).  Which
version serves which is the specs' (rest/openapi.py ``offers``).

The controller decides (corescheduler/core_dynnodes.py): SlurmUser, root and Administrators
only; MaxNodeCount; a node of slurm.conf or one with jobs is not deleted.  A refusal carries
the controller's line (``Failed to parse nodeline '...'``, ``Node 'd1' has jobs (12)``) as its
description: 400 for a line it cannot take or a node it may not delete, 404 for an unknown
node, 500 otherwise (MaxNodeCount reached, a caller who is no administrator).
"""

from __future__ import annotations

from collections.abc import Callable

from plurm.rest.routes import Ctx, Handler, RestError, Result
from plurm.wire.client import ClientError

MAX_LINE = 4096  # a node line longer than this is no node line
# The caller's mistakes: 400 (a node of slurm.conf or one with jobs is not deletable, whatever
# the server's health; schemathesis' not_a_server_error holds to that).
_BAD_REQUEST = frozenset({"InvalidNodeLine", "InvalidNodeState", "DuplicateNodeName", "NodeNotDynamic",
                          "NodeHasJobs"})


async def _ask(ctx: Ctx, msg_type: str, body: dict, source: str) -> dict:
    try:
        return await ctx.ctl.request(ctx.caller, msg_type, body)
    except ClientError as exc:
        text = f"{exc.detail}: {exc}" if exc.detail else str(exc)
        raise RestError(text, exc.code, source, 400 if exc.code in _BAD_REQUEST else None) from None


async def post_new_node(ctx: Ctx) -> Result:
    query = await ctx.body("slurm_create_node")
    line = query.get("node_conf") if isinstance(query, dict) else None
    if not isinstance(line, str) or not line.strip():
        raise RestError("node_conf: a node line (NodeName=... CPUs=...) is required", "BadRequest",
                        "slurm_create_node", 400)
    if len(line) > MAX_LINE or "\n" in line:
        raise RestError("node_conf: one node line", "BadRequest", "slurm_create_node", 400)
    await _ask(ctx, "create_node", {"node_conf": line.strip()}, "slurm_create_node")
    return {}, []


async def delete_node(ctx: Ctx) -> Result:
    name = ctx.request.match_info["node_name"]
    await _ask(ctx, "delete_node", {"nodes": [name]}, "slurm_delete_node")
    return {}, []


def _empty() -> dict:
    return {}


NODES_ROUTES: list[tuple[str, str, Handler, Callable[[], dict]]] = [
    ("POST", "new/node/", post_new_node, _empty),
    ("DELETE", "node/{node_name}", delete_node, _empty),
]
