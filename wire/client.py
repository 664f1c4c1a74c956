"""How a user command finds the controller and asks it one thing.

Kept light on purpose (stdlib only, no lark, no msgspec, no zmq): it sits on
the start-up path of sbatch, squeue, scancel and the rest.  The slurm.conf
is scanned for the few keys a client needs instead of being parsed by the
daemons' grammar; the daemons validate the whole file.
"""

from __future__ import annotations

import os

from plurm.wire import auth, authtype, envelope
from plurm.wire import lightjson as json
from plurm.wire.zmtp import DealerConnection

DEFAULT_TIMEOUT_S = 10.0
# With several SlurmctldHost entries: how long one may take to answer the connection before
# the next is tried (a paused or cut-off controller accepts in the kernel, then says nothing).
HANDSHAKE_TIMEOUT_S = 2.0
LARGE_REPLY = 4 << 20  # bytes: msgspec decodes a reply past this (wire/bigjson.py: its ~15 ms import pays)
STANDBY_CODE = "StandbyMode"  # a backup in standby (corescheduler/failover.py): try the next


def default_cluster_dir() -> str:
    """Where `plurm cluster up` puts the embedded local cluster by default."""
    base = os.environ.get("PLURM_HOME") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state"),
        "plurm",
    )
    return os.path.join(base, "cluster")


# Where Slurm's commands look when SLURM_CONF is not set (its built-in default).
SYSTEM_CONF = "/etc/slurm/slurm.conf"
_ANCESTRY_DEPTH = 64  # a bound on the walk up the process tree (a loop in /proc is impossible; a bug is not)


def conf_path() -> str:
    """The slurm.conf a command uses, as Slurm's commands find theirs, with plurm's two additions:

    1. ``$SLURM_CONF``;
    2. inside a job: the cluster of the job this process runs in, even when a tool started it
       with a pared-down environment (``env -i``, ``subprocess.run(env={...})``): the nearest
       ancestor whose environment (as it was exec'd, /proc/PID/environ) has SLURM_JOB_ID and
       SLURM_CONF, which plurmd sets in every job (the role of Slurm's configless cache: the
       node's own configuration, found without the environment);
    3. ``$PLURM_HOME``'s local cluster, when PLURM_HOME is set and it has one (an explicit choice);
    4. ``/etc/slurm/slurm.conf`` (Slurm's default), when it exists;
    5. the default local cluster (``plurm cluster up``'s ~/.local/state/plurm/cluster).

    A job is looked for before /etc/slurm because a host may run plurm beside a real Slurm."""
    env = os.environ.get("SLURM_CONF")
    if env:
        return env
    found = job_conf()
    if found:
        return found
    local = os.path.join(default_cluster_dir(), "slurm.conf")
    if os.environ.get("PLURM_HOME") and os.path.exists(local):
        return local
    if os.path.exists(SYSTEM_CONF):
        return SYSTEM_CONF
    return local


def job_conf(pid: int | None = None) -> str | None:
    """SLURM_CONF of the job ``pid`` (default: this process) runs in, from its ancestors'
    environments; None outside a job.  A few small /proc reads: the walk stops at the first
    job process, at a process it may not read (another user's: a job's processes are its
    owner's), or at init."""
    pid = os.getppid() if pid is None else pid
    for _ in range(_ANCESTRY_DEPTH):
        if pid <= 1:
            return None
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            return None  # gone, or not ours to read
        if b"SLURM_JOB_ID=" in environ:
            conf = job_id = b""
            for entry in environ.split(b"\0"):
                if entry.startswith(b"SLURM_CONF="):
                    conf = entry[11:]
                elif entry.startswith(b"SLURM_JOB_ID="):
                    job_id = entry[13:]
            if conf and job_id:
                return os.fsdecode(conf)
        pid = _parent(pid)
    return None


