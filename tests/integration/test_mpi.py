"""srun --mpi: PMI for MPI programs across the nodes of a real local cluster (issue 14 item 6).

The texts are 22.05's, captured on the anchor (tests/nodeagent/reference/mpi/README.md).  The
MPICH tests build their programs with Debian's mpicc (libmpich-dev, installed by the fixture
when root) once per session; without it they are skipped and say why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from plurmtest import Cluster

REFERENCE = Path(__file__).parents[1] / "nodeagent" / "reference" / "mpi"
CLIENT = Path(__file__).parents[1] / "pmiclient.py"

MPI_HELLO = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, sum = 0, mine;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && rank == atoi(argv[1]))
        MPI_Abort(MPI_COMM_WORLD, 7);
    mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d sum %d\n", rank, size, sum);
    MPI_Finalize();
    return 0;
}
"""


def _srun(cluster: Cluster, workdir: Path, *args: str, env: dict[str, str] | None = None,
          timeout: float = 60) -> subprocess.CompletedProcess:
    return cluster.run("srun", *args, cwd=workdir, env=env, timeout=timeout)


@pytest.mark.parametrize("argv, env, name", [
    (["--mpi=list"], {}, "mpi_list"),
    (["--mpi=bogus", "true"], {}, "mpi_bogus"),
    (["true"], {"SLURM_MPI_TYPE": "bogus"}, "mpi_env_bogus"),
])
def test_mpi_option_texts_are_22_05s(cluster: Cluster, workdir: Path, argv: list[str], env: dict[str, str],
                                     name: str) -> None:
    # (a host without libpmix: tests/integration/test_openmpi.py has the list where it is)
    proc = _srun(cluster, workdir, *argv, env=dict(env, PLURM_LIBPMIX=""))
    if name == "mpi_list":
        # plurm has none and pmi2 (and pmix where libpmix is); the anchor also lists cray_shasta.
        reference = (REFERENCE / "mpi_list.stdout").read_text().splitlines()
        assert proc.stdout.splitlines() == [reference[0], "\tnone", "\tpmi2"]
        assert set(proc.stdout.splitlines()) <= set(reference)
        assert (proc.returncode, proc.stderr) == (0, "")
    else:
        assert proc.stderr == (REFERENCE / f"{name}.stderr").read_text()
        assert (proc.returncode, proc.stdout) == (1, "")


@pytest.mark.parametrize("plugin", ["pmix", "cray_shasta"])
def test_plugins_plurm_lacks_are_refused_as_22_05_refuses_a_missing_one(cluster: Cluster, workdir: Path,
                                                                        plugin: str) -> None:
    proc = _srun(cluster, workdir, f"--mpi={plugin}", "-n1", "true", env={"PLURM_LIBPMIX": ""})  # (no libpmix)
    assert proc.returncode == 1
    assert proc.stderr == (REFERENCE / "mpi_bogus.stderr").read_text().replace("bogus", plugin)


def test_pmi2_and_pmi1_clients_fence_across_two_nodes(cluster: Cluster, workdir: Path) -> None:
    proc = _srun(cluster, workdir, "-N2", "--ntasks-per-node=2", "--mpi=pmi2", sys.executable, str(CLIENT))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for rank in range(4):
        assert f"rank {rank}: val0 val1 val2 val3" in lines
        assert f"rank {rank}: cmd=info-getjobattr-response;rc=0;found=TRUE;value=(vector,(0,2,2));" in lines
    # PMI-1 as MPICH speaks it, chosen through SLURM_MPI_TYPE; two fences in a row.
    proc = _srun(cluster, workdir, "-N2", "--ntasks-per-node=2", sys.executable, str(CLIENT), "--v1",
                 env={"SLURM_MPI_TYPE": "pmi2"})
    assert proc.returncode == 0, proc.stderr
    for rank in range(4):
        assert f"rank {rank}: round 0: v0-0 v0-1 v0-2 v0-3" in proc.stdout
        assert f"rank {rank}: round 1: v1-0 v1-1 v1-2 v1-3" in proc.stdout
    # Output to files: plurmstepd reads no pipes, and serves PMI until the tasks are done.
    proc = _srun(cluster, workdir, "-N2", "--ntasks-per-node=2", "--mpi=pmi2", "-o", "pmi.%t", sys.executable,
                 str(CLIENT))
    assert proc.returncode == 0, proc.stderr
    for rank in range(4):
        assert f"rank {rank}: val0 val1 val2 val3\n" in (workdir / f"pmi.{rank}").read_text()
    cluster.wait_idle()


