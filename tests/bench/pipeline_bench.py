#!/usr/bin/env python3
"""Job throughput near the machine's limit (issue 17 item 1): a released pipeline and a job
array, real Slurm and plurm back to back, beside the machine's own process-spawn rate.

    python tests/bench/pipeline_bench.py [--jobs 1000] [--rounds 2] [--plurm-conf SLURM_CONF]
        [--slurm-bin /usr/bin] [--no-slurm] [--unconfined] [--json]

In one run:

* ``spawn``: ``--spawn`` (1000) ``bash -c true`` processes, one after the other and from two
  threads at once (fork + exec + wait, what any launcher pays for a trivial job at least);
  the better rate is the ``spawn limit``;
* for real Slurm (commands from ``--slurm-bin``, PATH=/usr/sbin:/usr/bin:/sbin:/bin) and plurm
  (a ``plurm cluster up --nodes 8 --cpus-per-node 4 --memory-per-node 2800`` cluster started in
  a temporary folder and stopped after, or the one ``--plurm-conf`` names):
  - ``pipeline``: ``--jobs`` held ``sbatch -H --wrap true -o /dev/null`` jobs (submitted first,
    untimed), then one ``scontrol release`` of all their ids; timed from the release until
    ``squeue -h -n NAME`` lists none;
  - ``array``: one ``sbatch --array=1-N --wrap true -o /dev/null``, timed from the submission
    until squeue lists none of it.

The same client loops for both systems; squeue is polled every ``--poll`` s and the end is the
start of the first poll that found nothing (so the figure never overstates a rate).  Each
figure is the best of ``--rounds``; prints jobs/s, plurm/Slurm ratios and plurm's share of the
spawn limit (the goal: >= 10x Slurm and >= 70% of the limit), and plurm's daemons' CPU per job
(ms: controller, node daemons and the supervisors and shells they reaped; ``--plurm-conf`` too
when its pid files are in ``run/`` beside it, as ``plurm cluster up`` puts them): on a shared
machine jobs/s follow the load, CPU per job hardly does.  Jobs are named
``thru<pid>_*`` and cancelled at the end.  Standard library and plurm's commands only.

``--unconfined``: as root ``plurm cluster up`` confines jobs with cgroups (the real Slurm here
runs proctrack/linuxproc, task/none); this rewrites the started cluster to
proctrack/pgid + task/none before it runs, to see what confinement costs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


class System:
    """One workload manager's commands: where they are and the environment they run in."""

    def __init__(self, name: str, bin_dir: Path, env: dict[str, str], run_dir: Path | None = None) -> None:
        self.name = name
        self.bin_dir = bin_dir
        self.env = env
        self.run_dir = run_dir  # plurm: the daemons' pid files, for their CPU seconds
        self.cpu_ms: dict[str, float] = {}  # the least CPU per job of the rounds, by workload

    def daemon_cpu_s(self) -> float | None:
        """CPU seconds of the cluster's daemons so far, with the children they reaped (a run's
        supervisor and shell): a figure that, unlike jobs/s, hardly depends on what else the
        machine runs.  None for Slurm (its slurmstepds are nobody's children)."""
        if self.run_dir is None:
            return None
        total, tick = 0.0, os.sysconf("SC_CLK_TCK")
        for pidfile in self.run_dir.glob("*.pid"):
            try:
                pid = int(pidfile.read_text().split()[0])
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, ValueError, IndexError):
                continue
            total += sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
        return total

    def note_cpu(self, what: str, before: float | None, jobs: int) -> None:
        time.sleep(0.5)  # the last supervisors reaped, so that their times are counted
        after = self.daemon_cpu_s()
        if before is not None and after is not None:
            ms = (after - before) * 1000 / jobs
            self.cpu_ms[what] = min(self.cpu_ms.get(what, ms), ms)

    def run(self, cmd: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin_dir / cmd), *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)

    def queued(self, name: str) -> bool:
        out = self.run("squeue", "-h", "-n", name, "-o", "%i")
        if out.returncode != 0:
            raise RuntimeError(f"{self.name}: squeue failed: {out.stderr.strip()}")
        return bool(out.stdout.strip())

    def wait_empty(self, name: str, poll: float, timeout: float) -> float:
        """Poll squeue until nothing named ``name`` is listed; the start of that last poll."""
        deadline = time.monotonic() + timeout
        while True:
            started = time.monotonic()
            if not self.queued(name):
                return started
            if started > deadline:
                raise TimeoutError(f"{self.name}: jobs {name} still queued after {timeout:.0f} s")
            time.sleep(poll)

    def cancel(self, name: str) -> None:
        self.run("scancel", "-n", name)


