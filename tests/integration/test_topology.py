"""Sockets, cores and threads on real daemons: sbatch -> plurmctld -> plurmd -> the job's own
environment and `scontrol show job`, against what Slurm 22.05.8 gave on the anchor for the
same options (tests/corescheduler/reference/topology/: its nodes are the local cluster's,
1 socket x 4 cores x 1 thread; the core-level cases are in tests/corescheduler/test_topology.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from plurmtest import Cluster

REFERENCE = Path(__file__).resolve().parents[1] / "corescheduler" / "reference" / "topology"
ENV = ("SLURM_JOB_CPUS_PER_NODE", "SLURM_CPUS_ON_NODE", "SLURM_NTASKS", "SLURM_TASKS_PER_NODE",
       "SLURM_NTASKS_PER_SOCKET", "SLURM_NTASKS_PER_CORE", "SLURM_JOB_NUM_NODES")


def _anchor(label: str) -> str:
    """The block the anchor printed for ``label``."""
    text = (REFERENCE / "anchor_sbatch.txt").read_text() + (REFERENCE / "anchor_sbatch_full.txt").read_text()
    return text.split(f"=== {label}: ", 1)[1].split("\n=== ", 1)[0]


def _field(text: str, key: str) -> str | None:
    m = re.search(rf"(?<![A-Za-z]){re.escape(key)}=(\S*)", text)
    return m.group(1) if m else None


@pytest.mark.parametrize("label,options", [
    ("ntps1", ["-n2", "--ntasks-per-socket=1"]),
    ("mincpus3_n2", ["-n2", "--mincpus=3"]),
    ("ntpc1", ["-n5", "--ntasks-per-core=1"]),
])
def test_the_job_gets_what_the_anchor_gave(cluster: Cluster, workdir: Path, label: str,
                                           options: list[str]) -> None:
    theirs = _anchor(label)
    script = "env | grep -E '^SLURM_' > env.txt\nsleep 2\n"  # running while scontrol looks
    job_id = cluster.sbatch(*options, "-o", "out.txt", "--wrap", script, cwd=workdir)
    cluster.wait_state(job_id, "RUNNING")
    shown = cluster.run("scontrol", "show", "job", str(job_id), check=True).stdout
    for key in ("NumNodes", "NumCPUs", "NumTasks", "ReqB:S:C:T", "Socks/Node", "NtasksPerN:B:S:C",
                "MinCPUsNode"):
        assert _field(shown, key) == _field(theirs, key), key
    cluster.wait_state(job_id, "COMPLETED")
    env = dict(line.split("=", 1) for line in (workdir / "env.txt").read_text().splitlines() if "=" in line)
    for name in ENV:
        assert env.get(name) == _field(theirs, name), name


def test_a_layout_no_node_has_is_refused_as_slurm_refuses_it(cluster: Cluster, workdir: Path) -> None:
    for options, label in ((["-n1", "--sockets-per-node=2"], "spn2"), (["-n1", "--mincpus=5"], "mincpus5")):
        proc = cluster.run("sbatch", *options, "--wrap", "true", cwd=workdir)
        theirs = _anchor(label).split("rc=1 ", 1)[1].strip()
        assert (proc.returncode, proc.stderr.strip()) == (1, theirs)


def test_core_spec_is_ignored_with_slurms_words(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("sbatch", "-n1", "-S1", "--wrap", "true", cwd=workdir, check=True)
    assert proc.stderr.splitlines() == [
        "sbatch: error: Ignoring -S since it's not allowed by configuration (AllowSpecResourcesUsage = No)"]
    job_id = int(proc.stdout.split()[-1])
    assert cluster.wait_state(job_id, "COMPLETED")["cpus"] == [1]


def test_srun_ignores_thread_spec_with_slurms_words(cluster: Cluster, workdir: Path) -> None:
    proc = cluster.run("srun", "--thread-spec=1", "-n1", "true", cwd=workdir)
    assert (proc.returncode, proc.stderr.splitlines()[:1]) == (0, [
        "srun: error: Ignoring --thread-spec since it's not allowed by configuration (AllowSpecResourcesUsage = No)"])