def test_task_environment_for_torch_distributed(cluster: Cluster, workdir: Path) -> None:
    """What torch.distributed's SLURM launch reads (MASTER_ADDR is the user's), 2 nodes x 2."""
    script = ("echo $SLURM_PROCID $SLURM_NTASKS $SLURM_LOCALID $SLURM_NODEID $SLURM_STEP_NODELIST "
              "$PMI_RANK $PMI_SIZE $PMI_JOBID $SLURM_MPI_TYPE ${PMI_FD:+fd} $SLURMD_NODENAME; "
              "if [ $SLURM_PROCID = 0 ]; then scontrol show hostnames $SLURM_JOB_NODELIST >&2; "
              "env | grep -oE '^(PMI[A-Z_]*|SLURM_MPI_TYPE)=' | sort | tr '\\n' ' ' >&2; fi")
    proc = _srun(cluster, workdir, "-N2", "--ntasks-per-node=2", "--mpi=pmi2", "-l", "bash", "-c", script)
    assert proc.returncode == 0, proc.stderr
    rows = sorted(line.split(": ", 1)[1].split() for line in proc.stdout.splitlines())
    nodes = sorted({row[-1] for row in rows})
    *hosts, names = [line.split(": ", 1)[1] for line in proc.stderr.splitlines()]
    assert hosts == nodes  # (rank 0's scontrol)
    reference = (REFERENCE / "pmi2_env.txt").read_text().splitlines()
    assert names.split() == sorted({line.split(": ", 1)[1].split("=")[0] + "=" for line in reference
                                    if line.startswith("0: ") and ("PMI" in line or "SLURM_MPI" in line)})
    job_step = rows[0][7]
    assert [row[:7] + row[8:10] for row in rows] == [
        [str(r), "4", str(r % 2), str(r // 2), rows[0][4], str(r), "4", "pmi2", "fd"] for r in range(4)]
    assert [row[-1] for row in rows] == [nodes[0], nodes[0], nodes[1], nodes[1]]
    assert job_step.endswith(".0")
    # Without --mpi (MpiDefault=none) a task gets no PMI and no SLURM_MPI_TYPE, as in 22.05.
    plain = _srun(cluster, workdir, "-n1", "bash", "-c", "echo ${PMI_FD:-none} ${SLURM_MPI_TYPE:-unset}")
    assert plain.stdout == "none unset\n", plain.stderr
    # --mpi=none wins over SLURM_MPI_TYPE (the option over its variable, as for every srun option).
    plain = _srun(cluster, workdir, "-n1", "--mpi=none", "bash", "-c", "echo ${PMI_FD:-none}",
                  env={"SLURM_MPI_TYPE": "pmi2"})
    assert plain.stdout == "none\n", plain.stderr
    cluster.wait_idle()


def test_mpi_default_from_slurm_conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from plurm.tools import srun_mpi

    monkeypatch.setenv("PLURM_LIBPMIX", "")  # (a host without libpmix: pmix is then refused)
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\nmpidefault=pmi2\n")
    assert srun_mpi.chosen(None, str(conf)) == "pmi2"
    assert srun_mpi.chosen("none", str(conf)) == "none"
    conf.write_text("MpiDefault=pmix\n")
    assert srun_mpi.chosen(None, str(conf)) is None  # (refused on stderr, as for --mpi=pmix)
    assert srun_mpi.chosen(None, str(tmp_path / "absent.conf")) == "none"
    library = tmp_path / "libpmix.so.2"
    library.write_bytes(b"")  # (srun only looks for it: plurmstepd loads it)
    monkeypatch.setenv("PLURM_LIBPMIX", str(library))
    assert srun_mpi.chosen(None, str(conf)) == "pmix"


# ---------------------------------------------------------------------------- MPICH, for real

@pytest.fixture(scope="session")
def mpich_hello(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The MPI program, built once with Debian's MPICH (mpicc.mpich)."""
    mpicc = shutil.which("mpicc.mpich")
    if mpicc is None and os.geteuid() == 0:
        from debpkg import apt_install

        error = apt_install("libmpich-dev") or apt_install("mpich")
        if error:
            pytest.skip(f"MPICH could not be installed: {error}")
        mpicc = shutil.which("mpicc.mpich")
    if mpicc is None:
        pytest.skip("needs Debian's MPICH (mpicc.mpich from libmpich-dev): not installed, and not root")
    build = tmp_path_factory.mktemp("mpich")
    (build / "hello.c").write_text(MPI_HELLO)
    subprocess.run([mpicc, "-O1", "-o", str(build / "hello"), str(build / "hello.c")], check=True,
                   capture_output=True, timeout=120)
    return build / "hello"


def test_mpich_hello_and_allreduce_on_two_nodes(cluster: Cluster, workdir: Path, mpich_hello: Path) -> None:
    proc = _srun(cluster, workdir, "-N2", "--ntasks-per-node=2", "--mpi=pmi2", "-l", str(mpich_hello))
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.splitlines()) == [f"{r}: rank {r} of 4 sum 10" for r in range(4)]
    cluster.wait_idle()


@pytest.mark.slow
def test_mpich_abort_ends_the_step_as_22_05(cluster: Cluster, workdir: Path, mpich_hello: Path) -> None:
    proc = _srun(cluster, workdir, "-N2", "--ntasks-per-node=2", "--mpi=pmi2", str(mpich_hello), "1")
    assert proc.returncode == int((REFERENCE / "mpi_abort.rc").read_text())
    reference = (REFERENCE / "mpi_abort.stderr").read_text().splitlines()
    # The task's own words and srun's come in either order (two streams), then the rest in order.
    lines = proc.stderr.splitlines()
    first = sorted(lines[:2])
    assert first[0].startswith("Abort(7) on node 1 (rank 1 in comm 0)") and reference[0].startswith("1: Abort(7)")
    assert first[1] == reference[1] == "srun: Job step aborted: Waiting up to 32 seconds for job step to finish."
    assert "CANCELLED AT" in lines[2] and lines[2].startswith("slurmstepd-")
    assert all(line.endswith(": Killed") for line in lines[3:]) and len(lines) > 3
    cluster.wait_idle()


# ---------------------------------------------------------------------------- torch.distributed, for real

TORCH_ALLREDUCE = r"""
import os, torch, torch.distributed as dist
# torch.distributed's usual SLURM recipe: the ranks from srun's variables, the rendezvous the user's.
os.environ.setdefault("RANK", os.environ["SLURM_PROCID"])
os.environ.setdefault("WORLD_SIZE", os.environ["SLURM_NTASKS"])
os.environ.setdefault("LOCAL_RANK", os.environ["SLURM_LOCALID"])
dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(t)
print(f"rank {dist.get_rank()} of {dist.get_world_size()} local {os.environ['LOCAL_RANK']} sum {int(t.item())}")
dist.destroy_process_group()
"""


@pytest.fixture(scope="session")
def torch_python() -> str:
    """Debian's Python with Debian's CPU-only torch (python3-torch, installed when root)."""
    check = ["/usr/bin/python3", "-c", "import torch.distributed as d; assert d.is_gloo_available()"]

    def usable() -> bool:
        return os.path.exists(check[0]) and subprocess.run(check, capture_output=True, timeout=120).returncode == 0

    if not usable() and os.geteuid() == 0:
        from debpkg import apt_install

        error = apt_install("python3-torch")
        if error:
            pytest.skip(f"python3-torch could not be installed: {error}")
    if not usable():
        pytest.skip("needs Debian's python3-torch (CPU-only torch with gloo) for /usr/bin/python3")
    return check[0]


@pytest.mark.slow
def test_torch_gloo_all_reduce_on_two_nodes(cluster: Cluster, workdir: Path, torch_python: str) -> None:
    from plurmtest import free_ports

    (workdir / "allreduce.py").write_text(TORCH_ALLREDUCE)
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_ports(1)[0])}
    proc = _srun(cluster, workdir, "-N2", "--ntasks-per-node=2", torch_python, "allreduce.py", env=env,
                 timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.splitlines()) == [f"rank {r} of 4 local {r % 2} sum 10" for r in range(4)]
    cluster.wait_idle()
