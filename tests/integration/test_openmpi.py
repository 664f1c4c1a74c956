"""srun --mpi=pmix: Open MPI programs wire up across the nodes of a real local cluster (issue 14 item 6).

plurmstepd serves PMIx through the host's libpmix (Debian's libpmix2, the library Debian's Open MPI
4.1 links against: nodeagent/pmix_server.py).  The fixture installs openmpi-bin, libopenmpi-dev
and libpmix2 when root and builds the program once per module with mpicc.openmpi; without them
the tests are skipped and say why.  Open MPI stays on loopback TCP (no shared memory between the
"nodes" of one host) and is allowed to run as root, as CI runs.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster

REFERENCE = Path(__file__).parents[1] / "nodeagent" / "reference" / "mpi"
ANCHOR = Path(__file__).parent / "reference" / "openmpi"  # 22.05.8 with Open MPI (its README.md)

MPI_PROGRAM = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, sum = 0, mine, len;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    printf("hello from rank %d of %d\n", rank, size);
    if (argc > 2 && rank == atoi(argv[2])) {
        if (strcmp(argv[1], "abort") == 0)
            MPI_Abort(MPI_COMM_WORLD, 7);
        if (strcmp(argv[1], "exit") == 0)
            _exit(3);  /* ends without MPI_Finalize: its peers must not wait for it */
    }
    mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d sum %d\n", rank, size, sum);
    MPI_Finalize();
    return 0;
}
"""

# A bare PMIx client (libpmix's own API, no MPI): a put, a fence collecting the data, a get of the
# next rank's put; with an argument, ranks 0 and 1 then fence alone (part of the step).
PMIX_CLIENT = r"""#include <pmix.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    pmix_proc_t me, peer, pair[2];
    pmix_value_t value, *got = NULL;
    pmix_info_t info;
    bool collect = true;
    char text[64];
    int rc, size = 0;
    if ((rc = PMIx_Init(&me, NULL, 0)) != PMIX_SUCCESS) {
        printf("init failed %d\n", rc);
        return 1;
    }
    PMIX_PROC_LOAD(&peer, me.nspace, PMIX_RANK_WILDCARD);
    if (PMIx_Get(&peer, PMIX_JOB_SIZE, NULL, 0, &got) == PMIX_SUCCESS) {
        size = (int) got->data.uint32;
        PMIX_VALUE_RELEASE(got);
    }
    snprintf(text, sizeof(text), "from-%u", me.rank);
    PMIX_VALUE_LOAD(&value, text, PMIX_STRING);
    PMIx_Put(PMIX_GLOBAL, "plurm.test", &value);
    PMIx_Commit();
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    rc = PMIx_Fence(NULL, 0, &info, 1);
    PMIX_PROC_LOAD(&peer, me.nspace, (me.rank + 1) % size);
    got = NULL;
    if (rc == PMIX_SUCCESS && PMIx_Get(&peer, "plurm.test", NULL, 0, &got) == PMIX_SUCCESS)
        printf("rank %u of %d: fence %d, rank %u put %s\n", me.rank, size, rc, peer.rank, got->data.string);
    else
        printf("rank %u of %d: fence %d, no value\n", me.rank, size, rc);
    if (argc > 1 && me.rank < 2) {  /* a fence over ranks 0 and 1 only */
        PMIX_PROC_LOAD(&pair[0], me.nspace, 0);
        PMIX_PROC_LOAD(&pair[1], me.nspace, 1);
        rc = PMIx_Fence(pair, 2, NULL, 0);
        printf("rank %u: partial fence %s\n", me.rank, rc == PMIX_SUCCESS ? "ok" : "refused");
    }
    fflush(stdout);
    PMIx_Finalize(NULL, 0);
    return 0;
}
"""

# Open MPI as root, on loopback TCP only.
OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,tcp",
            "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo"}


def _have_pmix() -> bool:
    from plurm.nodeagent.pmix_lib import library_path

    return library_path() is not None


