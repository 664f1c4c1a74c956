"""Test helpers: a real local cluster (real daemons, real processes, real files)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BIN_DIR = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
REFERENCE = SHARED / "reference" / "slurm-22.05"


def command(name: str) -> list[str]:
    """The installed console script (what users run), else the module."""
    path = BIN_DIR / name
    if path.exists():
        return [str(path)]
    modules = {"plurmctld": "plurm.corescheduler.plurmctld", "plurmd": "plurm.nodeagent.plurmd"}
    return [sys.executable, "-m", modules.get(name, f"plurm.tools.{name}")]


@dataclass
class Cluster:
    dir: Path
    conf: Path
    env: dict[str, str]

    def run(self, name: str, *args: str, input: str | None = None, cwd: str | Path | None = None,
            check: bool = False, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        full_env = dict(self.env, **(env or {}))
        proc = subprocess.run(command(name) + list(args), capture_output=True, text=True, input=input,
                              cwd=cwd, env=full_env, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"{name} {args} failed ({proc.returncode}): {proc.stdout}{proc.stderr}")
        return proc

    def sbatch(self, *args: str, cwd: str | Path | None = None, **kw) -> int:
        out = self.run("sbatch", "--parsable", *args, cwd=cwd, check=True, **kw).stdout.strip()
        return int(out.split(";")[0])

    def job(self, job_id: int | str) -> dict:
        from plurm.wire.client import read_settings, request

        jobs = request("job_info", {"job_ids": [str(job_id)], "all_states": True},
                       read_settings(str(self.conf)))["jobs"]
        return jobs[0] if jobs else {}

    def request(self, msg_type: str, body: dict) -> dict:
        from plurm.wire.client import read_settings, request

        return request(msg_type, body, read_settings(str(self.conf)))

    def wait_state(self, job_id: int | str, states: set[str] | str, timeout: float = 30.0) -> dict:
        """The job once it is in one of ``states`` (and done completing).

        A job that reaches a different final state (FAILED while the test waits for
        COMPLETED) never gets there: fail at once with the state seen, the exit
        code and the end of its output, instead of waiting out the timeout.
        """
        states = {states} if isinstance(states, str) else states
        deadline = time.monotonic() + timeout
        job: dict = {}
        while time.monotonic() < deadline:
            job = self.job(job_id)
            state = job.get("state", "PENDING")
            if not job.get("completing"):
                if state in states:
                    return job
                if state in FINISHED_STATES:
                    raise AssertionError(ended_otherwise(job_id, job, states))
            time.sleep(0.05)
        raise AssertionError(f"job {job_id} not in {states} after {timeout}s: {job}")

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Until no job is pending or running (the cluster is free again)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            jobs = self.request("job_info", {})["jobs"]
            if not jobs:
                return
            time.sleep(0.05)
        raise AssertionError(f"jobs still active: {[j['job_id'] for j in jobs]}")

    def up(self, *extra: str) -> subprocess.CompletedProcess:
        return self.run("plurm", "cluster", "up", "--dir", str(self.dir), *extra, check=True)

    def down(self) -> subprocess.CompletedProcess:
        return self.run("plurm", "cluster", "down", "--dir", str(self.dir))


# A job in one of these (and not completing) never changes state again, short of
# a requeue, which puts it back to PENDING at once (plurm.wire.model says the same).
FINISHED_STATES = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                             "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"})


def ended_otherwise(job_id: int | str, job: dict, wanted: set[str]) -> str:
    """Why waiting for ``wanted`` is over: the final state seen, and the job's own words."""
    spec = job.get("spec") or {}
    text = f"job {job_id} ended {job.get('state')} (exit code {job.get('exit_code', 0)}, " \
           f"reason {job.get('reason', 'None')}) while waiting for {sorted(wanted)}"
    out = Path(spec.get("work_dir") or "/") / (spec.get("stdout") or f"slurm-{job_id}.out")
    if "%" not in str(out) and out.is_file():
        tail = out.read_text(errors="replace")[-1500:]
        text += f"; the end of {out}:\n{tail}"
    return f"{text}\njob: {job}"


def start_cluster(base: Path, nodes: int = 4, cpus: int = 4, memory: int = 4000, gres: str = "") -> Cluster:
    directory = base / "cluster"
    env = dict(os.environ, SLURM_CONF=str(directory / "slurm.conf"))
    env.pop("SLURM_JOB_ID", None)
    cluster = Cluster(directory, directory / "slurm.conf", env)
    cluster.up("--nodes", str(nodes), "--cpus-per-node", str(cpus), "--memory-per-node", str(memory),
               *(["--gres", gres] if gres else []))
    return cluster


def write_script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(body)
    return path


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def free_ports(count: int) -> list[int]:
    """Ports free on loopback now (for hand-written slurm.conf files), below the ephemeral
    range, so that no outgoing connection takes one while its daemon restarts."""
    from plurm.tools.localcluster import free_port_block

    ports: list[int] = []
    while len(ports) < count:
        port = free_port_block(1)
        if port not in ports:
            ports.append(port)
    return ports


def write_key(path: Path) -> Path:
    """An auth/local key, readable by its owner only (the daemons refuse any other mode)."""
    from plurm.wire.auth import new_key

    path.write_bytes(new_key())
    path.chmod(0o600)
    return path
