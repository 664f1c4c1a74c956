"""`plurm cluster up` on a cluster that exists: a shape it cannot apply is refused (exit 1,
what to do instead), not reported as a success that changed nothing; a slurm.conf whose
SlurmctldPort does not parse is a one-line error, not a traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from plurmtest import Cluster, command


@pytest.mark.parametrize("args,said", [
    (["--gres", "gpu:2"], "--gres gpu:2 (the cluster has none)"),
    (["--nodes", "3"], "--nodes 3 (the cluster has 2)"),
    (["--cpus-per-node", "8", "--memory-per-node", "2000"], "--cpus-per-node 8 (the cluster has 2)"),
    (["--memory-per-node", "1000"], "--memory-per-node 1000 (the cluster has 2000)"),
])
def test_changed_shape_is_refused(fresh_cluster: Cluster, args: list[str], said: str) -> None:
    conf = fresh_cluster.conf.read_bytes()
    proc = fresh_cluster.run("plurm", "cluster", "up", "--dir", str(fresh_cluster.dir), *args)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (f"plurm: error: {fresh_cluster.conf} exists and is kept as it is: {said}. "
                           f"To change the shape, run `plurm cluster down --dir {fresh_cluster.dir}`, then remove "
                           f"{fresh_cluster.conf} (or edit its NodeName line) and run `plurm cluster up` again\n")
    assert fresh_cluster.conf.read_bytes() == conf
    nodes = fresh_cluster.run("sinfo", "-h", "-N", "-o", "%N %c %m %G", check=True).stdout
    assert nodes == "n1 2 2000 (null)\nn2 2 2000 (null)\n"  # nothing changed


def test_the_same_shape_is_accepted(fresh_cluster: Cluster) -> None:
    proc = fresh_cluster.up("--nodes", "2", "--cpus-per-node", "2", "--memory-per-node", "2000", "--gres", "")
    assert proc.stderr == "plurm: everything was already running\n"
    assert proc.stdout == f"export SLURM_CONF={fresh_cluster.conf}\n"


@pytest.mark.parametrize("port", ["abc", "7000-x", "7005-7001", "70000"])
def test_bad_slurmctld_port_is_one_line(tmp_path: Path, port: str) -> None:
    directory = tmp_path / "cluster"
    directory.mkdir()
    (directory / "slurm.conf").write_text(
        f"ClusterName=bad\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={port}\nSlurmdPort=7100\n"
        "NodeName=n1 NodeAddr=127.0.0.1 Port=7101 CPUs=1 RealMemory=100\n"
        "PartitionName=debug Nodes=ALL Default=YES\n")
    env = dict(os.environ, SLURM_CONF=str(directory / "slurm.conf"))
    proc = subprocess.run(command("plurm") + ["cluster", "up", "--dir", str(directory), "--timeout", "5"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"plurm: error: Invalid SlurmctldPort {port}\n")
    assert not list((directory / "run").glob("*.pid"))  # nothing was started
    # With a shape to check, the daemons' parser reads the file first: its one line.
    proc = subprocess.run(command("plurm") + ["cluster", "up", "--dir", str(directory), "--nodes", "1"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 1 and proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("plurm: error: ") and "SlurmctldPort" in proc.stderr


@pytest.mark.parametrize("args", [["squeue"], ["sinfo"], ["sbatch", "--wrap", "true"], ["sstat", "-j", "1"],
                                  ["scontrol", "show", "job"], ["sacct"], ["srun", "true"]])
def test_bad_slurmctld_port_in_the_commands(tmp_path: Path, args: list[str]) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=bad\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=abc\n"
                    "NodeName=n1 NodeAddr=127.0.0.1 CPUs=1 RealMemory=100\nPartitionName=debug Nodes=ALL\n")
    proc = subprocess.run(command(args[0]) + args[1:], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env=dict(os.environ, SLURM_CONF=str(conf)))
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and proc.stderr.endswith("Invalid SlurmctldPort abc\n"), proc.stderr