@pytest.fixture(scope="module")
def ompi_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The MPI program, built once with Debian's Open MPI (mpicc.openmpi), and libpmix2 there."""
    mpicc = shutil.which("mpicc.openmpi")
    if (mpicc is None or not _have_pmix()) and os.geteuid() == 0:
        from debpkg import apt_install

        for package in ("openmpi-bin", "libopenmpi-dev", "libpmix2"):
            error = apt_install(package)
            if error:
                pytest.skip(f"{package} could not be installed: {error}")
        mpicc = shutil.which("mpicc.openmpi")
    if mpicc is None or not _have_pmix():
        pytest.skip("needs Debian's Open MPI and PMIx (openmpi-bin, libopenmpi-dev, libpmix2): not installed, "
                    "and not root")
    build = tmp_path_factory.mktemp("openmpi")
    (build / "mpi.c").write_text(MPI_PROGRAM)
    subprocess.run([mpicc, "-O1", "-o", str(build / "mpi"), str(build / "mpi.c")], check=True,
                   capture_output=True, timeout=120)
    return build / "mpi"


@pytest.fixture(scope="module")
def pmix_client(ompi_program: Path) -> Path:
    """PMIX_CLIENT, built against the host's libpmix (libpmix-dev's headers: libopenmpi-dev brings them)."""
    from plurm.nodeagent.pmix_lib import library_path

    library = Path(library_path() or "")
    include = library.parent.parent / "include"
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None or not (include / "pmix.h").exists():
        pytest.skip(f"needs a C compiler and PMIx's headers ({include}/pmix.h, libpmix-dev)")
    (ompi_program.parent / "client.c").write_text(PMIX_CLIENT)
    out = ompi_program.parent / "client"
    subprocess.run([compiler, "-O1", f"-I{include}", "-o", str(out), str(ompi_program.parent / "client.c"),
                    str(library), f"-Wl,-rpath,{library.parent}"], check=True, capture_output=True, timeout=120)
    return out


def _srun(cluster: Cluster, workdir: Path, *args: str, env: dict[str, str] | None = None,
          timeout: float = 90) -> subprocess.CompletedProcess:
    return cluster.run("srun", *args, cwd=workdir, env=dict(OMPI_ENV, **(env or {})), timeout=timeout)


def test_the_ctypes_layouts_are_pmix_4s(ompi_program: Path) -> None:
    """The structures plurm hands the library measure what pmix_common.h says (x86_64, PMIx 4)."""
    from plurm.nodeagent import pmix_lib

    for name, (struct, size) in pmix_lib.SIZES.items():
        assert ctypes.sizeof(struct) == size, name
    assert ctypes.sizeof(pmix_lib.PmixServerModule) == pmix_lib.MODULE_SLOTS * ctypes.sizeof(ctypes.c_void_p)
    assert pmix_lib.load().PMIx_Get_version().startswith(b"OpenPMIx 4.")


def test_mpi_list_shows_pmix_where_libpmix_is(cluster: Cluster, workdir: Path, ompi_program: Path) -> None:
    proc = _srun(cluster, workdir, "--mpi=list")
    reference = (REFERENCE / "mpi_list.stdout").read_text().splitlines()
    lines = proc.stdout.splitlines()
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert lines == [reference[0], "\tpmix", "\tnone", "\tpmi2", reference[-1]]
    assert [line for line in reference if line in lines] == lines  # 22.05's lines, in 22.05's order
    # Where the host has no libpmix, pmix is not listed and is refused as 22.05 refuses a missing plugin.
    bare = _srun(cluster, workdir, "--mpi=list", env={"PLURM_LIBPMIX": ""})
    assert bare.stdout.splitlines() == [reference[0], "\tnone", "\tpmi2"]
    refused = _srun(cluster, workdir, "--mpi=pmix", "true", env={"PLURM_LIBPMIX": ""})
    assert refused.returncode == 1
    assert refused.stderr == (REFERENCE / "mpi_bogus.stderr").read_text().replace("bogus", "pmix")


