"""`plurm cluster up|down`: a whole cluster on this host, from embedded defaults.

No root and no configuration file: `up` writes DIR/slurm.conf (a real
slurm.conf, the multiple-slurmd layout Slurm itself accepts: every node is
its own daemon on 127.0.0.1 with its own port), a fresh key DIR/slurm.key,
then starts plurmctld and one plurmd per node that is not already running,
and waits until the nodes have registered.  `down` stops them by the pids
in DIR/run/, each checked against its command line first, then kills the
jobs' process groups the nodes' spools still record (jobs outlive plurmd).
"""

from __future__ import annotations

import getpass
import os
import random
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

from plurm.wire import envelope
from plurm.wire.client import ClientError, Connection, default_cluster_dir, read_settings

CTLD_MODULE = "plurm.corescheduler.plurmctld"
NODED_MODULE = "plurm.nodeagent.plurmd"


@dataclass
class ClusterShape:
    nodes: int = 4
    cpus_per_node: int = 4
    memory_per_node: int = 4000  # MB
    partition: str = "debug"
    cluster_name: str = "plurm"
    gres: str = ""  # per node, as slurm.conf's Gres= (e.g. "gpu:4" or "gpu:h200:2,gpu:a100:2")
    controllers: int = 1  # 2+: a primary and backups on 127.0.0.1, 127.0.0.2, ... (needs ``state``)
    state: str = ""  # StateSaveLocation: "" is DIR/state (SQLite); postgresql://... is shared
    ctld_timeout: int | None = None  # SlurmctldTimeout: how long a silent active keeps control


def controller_names(count: int) -> list[tuple[str, str]]:
    """The local cluster's SlurmctldHost entries: one on 127.0.0.1 named localhost, or several
    named ctl1, ctl2, ... on 127.0.0.1, 127.0.0.2, ... (every 127/8 address is loopback)."""
    if count <= 1:
        return [("localhost", "127.0.0.1")]
    return [(f"ctl{i + 1}", f"127.0.0.{i + 1}") for i in range(count)]


def ephemeral_low() -> int:
    """The first port the kernel hands out to outgoing connections and ``bind(port 0)``.

    Daemon ports are picked below it: a port from the ephemeral range that is free now can
    be taken by any outgoing connection while its daemon is down (a plurmd restarted in a
    test found its SlurmdPort in use that way)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return max(low, 12000)


_LOWEST_PORT = 10000  # above the well-known and most registered services' ports


def free_port_block(count: int) -> int:
    """A base port with ``count`` consecutive ports free on loopback, below the ephemeral
    range."""
    top = ephemeral_low() - count
    for _ in range(200):
        base = random.randrange(_LOWEST_PORT, top)
        sockets = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", port))
                sockets.append(sock)
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError("no free block of ports on 127.0.0.1")


# As root, jobs are confined as Slurm confines them (cgroups: their CPUs, their memory, their
# GPUs; every process of a job killed with it).  Without root nothing can be confined: jobs are
# tracked by process group, and their limits are not enforced (docs/security.md).
CONFINED_PLUGINS = "ProctrackType=proctrack/cgroup\nTaskPlugin=task/cgroup,task/affinity\n"
UNCONFINED_PLUGINS = "ProctrackType=proctrack/pgid\nTaskPlugin=task/none\n"
CGROUP_CONF = """\
# Written by `plurm cluster up` (as root): jobs get their CPUs, memory and GPUs only.
CgroupPlugin=autodetect
ConstrainCores=yes
ConstrainRAMSpace=yes
ConstrainDevices=yes
"""


def render_conf(directory: str, shape: ClusterShape, base_port: int, confined: bool = False) -> str:
    """The local cluster's slurm.conf (``confined``: with cgroup.conf's plugins, for root)."""
    n = shape.nodes
    first_node_port = base_port + 2
    names = f"n[1-{n}]" if n > 1 else "n1"
    ports = f"[{first_node_port}-{first_node_port + n - 1}]" if n > 1 else str(first_node_port)
    d = os.path.abspath(directory)
    def_mem = max(1, shape.memory_per_node // max(shape.cpus_per_node, 1))
    gres_types = sorted({item.split(":", 1)[0] for item in shape.gres.split(",") if item})
    gres_types_line = f"GresTypes={','.join(gres_types)}\n" if gres_types else ""
    node_gres = f" Gres={shape.gres}" if shape.gres else ""
    ctld_hosts = "".join(f"SlurmctldHost={name}({addr})\n" for name, addr in controller_names(shape.controllers))
    ctld_timeout = f"SlurmctldTimeout={shape.ctld_timeout}\n" if shape.ctld_timeout else ""
    return f"""\
