"""Daemon start-up without -D: real plurmctld/plurmd processes, real files, real ports.

Errors are reported before detaching (exit 1, the message on stderr); a good start detaches
(the command exits 0 once the daemon is ready), the daemon holds a locked pid file with its own
pid, runs with umask 022 in its chosen directory and logs to its file; SIGTERM removes the pid
file.  -D is unchanged: foreground, the caller's cwd and umask.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from plurm.grammar.slurmconf import load_slurm_conf
from plurm.tools.localcluster import ClusterShape, LocalCluster
from plurmtest import command, wait_for

START_TIMEOUT = 30.0  # generous for a loaded 2-core machine; a good start takes 1-2 s


@pytest.fixture
def cluster_dir(tmp_path: Path) -> Iterator[Path]:
    """A local cluster's files (slurm.conf, slurm.key, run/, log/, spool/) as `plurm cluster up`
    writes them, and no daemon yet; any daemon a test leaves behind is killed."""
    directory = tmp_path / "cluster"
    LocalCluster(str(directory)).write_files(ClusterShape(nodes=2, cpus_per_node=1, memory_per_node=500))
    yield directory
    for pid_file in (directory / "run").glob("*.pid"):
        pid = _read_pid(pid_file)
        if pid and _alive(pid):
            os.kill(pid, signal.SIGKILL)


@dataclass
class Started:
    """The command an admin types, after it returned."""

    returncode: int
    stderr: str
    pid: int  # of the command itself, not of the daemon it leaves behind
    took: float


def _start(name: str, *args: str, cwd: Path | None = None, umask: int | None = None) -> Started:
    started = time.monotonic()
    proc = subprocess.Popen(command(name) + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd,
                            preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)
    try:
        _, err = proc.communicate(timeout=START_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    return Started(proc.returncode, err, proc.pid, time.monotonic() - started)


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for init to reap it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _umask(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return line.split()[1]
    raise AssertionError(f"no Umask line for pid {pid}")


def _listen(port: int, reuse: bool = False) -> socket.socket:
    sock = socket.socket()
    if reuse:  # as libzmq's listeners: their connections' TIME_WAIT then blocks no rebind
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen()
    return sock


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(pid: int, pid_file: Path) -> None:
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not _alive(pid), timeout=20, what=f"pid {pid} to stop on SIGTERM")
    assert not pid_file.exists(), f"{pid_file} left behind after a clean stop"


# ------------------------------------------------------------------ errors, before detaching

@pytest.mark.parametrize("name", ["plurmctld", "plurmd"])
def test_bad_conf_is_reported_on_stderr_with_file_and_line(tmp_path: Path, name: str) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\nSlurmctldHost=localhost(127.0.0.1)\nNodeName=n1 CPUs=lots\n")
    (tmp_path / "slurm.key").write_text("k" * 64)
    (tmp_path / "slurm.key").chmod(0o600)
    proc = _start(name, "-f", str(conf), "-N", "n1") if name == "plurmd" else _start(name, "-f", str(conf))
    assert proc.returncode == 1, proc
    assert f"{conf}:3" in proc.stderr and "CPUs" in proc.stderr, proc.stderr
    assert proc.took < 10, f"{name} took {proc.took:.1f}s to report a bad slurm.conf"


@pytest.mark.parametrize("name", ["plurmctld", "plurmd"])
def test_unreadable_conf_names_the_file(tmp_path: Path, name: str) -> None:
    missing = tmp_path / "nowhere" / "slurm.conf"
    proc = _start(name, "-f", str(missing), "-N", "n1") if name == "plurmd" else _start(name, "-f", str(missing))
    assert proc.returncode == 1, proc
    assert str(missing) in proc.stderr and "No such file" in proc.stderr, proc.stderr


@pytest.mark.parametrize("name", ["plurmctld", "plurmd"])
def test_missing_key_is_reported(cluster_dir: Path, name: str) -> None:
    (cluster_dir / "slurm.key").unlink()
    args = ["-f", str(cluster_dir / "slurm.conf")] + (["-N", "n1"] if name == "plurmd" else [])
    proc = _start(name, *args)
    assert proc.returncode == 1, proc
    assert str(cluster_dir / "slurm.key") in proc.stderr, proc.stderr
    # Reported before the pid file was taken: nothing runs, nothing is left behind.
    assert list((cluster_dir / "run").iterdir()) == []


def test_controller_port_in_use_is_reported(cluster_dir: Path) -> None:
    conf = load_slurm_conf(cluster_dir / "slurm.conf")
    with _listen(conf.slurmctld_port):
        proc = _start("plurmctld", "-f", str(cluster_dir / "slurm.conf"))
    assert proc.returncode == 1, proc
    assert f"SlurmctldPort {conf.slurmctld_port}" in proc.stderr and "in use" in proc.stderr, proc.stderr
    assert proc.took < 10
    # The pid file it had locked is given back (and removed): a later start is not blocked.
    assert not (cluster_dir / "run" / "plurmctld.pid").exists()
    # The log (SlurmctldLogFile) has the reason as well.
    assert f"SlurmctldPort {conf.slurmctld_port}" in (cluster_dir / "log" / "plurmctld.log").read_text()


def test_node_port_in_use_is_reported(cluster_dir: Path) -> None:
    conf = load_slurm_conf(cluster_dir / "slurm.conf")
    port = conf.nodes["n2"].port
    assert port is not None
    # A pid file written by someone else (`plurm cluster up` records its -D daemons there),
    # not locked: taken, but on failure left as it was found.
    pid_file = cluster_dir / "run" / "plurmd-n2.pid"
    pid_file.write_text("4242\n")
    with _listen(port):
        proc = _start("plurmd", "-f", str(cluster_dir / "slurm.conf"), "-N", "n2")
    assert proc.returncode == 1, proc
    assert f"SlurmdPort {port}" in proc.stderr and "in use" in proc.stderr, proc.stderr
    assert pid_file.read_text() == "4242\n"


def test_unknown_node_name_is_reported(cluster_dir: Path) -> None:
    proc = _start("plurmd", "-f", str(cluster_dir / "slurm.conf"), "-N", "nosuch")
    assert proc.returncode == 1, proc
    assert "node nosuch not found" in proc.stderr and str(cluster_dir / "slurm.conf") in proc.stderr, proc.stderr


def test_relative_path_in_conf_is_refused_without_D(cluster_dir: Path) -> None:
    conf = cluster_dir / "slurm.conf"
    conf.write_text(conf.read_text().replace(f"SlurmctldPidFile={cluster_dir}/run/", "SlurmctldPidFile=run/"))
    proc = _start("plurmctld", "-f", str(conf))
    assert proc.returncode == 1, proc
    assert "SlurmctldPidFile=run/plurmctld.pid is not an absolute path" in proc.stderr, proc.stderr


def test_failure_after_detaching_still_reaches_stderr(cluster_dir: Path) -> None:
    # The state store cannot be opened (its file is a directory): Controller fails only once
    # the daemon has detached; the command that started it must still say so and exit 1.
    (cluster_dir / "state" / "plurm_state.db").mkdir(parents=True)
    proc = _start("plurmctld", "-f", str(cluster_dir / "slurm.conf"))
    assert proc.returncode == 1, proc
    assert proc.stderr.startswith("plurmctld: error: ") and len(proc.stderr.strip()) > len("plurmctld: error: "), proc.stderr
    assert not (cluster_dir / "run" / "plurmctld.pid").exists()


# ------------------------------------------------------------------ a good start

def test_controller_detaches_locks_its_pid_file_and_stops_on_sigterm(cluster_dir: Path, tmp_path: Path) -> None:
    pid_file = cluster_dir / "run" / "plurmctld.pid"
    pid_file.write_text("999999\n")  # stale, from a daemon that died: unlocked, so no obstacle
    # Relative -f from another directory: it must be made absolute before the daemon moves.
    proc = _start("plurmctld", "-f", "cluster/slurm.conf", cwd=tmp_path, umask=0o077)
    assert proc.returncode == 0, proc
    assert proc.stderr == ""
    pid = _read_pid(pid_file)
    assert pid is not None and pid not in (999999, proc.pid) and _alive(pid)
    try:
        assert _umask(pid) == "0022"  # not the 077 it was started with
        # As slurmctld: the directory of SlurmctldLogFile.
        assert os.readlink(f"/proc/{pid}/cwd") == str(cluster_dir / "log")
        assert os.getsid(pid) != os.getsid(0)  # its own session, no controlling terminal
        assert {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1, 2)} == {os.devnull}
        log = cluster_dir / "log" / "plurmctld.log"
        # Written by the daemon itself, after detaching.
        wait_for(lambda: f"detached (pid {pid}," in log.read_text(), timeout=10, what="the daemon's log line")

        # A second one with the same pid file refuses, names the first, changes nothing.
        again = _start("plurmctld", "-f", str(cluster_dir / "slurm.conf"))
        assert again.returncode == 1, again
        assert "already running" in again.stderr and f"pid {pid}" in again.stderr and str(pid_file) in again.stderr
        assert again.took < 10
        assert _read_pid(pid_file) == pid and _alive(pid)
        # ... in the foreground too, with --pidfile naming the same file.
        fg = _start("plurmctld", "-D", "-f", str(cluster_dir / "slurm.conf"), "--pidfile", str(pid_file))
        assert fg.returncode == 1 and "already running" in fg.stderr, fg

        # The node daemon registers: the controller's log keeps receiving lines.
        node = _start("plurmd", "-f", str(cluster_dir / "slurm.conf"), "-N", "n1")
        assert node.returncode == 0, node
        node_pid = _read_pid(cluster_dir / "run" / "plurmd-n1.pid")
        assert node_pid is not None and _alive(node_pid)
        wait_for(lambda: "node n1 registered" in log.read_text(), timeout=20, what="n1 to register")
        _stop(node_pid, cluster_dir / "run" / "plurmd-n1.pid")
    finally:
        if _alive(pid):
            _stop(pid, pid_file)


def test_node_daemon_detaches_into_its_spool_dir(cluster_dir: Path, tmp_path: Path) -> None:
    # No controller needed to start: plurmd registers once one answers.
    pid_file = cluster_dir / "run" / "plurmd-n2.pid"  # SlurmdPidFile=.../plurmd-%n.pid
    log = tmp_path / "logs" / "n2.log"
    log.parent.mkdir()
    proc = _start("plurmd", "-f", "cluster/slurm.conf", "-N", "n2", "-L", "logs/n2.log", cwd=tmp_path, umask=0o027)
    assert proc.returncode == 0, proc
    pid = _read_pid(pid_file)
    assert pid is not None and pid != proc.pid and _alive(pid)
    try:
        assert _umask(pid) == "0022"
        assert os.readlink(f"/proc/{pid}/cwd") == str(cluster_dir / "spool" / "n2")  # as slurmd: SlurmdSpoolDir
        wait_for(lambda: f"detached (pid {pid}," in log.read_text(), timeout=10, what="plurmd's log line")
        assert "plurmd-n2: INFO" in log.read_text()
        again = _start("plurmd", "-f", str(cluster_dir / "slurm.conf"), "-N", "n2")
        assert again.returncode == 1 and f"pid {pid}" in again.stderr, again
        # Another node of the same host has its own pid file (%n): it starts.
        other = _start("plurmd", "-f", str(cluster_dir / "slurm.conf"), "-N", "n1")
        assert other.returncode == 0, other
        other_pid = _read_pid(cluster_dir / "run" / "plurmd-n1.pid")
        assert other_pid is not None and other_pid != pid
        _stop(other_pid, cluster_dir / "run" / "plurmd-n1.pid")
    finally:
        if _alive(pid):
            _stop(pid, pid_file)


# ------------------------------------------------------------------ -D is as it was

def test_foreground_keeps_cwd_umask_and_the_process(cluster_dir: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "fg.pid"
    proc = subprocess.Popen(command("plurmctld") + ["-D", "-f", "cluster/slurm.conf", "--pidfile", "fg.pid"],
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: os.umask(0o077))
    try:
        wait_for(lambda: _read_pid(pid_file) == proc.pid, timeout=START_TIMEOUT, what="the pid file")
        assert proc.poll() is None  # still in the foreground
        assert _umask(proc.pid) == "0077"
        assert os.readlink(f"/proc/{proc.pid}/cwd") == str(tmp_path)
        assert not (cluster_dir / "run" / "plurmctld.pid").exists()  # SlurmctldPidFile is for daemons
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "plurmctld listening on" in err  # -D logs to stderr without -L
    assert not pid_file.exists()


def test_port_check_agrees_with_libzmq_on_time_wait() -> None:
    # The plain-socket check binds with SO_REUSEADDR as libzmq does: a live listener makes it
    # fail, connections left in TIME_WAIT by a daemon that just stopped do not.
    from plurm.common.daemon import StartupError, check_port_free

    port = _free_port()
    check_port_free("127.0.0.1", port, "SlurmctldPort")
    with _listen(port, reuse=True) as server:
        with pytest.raises(StartupError, match=f"SlurmctldPort {port} on 127.0.0.1 is already in use"):
            check_port_free("127.0.0.1", port, "SlurmctldPort")
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = server.accept()
        conn.close()  # the server side closes first: its end of the connection waits in TIME_WAIT
        client.close()
    with socket.socket() as plain, pytest.raises(OSError):
        plain.bind(("127.0.0.1", port))  # the TIME_WAIT is there: a bind without SO_REUSEADDR fails
    check_port_free("127.0.0.1", port, "SlurmctldPort")


def test_cluster_down_stops_daemons_started_without_D(cluster_dir: Path) -> None:
    """`plurm cluster down` knows a detached daemon by its pid file's lock (its command line
    is the console script's, not the module `cluster up` runs) and stops it."""
    proc = _start("plurmctld", "-f", str(cluster_dir / "slurm.conf"))
    assert proc.returncode == 0, proc
    pid_file = cluster_dir / "run" / "plurmctld.pid"
    pid = _read_pid(pid_file)
    assert pid is not None and _alive(pid)
    assert LocalCluster(str(cluster_dir)).down() == ["plurmctld"]
    assert not _alive(pid) and not pid_file.exists()