def test_hello_and_allreduce_on_two_nodes(cluster: Cluster, workdir: Path, ompi_program: Path) -> None:
    proc = _srun(cluster, workdir, "-N2", "--ntasks-per-node=2", "--mpi=pmix", "-l", str(ompi_program))
    assert proc.returncode == 0, proc.stderr
    lines = sorted(proc.stdout.splitlines())
    # 22.05's run of two tasks (one node: see reference/openmpi/README.md), the same lines for four.
    shape = sorted(line.replace(" of 2", " of 4").replace(" sum 3", " sum 10")
                   for line in (ANCHOR / "hello.out").read_text().splitlines())
    assert shape == [line for line in lines if line[0] in "01"]
    assert [line for line in lines if "hello" in line] == [f"{r}: hello from rank {r} of 4" for r in range(4)]
    assert [line for line in lines if "sum" in line] == [f"{r}: rank {r} of 4 sum 10" for r in range(4)]
    assert proc.stderr == (ANCHOR / "hello.err").read_text()
    # Ranks dealt out in turn (-m cyclic): each node's server knows where every rank runs.  With
    # shared memory between a node's ranks (btl/vader): two nodes of one host keep their segments apart.
    proc = _srun(cluster, workdir, "-N2", "--ntasks-per-node=2", "-m", "cyclic", "--mpi=pmix", "-l", "bash", "-c",
                 f"echo $SLURMD_NODENAME; exec {ompi_program}", env={"OMPI_MCA_btl": "self,vader,tcp"})
    assert proc.returncode == 0, proc.stderr
    lines = sorted(proc.stdout.splitlines())
    assert [line for line in lines if "sum" in line] == [f"{r}: rank {r} of 4 sum 10" for r in range(4)]
    nodes = [line.split(": ")[1] for line in lines if "rank" not in line]
    assert nodes[0] == nodes[2] != nodes[1] == nodes[3]
    # Output to files: plurmstepd reads no pipes, and relays the fences until its tasks are done.
    proc = _srun(cluster, workdir, "-N2", "--ntasks-per-node=2", "--mpi=pmix", "-o", "ompi.%t", str(ompi_program))
    assert proc.returncode == 0, proc.stderr
    for rank in range(4):
        assert (workdir / f"ompi.{rank}").read_text() == f"hello from rank {rank} of 4\nrank {rank} of 4 sum 10\n"
    cluster.wait_idle()


def test_process_mapping_read_back() -> None:
    """srun's PMI_process_mapping (its -m layout) is what each node's PMIx server places ranks by."""
    from plurm.nodeagent.pmi_wire import mapping_nodes, process_mapping

    for layout in ([0, 0, 1, 1], [0, 1, 0, 1], [0, 0, 0, 1], [1, 0], [0, 1, 2, 2, 1, 0]):
        assert mapping_nodes(process_mapping(layout), len(layout)) == layout
    for bad, ntasks in (("(vector,(0,2,2))", 3), ("(vector,(0,2,2)", 4), ("junk", 1), ("(vector,(0,9999999999,1))", 2),
                        ("(vector,(0,2,2)x)", 4), ("", 0)):
        assert mapping_nodes(bad, ntasks) is None


def test_task_environment_is_22_05s(cluster: Cluster, workdir: Path, ompi_program: Path) -> None:
    script = workdir / "env.sh"
    script.write_text('#!/bin/sh\nenv | grep -E "^(PMI|SLURM_MPI)" | sort\n')
    script.chmod(0o755)
    proc = _srun(cluster, workdir, "-N2", "--ntasks-per-node=1", "--mpi=pmix", "-l", str(script))
    assert proc.returncode == 0, proc.stderr
    def names(text: str) -> set[str]:  # rank 0's variable names
        return {line[3:].split("=")[0] for line in text.splitlines() if line.startswith("0: ")}

    assert names(proc.stdout) == names((ANCHOR / "env.out").read_text())
    values = dict(line.split("=", 1) for line in proc.stdout.splitlines())
    job_step = values["0: PMIX_NAMESPACE"].removeprefix("slurm.pmix.")
    assert values["0: PMIX_NAMESPACE"] == values["1: PMIX_NAMESPACE"] == f"slurm.pmix.{job_step}"
    assert (values["0: PMIX_RANK"], values["1: PMIX_RANK"]) == ("0", "1")
    assert values["0: SLURM_MPI_TYPE"] == "pmix"
    assert values["0: PMIX_SERVER_TMPDIR"] != values["1: PMIX_SERVER_TMPDIR"]  # (a server per node)
    # --mpi=pmix_v4 is the same plugin; the task is told the name it was given, as 22.05 does.
    proc = _srun(cluster, workdir, "--mpi=pmix_v4", "-n1", "sh", "-c", "echo $SLURM_MPI_TYPE")
    assert (proc.returncode, proc.stdout) == (0, (ANCHOR / "v4.out").read_text()), proc.stderr
    cluster.wait_idle()


