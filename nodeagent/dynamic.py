"""plurmd -Z --conf "...": a node that slurm.conf does not have (dynamic nodes, issue 16).

As ``slurmd -Z``: the node's name is -N (else the short host name), its shape what this
host has (CPUs, RealMemory, as ``slurmd -C``) overridden by ``--conf``, whose syntax is a
slurm.conf node line without NodeName (``CPUs=4 RealMemory=2000 Features=f Gres=gpu:1``).
Unlike slurmd, ``Port=`` is taken: several plurmd share a host in a local cluster (as
Slurm's multiple-slurmd), each on its own port.

The node is put into the daemon's loaded slurm.conf (so the rest of plurmd reads it as any
node's), and its line goes with each registration (``NodeRegister.dynamic_conf``): the
controller creates it on the first one (MaxNodeCount permitting) and keeps it after plurmd
exits (DOWN once SlurmdTimeout passes, as Slurm's), and across its own restarts.
"""

from __future__ import annotations

import os
from typing import Any

# Keys --conf may not set (Slurm: "NodeName and Port are not supported"; plurm takes Port).
_REFUSED = ("nodename",)
# The keys of the line sent to the controller, from the node's NodeConf.
_LINE_KEYS = (("CPUs", "cpus"), ("Sockets", "sockets"),  # (without Boards: Sockets is the node's total)
              ("CoresPerSocket", "cores_per_socket"), ("ThreadsPerCore", "threads_per_core"),
              ("RealMemory", "real_memory"), ("TmpDisk", "tmp_disk"), ("Weight", "weight"))


class DynamicConfError(ValueError):
    """--conf cannot make a node line (its words are the message)."""


def detected() -> dict[str, str]:
    """What this host has, as slurmd -C reports it: CPUs and RealMemory (MiB)."""
    import psutil

    return {"CPUs": str(os.cpu_count() or 1), "RealMemory": str(psutil.virtual_memory().total // (1024 * 1024))}


def add_to_conf(conf: Any, name: str, dyn_conf: str) -> str:
    """Put node ``name`` with ``dyn_conf`` into the loaded ``conf``; returns the line the
    controller is sent (without NodeName).  Raises DynamicConfError."""
    from plurm.grammar.slurmconf import ConfError, parse_slurm_conf_text

    words = dyn_conf.split()
    given = {w.partition("=")[0].lower() for w in words}
    if given & set(_REFUSED):
        raise DynamicConfError("--conf: NodeName is not supported (-N names the node)")
    shape = {"cpus", "boards", "socketsperboard", "sockets", "corespersocket", "threadspercore"}
    base = detected()
    if given & shape:
        base.pop("CPUs")  # (any of them given: they define the CPUs, not the host's count)
    if "realmemory" in given:
        base.pop("RealMemory")
    extra = " ".join(f"{k}={v}" for k, v in base.items())
    try:
        mini = parse_slurm_conf_text(f"NodeName={name} {extra} {dyn_conf}".strip())
    except ConfError as exc:
        raise DynamicConfError(f"--conf: {exc}") from None
    if mini.warnings:
        raise DynamicConfError(f"--conf: {'; '.join(mini.warnings)}")
    node = mini.nodes[name]
    if "nodeaddr" not in given and "nodehostname" not in given:
        node.addr = node.hostname = "localhost" if name not in _resolvable(name) else name
    conf.nodes[name] = node
    return line_of(node)


def line_of(node: Any) -> str:
    words = [f"{key}={getattr(node, attr)}" for key, attr in _LINE_KEYS]
    if node.features:
        words.append("Features=" + ",".join(node.features))
    if node.gres:
        words.append("Gres=" + ",".join(node.gres))
    words += [f"NodeAddr={node.addr}", f"NodeHostname={node.hostname}"]
    if node.port:
        words.append(f"Port={node.port}")
    return " ".join(words)


def _resolvable(name: str) -> set[str]:
    """{name} when the name resolves (a real host's name), else nothing: the node is this host."""
    import socket

    try:
        socket.gethostbyname(name)
    except OSError:
        return set()
    return {name}


def check(conf: Any, conf_file: str, name: str, dyn_conf: str) -> None:
    """plurmd's checks before it detaches (StartupError: the admin's terminal shows it)."""
    from plurm.common.daemon import StartupError

    if name in conf.nodes:
        raise StartupError(f"node {name} is in {conf_file}: -Z is for a node that slurm.conf does not have")
    try:
        add_to_conf(conf, name, dyn_conf)
    except DynamicConfError as exc:
        raise StartupError(str(exc)) from None
