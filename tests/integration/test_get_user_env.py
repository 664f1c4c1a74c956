"""sbatch --get-user-env (issue 14): the job's environment filled in with the user's login
environment on the node, sbatch's own values first, as 22.05.8 did on the anchor (root and
nobody alike: SLURM_GET_USER_ENV=1 in the job, more variables than without)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from plurmtest import Cluster, command, start_cluster, wait_for


@pytest.fixture(scope="module")
def cl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("getuserenv"), nodes=1, cpus=2, memory=1000)
    try:
        yield c
    finally:
        c.down()


SHOW = "echo \"[${SLURM_GET_USER_ENV-unset}][${MAIL-unset}][$GUE_MINE]\""


def _batch(cl: Cluster, tmp_path: Path, name: str, *args: str) -> str:
    out = tmp_path / name
    env = {k: v for k, v in cl.env.items() if k != "MAIL"}  # (the login shell's su sets MAIL)
    done = subprocess.run(command("sbatch") + [*args, "-o", str(out), "--wrap", SHOW], capture_output=True, text=True,
                          env=dict(env, GUE_MINE="mine"), cwd=tmp_path, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: out.exists() and out.read_text().endswith("]\n"))
    return out.read_text().strip()


def test_the_login_environment_fills_in(cl: Cluster, tmp_path: Path) -> None:
    got = _batch(cl, tmp_path, "with", "--get-user-env")
    assert got.startswith("[1][") and got.endswith("][mine]") and "[unset]" not in got, got
    assert _batch(cl, tmp_path, "without") == "[unset][unset][mine]"
