"""Chaos: many short jobs while node daemons, whole nodes and the active controller die.

The driver behind tests/reliability/test_chaos.py (a ``slow`` test) and
tests/bench/chaos_bench.py (its figures).  A local cluster of 8 nodes with two controllers
on a private PostgreSQL (tests/pgtest.py); the jobs are submitted first (arrays), then, while
they run, a driver

- kills a random node's **plurmd** with -9 and starts it again 0.5-3 s later (its jobs must
  live on: re-adopted from the spool, never run twice);
- **crashes a node**: plurmd, the supervisors and every job process of the node killed with
  -9 at once, as when a server burns; it stays dead for SlurmdTimeout and more (the node goes
  DOWN, its jobs are requeued and run elsewhere), then comes back (ReturnToService=1);
- twice, kills the **active controller** with -9: the standby takes over (the time until
  the other controller answers as the active one is a failover time), and the killed one is
  started again (it is handed control back if it is the primary).

Every run of a job appends ``start``/``end`` lines to the job's own ledger file.  At the end
every job must be COMPLETED; no run may overlap another run of the same job (a run that a
crash killed ends at that crash); each job's sacct ``-D`` records are one per run the
controller started, the last COMPLETED and the earlier ones NODE_FAIL; the requeues counted.
"""

from __future__ import annotations

import glob
import json
import os
import random
import signal
import statistics
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from failover.test_standby import BACKUP, PRIMARY, active
from plurmtest import Cluster, wait_for

SLURMD_TIMEOUT_S = 10
CTLD_TIMEOUT_S = 5

JOB = """#!/bin/sh
L={ledger}/$SLURM_JOB_ID
echo "start ${{SLURM_RESTART_COUNT:-0}} $SLURMD_NODENAME $(date +%s.%N)" >> $L
sleep $(( SLURM_ARRAY_TASK_ID % 3 + 1 ))
echo "end ${{SLURM_RESTART_COUNT:-0}} $SLURMD_NODENAME $(date +%s.%N)" >> $L
"""


@dataclass
class Figures:
    jobs: int = 0
    plurmd_kills: int = 0
    node_crashes: int = 0
    controller_kills: int = 0
    failovers_s: list[float] = field(default_factory=list)
    requeues: int = 0
    requeued_jobs: int = 0
    wall_s: float = 0.0
    problems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"chaos_jobs {self.jobs} n", f"chaos_plurmd_kills {self.plurmd_kills} n",
               f"chaos_node_crashes {self.node_crashes} n", f"chaos_controller_kills {self.controller_kills} n",
               f"chaos_requeues {self.requeues} n", f"chaos_requeued_jobs {self.requeued_jobs} n",
               f"chaos_wall {self.wall_s:.0f} s", f"chaos_problems {len(self.problems)} n"]
        if self.failovers_s:
            out += [f"chaos_failover_median {statistics.median(self.failovers_s):.2f} s",
                    f"chaos_failover_max {max(self.failovers_s):.2f} s"]
        return out


def start(postgres, base: Path, nodes: int = 8, cpus: int = 2) -> Cluster:
    directory = base / "cluster"
    env = dict(os.environ, SLURM_CONF=str(directory / "slurm.conf"))
    env.pop("SLURM_JOB_ID", None)
    c = Cluster(directory, directory / "slurm.conf", env)
    url = postgres.create_database(f"chaos_{uuid.uuid4().hex[:8]}")
    c.up("--nodes", str(nodes), "--cpus-per-node", str(cpus), "--memory-per-node", "2000",
         "--controllers", "2", "--state", url, "--slurmctld-timeout", str(CTLD_TIMEOUT_S))
    c.down()
    text = c.conf.read_text()
    for key, value in (("SlurmdTimeout", SLURMD_TIMEOUT_S), ("ReturnToService", 1), ("KillWait", 2),
                       ("MinJobAge", 3600)):
        lines = [line for line in text.splitlines() if not line.startswith(f"{key}=")]
        text = "\n".join(lines) + f"\n{key}={value}\n"
    c.conf.write_text(text + "AuthInfo=cred_expire=5\n")
    c.up()
    wait_for(lambda: active(c, PRIMARY), timeout=60, what="the primary to be active")
    return c


