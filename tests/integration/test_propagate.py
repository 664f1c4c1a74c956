"""--propagate and PropagateResourceLimits (issue 14) on real daemons: the soft limits of the
submitting shell (``ulimit -S``) are the job's batch shell's and its tasks', as 22.05's
(SLURM_RLIMIT_* in the step's environment: tests/integration/reference/srun-client/
capture2.txt), and the job does not see the variables (22.05.8 run on the anchor: `env | grep -c
^SLURM_RLIMIT_` is 0 in a task, `ulimit -Sn 1000; srun ...` prints 1000, with --propagate=NONE the node's).
"""

from __future__ import annotations

import resource
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from plurm.common import rlimits
from plurmtest import Cluster, command, start_cluster, wait_for


@pytest.fixture(scope="module")
def cl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("propagate"), nodes=1, cpus=2, memory=1000)
    try:
        yield c
    finally:
        c.down()


def _lowered() -> tuple[int, int]:
    """Soft limits below this process's (and so below the daemons'): NOFILE, STACK in KiB."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    return min(nofile, 4096) - 7, (min(stack, 8 << 20) // 1024) - 4


def sh(cl: Cluster, script: str, cwd: Path) -> subprocess.CompletedProcess:
    """``script`` in a shell of its own (its ulimits), ``srun``/``sbatch`` as the installed commands."""
    script = script.replace("SRUN", shlex.join(command("srun"))).replace("SBATCH", shlex.join(command("sbatch")))
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=cl.env, cwd=cwd, timeout=60,
                          check=False)


READ = "echo $(ulimit -Sn) $(ulimit -Ss) $(env | grep -c ^SLURM_RLIMIT_)"


def test_srun_tasks_get_the_submitting_shells_limits(cl: Cluster, tmp_path: Path) -> None:
    nofile, stack = _lowered()
    shell = f"ulimit -Sn {nofile}; ulimit -Ss {stack}; exec SRUN {{opt}} -N1 sh -c '{READ}'"
    done = sh(cl, shell.format(opt=""), tmp_path)
    assert (done.returncode, done.stdout.split()) == (0, [str(nofile), str(stack), "0"]), done.stderr
    only = sh(cl, shell.format(opt="--propagate=STACK"), tmp_path)
    assert only.stdout.split()[1:] == [str(stack), "0"], only.stderr
    assert only.stdout.split()[0] != str(nofile)  # (NOFILE not asked for: the node's own)
    none = sh(cl, shell.format(opt="--propagate=NONE"), tmp_path)
    assert none.stdout.split()[:2] != [str(nofile), str(stack)], none.stderr


def test_sbatch_propagates_even_with_export_none(cl: Cluster, tmp_path: Path) -> None:
    nofile, stack = _lowered()
    out = tmp_path / "out"
    done = sh(cl, f"ulimit -Sn {nofile}; ulimit -Ss {stack}; exec SBATCH --parsable --export=NONE "
                              f"-o {out} --wrap \"{READ}\"", tmp_path)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: out.exists() and out.read_text().strip())
    assert out.read_text().split() == [str(nofile), str(stack), "0"]


def test_a_bad_name_is_refused(cl: Cluster, tmp_path: Path) -> None:
    done = cl.run("srun", "--propagate=NOFILE,BOGUS", "true", cwd=tmp_path)
    assert (done.returncode, done.stderr.splitlines()) == (1, [  # (22.05.8's, run on the anchor)
        "srun: error: Bad rlimit name: BOGUS", "srun: error: --propagate=NOFILE,BOGUS is not valid."])
    batch = cl.run("sbatch", "--propagate=BOGUS", "--wrap", "true", cwd=tmp_path)
    assert (batch.returncode, batch.stderr.splitlines()) == (1, [
        "sbatch: error: Bad rlimit name: BOGUS", "sbatch: error: --propagate=BOGUS is not valid."])


def test_slurm_conf_lists_and_their_exceptions() -> None:
    assert rlimits.chosen(None, None, None) == list(rlimits.NAMES)
    assert rlimits.chosen(None, "NOFILE,stack", None) == ["STACK", "NOFILE"]
    assert "CORE" not in rlimits.chosen(None, "ALL", "CORE")
    assert rlimits.chosen(None, "NONE", None) == []
    assert rlimits.chosen(True, "NONE", None) == list(rlimits.NAMES)  # (--propagate alone: ALL)
    with pytest.raises(rlimits.LimitsError):
        rlimits.parse("NOFILE,FOO")


def test_the_node_never_takes_a_word_for_more_than_its_hard_limit() -> None:
    """A variable is the user's word: non-numbers dropped, a value above the hard limit capped."""
    env = {"SLURM_RLIMIT_NOFILE": "99999999999", "SLURM_RLIMIT_CORE": "lots", "SLURM_RLIMIT_AS": "1" * 40, "X": "1"}
    limits = rlimits.take(env)
    assert env == {"X": "1"} and limits == [(resource.RLIMIT_NOFILE, 99999999999)]
    import sys

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    kwargs = rlimits.preexec({}, limits)
    seen = subprocess.run([sys.executable, "-c", "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE))"],
                          capture_output=True, text=True, check=True, **kwargs).stdout.strip()
    assert seen == str((hard, hard))
