"""plurmctld's command line: options, the checks made before detaching, then the loop.

Without -D, as slurmctld: the pid file is --pidfile, else SlurmctldPidFile, else Slurm's
default /var/run/slurmctld.pid; the log is -L, else SlurmctldLogFile, else syslog; the working
directory (where a core file lands) is the log file's directory, else StateSaveLocation, else
/var/tmp; umask 022.  With -D nothing of that changes from before (`plurm cluster up` and the
test fixtures rely on it): foreground, cwd and umask kept, log on -L or stderr, a pid file only
with --pidfile (locked, and removed at exit, as the daemon's).  The checks before starting are
the same in both modes, and so are their messages.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from plurm.common.daemon import (Startup, StartupError, absolute, check_port_free, conf_path_option,
                                 load_or_fail, make_dirs, working_directory)
from plurm.corescheduler.controller import Controller
from plurm.grammar.slurmconf import SlurmConf, load_slurm_conf

log = logging.getLogger("plurmctld")

DEFAULT_PIDFILE = "/var/run/slurmctld.pid"  # Slurm's default for SlurmctldPidFile


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="plurmctld", description="plurm controller daemon")
    parser.add_argument("-D", action="store_true", help="run in the foreground")
    parser.add_argument("-f", dest="conf", help="slurm.conf to read (default: $SLURM_CONF)")
    parser.add_argument("-L", dest="logfile", help="log file (default: stderr in -D, else SlurmctldLogFile)")
    parser.add_argument("-v", action="count", default=0, help="more verbose logging")
    parser.add_argument("--pidfile", help="write the daemon's pid here (default without -D: SlurmctldPidFile)")
    parser.add_argument("--host", help="which SlurmctldHost entry this controller is (its name or address; "
                        "default: $PLURM_SLURMCTLD_HOST, else this host's name, else the only entry)")
    args = parser.parse_args(argv)
    from plurm.wire.client import conf_path

    # Absolute before anything can change directory.
    conf = absolute(args.conf or conf_path())
    assert conf is not None
    start = Startup("plurmctld", foreground=args.D, level=logging.DEBUG if args.v >= 2 else logging.INFO,
                    logfile=absolute(args.logfile), pidfile=absolute(args.pidfile), log=log)
    try:
        start.setup_logging()
        _prepare(start, conf, args.host)
    except StartupError as exc:
        return start.fail(str(exc))
    return start.start(lambda: Controller(conf, args.host))


def _prepare(start: Startup, conf_file: str, host: str | None = None) -> None:
    """What Controller.__init__ would fail on, checked with the loaders it uses, while the
    admin's terminal is still there to read the message."""
    from plurm.wire import authtype
    from plurm.wire.client import key_path_for

    conf = load_or_fail("slurm.conf", lambda: load_slurm_conf(conf_file))
    key_path = key_path_for(conf_file)
    load_or_fail(f"AuthType {conf.get('AuthType') or authtype.DEFAULT_AUTH_TYPE}",
                 lambda: authtype.load(conf.get("AuthType"), key_path, conf.get("AuthInfo")))
    from plurm.corescheduler.failover import EndpointError, choose_endpoint

    port, endpoints = load_or_fail("slurm.conf", lambda: (conf.slurmctld_port, conf.slurmctld_endpoints))
    try:
        addr = choose_endpoint(endpoints, host).addr
    except EndpointError as exc:
        raise StartupError(f"SlurmctldHost: {exc}") from None
    from plurm.wire.hardening import bind_address

    bind_addr = bind_address(addr)  # the address Controller binds: SlurmctldHost's, and only it
    if not start.foreground:
        _daemon_paths(start, conf, conf_file)
    start.lock_pidfile()
    check_port_free(bind_addr, port, "SlurmctldPort")


def _daemon_paths(start: Startup, conf: SlurmConf, conf_file: str) -> None:
    """Without -D: the log file, pid file and working directory slurm.conf gives."""
    if not start.logfile:
        start.logfile = conf_path_option(conf, "SlurmctldLogFile")
        start.setup_logging()
    if not start.pidfile:
        start.pidfile = conf_path_option(conf, "SlurmctldPidFile") or DEFAULT_PIDFILE
    from plurm.corescheduler.store import is_postgresql

    if is_postgresql(conf.get("StateSaveLocation")):  # a server's URL: no directory of ours
        state_dir = None
    else:
        state_dir = conf_path_option(conf, "StateSaveLocation") or os.path.join(os.path.dirname(conf_file), "state")
        make_dirs(state_dir, "StateSaveLocation")
    start.workdir = working_directory([os.path.dirname(start.logfile) if start.logfile else None, state_dir])


if __name__ == "__main__":
    sys.exit(main())
