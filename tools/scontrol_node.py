"""scontrol's node administration: ``update NodeName=...``, ``reboot``, ``cancel_reboot``,
``reconfigure``.

The command lines and messages follow Slurm 22.05's scontrol: State= takes Slurm's state
names and any unique abbreviation of three letters or more (``dra``, ``res``, ``undr``);
DOWN, DRAIN and FAIL need a Reason; the controller decides the rest (corescheduler/
core_nodeadmin.py, core_reconfig.py) and its refusals are printed as ``slurm_update error:
...`` (``scontrol_reboot_nodes error``, ``slurm_reconfigure error``), exit status 1.
Start-up budget: the stdlib and plurm.grammar.hostlist only, until the request.
"""

from __future__ import annotations

from typing import Any

# scontrol's own State= words, in the order it tries them (with the abbreviation length
# it requires), then the base states it also accepts.
_SPECIAL = (("NORESP", "NoResp", 3), ("CANCEL_REBOOT", "CANCEL_REBOOT", 3), ("DRAIN", "DRAIN", 3),
            ("FAIL", "FAIL", 3), ("FUTURE", "FUTURE", 3), ("RESUME", "RESUME", 3),
            ("POWER_DOWN", "POWER_DOWN", 7), ("POWER_DOWN_ASAP", "POWER_DOWN_ASAP", 7),
            ("POWER_DOWN_FORCE", "POWER_DOWN_FORCE", 7), ("POWER_UP", "POWER_UP", 7),
            ("UNDRAIN", "UNDRAIN", 3))
_BASE = ("UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE")
VALID_STATES = "NoResp DRAIN FAIL FUTURE RESUME POWER_DOWN POWER_UP UNDRAIN " + " ".join(_BASE) + " "
_NEXT_STATES = ("RESUME", "DOWN", "UNDRAIN")


def _matches(value: str, word: str, least: int) -> bool:
    """Slurm's xstrncasecmp(value, word, MAX(len(value), least)): a prefix of at least
    ``least`` letters (a shorter value must equal the word's first letters and its end)."""
    n = max(len(value), least)
    return value[:n].upper() == word[:n].upper()


def node_state(value: str) -> str | None:
    """The State= value as the controller's word, or None when scontrol refuses it."""
    for word, name, least in _SPECIAL:
        if _matches(value, word, least):
            return name.upper()
    for word in _BASE:
        if _matches(value, word, 3):
            return word
    return None


def _nodes(sc: Any, text: str) -> list[str] | None:
    from plurm.grammar.hostlist import HostlistError, expand

    try:
        return expand(text)
    except HostlistError:
        sc.error("slurm_update error: Invalid node name specified")
        return None


def update_node(sc: Any, pairs: list[tuple[str, str]]) -> None:
    """``scontrol update NodeName=<hostlist> [State=<state>] [Reason=<text>]``."""
    from plurm.wire.client import ClientError

    nodes: list[str] = []
    state: str | None = None
    reason: str | None = None
    comment: str | None = None
    for key, value in pairs:
        lowered = key.lower()
        if lowered in ("nodename", "node"):
            found = _nodes(sc, value)
            if found is None:
                return
            nodes.extend(found)
        elif lowered == "state":
            state = node_state(value)
            if state is None:
                sc.error(f"Invalid input: {key}={value}")
                sc.error("Request aborted")
                sc.error("Valid states are: " + VALID_STATES)
                sc.error("Not all states are valid given a node's prior state")
                return
        elif lowered == "reason":
            reason = value
        elif lowered == "comment":
            comment = value
        else:
            sc.error(f"Update of this parameter is not supported: {key}={value}")
            sc.error("Request aborted")
            return
    if state is None and reason is None and comment is None:
        sc.error("No changes specified")
        return
    if state in ("DRAIN", "DOWN", "FAIL") and not reason:
        sc.error("You must specify a reason when DOWNING or DRAINING a node. Request denied")
        return
    try:
        sc.request("update_node", {"nodes": nodes, "state": state, "reason": reason,
                                   **({"comment": comment} if comment is not None else {})})
    except ClientError as exc:
        sc.error(f"slurm_update error: {exc}")


def reboot(sc: Any, args: list[str]) -> None:
    """``scontrol reboot [ASAP] [NextState=RESUME|DOWN|UNDRAIN] [Reason=<text>] ALL|<nodelist>``."""
    from plurm.wire.client import ClientError

    asap = False
    next_state = ""
    reason: str | None = None
    nodelist: str | None = None
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep and arg.upper() == "ASAP":
            asap = True
        elif sep and key.lower() == "nextstate":
            next_state = value.upper()
            if next_state not in _NEXT_STATES:
                sc.error(f"Invalid NextState value: {value}")
                sc.error("Valid values: " + ", ".join(_NEXT_STATES))
                return
        elif sep and key.lower() == "reason":
            reason = value
        elif nodelist is None and not sep:
            nodelist = arg
        else:
            sc.error(f"scontrol: error: too many arguments for keyword:{'reboot'}")
            return
    if not nodelist:
        sc.error("Missing node list. Specify ALL|<NodeList>")
        return
    nodes: list[str] = []
    if nodelist.upper() != "ALL":
        found = _nodes(sc, nodelist)
        if found is None:
            return
        nodes = found
    try:
        sc.request("reboot_nodes", {"nodes": nodes, "asap": asap, "next_state": next_state, "reason": reason})
    except ClientError as exc:
        if exc.detail:  # ("RebootProgram isn't defined": corescheduler/core_reboot.py)
            sc.error(f"scontrol: error: {exc.detail}")
        sc.error(f"scontrol_reboot_nodes error: {exc}")


def cancel_reboot(sc: Any, args: list[str]) -> None:
    """``scontrol cancel_reboot <nodelist>``: a node update to CANCEL_REBOOT, as Slurm's."""
    if not args:
        sc.error("scontrol: error: too few arguments for keyword:cancel_reboot")
        return
    if len(args) > 1:
        sc.error("scontrol: error: too many arguments for keyword:cancel_reboot")
        return
    update_node(sc, [("NodeName", args[0]), ("State", "CANCEL_REBOOT")])


def reconfigure(sc: Any, args: list[str]) -> None:
    """``scontrol reconfigure``: the controller and every plurmd read slurm.conf again."""
    from plurm.wire.client import ClientError

    if args:
        sc.error("scontrol: error: too many arguments for keyword:reconfigure")
        return
    try:
        sc.request("reconfigure", {})
    except ClientError as exc:
        sc.error(f"slurm_reconfigure error: {exc}")
