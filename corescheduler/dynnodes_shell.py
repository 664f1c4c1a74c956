"""Dynamic nodes, the controller's side: the handlers, the store, start-up and reconfigure.

``controller.py`` wires these in with one line each (the handlers ``create_node`` and
``delete_node``, ``load_state``, ``apply_effects``, ``on_reconfigure``, ``on_node_register``);
the rules are the core's (core_dynnodes.py), the parsing dynnodes_conf.py's, the table
dynnodes_store.py's.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from plurm.corescheduler import dynnodes_conf, dynnodes_store
from plurm.corescheduler.errors import RequestError
from plurm.wire import protocol

log = logging.getLogger("plurmctld")


def on_create(ctl: Any, header: dict, msg: protocol.CreateNode, ident: bytes) -> dict[str, Any]:
    """scontrol create NodeName=... (SlurmUser, root and Administrators only)."""
    ctl.service.require_admin(ctl._who(header))
    nodes = dynnodes_conf.parse_node_line(msg.node_conf, ctl.conf.slurmd_port)
    names = ctl.core.create_nodes(nodes, time.time())
    return {"nodes": names}


def on_delete(ctl: Any, header: dict, msg: protocol.DeleteNode, ident: bytes) -> dict[str, Any]:
    """scontrol delete NodeName=d1[,d2]: the nodes' daemons lose their routes too."""
    ctl.service.require_admin(ctl._who(header))
    from plurm.grammar.hostlist import expand

    try:
        names = [n for word in msg.nodes for n in expand(word)]
    except ValueError:
        raise RequestError("Invalid node name specified", "InvalidNodeName") from None
    if not names:
        raise RequestError("Invalid node name specified", "InvalidNodeName")
    ctl.core.delete_nodes(names, time.time())
    for name in names:
        ctl.node_routes.pop(name, None)
    return {"nodes": names}


def persist(ctl: Any) -> None:
    """The core's dynamic-node changes into the store (apply_effects: this turn's commit)."""
    changes = ctl.core.take_dynamic_changes()
    if changes is not None:
        dynnodes_store.write(ctl.store, changes)


def stored_nodes(ctl: Any) -> list[Any]:
    """The dynamic nodes the store kept (load_state: before the core is built)."""
    return dynnodes_store.load(ctl.store)


def after_load(ctl: Any) -> None:
    """slurm.conf's MaxNodeCount and partition rules, given to a core just built."""
    ctl.core.set_dynamic_limits(dynnodes_conf.limits(ctl.conf))
    ctl.core.settle_restored()


def before_reconfigure(ctl: Any, parts: dict[str, Any], conf: Any) -> None:
    """The dynamic nodes stay across scontrol reconfigure (Slurm's do)."""
    dynnodes_conf.keep_on_reconfigure(ctl.core, parts, conf)


def after_reconfigure(ctl: Any, conf: Any) -> None:
    ctl.core.set_dynamic_limits(dynnodes_conf.limits(conf))


def on_register(ctl: Any, msg: protocol.NodeRegister) -> None:
    """plurmd -Z: a node slurm.conf lacks registers with its node line: it is created (the
    MaxNodeCount check included); one already created comes back as it was (its first shape
    stays, as long as the node is not deleted); no plurmd may speak for an External node."""
    node = ctl.core.nodes.get(msg.node)
    try:
        if node is not None:
            ctl.core.node_heard(node)
            return
        if not msg.dynamic_conf:
            return  # (the usual refusal follows: not in slurm.conf)
        line = f"NodeName={msg.node} {msg.dynamic_conf}"
        nodes = dynnodes_conf.parse_node_line(line, ctl.conf.slurmd_port, kind="norm")
        ctl.core.create_nodes(nodes, time.time())
    except RequestError as exc:  # (plurmd is answered with it; the admin reads it here)
        why = f"{exc} ({exc.detail})" if exc.detail else str(exc)
        ctl.log_limit.warning("dynreg", f"node {msg.node} registration refused: %s", why)
        raise
    log.info("node %s registered as a dynamic node (plurmd -Z)", msg.node)
