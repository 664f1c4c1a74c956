"""plurmd's side of ``scontrol reboot`` and ``scontrol reconfigure``.

- ``reboot_node``: the controller sends it once the node is idle (``scontrol reboot``), or
  once a ``--reboot`` job is given the node (corescheduler/core_reboot.py: the job waits,
  CONFIGURING, until the node registers again).  With ``RebootProgram`` in
  slurm.conf plurmd runs it (as slurmd does; the host goes down and plurmd with it, and the
  node registers again when it is back).  Without one — a local cluster, where the "nodes"
  share one host that must not be rebooted — plurmd restarts itself instead: it re-executes
  its own command line, so it registers again with a new start time (SlurmdStartTime),
  which is what tells the controller the reboot is done.  A local cluster cannot boot a
  new kernel, clear the host's memory or re-run the host's boot scripts.
- ``reconfigure_node``: read slurm.conf again (Prolog, Epilog, and the rest read from
  ``daemon.conf`` when used).  What was bound at start (the node's port, its address, the
  spool directory, the key) stays until plurmd is restarted; a change to them is logged.
  A file with an error is logged and the running configuration stays.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import sys
from typing import Any

log = logging.getLogger("plurmd")


def handle(daemon: Any, kind: str, msg: Any) -> None:
    if kind == "reboot_node":
        reboot(daemon, getattr(msg, "reason", ""))
    elif kind == "reconfigure_node":
        reconfigure(daemon)


def reboot(daemon: Any, reason: str = "") -> None:
    busy = set(getattr(daemon, "jobs", {})) | set(getattr(daemon, "unacked", {}))
    if busy:
        # The controller issues a reboot only to an idle node; jobs here mean this daemon has
        # a report to deliver first.  The controller asks again (every 5 s, until ResumeTimeout).
        log.info("reboot postponed: jobs %s still here", sorted(busy))
        return
    program = (daemon.conf.get("RebootProgram") or "").strip()
    if program:
        log.warning("reboot requested (%s): running RebootProgram %s", reason or "no reason", program)
        try:
            subprocess.Popen(shlex.split(program), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        except (OSError, ValueError) as exc:
            log.error("RebootProgram %s could not be started: %s", program, exc)
        return
    argv = [sys.executable, *sys.orig_argv[1:]]
    log.warning("reboot requested (%s): no RebootProgram, plurmd restarts itself: %s", reason or "no reason",
                shlex.join(argv))
    for handler in logging.getLogger().handlers + log.handlers:
        handler.flush()
    try:
        # Every descriptor plurmd holds is close-on-exec (Python's default, libzmq's too):
        # the port, the pid file's lock and the controller's connection are released.
        os.execv(sys.executable, argv)
    except OSError as exc:
        log.error("restart failed, plurmd goes on as it was: %s", exc)


def reconfigure(daemon: Any) -> None:
    from plurm.grammar.slurmconf import ConfError, load_slurm_conf

    try:
        conf = load_slurm_conf(daemon.conf_path)
    except (ConfError, OSError) as exc:
        log.error("reconfigure: %s: the running configuration stays", exc)
        return
    if getattr(daemon, "dynamic_conf", None) is not None and daemon.name not in conf.nodes:
        from plurm.nodeagent.dynamic import add_to_conf  # (plurmd -Z: the node is none of slurm.conf's)

        add_to_conf(conf, daemon.name, daemon.dynamic_conf)
    node = conf.nodes.get(daemon.name)
    if node is None:
        log.error("reconfigure: node %s is no longer in %s: the running configuration stays", daemon.name,
                  daemon.conf_path)
        return
    old = daemon.node_conf
    for attr in ("addr", "port"):
        if getattr(node, attr) != getattr(old, attr):
            log.warning("reconfigure: %s of node %s changed (%s -> %s): takes effect when plurmd restarts",
                        attr, daemon.name, getattr(old, attr), getattr(node, attr))
    daemon.conf, daemon.node_conf = conf, node
    log.info("reconfigured from %s", daemon.conf_path)