def spawn_rate(count: int, workers: int) -> float:
    """``bash -c true`` processes per second, ``workers`` threads spawning at once."""
    def spawn(n: int) -> None:
        for _ in range(n):
            subprocess.run(["bash", "-c", "true"], check=True)

    shares = [count // workers + (1 if i < count % workers else 0) for i in range(workers)]
    threads = [threading.Thread(target=spawn, args=(n,)) for n in shares]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return count / (time.monotonic() - start)


def _submit_held(system: System, name: str, jobs: int) -> list[str]:
    def one(_: int) -> str:
        out = system.run("sbatch", "--parsable", "-H", "-J", name, "-o", "/dev/null", "--wrap", "true")
        if out.returncode != 0:
            raise RuntimeError(f"{system.name}: sbatch failed: {out.stderr.strip()}")
        return out.stdout.strip().split(";")[0]

    with ThreadPoolExecutor(max_workers=2) as pool:  # untimed; two at once to save the waiting
        return list(pool.map(one, range(jobs)))


def pipeline(system: System, name: str, jobs: int, poll: float, timeout: float) -> float:
    ids = _submit_held(system, name, jobs)
    cpu = system.daemon_cpu_s()
    start = time.monotonic()
    out = system.run("scontrol", "release", ",".join(ids))
    if out.returncode != 0:
        raise RuntimeError(f"{system.name}: scontrol release failed: {out.stderr.strip()}")
    rate = jobs / (system.wait_empty(name, poll, timeout) - start)
    system.note_cpu("pipeline", cpu, jobs)
    return rate


def array(system: System, name: str, tasks: int, poll: float, timeout: float) -> float:
    cpu = system.daemon_cpu_s()
    start = time.monotonic()
    out = system.run("sbatch", "--parsable", f"--array=1-{tasks}", "-J", name, "-o", "/dev/null", "--wrap", "true")
    if out.returncode != 0:
        raise RuntimeError(f"{system.name}: sbatch --array failed: {out.stderr.strip()}")
    rate = tasks / (system.wait_empty(name, poll, timeout) - start)
    system.note_cpu("array", cpu, tasks)
    return rate


def measure(system: System, args: argparse.Namespace, tag: str) -> dict[str, float]:
    best = {"pipeline": 0.0, "array": 0.0}
    try:
        for round_ in range(args.rounds):
            name = f"{tag}_p{round_}"
            best["pipeline"] = max(best["pipeline"], pipeline(system, name, args.jobs, args.poll, args.timeout))
            name = f"{tag}_a{round_}"
            best["array"] = max(best["array"], array(system, name, args.jobs, args.poll, args.timeout))
            print(f"  {system.name} round {round_ + 1}: pipeline {best['pipeline']:.0f}/s array {best['array']:.0f}/s",
                  file=sys.stderr)
    finally:
        for round_ in range(args.rounds):
            system.cancel(f"{tag}_p{round_}")
            system.cancel(f"{tag}_a{round_}")
    return best


def _plurm_bin() -> Path:
    return Path(sys.executable).parent  # the installed entry points, not pyenv's shims


def _start_plurm(directory: Path, unconfined: bool) -> Path:
    plurm = str(_plurm_bin() / "plurm")
    shape = ["--nodes", "8", "--cpus-per-node", "4", "--memory-per-node", "2800"]
    subprocess.run([plurm, "cluster", "up", "--dir", str(directory), *shape], capture_output=True, text=True,
                   timeout=120, check=True)
    conf = directory / "slurm.conf"
    if unconfined and "proctrack/cgroup" in conf.read_text():
        subprocess.run([plurm, "cluster", "down", "--dir", str(directory)], capture_output=True, timeout=120, check=True)
        text = conf.read_text().replace("ProctrackType=proctrack/cgroup", "ProctrackType=proctrack/pgid")
        conf.write_text(text.replace("TaskPlugin=task/cgroup,task/affinity", "TaskPlugin=task/none"))
        subprocess.run([plurm, "cluster", "up", "--dir", str(directory)], capture_output=True, timeout=120, check=True)
    return conf


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs in the pipeline, tasks in the array")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--spawn", type=int, default=1000, help="bash -c true processes per spawn figure")
    parser.add_argument("--poll", type=float, default=0.02, help="seconds between squeue polls")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--slurm-bin", default="/usr/bin")
    parser.add_argument("--no-slurm", action="store_true", help="plurm only (no ratios)")
    parser.add_argument("--plurm-conf", help="an existing plurm cluster's slurm.conf (else one is started)")
    parser.add_argument("--unconfined", action="store_true", help="the started cluster without cgroups")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tag = f"thru{os.getpid()}"
    figures: dict[str, float | None] = {}

    figures["spawn_sequential_per_s"] = spawn_rate(args.spawn, 1)
    figures["spawn_parallel2_per_s"] = spawn_rate(args.spawn, 2)
    limit = max(figures["spawn_sequential_per_s"], figures["spawn_parallel2_per_s"])
    figures["spawn_limit_per_s"] = limit

    if not args.no_slurm:
        slurm = System("slurm", Path(args.slurm_bin), dict(os.environ, PATH=SYSTEM_PATH))
        slurm.env.pop("SLURM_CONF", None)
        got = measure(slurm, args, tag + "s")
        figures["slurm_pipeline_jobs_per_s"] = got["pipeline"]
        figures["slurm_array_tasks_per_s"] = got["array"]

    with tempfile.TemporaryDirectory(prefix="thru-pipeline-") as tmp:
        conf = Path(args.plurm_conf) if args.plurm_conf else _start_plurm(Path(tmp) / "c", args.unconfined)
        try:
            plurm = System("plurm", _plurm_bin(), dict(os.environ, SLURM_CONF=str(conf)), conf.parent / "run")
            got = measure(plurm, args, tag + "p")
            for what, ms in plurm.cpu_ms.items():
                figures[f"plurm_{what}_daemon_cpu_ms_per_job"] = ms
        finally:
            if not args.plurm_conf:
                subprocess.run([str(_plurm_bin() / "plurm"), "cluster", "down", "--dir", str(Path(tmp) / "c")],
                               capture_output=True, timeout=120, check=False)
    figures["plurm_pipeline_jobs_per_s"] = got["pipeline"]
    figures["plurm_array_tasks_per_s"] = got["array"]
    for what, key in (("pipeline", "pipeline_jobs_per_s"), ("array", "array_tasks_per_s")):
        ours = figures[f"plurm_{key}"] or 0.0
        theirs = figures.get(f"slurm_{key}")
        figures[f"{what}_ratio_plurm_over_slurm"] = ours / theirs if theirs else None
        figures[f"{what}_pct_of_spawn_limit"] = 100.0 * ours / limit

    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        for key, value in figures.items():
            unit = "x" if "ratio" in key else "%" if "pct" in key else "ms" if key.endswith("_ms_per_job") else "/s"
            print(f"{key} {'-' if value is None else f'{value:.2f}'} {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
