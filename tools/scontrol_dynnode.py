"""scontrol create NodeName=... and scontrol delete NodeName=... (dynamic nodes, issue 16).

The node line goes to the controller as given (it parses it, as slurmctld does:
corescheduler/dynnodes_conf.py); what this prints on a refusal is 22.05.8's, captured on this
machine: the controller's line ("Failed to parse nodeline '...'", "Only State=FUTURE and ...")
after ``scontrol: error:``, then ``Error creating the node(s): <error>``; for delete
``scontrol: error: failed to delete nodes d1`` and ``delete_node NodeName=d1: <error>``.
Success prints nothing, as Slurm's.  Each function returns False for a command that is not
about nodes (a reservation's: scontrol_resv.py).
"""

from __future__ import annotations

from typing import Any


def is_node_words(args: list[str]) -> bool:
    """``create NodeName=...`` / ``create node ...`` (Slurm takes any word starting "node")."""
    return bool(args) and args[0].lower().startswith("node")


def create(scontrol: Any, args: list[str]) -> bool:
    if not args:
        scontrol.error("too few arguments for create keyword")
        return True
    if not is_node_words(args):
        return False
    from plurm.wire.client import ClientError

    line = " ".join(args)
    try:
        scontrol.request("create_node", {"node_conf": line})
    except ClientError as exc:
        if exc.detail:
            scontrol.error(f"scontrol: error: {exc.detail}")
        scontrol.error(f"Error creating the node(s): {exc}")
    return True


def delete(scontrol: Any, args: list[str]) -> bool:
    if not args:
        scontrol.error("too few arguments for delete keyword")
        return True
    if not is_node_words(args):
        return False
    from plurm.wire.client import ClientError

    _key, eq, value = args[0].partition("=")
    names = value if eq else (args[1] if len(args) > 1 else "")
    shown = args[0] if eq else " ".join(args[:2])
    if not names:
        scontrol.error(f"delete_node {shown}: Invalid node name specified")
        return True
    try:
        scontrol.request("delete_node", {"nodes": [names]})
    except ClientError as exc:
        scontrol.error(f"scontrol: error: failed to delete nodes {names}")
        if exc.detail:
            scontrol.error(f"scontrol: error: {exc.detail}")
        scontrol.error(f"delete_node {shown}: {exc}")
    return True
