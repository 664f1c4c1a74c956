"""plurmd's command line: options, logging, detaching, the pid file; then the loop."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys

from plurm.nodeagent.daemon import NodeDaemon
from plurm.wire.client import conf_path

log = logging.getLogger("plurmd")

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="plurmd", description="plurm node daemon")
    parser.add_argument("-D", action="store_true", help="run in the foreground")
    parser.add_argument("-N", dest="node", help="node name (default: the short host name)")
    parser.add_argument("-f", dest="conf", help="slurm.conf to read (default: $SLURM_CONF)")
    parser.add_argument("-L", dest="logfile", help="log file")
    parser.add_argument("-v", action="count", default=0)
    parser.add_argument("--pidfile")
    args = parser.parse_args(argv)
    logging.basicConfig(filename=args.logfile, level=logging.DEBUG if args.v >= 2 else logging.INFO,
                        format="[%(asctime)s] plurmd-%(name)s: %(levelname)s: %(message)s")
    if not args.D:
        from plurm.common.daemon import daemonize

        daemonize()
    node = args.node or socket.gethostname().split(".", 1)[0]
    try:
        daemon = NodeDaemon(args.conf or conf_path(), node)
    except Exception as exc:
        log.error("plurmd cannot start: %s", exc)
        print(f"plurmd: error: {exc}", file=sys.stderr)
        return 1
    if args.pidfile:
        with open(args.pidfile, "w") as handle:
            handle.write(f"{os.getpid()}\n")
    signal.signal(signal.SIGTERM, daemon.stop)
    signal.signal(signal.SIGINT, daemon.stop)
    log.name = node
    daemon.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
