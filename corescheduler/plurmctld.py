"""plurmctld's command line: options, logging, detaching, the pid file; then the loop."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from plurm.corescheduler.controller import Controller

log = logging.getLogger("plurmctld")

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="plurmctld", description="plurm controller daemon")
    parser.add_argument("-D", action="store_true", help="run in the foreground")
    parser.add_argument("-f", dest="conf", help="slurm.conf to read (default: $SLURM_CONF)")
    parser.add_argument("-L", dest="logfile", help="log file (default: stderr in -D, else SlurmctldLogFile)")
    parser.add_argument("-v", action="count", default=0, help="more verbose logging")
    parser.add_argument("--pidfile", help="write the daemon's pid here")
    args = parser.parse_args(argv)
    from plurm.wire.client import conf_path

    conf = args.conf or conf_path()
    level = logging.DEBUG if args.v >= 2 else logging.INFO
    logging.basicConfig(filename=args.logfile, level=level,
                        format="[%(asctime)s] %(name)s: %(levelname)s: %(message)s")
    if not args.D:
        from plurm.common.daemon import daemonize

        daemonize()
    try:
        controller = Controller(conf)
    except Exception as exc:
        log.error("plurmctld cannot start: %s", exc)
        print(f"plurmctld: error: {exc}", file=sys.stderr)
        return 1
    if args.pidfile:
        with open(args.pidfile, "w") as handle:
            handle.write(f"{os.getpid()}\n")
    signal.signal(signal.SIGTERM, controller.stop)
    signal.signal(signal.SIGINT, controller.stop)
    controller.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
