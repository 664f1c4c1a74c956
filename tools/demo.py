"""`plurm demo`: a local cluster, a few real jobs, and what Slurm's commands show of them.

It drives the same commands a user types (sbatch, squeue, srun, sacct), as
subprocesses, against the embedded local cluster.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

SCRIPTS = {
    "hello.sh": """#!/bin/bash
#SBATCH --job-name=hello
#SBATCH --ntasks=1
#SBATCH --time=5
echo "Hello from $SLURMD_NODENAME, job $SLURM_JOB_ID in partition $SLURM_JOB_PARTITION"
""",
    "steps.sh": """#!/bin/bash
#SBATCH --job-name=steps
#SBATCH --nodes=2
#SBATCH --ntasks=4
#SBATCH --output=steps-%j.out
echo "allocation: $SLURM_JOB_NODELIST ($SLURM_TASKS_PER_NODE tasks per node)"
srun -l bash -c 'echo "rank $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME"' | sort
""",
    "array.sh": """#!/bin/bash
#SBATCH --job-name=sweep
#SBATCH --array=1-4%2
#SBATCH --output=sweep-%A_%a.out
echo "task $SLURM_ARRAY_TASK_ID of array $SLURM_ARRAY_JOB_ID: $(( SLURM_ARRAY_TASK_ID * SLURM_ARRAY_TASK_ID ))"
sleep 1
""",
    "fails.sh": """#!/bin/bash
#SBATCH --job-name=fails
echo "this job exits with status 3" >&2
exit 3
""",
}


def _command(name: str) -> list[str]:
    path = Path(sys.executable).parent / name
    return [str(path)] if path.exists() else [sys.executable, "-m", f"plurm.tools.{name}"]


def _show(title: str, args: list[str], env: dict[str, str], cwd: Path) -> str:
    print(f"\n$ {' '.join(args)}")
    proc = subprocess.run(_command(args[0]) + args[1:], env=env, cwd=cwd, capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    return proc.stdout


def run_demo(directory: str | None, keep: bool = True) -> int:
    from plurm.tools.localcluster import ClusterShape, LocalCluster

    cluster = LocalCluster(directory)
    print(f"Starting a local cluster in {cluster.dir} ...")
    try:
        cluster.up(ClusterShape(nodes=4, cpus_per_node=4, memory_per_node=4000))
    except RuntimeError as exc:
        print(f"plurm demo: error: {exc}", file=sys.stderr)
        return 1
    env = dict(os.environ, SLURM_CONF=cluster.conf_path)
    env.pop("SLURM_JOB_ID", None)
    work = Path(cluster.dir) / "demo"
    work.mkdir(exist_ok=True)
    for name, text in SCRIPTS.items():
        (work / name).write_text(text)
    print(f"export SLURM_CONF={cluster.conf_path}")
    _show("nodes", ["sinfo"], env, work)
    ids = []
    for name in SCRIPTS:
        out = _show("submit", ["sbatch", name], env, work)
        ids.append(out.split()[-1])
    _show("queue", ["squeue"], env, work)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        proc = subprocess.run(_command("squeue") + ["-h", "-t", "PD,R,CG,S", "-j", ",".join(ids)], env=env, capture_output=True,
                              text=True)
        if not proc.stdout.strip():
            break
        time.sleep(0.5)
    _show("srun", ["srun", "-N2", "-n4", "-l", "hostname"], env, work)
    print("\nJob outputs:")
    for path in sorted(work.glob("*.out")):
        print(f"--- {path.name}")
        sys.stdout.write(path.read_text())
    _show("accounting", ["sacct", "-j", ",".join(ids)], env, work)
    if keep:
        print(f"\nThe cluster keeps running: export SLURM_CONF={cluster.conf_path}\n"
              f"Stop it with: plurm cluster down" + (f" --dir {directory}" if directory else ""))
    else:
        cluster.down()
    return 0