def _parent(pid: int) -> int:
    """The parent's pid from /proc/PID/stat (after the command name, which may hold spaces)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
        return int(stat[stat.rindex(b")") + 2:].split(None, 2)[1])
    except (OSError, ValueError, IndexError):
        return 0


class ClientError(Exception):
    """The controller refused, or could not be reached."""

    def __init__(self, message: str, code: str = "Error", detail: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.detail = detail  # a line some commands print before the message


class ClientSettings:
    __slots__ = ("conf", "host", "port", "key_path", "cluster_name", "auth_type", "auth_info", "daemon_users",
                 "hosts", "host_names")

    def __init__(self, conf: str, host: str, port: int, key_path: str, cluster_name: str,
                 auth_type: str | None = None, auth_info: str | None = None,
                 daemon_users: tuple[str, ...] = (), hosts: tuple[str, ...] = (),
                 host_names: tuple[str, ...] = ()) -> None:
        self.conf = conf
        self.host = host
        self.hosts = hosts or (host,)  # every controller's address, primary first
        self.host_names = host_names or self.hosts  # their SlurmctldHost names
        self.port = port
        self.key_path = key_path
        self.cluster_name = cluster_name
        self.auth_type = auth_type
        self.auth_info = auth_info
        self.daemon_users = daemon_users  # SlurmUser, SlurmdUser: who may answer for the daemons


def key_path_for(conf: str) -> str:
    """auth/local's key lives beside slurm.conf, readable by the cluster's owner only."""
    return os.environ.get("PLURM_AUTH_KEY_FILE") or os.path.join(os.path.dirname(os.path.abspath(conf)), "slurm.key")


def daemon_uids(users: tuple[str, ...] | list[str]) -> frozenset[int]:
    """The uids whose credentials speak for a daemon: root, SlurmUser and SlurmdUser."""
    uids = {0}
    for user in users:
        if user.isdigit():
            uids.add(int(user))
            continue
        import pwd

        try:
            uids.add(pwd.getpwnam(user).pw_uid)
        except KeyError:
            pass
    return frozenset(uids)


def _ctld_port(value: str) -> int:
    """SlurmctldPort's first port: N or a range N-M (N <= M); anything else is the
    error Slurm's commands give (``Invalid SlurmctldPort abc``), not a traceback."""
    first, dash, last = value.partition("-")
    if not (first.isdigit() and (not dash or last.isdigit())) \
            or not 0 < int(first) <= (int(last) if dash else int(first)) <= 65535:
        raise ClientError(f"Invalid SlurmctldPort {value}")
    return int(first)


def read_settings(path: str | None = None) -> ClientSettings:
    path = path or conf_path()
    host, port, cluster = "localhost", 6817, "cluster"
    auth_type = auth_info = None
    daemon_users: list[str] = []
    hosts: list[tuple[str, str]] = []  # (name, address) of every controller, primary first
    backup: list[str] = ["", ""]
    for line in _conf_lines(path):
        for token in line.split():
            key, sep, value = token.partition("=")
            if not sep:
                continue
            lowered = key.lower()
            if lowered in ("slurmctldhost", "controlmachine"):
                name, _, addr = value.partition("(")
                hosts.append((name, addr.rstrip(")") or name))
            elif lowered == "controladdr" and hosts:
                hosts[0] = (hosts[0][0], value)
            elif lowered in ("backupcontroller", "backupaddr"):
                backup[lowered == "backupaddr"] = value
            elif lowered == "slurmctldport":
                port = _ctld_port(value)
            elif lowered == "clustername":
                cluster = value
            elif lowered == "authtype":
                auth_type = value
            elif lowered == "authinfo":
                auth_info = value
            elif lowered in ("slurmuser", "slurmduser"):
                daemon_users.append(value)
    if backup[0] or backup[1]:
        hosts.append((backup[0] or backup[1], backup[1] or backup[0]))
    if hosts:
        host = hosts[0][1]
    return ClientSettings(path, host, port, key_path_for(path), cluster, auth_type, auth_info, tuple(daemon_users),
                          tuple(a for _, a in hosts), tuple(n for n, _ in hosts))


_INCLUDE_DEPTH = 16  # as the daemons' parser (grammar/confsyntax.py)


