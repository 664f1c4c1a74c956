"""A private munged and a multi-user cluster that authenticates with it (auth/munge).

``start_munged()`` installs Debian's munge package when it is missing and the tests
run as root (CI does), makes a key of its own, and starts munged on a socket of its
own (never the system's /run/munge), so tests never depend on a machine's munge.
``start_munge_cluster()`` writes a slurm.conf with ``AuthType=auth/munge`` and starts
plurmctld and plurmd as root in the foreground, in a folder every user may enter
(the test users read slurm.conf and run their jobs from there).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from plurmtest import Cluster, command, free_ports, wait_for


class Unavailable(Exception):
    pass


@dataclass
class Munged:
    dir: Path
    socket: Path
    proc: subprocess.Popen

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def ensure_munge_installed() -> str:
    path = shutil.which("munged") or ("/usr/sbin/munged" if os.path.exists("/usr/sbin/munged") else None)
    if path:
        return path
    if os.geteuid() != 0:
        raise Unavailable("munged is not installed and installing Debian's munge package needs root")
    from debpkg import apt_install

    error = apt_install("munge")
    if error:
        raise Unavailable(f"apt-get install munge failed: {error}")
    return shutil.which("munged") or "/usr/sbin/munged"


def start_munged() -> Munged:
    munged = ensure_munge_installed()
    if os.geteuid() != 0:
        raise Unavailable("the multi-user tests run munged and their daemons as root (CI runs as root)")
    base = Path(tempfile.mkdtemp(prefix="plurm-munge-"))
    base.chmod(0o755)  # every user reaches the socket
    (base / "run").mkdir(mode=0o755)
    key = base / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    sock = base / "run" / "munge.socket"
    proc = subprocess.Popen([munged, "--foreground", f"--socket={sock}", f"--key-file={key}",
                             f"--log-file={base / 'munged.log'}", f"--pid-file={base / 'run' / 'munged.pid'}",
                             f"--seed-file={base / 'munged.seed'}", "--num-threads=2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: sock.exists() or proc.poll() is not None, timeout=20, what="munged's socket")
    except AssertionError:
        proc.kill()
        raise
    if proc.poll() is not None:
        raise AssertionError(f"munged failed: {proc.stderr.read() if proc.stderr else ''}"
                             f"{(base / 'munged.log').read_text() if (base / 'munged.log').exists() else ''}")
    return Munged(base, sock, proc)


@dataclass
class MungeCluster(Cluster):
    procs: list[subprocess.Popen] = field(default_factory=list)
    nodes: tuple[str, ...] = ()

    def run_as(self, user, name: str, *args: str, cwd: str | Path | None = None,
               env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        """A command as a test user (osusers.TestUser), its own uid, gid and groups."""
        from osusers import as_user

        full_env = dict(self.env, HOME=user.home, USER=user.name, LOGNAME=user.name, **(env or {}))
        return subprocess.run(command(name) + list(args), capture_output=True, text=True, env=full_env,
                              cwd=cwd or user.home, timeout=timeout, **as_user(user))

    def sbatch_as(self, user, *args: str, cwd: str | Path | None = None) -> int:
        proc = self.run_as(user, "sbatch", "--parsable", *args, cwd=cwd)
        assert proc.returncode == 0, proc
        return int(proc.stdout.strip().split(";")[0])

    def stop(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        # A stopped plurmd leaves its jobs running: they (and, confined, their cgroups, which
        # the next cluster's n1 would find) go with the cluster, as `plurm cluster down` does.
        from plurm.nodeagent.jobstate import kill_recorded

        for node in self.nodes:
            kill_recorded(str(self.dir / "spool" / node))
        shutil.rmtree(self.dir, ignore_errors=True)

    def log(self, name: str = "plurmctld") -> str:
        path = self.dir / "log" / f"{name}.log"
        return path.read_text() if path.exists() else ""


def start_munge_cluster(munged: Munged, nodes: int = 2, cpus: int = 2, extra: str = "") -> MungeCluster:
    base = Path(tempfile.mkdtemp(prefix="plurm-multiuser-"))
    base.chmod(0o755)
    ports = free_ports(nodes + 1)
    names = tuple(f"n{i + 1}" for i in range(nodes))
    node_lines = "\n".join(f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={p} CPUs={cpus} "
                           f"RealMemory=1000" for n, p in zip(names, ports[1:]))
    conf = base / "slurm.conf"
    conf.write_text(f"""ClusterName=multiuser
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ports[0]}
AuthType=auth/munge
AuthInfo=socket={munged.socket}
SlurmUser=root
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool/%n
{node_lines}
PartitionName=main Nodes=ALL Default=YES MaxTime=60 State=UP
{extra}
""")
    conf.chmod(0o644)
    (base / "log").mkdir()
    env = dict(os.environ, SLURM_CONF=str(conf))
    env.pop("SLURM_JOB_ID", None)
    procs = [subprocess.Popen(command("plurmctld") + ["-D", "-f", str(conf), "-L", str(base / "log" / "plurmctld.log")],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    for name in names:
        procs.append(subprocess.Popen(command("plurmd") + ["-D", "-N", name, "-f", str(conf),
                                                           "-L", str(base / "log" / f"plurmd-{name}.log")],
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    cluster = MungeCluster(base, conf, env, procs, names)
    try:
        wait_for(lambda: _responding(cluster) == set(names), timeout=60, what="nodes to register")
    except AssertionError:
        log = cluster.log()
        cluster.stop()
        raise AssertionError(f"munge cluster did not come up: {log[-2000:]}") from None
    return cluster


def _responding(cluster: Cluster) -> set[str]:
    try:
        return {n["name"] for n in cluster.request("node_info", {})["nodes"] if n.get("responding")}
    except Exception:
        return set()
