"""Tasks placed on their node, real daemons side by side with Slurm 22.05.8's captures.

The cluster has the anchor's node shape (CPUs=4 Sockets=1 CoresPerSocket=4, Gres=gpu:4) on
this 2-CPU host, as the anchor's nodes do; each command is the one capture.sh ran on the
anchor (tests/integration/reference/binding/), and the tasks' output (ranks, SLURM_*_BIND*,
SLURM_DISTRIBUTION, their sched_getaffinity) and slurmstepd's lines must be the same, pids and
the host name aside.  As root the cluster runs TaskPlugin=task/cgroup,task/affinity (the
`affinity.*` captures); a TaskPlugin without task/affinity is srun's "lacks support" line.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, command, start_cluster

REF = Path(__file__).resolve().parent / "reference" / "binding"
ENVS = ('env | grep -E "^SLURM_(CPU_BIND|DISTRIBUTION|MEM_BIND|GPU_BIND|PROCID|LOCALID|NODEID|TASKS_PER_NODE|'
        'STEP_TASKS_PER_NODE)" | sort; python3 -c "import os; print(sorted(os.sched_getaffinity(0)))"')
GPU = 'echo CVD=$CUDA_VISIBLE_DEVICES; ' + ENVS

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="task/affinity is in the local cluster's TaskPlugin as root")


@pytest.fixture(scope="module")
def anchor_like(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("binding"), nodes=2, cpus=4, memory=2000, gres="gpu:4")
    try:
        yield c
    finally:
        c.down()


def _normal(text: str) -> list[str]:
    host = os.uname().nodename.split(".", 1)[0]
    text = re.sub(r"\[\d{3,}\]", "[PID]", text).replace(f" - {host}, ", " - HOST, ")
    return sorted(line for line in text.splitlines()
                  if not line.startswith(("srun: job ", "--- stderr", "--- rc")) and "_exec_wait_child" not in line)


def _reference(name: str) -> tuple[list[str], list[str]]:
    out, _, err = (REF / f"{name}.txt").read_text().partition("--- stderr")
    return _normal(out), _normal(err.split("\n", 1)[1] if "\n" in err else "")


# srun's arguments, the tasks' script and the environment, by capture name; True: in the default
# run (one case per kind: the test budget), False: marked slow.
CASES: dict[str, tuple[bool, list[str], str, dict[str, str]]] = {
    "affinity.rank_verbose": (True, ["-w", "n1", "--exclusive", "-n2", "-l", "--cpu-bind=verbose,rank"], ENVS, {}),
    "affinity.map_cpu": (True, ["-w", "n1", "--exclusive", "-n2", "-l", "--cpu-bind=verbose,map_cpu:1,0"], ENVS, {}),
    "affinity.mask_cpu": (False, ["-w", "n1", "--exclusive", "-n2", "-l", "--cpu-bind=verbose,mask_cpu:0x2,0x1"],
                          ENVS, {}),
    "affinity.none_verbose": (False, ["-w", "n1", "-n2", "-l", "--cpu-bind=verbose,none"], ENVS, {}),
    "affinity.default_n2": (False, ["-w", "n1", "-n2", "-l"], ENVS, {}),
    "affinity.rank_ldom": (False, ["-w", "n1", "--exclusive", "-n2", "-l", "--cpu-bind=verbose,rank_ldom"], ENVS, {}),
    "affinity.env_cpu_bind": (False, ["-w", "n1", "--exclusive", "-n2", "-l"], ENVS,
                              {"SLURM_CPU_BIND": "verbose,map_cpu:0,1"}),
    "affinity.map_cpu_bad": (False, ["-w", "n1", "-n1", "-l", "--cpu-bind=verbose,map_cpu:7"], ENVS, {}),
    "affinity.mem_bind_map": (True, ["-w", "n1", "-n1", "-l", "--mem-bind=verbose,map_mem:0"], ENVS, {}),
    "affinity.gpu_bind_single": (True, ["-w", "n1", "-n2", "-l", "--gres=gpu:2", "--gpu-bind=verbose,single:1"],
                                 GPU, {}),
    "affinity.gpu_bind_map": (False, ["-w", "n1", "-n2", "-l", "--gres=gpu:2", "--gpu-bind=map_gpu:1,0"], GPU, {}),
    "none.dist_cyclic": (True, ["-N2", "-n4", "-l", "-m", "cyclic"], ENVS, {}),
    "none.dist_plane2": (False, ["-N2", "-n6", "-l", "-m", "plane=2"], ENVS, {}),
    "none.dist_cyclic_cyclic": (False, ["-N2", "-n4", "-l", "-m", "cyclic:cyclic"], ENVS, {}),
    "none.dist_block": (False, ["-N2", "-n4", "-l", "-m", "block"], ENVS, {}),
    "none.dist_plane2_n4": (False, ["-N2", "-n4", "-l", "-m", "plane=2"], "echo $SLURM_NODEID $SLURM_TASKS_PER_NODE",
                            {}),
    "none.dist_plane2_env": (False, ["-N2", "-n6", "-l", "-m", "plane=2"], 'env | grep -E "^SLURM_DIST" | sort', {}),
    "none.gpus_per_socket": (False, ["-w", "n1", "-n1", "--gres=gpu:1", "--gres-flags=enforce-binding",
                                     "--gpus-per-socket=1", "--sockets-per-node=1", "-l"],
                             'env | grep -E "^SLURM_(GPU|GRES|SOCK)" | sort; echo CVD=$CUDA_VISIBLE_DEVICES', {}),
}
# The anchor had no task/cgroup: a task of a job holding fewer CPUs than the node saw both of the
# host's CPUs there, and its cpuset's here.  Those cases compare everything but that line.
CPUSET_DIFFERS = {"affinity.mem_bind_map", "none.dist_cyclic", "none.dist_plane2", "none.dist_cyclic_cyclic",
                  "none.dist_block"}


@pytest.mark.parametrize("name", [n if CASES[n][0] else pytest.param(n, marks=pytest.mark.slow) for n in CASES])
def test_as_slurm_binds(anchor_like: Cluster, tmp_path: Path, name: str) -> None:
    _default, args, script, env = CASES[name]
    proc = anchor_like.run("srun", *args, "bash", "-c", script, cwd=tmp_path, env=env or None)
    want_out, want_err = _reference(name)
    got_out = _normal(proc.stdout)
    if name in CPUSET_DIFFERS:
        got_out, want_out = ([line for line in lines if ": [" not in line] for lines in (got_out, want_out))
    assert (got_out, _normal(proc.stderr)) == (want_out, want_err)


def test_arbitrary_needs_a_node_list(anchor_like: Cluster, tmp_path: Path) -> None:
    proc = anchor_like.run("srun", "-N2", "-n4", "-l", "-m", "arbitrary", "bash", "-c", ENVS, cwd=tmp_path)
    assert (proc.returncode, _normal(proc.stderr)) == (1, _reference("none.dist_arbitrary")[1])


def test_sbatch_passes_the_options_to_its_steps(anchor_like: Cluster, tmp_path: Path) -> None:
    script = ('env | grep -E "^SLURM_(DIST|MEM_BIND|GPU_BIND|CPU_BIND|GRES)|^SBATCH" | sort; echo ---; '
              'srun -l bash -c "echo CVD=\\$CUDA_VISIBLE_DEVICES; env | grep -E \\"^SLURM_(DIST|MEM_BIND|GPU_BIND)\\"'
              ' | sort"')
    job_id = anchor_like.sbatch("-w", "n1", "-n2", "-m", "cyclic", "--mem-bind=verbose,local", "--gpu-bind=single:1",
                                "--gres=gpu:2", "-o", "out.txt", "--wrap", script, cwd=tmp_path)
    anchor_like.wait_state(job_id, "COMPLETED")
    got = (tmp_path / "out.txt").read_text()
    batch, _, steps = got.partition("---\n")
    ref_batch, _, ref_steps = (REF / "sbatch.env_options.txt").read_text().partition("---\n")
    assert batch == ref_batch
    # the step's mem-bind verbose line goes to stderr (the same file): compare the rest
    assert sorted(line for line in steps.splitlines() if "mem-bind=" not in line) == sorted(ref_steps.splitlines())


def test_without_task_affinity_srun_says_so(tmp_path: Path) -> None:
    from plurm.tools.srun import _binding_notes

    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=c\nTaskPlugin=task/none\n")
    assert _binding_notes({"cpu-bind": "rank"}, str(conf)) == \
        [line for line in _reference("none.rank_verbose")[1]]
    assert _binding_notes({}, str(conf)) == []
    conf.write_text("ClusterName=c\nTaskPlugin=task/cgroup,task/affinity\n")
    assert _binding_notes({"cpu-bind": "rank"}, str(conf)) == []


@pytest.mark.slow  # (sbatch's test covers the same variables in the default run)
def test_salloc_passes_the_options_to_its_steps(anchor_like: Cluster, tmp_path: Path) -> None:
    script = ('env | grep -E "^SLURM_(DIST|MEM_BIND|GPU_BIND|CPU_BIND)" | sort; echo ---; srun -l bash -c '
              '"echo CVD=\\$CUDA_VISIBLE_DEVICES; env | grep -E \\"^SLURM_(DIST|MEM_BIND|GPU_BIND)\\" | sort"')
    proc = anchor_like.run("salloc", "-N1", "-w", "n1", "-n2", "-m", "cyclic", "--mem-bind=verbose,local",
                           "--gpu-bind=single:1", "--gres=gpu:2", "bash", "-c", script, cwd=tmp_path)
    ref = [line for line in (REF / "salloc.env_options.txt").read_text().splitlines()
           if not line.startswith(("salloc: ", "--- rc"))]
    batch, steps = "\n".join(ref).split("\n---\n")
    got_batch, _, got_steps = proc.stdout.partition("---\n")
    assert got_batch.splitlines() == batch.splitlines()
    assert sorted(got_steps.splitlines()) == sorted(steps.splitlines())


@pytest.mark.parametrize("name, option, plugin", [("none.cpu_bind_help", "--cpu-bind=help", "task/none"),
                                                  ("affinity.cpu_bind_help", "--cpu-bind=help", "task/affinity"),
                                                  ("none.mem_bind_help", "--mem-bind=help", "task/none")])
def test_bind_help_is_slurms(tmp_path: Path, name: str, option: str, plugin: str) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"ClusterName=c\nSlurmctldHost=h(127.0.0.1)\nTaskPlugin={plugin}\n")
    proc = subprocess.run(command("srun") + [option, "true"], capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, SLURM_CONF=str(conf)))
    out, _, rest = (REF / f"{name}.txt").read_text().partition("--- stderr (rc ")
    rc, _, err = rest.partition(")\n")
    assert (proc.stdout, proc.stderr, proc.returncode) == (out, err, int(rc))