def _conf_lines(path: str, depth: int = 0, seen: tuple[str, ...] = ()) -> list[str]:
    """slurm.conf's logical lines, comments cut, with its ``Include`` files spliced in as the
    daemons' parser does: a relative path from the including file's directory, a glob
    pattern for its matches in order; a missing Include file, a loop, or nesting past 16 is
    the daemons' error to report (the command reads what it can)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError as exc:
        if depth:
            return []
        _config_log(path, exc.strerror or str(exc))
        raise ClientError(f"Could not open configuration file {path}: {exc.strerror}", "ConfigError") from None
    lines: list[str] = []
    for line in text.replace("\\\n", " ").splitlines():
        line = line.split("#", 1)[0].strip()
        if line[:7].lower() != "include" or not (line[7:8] == "=" or line[7:8].isspace()) or not line[8:].strip():
            lines.append(line)
            continue
        rest = line[8:]
        if depth >= _INCLUDE_DEPTH:
            continue
        pattern = rest.strip().strip('"').strip("'")
        if not os.path.isabs(pattern):
            pattern = os.path.join(os.path.dirname(path) or ".", pattern)
        if any(c in pattern for c in "*?["):
            import glob

            matches = sorted(glob.glob(pattern))
        else:
            matches = [pattern]
        for match in matches:
            real = os.path.realpath(match)
            if real not in seen:
                lines.extend(_conf_lines(match, depth + 1, seen + (os.path.realpath(path), real)))
    return lines


def conf_value(path: str, key: str) -> str | None:
    """One slurm.conf key as a command reads it (the last line that sets it, Include files
    spliced in; keys are case-insensitive): srun's MpiDefault."""
    return conf_values(path, key)[0]


def conf_values(path: str, *keys: str) -> list[str | None]:
    """Several slurm.conf keys, as :func:`conf_value` reads each, from one reading of the file."""
    wanted = {key.lower(): i for i, key in enumerate(keys)}
    values: list[str | None] = [None] * len(keys)
    for line in _conf_lines(path):
        for token in line.split():
            name, sep, rest = token.partition("=")
            if sep and name.lower() in wanted:
                values[wanted[name.lower()]] = rest
    return values


def client_auth(settings: ClientSettings) -> auth.AuthPlugin:
    """This process's credentials for the cluster that ``settings`` describe."""
    try:
        return authtype.load(settings.auth_type, settings.key_path, settings.auth_info)
    except auth.AuthError as exc:
        _auth_log(str(exc))
        raise ClientError(str(exc), "AuthenticationError") from None


def _auth_log(message: str) -> None:
    """As Slurm's auth plugins do: the plugin's own error on stderr, before the command's
    message ("slurm_load_jobs error: Protocol authentication error" and the like)."""
    import sys

    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "plurm"
    print(f"{prog}: error: {message}", file=sys.stderr)


def _config_log(path: str, reason: str) -> None:
    """As Slurm's commands report a slurm.conf they cannot read (its parser's error, before the
    command's own message), with plurm's hint where the file is the default local cluster's.
    Slurm retries for 60 s first (a configuration on a slow network mount); plurm does not."""
    _auth_log(f"s_p_parse_file: cannot stat file {path}: {reason}")
    if os.path.abspath(path) == os.path.join(os.path.abspath(default_cluster_dir()), "slurm.conf"):
        _auth_log("no cluster found (no SLURM_CONF, no /etc/slurm/slurm.conf, no local cluster): "
                  "start one with `plurm cluster up`, or set SLURM_CONF")