def test_a_pmix_client_puts_fences_and_gets_across_three_nodes(cluster: Cluster, workdir: Path,
                                                               pmix_client: Path) -> None:
    proc = _srun(cluster, workdir, "-N3", "--ntasks-per-node=1", "--mpi=pmix", "-l", str(pmix_client), "partial")
    assert proc.returncode == 0, proc.stderr
    lines = sorted(proc.stdout.splitlines())
    assert lines == ["0: rank 0 of 3: fence 0, rank 1 put from-1", "0: rank 0: partial fence refused",
                     "1: rank 1 of 3: fence 0, rank 2 put from-2", "1: rank 1: partial fence refused",
                     "2: rank 2 of 3: fence 0, rank 0 put from-0"]
    cluster.wait_idle()


def _srun_lines(stderr: str) -> list[str]:
    """srun's and slurmstepd's lines (Open MPI's own words vary with timing), the clock masked."""
    lines = [line for line in stderr.splitlines() if line.startswith("srun:") or "slurmstepd-" in line]
    return [re.sub(r"STEP \d+\.\d+ ON (\w+) CANCELLED AT \S+", r"STEP J.S ON \1 CANCELLED AT T", line)
            for line in lines]


def test_mpi_abort_ends_the_step_as_22_05(cluster: Cluster, workdir: Path, ompi_program: Path) -> None:
    proc = _srun(cluster, workdir, "-N1", "-n2", "-l", "--mpi=pmix", str(ompi_program), "abort", "1")
    assert proc.returncode == int((ANCHOR / "abort.rc").read_text())
    assert proc.stdout == (ANCHOR / "abort.out").read_text()
    assert sorted(_srun_lines(proc.stderr)) == sorted(_srun_lines((ANCHOR / "abort.err").read_text()))
    assert "1: MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD" in proc.stderr
    cluster.wait_idle()


def test_a_task_ending_without_finalize_ends_the_step(cluster: Cluster, workdir: Path, ompi_program: Path) -> None:
    """Rank 2 (on the second node) leaves without MPI_Finalize: the step ends instead of hanging
    in the next fence.  22.05 says so through its PMIx error handler (reference/openmpi/exit.err)."""
    proc = _srun(cluster, workdir, "-N2", "--ntasks-per-node=2", "-l", "--mpi=pmix", str(ompi_program), "exit", "2")
    assert proc.returncode != 0
    assert "sum" not in proc.stdout
    lines = _srun_lines(proc.stderr)
    assert "2: slurmstepd-n2: error: mpi/pmix: task 2 ended without PMIx_Finalize: ending the step" in lines
    reference = _srun_lines((ANCHOR / "exit.err").read_text())
    for line in ("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
                 "0: slurmstepd-n1: error: *** STEP J.S ON n1 CANCELLED AT T ***", "srun: error: n1: task 0: Killed"):
        assert line in reference and line in lines
    assert "srun: error: n2: task 2: Exited with exit code 3" in lines
    assert {"srun: error: n1: task 1: Killed", "srun: error: n2: task 3: Killed"} <= set(lines)
    cluster.wait_idle()


