"""Daemon start-up shared by plurmctld and plurmd: checks first, then detach, then run.

Without -D a daemon must not report a bad slurm.conf to /dev/null and exit 0, so the order is:

1. the caller validates what it can before forking (slurm.conf, the key, the node name) with
   the same loaders its service uses; a failure is a `StartupError`, printed on stderr and
   logged, exit 1;
2. the pid file is locked (`PidFile`) while still attached, so a second daemon refuses at once,
   naming the first, before it looks at the ports that the first one holds;
3. the ports are checked with `check_port_free`;
4. `Startup.start` forks once: the original process waits on a pipe while the child detaches
   through python-daemon's `DaemonContext` (double fork, setsid, umask, cwd, fds closed,
   stdio on /dev/null), writes its pid into the locked file, builds the service and says
   "ready" on the pipe; only then does the original process exit 0.

Ports, and ZeroMQ across a fork: libzmq's context owns I/O threads, which a fork does not copy,
so no zmq object may be created before detaching.  Binding the service's real sockets first
is therefore out; instead the port is checked with a plain socket bound and closed before
forking (it names the port, which zmq's "Address already in use" does not), and the service,
which owns every zmq object, is built only in the final daemon process.  The check alone would
leave a race (a port taken between check and bind) and every later failure (an unwritable
state store) unreported, so the readiness pipe reports those too: the command an admin typed
exits 1 with the reason on stderr whatever fails before the service is up, which is also what
systemd's Type=forking expects of a daemon.

common/ may not import plurm.wire (see the import contract), so the loaders are the callers'.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import logging.handlers
import os
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from plurm.grammar.slurmconf import SlurmConf

# As slurmctld and slurmd: files the daemons create are not group/world writable.
DAEMON_UMASK = 0o022
LOG_FORMAT = "[%(asctime)s] %(name)s: %(levelname)s: %(message)s"


class StartupError(Exception):
    """A reason not to start: reported on stderr (and in the log) before detaching."""


class Service(Protocol):
    """What plurmctld's Controller and plurmd's NodeDaemon have in common."""

    def run(self) -> None: ...

    def stop(self, *args: Any) -> None: ...


# ------------------------------------------------------------------ paths

def absolute(path: str | None) -> str | None:
    """An absolute path, resolved against the directory the command was started in.

    Done before the daemon changes directory, so that `-f slurm.conf` or `-L log` keep
    meaning what the admin typed."""
    return os.path.abspath(path) if path else None


def node_pattern(value: str, node: str) -> str:
    """Slurm's substitutions in per-node paths (SlurmdPidFile, SlurmdLogFile, SlurmdSpoolDir):
    %n the node name, %h the host name (as NodeDaemon expands its spool directory), %% a
    percent sign."""
    host = socket.gethostname()
    out: list[str] = []
    i = 0
    while i < len(value):
        if value[i] == "%" and i + 1 < len(value) and value[i + 1] in "nh%":
            out.append({"n": node, "h": host, "%": "%"}[value[i + 1]])
            i += 2
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def conf_path_option(conf: SlurmConf, key: str, node: str | None = None) -> str | None:
    """A file or directory option of slurm.conf; Slurm wants them fully qualified, and a
    relative one would silently move once the daemon changes directory, so it is refused."""
    value = conf.get(key)
    if not value:
        return None
    if node is not None:
        value = node_pattern(value, node)
    if not os.path.isabs(value):
        raise StartupError(f"{conf.path}: {key}={value} is not an absolute path "
                           "(the daemon changes its working directory when it detaches)")
    return value


def working_directory(candidates: list[str | None]) -> str:
    """The first of ``candidates`` that is a directory, else /var/tmp (where Slurm's daemons
    fall back to for their core files); never the directory the command was started in, which
    may be unmounted later."""
    for candidate in candidates:
        if candidate and os.path.isdir(candidate):
            return candidate
    return "/var/tmp"


def make_dirs(path: str, what: str) -> None:
    """Create a directory the service needs, now, so that failing to is reported."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise StartupError(f"cannot create {what} {path}: {exc.strerror}") from None


