"""Dynamic nodes, the configuration side: node lines to ``Node`` records, slurm.conf's rules.

The controller (and ``plurmd -Z``'s registration) hand a node line, slurm.conf's syntax
(``NodeName=d[1-2] CPUs=4 RealMemory=2000 Features=f Gres=gpu:1 State=CLOUD``), to
:func:`parse_node_line`; the records go to the core (core_dynnodes.py).  :func:`limits` reads
MaxNodeCount and which partitions a dynamic node joins (``Nodes=ALL``, or a ``NodeSet`` with
``Feature=``), :func:`merge` puts the stored dynamic nodes beside slurm.conf's before the core
is built (their jobs hold them), and :func:`keep_on_reconfigure` keeps them across
``scontrol reconfigure``, which otherwise takes the node set from slurm.conf alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from plurm.corescheduler import topology
from plurm.corescheduler.core_dynnodes import DynamicLimits
from plurm.corescheduler.errors import RequestError
from plurm.wire.model import Node, Partition

# State= of a created node -> Node.dynamic; no State is a dynamic normal node (a plurmd -Z
# registers it; Slurm 23.02's DYNAMIC_NORM: 22.05's scontrol takes only FUTURE and CLOUD).
STATES = {"FUTURE": "future", "CLOUD": "cloud", "EXTERNAL": "external"}
STATE_REFUSAL = "Only State=FUTURE, State=CLOUD and State=EXTERNAL allowed for nodes created by scontrol"

# GresConf= (newer Slurm: the node's gres.conf lines, sent by slurm-bridge as GresConf="" on
# every Kubernetes node).  Taken and set aside: device files matter only to a plurmd, which
# reads its own gres.conf; the counts come from Gres=.
_GRES_CONF = re.compile(r'(?i)\s+GresConf=("[^"]*"|\S*)')


def parse_node_line(line: str, slurmd_port: int, kind: str | None = None) -> list[Node]:
    """The nodes of one node line; ``kind`` forces Node.dynamic (plurmd -Z: "norm").
    Refusals are Slurm's: "Failed to parse nodeline '...'" (detail) with "Unspecified error"."""
    from plurm.grammar.slurmconf import ConfError, parse_slurm_conf_text

    text = line.strip()
    refused = RequestError("Unspecified error", "InvalidNodeLine", f"Failed to parse nodeline '{text}'")
    if not text.lower().startswith("nodename=") or "\n" in text:
        raise refused
    try:
        conf = parse_slurm_conf_text(_GRES_CONF.sub("", text))
    except ConfError:
        raise refused from None
    if conf.warnings or not conf.nodes:  # (an unknown key: Slurm refuses the line)
        raise refused
    nodes = []
    for nc in conf.nodes.values():
        state = (nc.state or "").upper()
        dynamic = kind or (STATES.get(state) if state else "norm")
        if dynamic is None:
            raise RequestError("Invalid node state specified", "InvalidNodeState", STATE_REFUSAL)
        if nc.name.upper() == "ALL" or not nc.name:
            raise refused
        nodes.append(Node(
            name=nc.name, addr=nc.addr, hostname=nc.hostname, port=nc.port or slurmd_port,
            cpus=nc.cpus, sockets=nc.sockets, cores_per_socket=nc.cores_per_socket,
            threads_per_core=nc.threads_per_core, boards=nc.boards, real_memory=nc.real_memory,
            tmp_disk=nc.tmp_disk, weight=nc.weight, features=list(nc.features), gres=list(nc.gres),
            cpu_spec_list=topology.spec_cpus(nc.raw, nc.sockets, nc.cores_per_socket, nc.threads_per_core),
            dynamic=dynamic))
    return nodes


def limits(conf: Any) -> DynamicLimits:
    """MaxNodeCount and each partition's rule for dynamic nodes, from a loaded slurm.conf."""
    from plurm.grammar.hostlist import expand

    features_of: dict[str, str] = getattr(conf, "nodeset_features", {})
    rules = []
    for pc in conf.partitions.values():
        words = expand(pc.raw.get("Nodes") or "") if pc.raw.get("Nodes") else []
        every = any(w.upper() == "ALL" for w in words)
        features = frozenset(features_of[w] for w in words if w in features_of)
        if every or features:
            rules.append((pc.name, every, features))
    from plurm.grammar.slurmconf import ConfError

    try:
        max_count = conf.get_int("MaxNodeCount")
    except (ConfError, ValueError):  # (a bad value: slurm.conf's checks report it; no dynamic nodes then)
        max_count = None
    return DynamicLimits(max_node_count=max_count, rules=tuple(rules))


def merge(conf: Any, nodes: dict[str, Node], partitions: dict[str, Partition], dynamic: Iterable[Node]) -> None:
    """Stored dynamic nodes beside slurm.conf's (one that slurm.conf now defines is dropped:
    the file wins), each in the partitions its rules give it."""
    import msgspec

    rules = limits(conf)
    for node in dynamic:
        if node.name in nodes:
            continue
        # A copy: on reconfigure these are the core's live nodes, and a refused reconfigure
        # must leave them as they were (their partitions shown by sinfo/scontrol).
        node = msgspec.structs.replace(node, partitions=[])
        nodes[node.name] = node
        for pname in rules.partitions_for(node):
            part = partitions.get(pname)
            if part is not None and node.name not in part.nodes:
                part.nodes = part.nodes + [node.name]


def keep_on_reconfigure(core: Any, parts: dict[str, Any], conf: Any) -> None:
    """reconfigure's parts (configure.reconfig_parts) with the core's dynamic nodes kept."""
    merge(conf, parts["nodes"], parts["partitions"], [n for n in core.nodes.values() if n.dynamic])


def stored(node: Node) -> Node:
    """What the store keeps of a dynamic node: its configuration, none of its run-time state
    (a restarted controller hears from its plurmd again, as from a static node's)."""
    import msgspec

    return msgspec.structs.replace(node, partitions=[], responding=False, alloc_cpus=0, alloc_mem=0,
                                   boot_time=None, slurmd_start_time=None, cpu_load=None, free_mem=None,
                                   devices=[], gpu_cpus=[])