# One node's PMIx server in a process of its own (root), its tasks run as another user: what
# plurmstepd does for a job that is not root's, without a multi-user cluster (which needs munge).
SERVER_AS_OWNER = r"""
import json, os, select, subprocess, sys, time
from plurm.nodeagent import pmix_server
program, uid, gid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
server = pmix_server.NodeServer(job_id=9, step_id=0, node_id=0, nodelist=["n1"], ntasks=2, node_of=[0, 0],
                                uid=uid, gid=gid)
server.start()
procs = []
for rank in range(2):
    env = dict(server.task_env(rank), PATH="/usr/bin:/bin", SLURM_JOB_ID="9", SLURM_JOBID="9", SLURM_STEP_ID="0",
               SLURM_STEPID="0", SLURM_NODELIST="n1", SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank),
               SLURM_NTASKS="2", SLURM_NODEID="0", OMPI_MCA_btl="self,tcp", OMPI_MCA_btl_tcp_if_include="lo")
    procs.append(subprocess.Popen([program], env=env, user=uid, group=gid, extra_groups=[], cwd="/tmp",
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
deadline = time.monotonic() + 60
while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
    select.select([server.wake_r], [], [], 0.2)
    for event in server.take_events():
        if isinstance(event, pmix_server.Fence):  # (one node: every rank's data is this node's)
            server.fence_done(event.seq, [event.data])
outs = []
for p in procs:
    if p.poll() is None:
        p.kill()
    outs.append(p.communicate()[0])
tmpdir_owner = os.stat(server.tmpdir).st_uid
server.close()
print(json.dumps({"codes": [p.returncode for p in procs], "outs": outs, "owner": tmpdir_owner,
                  "left": os.path.exists(server.tmpdir), "connected": sorted(server.connected),
                  "finalized": sorted(server.finalized)}))
"""


def test_a_users_tasks_reach_a_server_run_by_root(ompi_program: Path, test_users, tmp_path: Path) -> None:
    import json
    import sys
    import tempfile

    user = test_users["plurmta"]
    reachable = Path(tempfile.mkdtemp(prefix="plurm-ompi-"))
    try:
        reachable.chmod(0o755)
        program = reachable / "mpi"
        shutil.copy(ompi_program, program)
        done = subprocess.run([sys.executable, "-c", SERVER_AS_OWNER, str(program), str(user.uid), str(user.gid)],
                              capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(reachable, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["codes"] == [0, 0], seen
    for rank in range(2):  # (and no "PMIX ERROR": the data store's files are the owner's)
        assert seen["outs"][rank] == f"hello from rank {rank} of 2\nrank {rank} of 2 sum 3\n"
    assert (seen["owner"], seen["left"]) == (user.uid, False)
    assert seen["connected"] == seen["finalized"] == [0, 1]


@pytest.fixture
def cluster_without_pmix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """Two nodes whose plurmd finds no PMIx library (srun, on its own host, has one)."""
    from plurm.nodeagent.pmix_lib import library_path
    from plurmtest import start_cluster

    real = library_path() or ""
    monkeypatch.setenv("PLURM_LIBPMIX", "")  # (the daemons' environment)
    c = start_cluster(tmp_path, nodes=2, cpus=2, memory=2000)
    c.env["PLURM_LIBPMIX"] = real  # (srun's)
    try:
        yield c
    finally:
        c.down()


def test_a_node_without_pmix_fails_the_launch_never_hangs(cluster_without_pmix: Cluster, workdir: Path,
                                                          ompi_program: Path) -> None:
    proc = _srun(cluster_without_pmix, workdir, "-N2", "--ntasks-per-node=1", "-l", "--mpi=pmix", str(ompi_program))
    assert proc.returncode != 0
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert "0: slurmstepd-n1: error: mpi/pmix: no PMIx library (libpmix.so.2) on this host" in lines
    assert "1: slurmstepd-n2: error: mpi/pmix: no PMIx library (libpmix.so.2) on this host" in lines
    for rank in range(2):  # 22.05's words for a task whose node could not set up mpi/pmix
        assert f"srun: error: task {rank} launch failed: Unspecified error" in lines