# ------------------------------------------------------------------ checks

def check_port_free(host: str, port: int, what: str) -> None:
    """Refuse to start when ``host:port`` already has a listener.

    A plain socket with SO_REUSEADDR, as libzmq binds its listeners: on Linux the bind still
    fails against a live listener but not against connections left in TIME_WAIT by a daemon
    that just stopped, so this says no exactly when the service's own bind would.  It is
    closed again before forking; the service binds for real in the daemon process."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise StartupError(f"cannot resolve {host} for {what} {port}: {exc.strerror}") from None
    family, kind, proto, _name, sockaddr = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(sockaddr)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise StartupError(f"{what} {port} on {host} is already in use "
                               "(is another daemon running?)") from None
        raise StartupError(f"cannot bind {what} {port} on {host}: {exc.strerror}") from None
    finally:
        sock.close()


def load_or_fail(what: str, loader: Callable[[], Any]) -> Any:
    """Run a loader of the service's (slurm.conf, the key) and turn its failure into a
    StartupError.  The slurm.conf parser's messages already start with FILE:LINE."""
    try:
        return loader()
    except OSError as exc:
        name = f" {exc.filename}" if exc.filename else ""
        raise StartupError(f"cannot read {what}{name}: {exc.strerror}") from None
    except (ValueError, LookupError) as exc:  # ConfError is a ValueError
        raise StartupError(str(exc)) from None
    except Exception as exc:  # the loaders' own errors (AuthError for an empty key)
        raise StartupError(f"{what}: {exc}") from None


# ------------------------------------------------------------------ the pid file

