"""plurmd's command line: options, the checks made before detaching, then the loop.

Without -D, as slurmd: the pid file is --pidfile, else SlurmdPidFile (%n the node name, %h the
host, so that several plurmd share a host as Slurm's multiple-slurmd do), else Slurm's default
/var/run/slurmd.pid; the log is -L, else SlurmdLogFile (%n, %h), else syslog; the working
directory is the spool directory (SlurmdSpoolDir, where slurmd leaves its core files), else
/var/tmp; umask 022.  With -D nothing of that changes from before (`plurm cluster up` and the
test fixtures rely on it): a pid file only with --pidfile (locked, and removed at exit).  The
checks before starting are the same in both modes, and so are their messages.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys

from plurm.common.daemon import (Startup, StartupError, absolute, check_port_free, conf_path_option,
                                 load_or_fail, make_dirs, node_pattern, working_directory)
from plurm.nodeagent.daemon import NodeDaemon
from plurm.grammar.slurmconf import SlurmConf, load_slurm_conf
from plurm.wire.client import conf_path

log = logging.getLogger("plurmd")

DEFAULT_PIDFILE = "/var/run/slurmd.pid"  # Slurm's default for SlurmdPidFile


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="plurmd", description="plurm node daemon")
    parser.add_argument("-D", action="store_true", help="run in the foreground")
    parser.add_argument("-N", dest="node", help="node name (default: the short host name)")
    parser.add_argument("-f", dest="conf", help="slurm.conf to read (default: $SLURM_CONF)")
    parser.add_argument("-L", dest="logfile", help="log file (default: stderr in -D, else SlurmdLogFile)")
    parser.add_argument("-v", action="count", default=0)
    parser.add_argument("--pidfile", help="write the daemon's pid here (default without -D: SlurmdPidFile)")
    parser.add_argument("-Z", dest="dynamic", action="store_true", help="a dynamic node, not in slurm.conf")
    parser.add_argument("--conf", dest="dyn_conf", help='with -Z: the node\'s shape ("CPUs=4 RealMemory=2000 ...")')
    args = parser.parse_args(argv)
    if args.dyn_conf is not None and not args.dynamic:
        parser.error("--conf is used in conjunction with -Z")
    dyn_conf = (args.dyn_conf or "") if args.dynamic else None  # (nodeagent/dynamic.py)
    conf = absolute(args.conf or conf_path())  # absolute before anything can change directory
    assert conf is not None
    node = args.node or socket.gethostname().split(".", 1)[0]
    log.name = node  # the log's lines read "plurmd-NODE:", one log for several daemons
    start = Startup("plurmd", foreground=args.D, level=logging.DEBUG if args.v >= 2 else logging.INFO,
                    log_format="[%(asctime)s] plurmd-%(name)s: %(levelname)s: %(message)s",
                    logfile=absolute(args.logfile), pidfile=absolute(args.pidfile), log=log)
    try:
        start.setup_logging()
        _prepare(start, conf, node, dyn_conf)
    except StartupError as exc:
        return start.fail(str(exc))
    return start.start(lambda: NodeDaemon(conf, node, dyn_conf))


def _prepare(start: Startup, conf_file: str, node: str, dyn_conf: str | None = None) -> None:
    """What NodeDaemon.__init__ would fail on, checked with the loaders it uses, while the
    admin's terminal is still there to read the message."""
    from plurm.wire import authtype
    from plurm.wire.client import key_path_for

    conf = load_or_fail("slurm.conf", lambda: load_slurm_conf(conf_file))
    if dyn_conf is not None:
        from plurm.nodeagent import dynamic

        dynamic.check(conf, conf_file, node, dyn_conf)  # (raises StartupError)
    if node not in conf.nodes:
        raise StartupError(f"node {node} not found in {conf_file} (-N names the node)")
    key_path = key_path_for(conf_file)
    load_or_fail(f"AuthType {conf.get('AuthType') or authtype.DEFAULT_AUTH_TYPE}",
                 lambda: authtype.load(conf.get("AuthType"), key_path, conf.get("AuthInfo")))
    node_conf = conf.nodes[node]
    port = node_conf.port or load_or_fail("slurm.conf", lambda: conf.slurmd_port)
    if not start.foreground:
        _daemon_paths(start, conf, conf_file, node)
    start.lock_pidfile()
    # The address NodeDaemon binds: the node's NodeAddr, loopback for "localhost".
    check_port_free(node_conf.addr if node_conf.addr != "localhost" else "127.0.0.1", port, "SlurmdPort")


def _daemon_paths(start: Startup, conf: SlurmConf, conf_file: str, node: str) -> None:
    """Without -D: the log file, pid file and working directory slurm.conf gives."""
    if not start.logfile:
        start.logfile = conf_path_option(conf, "SlurmdLogFile", node)
        start.setup_logging()
    if not start.pidfile:
        start.pidfile = conf_path_option(conf, "SlurmdPidFile", node) or DEFAULT_PIDFILE
    spool = conf_path_option(conf, "SlurmdSpoolDir", node) or node_pattern(
        os.path.join(os.path.dirname(conf_file), "spool", "%n"), node)
    make_dirs(spool, "SlurmdSpoolDir")
    start.workdir = working_directory([spool])


if __name__ == "__main__":
    sys.exit(main())
