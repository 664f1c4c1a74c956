"""A private PostgreSQL server for the tests (never the machine's own cluster).

``start_postgres()`` installs Debian's postgresql package when no initdb is found and the
tests run as root (CI does), creates the unprivileged user ``plurmpg`` (PostgreSQL refuses
to run as root), runs initdb into a temporary folder of its own, starts postgres on
127.0.0.1 with a free port and no Unix socket anyone else uses, and creates databases on
demand.  Without root it runs the server as the current user if the binaries are there;
without root and without a server binary it raises ``Unavailable``, which the fixtures turn
into a skip.  ``stop()``/``start()`` take the server down and up again (the
store-failure tests); ``close()`` removes everything.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from plurmtest import free_ports

USER = "plurmpg"


class Unavailable(Exception):
    pass


def _bindir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(found[-1]) if found else None


def ensure_postgres_installed() -> str:
    bindir = _bindir()
    if bindir:
        return bindir
    if os.geteuid() != 0:
        raise Unavailable("PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb) and installing it needs root")
    from debpkg import apt_install

    error = apt_install("postgresql")
    bindir = _bindir()
    if bindir is None:
        raise Unavailable(f"apt-get install postgresql failed: {error}")
    return bindir


def _ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                       check=True, capture_output=True)
        return pwd.getpwnam(USER)


@dataclass
class Postgres:
    bindir: str
    dir: Path
    port: int
    uid: int
    gid: int
    proc: subprocess.Popen | None = None
    databases: list[str] = field(default_factory=list)

    def url(self, database: str) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def _as_user(self) -> None:
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            os.setgid(self.gid)
            os.setuid(self.uid)

    def start(self) -> None:
        log = open(self.dir / "postgres.log", "ab")
        self.proc = subprocess.Popen(
            [f"{self.bindir}/postgres", "-D", str(self.dir / "data"), "-h", "127.0.0.1", "-p", str(self.port),
             "-k", str(self.dir / "sock"), "-c", "fsync=off", "-c", "max_connections=200",
             "-c", "shared_buffers=16MB"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, preexec_fn=self._as_user, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Unavailable(f"postgres exited: {(self.dir / 'postgres.log').read_text()[-800:]}")
            ready = subprocess.run([f"{self.bindir}/pg_isready", "-h", "127.0.0.1", "-p", str(self.port)],
                                   capture_output=True)
            if ready.returncode == 0:
                return
            time.sleep(0.1)
        raise Unavailable("postgres did not accept connections within 30 s")

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server (``immediate``: as a crash would, sessions cut at once)."""
        if self.proc is None:
            return
        import signal

        self.proc.send_signal({"smart": signal.SIGTERM, "fast": signal.SIGINT,
                               "immediate": signal.SIGQUIT}[mode])
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def create_database(self, name: str) -> str:
        subprocess.run([f"{self.bindir}/createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, name],
                       check=True, capture_output=True, preexec_fn=self._as_user)
        self.databases.append(name)
        return self.url(name)

    def close(self) -> None:
        self.stop("fast")
        shutil.rmtree(self.dir, ignore_errors=True)


def start_postgres() -> Postgres:
    """As root: the server runs as plurmpg (created if needed); otherwise as this user, when
    the server's binaries are installed."""
    bindir = ensure_postgres_installed()
    if os.geteuid() == 0:
        user = _ensure_user()
        uid, gid = user.pw_uid, user.pw_gid
    else:
        uid, gid = os.getuid(), os.getgid()
    base = Path(tempfile.mkdtemp(prefix="plurm-pg-"))
    base.chmod(0o755)
    for sub in ("data", "sock"):
        (base / sub).mkdir()
        os.chown(base / sub, uid, gid)
    os.chown(base, uid, gid)
    pg = Postgres(bindir, base, free_ports(1)[0], uid, gid)
    init = subprocess.run([f"{bindir}/initdb", "-D", str(base / "data"), "-U", USER, "--auth=trust",
                           "--no-sync", "-E", "UTF8", "--locale=C"],
                          capture_output=True, text=True, preexec_fn=pg._as_user)
    if init.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        raise Unavailable(f"initdb failed: {init.stderr[-800:]}")
    pg.start()
    return pg