class Connection:
    """A signed request/reply session with the controller (or a plurmd)."""

    def __init__(self, settings: ClientSettings | None = None, host: str | None = None, port: int | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.settings = settings or read_settings()
        self.auth = client_auth(self.settings)
        self._daemons: frozenset[int] | None = None
        # A host named by the caller is asked alone; else every SlurmctldHost in order, as Slurm's
        # commands do: no answer or a standby's answer, then the next.
        self.hosts = (host,) if host else self.settings.hosts
        self.host = host or self.settings.host
        self.port = port or self.settings.port
        self.timeout = timeout
        self._conn: DealerConnection | None = None

    def _connect(self) -> DealerConnection:
        if self._conn is None:
            if os.environ.get("PLURM_CLIENT_TRANSPORT") == "pyzmq":
                self._conn = _PyzmqConnection(self.host, self.port, self.timeout)  # type: ignore[assignment]
            else:
                handshake = min(self.timeout, HANDSHAKE_TIMEOUT_S) if len(self.hosts) > 1 else self.timeout
                try:
                    self._conn = DealerConnection(self.host, self.port, handshake)
                    self._conn.set_timeout(self.timeout)
                except OSError as exc:
                    raise ClientError(
                        f"Unable to contact slurm controller (connect failure): {exc.strerror or exc}",
                        "ConnectError") from None
        return self._conn

    def request_raw(self, msg_type: str, body: dict | bytes) -> tuple[dict, bytes]:
        if len(self.hosts) == 1:
            return self._request_once(msg_type, body)
        import time

        deadline = time.monotonic() + self.timeout
        order = [self.host] + [h for h in self.hosts if h != self.host]  # the one that answered last first
        while True:
            standby: ClientError | None = None
            last: ClientError | None = None
            for host in order:
                if self.host != host:
                    self.close()
                    self.host = host
                try:
                    return self._request_once(msg_type, body)
                except ClientError as exc:
                    if exc.code == STANDBY_CODE:
                        standby = exc
                    elif exc.code != "ConnectError":
                        raise  # asked and answered (or timed out after sending): never sent twice
                    last = exc
                    self.close()
            # Only standbys answered: one is taking over; ask again until the timeout.
            if standby is None or time.monotonic() >= deadline:
                raise standby or last or ClientError("Unable to contact slurm controller (connect failure)",
                                                     "ConnectError")
            time.sleep(0.2)
            order = list(self.hosts)

    def _request_once(self, msg_type: str, body: dict | bytes) -> tuple[dict, bytes]:
        conn = self._connect()
        try:
            # (bytes: a body encoded already, e.g. plurm.api's bulk submissions)
            frames = envelope.seal_raw(self.auth, msg_type, body) if isinstance(body, bytes) \
                else envelope.seal(self.auth, msg_type, body)
        except envelope.AuthError as exc:
            _auth_log(str(exc))
            raise ClientError(str(exc), exc.code) from None
        try:
            conn.send([b""] + frames)
            frames = conn.recv()
        except (OSError, TimeoutError) as exc:
            self.close()
            raise ClientError(f"Socket timed out on send/recv operation: {exc}", "Timeout") from None
        if frames and frames[0] == b"":
            frames = frames[1:]
        try:
            header, payload, sender = envelope.open_envelope(self.auth, frames)
        except envelope.WireError as exc:
            raise ClientError(f"bad reply from controller: {exc}", exc.code) from None
        if sender.uid not in self.daemon_uids():
            raise ClientError(f"reply from uid {sender.uid}, who is not the cluster's daemon user",
                              "AuthenticationError")
        if header["type"] == "error":
            err = json.loads(payload)
            raise ClientError(err.get("message", "error"), err.get("code", "Error"), err.get("detail"))
        return header, payload

    def request(self, msg_type: str, body: dict | bytes) -> dict:
        payload = self.request_raw(msg_type, body)[1]
        if len(payload) >= LARGE_REPLY:  # (a long job list: msgspec pays for its import there)
            from plurm.wire.bigjson import loads

            return loads(payload)
        return json.loads(payload)

    def daemon_uids(self) -> frozenset[int]:
        if self._daemons is None:
            owner = getattr(self.auth, "owner", None)  # auth/local: its key's owner runs the daemons
            self._daemons = daemon_uids(self.settings.daemon_users) | ({owner} if owner is not None else set())
        return self._daemons

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class _PyzmqConnection:
    """The same client over pyzmq, for comparison and debugging."""

    def __init__(self, host: str, port: int, timeout: float) -> None:
        import zmq

        self._ctx = zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.RCVTIMEO, int(timeout * 1000))
        self._sock.connect(f"tcp://{host}:{port}")

    def send(self, frames: list[bytes]) -> None:
        self._sock.send_multipart(frames)

    def recv(self) -> list[bytes]:
        import zmq

        try:
            return self._sock.recv_multipart()
        except zmq.Again:
            raise TimeoutError("no reply") from None

    def close(self) -> None:
        self._sock.close()


def request(msg_type: str, body: dict, settings: ClientSettings | None = None) -> dict:
    """One request to the controller, one reply."""
    conn = Connection(settings)
    try:
        return conn.request(msg_type, body)
    finally:
        conn.close()
