"""--gres-flags=enforce-binding with real daemons: plurmd registers each GPU's local CPUs from
gres.conf Cores=, and the controller starts an enforce-binding job only on a node whose GPUs'
cores can hold its CPUs (else it waits: Resources); without the flag the same job runs.
The "GPUs" are plain files named in gres.conf (the static backend)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster


@pytest.fixture(scope="module")
def bound(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    import os

    base = tmp_path_factory.mktemp("enforce")
    directory = base / "cluster"
    directory.mkdir()
    dev = base / "dev"
    dev.mkdir()
    for i in range(2):
        (dev / f"gpu{i}").write_text("")
    # Both GPUs are local to cores 0-1 of the node's 8.
    (directory / "gres.conf").write_text(f"NodeName=n1 Name=gpu File={dev}/gpu[0-1] Cores=0-1\n")
    env = dict(os.environ, SLURM_CONF=str(directory / "slurm.conf"))
    env.pop("SLURM_JOB_ID", None)
    c = Cluster(directory, directory / "slurm.conf", env)
    c.up("--nodes", "1", "--cpus-per-node", "8", "--memory-per-node", "4000", "--gres", "gpu:2")
    try:
        yield c
    finally:
        c.down()


def test_enforce_binding_waits_where_the_gpus_cores_are_too_few(bound: Cluster, workdir: Path) -> None:
    waiting = bound.sbatch("-n4", "--gres=gpu:1", "--gres-flags=enforce-binding", "--wrap", "true", cwd=workdir)
    plain = bound.sbatch("-n4", "--gres=gpu:1", "--wrap", "true", cwd=workdir)
    fits = bound.sbatch("-n2", "--gres=gpu:1", "--gres-flags=enforce-binding", "--wrap", "true", cwd=workdir)
    bound.wait_state(plain, "COMPLETED")
    bound.wait_state(fits, "COMPLETED")
    job = bound.job(waiting)
    assert job.get("state", "PENDING") == "PENDING" and job["reason"] == "Resources"
    bound.run("scancel", str(waiting), check=True)