def _pid(c: Cluster, name: str) -> int | None:
    try:
        return int((c.dir / "run" / f"{name}.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def _kill(pid: int | None, signum: int = signal.SIGKILL) -> None:
    if pid:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def _crash_node(c: Cluster, node: str) -> None:
    """plurmd and everything it started, killed at once."""
    from plurm.nodeagent import jobstate

    _kill(_pid(c, f"plurmd-{node}"))
    for run_dir in glob.glob(str(c.dir / "spool" / node / jobstate.RUNS / "*")):
        procs = jobstate.read_procs(run_dir)
        if procs is None:
            continue
        _kill(procs.supervisor.pid)
        try:
            os.killpg(procs.pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def submit(c: Cluster, workdir: Path, jobs: int, chunk: int = 100) -> list[int]:
    """Arrays of ``chunk`` tasks; their array job ids."""
    ledger = workdir / "ledger"
    ledger.mkdir(exist_ok=True)
    script = workdir / "job.sh"
    script.write_text(JOB.format(ledger=ledger))
    arrays = []
    for first in range(0, jobs, chunk):
        size = min(chunk, jobs - first)
        arrays.append(c.sbatch(f"--array=0-{size - 1}", "-o", "/dev/null", str(script), cwd=workdir))
    return arrays


def run(c: Cluster, workdir: Path, jobs: int = 1000, seed: int | None = None, limit_s: float = 1800) -> Figures:
    rng = random.Random(seed)
    fig = Figures()
    started = time.monotonic()
    arrays = submit(c, workdir, jobs)
    crashes: dict[str, list[float]] = {}  # node -> wall-clock times of its crashes
    nodes = [f"n{i}" for i in range(1, 9)]
    ctld_kills_at = (jobs // 3, 2 * jobs // 3)

    def finished() -> int:
        """Jobs no longer pending or running (a pending array counts all its tasks)."""
        try:
            active_jobs = c.request("job_info", {})["jobs"]
        except Exception:
            return -1
        # The not-yet-split remainder of an array is one record listing its tasks.
        return jobs - sum(len(job.get("array_pending") or []) or 1 for job in active_jobs)

    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        count = finished()
        if count == jobs:
            break
        if fig.controller_kills < len(ctld_kills_at) and count >= ctld_kills_at[fig.controller_kills]:
            _failover(c, fig)
            continue
        time.sleep(rng.uniform(2.0, 5.0))
        node = rng.choice(nodes)
        if rng.random() < 0.6:
            _kill(_pid(c, f"plurmd-{node}"))
            fig.plurmd_kills += 1
            time.sleep(rng.uniform(0.5, 3.0))
        else:
            crashes.setdefault(node, []).append(time.time())
            _crash_node(c, node)
            fig.node_crashes += 1
            time.sleep(SLURMD_TIMEOUT_S + rng.uniform(2.0, 6.0))
        c.up()
    fig.wall_s = time.monotonic() - started
    if finished() != jobs:
        fig.problems.append(f"not finished within {limit_s:.0f} s")
    _check(c, workdir, arrays, jobs, crashes, fig)
    return fig


def _failover(c: Cluster, fig: Figures) -> None:
    primary_active = active(c, PRIMARY)
    victim, other = ("plurmctld", BACKUP) if primary_active else ("plurmctld-ctl2", PRIMARY)
    killed = time.monotonic()
    _kill(_pid(c, victim))
    fig.controller_kills += 1
    wait_for(lambda: active(c, other), timeout=CTLD_TIMEOUT_S * 6, what="the standby to take over")
    fig.failovers_s.append(time.monotonic() - killed)
    c.up()  # the killed one again (a primary is handed control back)


def _check(c: Cluster, workdir: Path, arrays: list[int], jobs: int, crashes: dict[str, list[float]],
           fig: Figures) -> None:
    out = c.run("sacct", "-D", "-X", "-n", "-P", "-j", ",".join(map(str, arrays)), "-o",
                "JobIDRaw,State,NodeList", check=True, timeout=300).stdout
    records: dict[int, list[tuple[str, str]]] = {}
    for line in out.splitlines():
        job_id, state, node = line.split("|")
        records.setdefault(int(job_id), []).append((state, node))
    ids = sorted(records)
    fig.jobs = len(ids)
    if len(ids) != jobs:
        fig.problems.append(f"{len(ids)} jobs in sacct, {jobs} submitted")
    for job_id in ids:
        rows = records.get(job_id, [])
        if not rows or rows[-1][0] != "COMPLETED":
            fig.problems.append(f"job {job_id}: sacct {rows}")
            continue
        earlier = rows[:-1]
        fig.requeues += len(earlier)
        fig.requeued_jobs += bool(earlier)
        if any(state != "NODE_FAIL" for state, _ in earlier):
            fig.problems.append(f"job {job_id}: an earlier run not NODE_FAIL: {rows}")
        runs = _ledger(workdir / "ledger" / str(job_id))
        if len(runs) > len(rows):
            fig.problems.append(f"job {job_id}: {len(runs)} runs in the ledger, {len(rows)} in sacct -D")
        fig.problems.extend(f"job {job_id}: {p}" for p in _overlaps(runs, crashes))


def _ledger(path: Path) -> list[dict]:
    runs: dict[int, dict] = {}
    order: list[int] = []
    for line in path.read_text().splitlines() if path.exists() else []:
        kind, run, node, at = line.split()
        entry = runs.setdefault(int(run), {"run": int(run), "node": node})
        if int(run) not in order:
            order.append(int(run))
        entry[kind] = float(at)
    return [runs[r] for r in order]


def _overlaps(runs: list[dict], crashes: dict[str, list[float]]) -> list[str]:
    problems = []
    ends = []
    for entry in runs:
        end = entry.get("end")
        if end is None:  # killed: by a crash of its node after it started, or it is an error
            later = [t for t in crashes.get(entry["node"], []) if t >= entry.get("start", 0)]
            if not later:
                problems.append(f"run {entry['run']} on {entry['node']} vanished: {json.dumps(entry)}")
                continue
            end = min(later)
        ends.append((entry.get("start", 0.0), end, entry["run"]))
    ends.sort()
    for (s1, e1, r1), (s2, _e2, r2) in zip(ends, ends[1:]):
        if s2 < e1:
            problems.append(f"runs {r1} and {r2} overlap ({s2:.3f} < {e1:.3f})")
    return problems