class PidFile:
    """A pid file locked for the daemon's life.

    flock(2) rather than POSIX fcntl(F_SETLK) record locks: a flock belongs to the open file
    description, so the lock taken here before detaching is carried through python-daemon's
    forks to the daemon (the fd is preserved) with no moment where it is free; a POSIX lock
    would be dropped at the first fork.  The kernel releases it if the daemon dies, so a stale
    file after `kill -9` never blocks a restart.  Used as python-daemon's ``pidfile``:
    entering writes the (post-detach) pid, leaving removes the file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None
        # Whether the file is ours to remove: created here, or holding our pid.  A start that
        # fails after locking must not delete a file another tool wrote for its own daemon
        # (`plurm cluster up` records its -D daemons' pids in these same paths).
        self.created = False
        self.written = False

    def acquire(self, prog: str) -> None:
        for _ in range(10):
            try:
                fd, self.created = _open_pid_file(self.path)
            except OSError as exc:
                raise StartupError(f"cannot open pid file {self.path}: {exc.strerror}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = _read_pid(fd)
                os.close(fd)
                who = f"pid {holder}" if holder else "another process"
                raise StartupError(f"{prog} is already running ({who} holds the lock on {self.path})") from None
            # The holder we raced may have removed the file between our open and our lock:
            # then we hold a lock on a deleted inode, so start again on the new file.
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return
            os.close(fd)
        raise StartupError(f"pid file {self.path} keeps being replaced")

    def fileno(self) -> int:
        assert self.fd is not None
        return self.fd

    def write(self, pid: int) -> None:
        assert self.fd is not None
        data = f"{pid}\n".encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)
        self.written = True

    def release(self) -> None:
        """Remove the file (if ours), then drop the lock: in that order, so that a new daemon
        either finds the file locked or finds none."""
        if self.fd is None:
            return
        if self.created or self.written:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> PidFile:
        self.write(os.getpid())
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()


def _open_pid_file(path: str) -> tuple[int, bool]:
    """Open (creating if need be) without truncating: the file may be another daemon's.
    Returns the fd and whether this call created the file."""
    for _ in range(10):  # the file may come and go between the two opens
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644), True
        except FileExistsError:
            pass
        try:
            return os.open(path, os.O_RDWR), False
        except FileNotFoundError:
            continue
    raise OSError(errno.EAGAIN, "keeps being created and removed", path)


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip() or "0") or None
    except (OSError, ValueError):
        return None


# ------------------------------------------------------------------ logging

@dataclass
class Startup:
    """How one daemon starts; built by plurmctld.py or plurmd.py from its options."""

    prog: str
    foreground: bool
    level: int = logging.INFO
    log_format: str = LOG_FORMAT
    logfile: str | None = None
    pidfile: str | None = None
    workdir: str = "/var/tmp"
    umask: int = DAEMON_UMASK
    log: logging.Logger = field(default_factory=lambda: logging.getLogger())
    _lock: PidFile | None = field(default=None, init=False, repr=False)

    def setup_logging(self) -> None:
        """-D: as before, the -L file if given, else stderr.  Otherwise only the log file
        (once known: -L, or the one slurm.conf names); start-up errors reach the terminal
        through `fail`, and the file handler's fd is carried into the daemon."""
        root = logging.getLogger()
        for handler in list(root.handlers):
            root.removeHandler(handler)
            handler.close()
        root.setLevel(self.level)
        handler: logging.Handler
        if self.logfile:
            try:
                handler = logging.FileHandler(self.logfile)
            except OSError as exc:
                root.addHandler(logging.NullHandler())
                raise StartupError(f"cannot open log file {self.logfile}: {exc.strerror}") from None
        elif self.foreground:
            handler = logging.StreamHandler(sys.stderr)
        else:
            handler = logging.NullHandler()  # not logging's last resort, which writes to stderr
        handler.setFormatter(logging.Formatter(self.log_format))
        root.addHandler(handler)

    def _detached_logging(self) -> None:
        """Without a log file, log to syslog as Slurm's daemons do (created here, after the
        fds were closed, so that its socket is the daemon's own)."""
        root = logging.getLogger()
        if any(isinstance(h, logging.FileHandler) for h in root.handlers) or not os.path.exists("/dev/log"):
            return
        try:
            syslog = logging.handlers.SysLogHandler(address="/dev/log")
        except OSError:
            return
        syslog.setFormatter(logging.Formatter(f"{self.prog}: %(levelname)s: %(message)s"))
        root.addHandler(syslog)

    def fail(self, message: str) -> int:
        """Report a reason not to start: in the log and on stderr, as -D always did.  A pid
        file locked already is given up (and removed: it was this process's)."""
        if self._lock:
            self._lock.release()
            self._lock = None
        self.log.error("%s cannot start: %s", self.prog, message)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        return 1

    # -------------------------------------------------------------- starting

    def lock_pidfile(self) -> None:
        """Take the pid file (if there is one): a second daemon stops here, with a message
        naming the first, before it checks ports that the first one holds."""
        if self.pidfile and not self._lock:
            self._lock = PidFile(self.pidfile)
            self._lock.acquire(self.prog)

    def start(self, build: Callable[[], Service]) -> int:
        """Run the service: in the foreground with -D, else detached.  Returns the exit
        status for the process that called it (the daemon's own, or 0/1 for the one that
        started it)."""
        if self.foreground:
            return self._run_foreground(build)
        return self._run_detached(build)

    def _run_foreground(self, build: Callable[[], Service]) -> int:
        lock = self._lock
        try:
            try:
                service = build()
            except Exception as exc:
                return self.fail(str(exc))
            # The pid is written once the service is up, as before (and SIGTERM handled).
            _serve(service, ready=(lambda: lock.write(os.getpid())) if lock else None)
            return 0
        finally:
            if lock:
                lock.release()

    def _run_detached(self, build: Callable[[], Service]) -> int:
        import daemon  # python-daemon; imported here so that -D never pays for it

        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        child = os.fork()
        if child > 0:
            os.close(write_end)
            if self._lock:  # the daemon holds the lock now; this copy must not unlock it
                os.close(self._lock.fileno())
                self._lock.fd = None
            return self._wait_ready(child, read_end)
        os.close(read_end)
        preserve: list[int] = [write_end]
        if self._lock:
            preserve.append(self._lock.fileno())
        preserve += [h.stream.fileno() for h in logging.getLogger().handlers
                     if isinstance(h, logging.FileHandler) and h.stream is not None]
        context = daemon.DaemonContext(
            working_directory=self.workdir, umask=self.umask, detach_process=True,
            prevent_core=False,  # the working directory is where Slurm admins look for cores
            files_preserve=preserve, pidfile=self._lock)
        try:
            context.open()
        except Exception as exc:  # chdir, fork, or writing the pid failed
            self.log.error("%s cannot start: cannot detach: %s", self.prog, exc)
            _tell(write_end, f"error: cannot detach: {exc}")
            os._exit(1)  # a forked child: never fall back into the caller's code
        # From here on this is the daemon: its own session, cwd and umask, stdio on /dev/null.
        try:
            self._detached_logging()
            try:
                service = build()
            except BaseException as exc:  # NodeDaemon raises SystemExit for its own errors
                message = str(exc.code) if isinstance(exc, SystemExit) else str(exc)
                message = message.removeprefix(f"{self.prog}: error: ")
                self.log.error("%s cannot start: %s", self.prog, message)
                _tell(write_end, f"error: {message}")
                return 1
            self.log.info("%s detached (pid %d, working directory %s)", self.prog, os.getpid(), self.workdir)
            try:
                _serve(service, ready=lambda: _tell(write_end, "ready"))
            except Exception:
                self.log.exception("%s stopped on an error", self.prog)
                return 1
            return 0
        finally:
            context.close()  # removes the pid file

    def _wait_ready(self, child: int, read_end: int) -> int:
        """In the process the admin started: wait until the daemon is ready or says why not."""
        os.waitpid(child, 0)  # the first fork exits at once (python-daemon forks again)
        chunks: list[bytes] = []
        try:
            # One line, not EOF: a process the service forked while starting may still hold
            # a copy of the pipe's other end.
            while (chunk := os.read(read_end, 4096)) and b"\n" not in chunk:
                chunks.append(chunk)
            chunks.append(chunk)
        except KeyboardInterrupt:
            print(f"{self.prog}: interrupted; the daemon carries on starting", file=sys.stderr)
            return 130
        finally:
            os.close(read_end)
        reply = b"".join(chunks).decode(errors="replace").split("\n", 1)[0]
        if reply == "ready":
            return 0
        if reply.startswith("error: "):
            try:
                message = str(json.loads(reply[7:]))
            except ValueError:
                message = reply[7:]
            print(f"{self.prog}: error: {message}", file=sys.stderr)
        else:
            where = f" (see {self.logfile})" if self.logfile else ""
            print(f"{self.prog}: error: the daemon exited while starting{where}", file=sys.stderr)
        return 1


def _tell(fd: int, message: str) -> None:
    """One line on the readiness pipe: "ready", or "error: " and the reason (JSON-quoted, so
    that a message of several lines stays one line)."""
    if message.startswith("error: "):
        message = "error: " + json.dumps(message[7:])
    try:
        os.write(fd, message.encode() + b"\n")
    except OSError:  # the starting process is gone (killed): nobody to tell
        pass
    finally:
        os.close(fd)


def _serve(service: Service, ready: Callable[[], None] | None) -> None:
    """Handle SIGTERM/SIGINT as a clean stop, say so (``ready``), then run until stopped."""
    signal.signal(signal.SIGTERM, service.stop)
    signal.signal(signal.SIGINT, service.stop)
    if ready:
        ready()
    from plurm.common import cpuprofile

    cpuprofile.run(service.run)  # PLURM_CPROFILE=DIR: the loop's CPU profile (common/cpuprofile.py)