# A plurm local cluster, written by `plurm cluster up`.  Slurm reads it too.
ClusterName={shape.cluster_name}
{ctld_hosts}{ctld_timeout}SlurmctldPort={base_port}
SlurmdPort={base_port + 1}
SlurmUser={getpass.getuser()}
SlurmdUser={getpass.getuser()}
StateSaveLocation={shape.state or f"{d}/state"}
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/run/plurmctld.pid
SlurmdPidFile={d}/run/plurmd-%n.pid
SlurmctldLogFile={d}/log/plurmctld.log
SlurmdLogFile={d}/log/plurmd-%n.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
PriorityType=priority/basic
{CONFINED_PLUGINS if confined else UNCONFINED_PLUGINS}MpiDefault=none
ReturnToService=2
SlurmdTimeout=300
KillWait=10
MinJobAge=300
DefMemPerCPU={def_mem}
{gres_types_line}NodeName={names} NodeHostname=localhost NodeAddr=127.0.0.1 Port={ports} CPUs={shape.cpus_per_node} \
Sockets=1 CoresPerSocket={shape.cpus_per_node} ThreadsPerCore=1 RealMemory={shape.memory_per_node}{node_gres} State=UNKNOWN
PartitionName={shape.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


class LocalCluster:
    def __init__(self, directory: str | None = None) -> None:
        self.dir = os.path.abspath(directory or default_cluster_dir())
        self.conf_path = os.path.join(self.dir, "slurm.conf")
        self.key_path = os.path.join(self.dir, "slurm.key")
        self.run_dir = os.path.join(self.dir, "run")
        self.log_dir = os.path.join(self.dir, "log")

    # -- files
    def write_files(self, shape: ClusterShape) -> bool:
        """Write slurm.conf and the key unless they exist; True when written."""
        for sub in ("state", "spool", "run", "log"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        if not os.path.exists(self.key_path):
            fd = os.open(self.key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(envelope.new_key() + b"\n")
        if os.path.exists(self.conf_path):
            return False
        confined = os.geteuid() == 0
        text = render_conf(self.dir, shape, free_port_block(shape.nodes + 2), confined)
        if confined:
            with open(os.path.join(self.dir, "cgroup.conf"), "w") as handle:
                handle.write(CGROUP_CONF)
        tmp = self.conf_path + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(text)
        os.replace(tmp, self.conf_path)
        return True

    def shape_changes(self, given: dict[str, object]) -> list[str]:
        """What the shape options given on the command line (``nodes``, ``cpus_per_node``,
        ``memory_per_node``, ``gres``; None: not given) would change in the existing
        slurm.conf, as "--OPTION NEW (the cluster has OLD)": `up` never rewrites a
        slurm.conf it finds (it may be hand-edited), so such a change must be refused,
        not reported as a success that changed nothing."""
        from plurm.grammar.slurmconf import load_slurm_conf

        nodes = list(load_slurm_conf(self.conf_path).nodes.values())
        have: dict[str, object] = {
            "nodes": len(nodes),
            "cpus_per_node": sorted({n.cpus for n in nodes}),
            "memory_per_node": sorted({n.real_memory for n in nodes}),
            "gres": sorted({n.raw.get("Gres", "") for n in nodes}),
        }
        changes = []
        for key, value in given.items():
            if value is None:
                continue
            old = have[key]
            same = value == old if key == "nodes" else old == [value]
            if not same:
                shown = ",".join(str(v) or "none" for v in old) if isinstance(old, list) else old
                changes.append(f"--{key.replace('_', '-')} {value or 'none'} (the cluster has {shown})")
        return changes

    def node_names(self) -> list[str]:
        from plurm.grammar.slurmconf import load_slurm_conf

        return list(load_slurm_conf(self.conf_path).nodes)

    # -- processes
    def _pidfile(self, name: str) -> str:
        return os.path.join(self.run_dir, f"{name}.pid")

    def _alive(self, name: str, module: str) -> int | None:
        """The pid of the daemon ``name`` if it runs: one this class spawned (its command
        line names the module and this slurm.conf), or one that holds the pid file's lock
        (a daemon started without -D, e.g. ``plurmctld -f DIR/slurm.conf``, locks it)."""
        import fcntl

        try:
            with open(self._pidfile(name)) as handle:
                pid = int(handle.read().strip() or 0)
                try:
                    fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    fcntl.flock(handle, fcntl.LOCK_UN)
                except BlockingIOError:
                    return pid or None  # a live plurm daemon holds it: never a stale file
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except (OSError, ValueError):
            return None
        return pid if module.encode() in cmdline and self.conf_path.encode() in cmdline else None

    def _spawn(self, name: str, module: str, extra: list[str]) -> int:
        log_path = os.path.join(self.log_dir, f"{name}.log")
        env = dict(os.environ, SLURM_CONF=self.conf_path)
        with open(log_path, "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", module, "-D", "-f", self.conf_path, *extra],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                    start_new_session=True, close_fds=True)
        with open(self._pidfile(name), "w") as handle:
            handle.write(f"{proc.pid}\n")
        return proc.pid

    def up(self, shape: ClusterShape, timeout: float = 60.0) -> list[str]:
        """Start whatever is not running; return what was started."""
        self.write_files(shape)
        started: list[str] = []
        for name, extra in self.controllers():
            if self._alive(name, CTLD_MODULE) is None:
                self._spawn(name, CTLD_MODULE, extra)
                started.append(name)
        names = self.node_names()
        for name in names:
            if self._alive(f"plurmd-{name}", NODED_MODULE) is None:
                self._spawn(f"plurmd-{name}", NODED_MODULE, ["-N", name])
                started.append(f"plurmd-{name}")
        self.wait_ready(names, timeout)
        return started

    def controllers(self) -> list[tuple[str, list[str]]]:
        """(pid file name, extra arguments) of each controller slurm.conf names: plurmctld alone,
        or plurmctld --host ctl1, plurmctld-ctl2 --host ctl2, ..."""
        names = read_settings(self.conf_path).host_names  # the light scan: no grammar on this path
        if len(names) == 1:
            return [("plurmctld", [])]
        return [("plurmctld" if i == 0 else f"plurmctld-{name}", ["--host", name]) for i, name in enumerate(names)]

    def wait_ready(self, names: list[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last_error = "no answer"
        while time.monotonic() < deadline:
            try:
                conn = Connection(read_settings(self.conf_path), timeout=2.0)
                try:
                    info = conn.request("node_info", {})
                finally:
                    conn.close()
                ready = {n["name"] for n in info["nodes"] if n.get("responding")}
                if ready.issuperset(names):
                    return
                last_error = f"waiting for nodes {sorted(set(names) - ready)}"
            except ClientError as exc:
                last_error = str(exc)
            time.sleep(0.1)
        raise RuntimeError(f"cluster did not come up within {timeout:.0f}s: {last_error} (logs in {self.log_dir})")

    def down(self, timeout: float = 15.0) -> list[str]:
        stopped: list[str] = []
        targets: list[tuple[str, int]] = []
        for entry in sorted(os.listdir(self.run_dir)) if os.path.isdir(self.run_dir) else []:
            if not entry.endswith(".pid"):
                continue
            name = entry[:-4]
            module = CTLD_MODULE if name.startswith("plurmctld") else NODED_MODULE
            if name == "plurmrestd":  # (plurm cluster up --rest: tools/localrest.py)
                module = "plurm.rest.plurmrestd"
            pid = self._alive(name, module)
            if pid is not None:
                targets.append((name, pid))
            else:
                os.unlink(os.path.join(self.run_dir, entry))
        for name, pid in targets:
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for name, pid in targets:
            while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}") and not _is_zombie(pid):
                time.sleep(0.05)
            if os.path.exists(f"/proc/{pid}") and not _is_zombie(pid):
                os.kill(pid, signal.SIGKILL)
            try:
                os.unlink(self._pidfile(name))
            except OSError:
                pass
            stopped.append(name)
        self.kill_jobs()
        return stopped

    def kill_jobs(self) -> list[int]:
        """The jobs' process groups that the nodes' spools record as running, SIGKILLed: a
        stopped plurmd leaves its jobs running (nodeagent/supervisor.py), a cluster torn down
        does not."""
        from plurm.grammar.slurmconf import load_slurm_conf
        from plurm.nodeagent.jobstate import kill_recorded, node_spool

        if not os.path.exists(self.conf_path):
            return []
        try:
            conf = load_slurm_conf(self.conf_path)
        except Exception as exc:  # a slurm.conf edited past reading
            print(f"plurm: cannot read {self.conf_path} to find the jobs' processes: {exc}", file=sys.stderr)
            return []
        killed: list[int] = []
        for node in conf.nodes:
            killed.extend(kill_recorded(node_spool(conf, self.conf_path, node)))
        return killed


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
