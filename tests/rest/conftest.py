"""The REST tests' cluster: a real local cluster with plurmrestd, as ``plurm cluster up --rest``
starts it (module scope: each test module gets its own)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster
from resttest import ME, Rest


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rest]:
    from plurm.tools.localcluster import ClusterShape, LocalCluster

    base = tmp_path_factory.mktemp("rest")
    local = LocalCluster(str(base / "cluster"))
    local.write_files(ClusterShape(nodes=2, cpus_per_node=2, memory_per_node=2000))
    conf = Path(local.conf_path)
    conf.write_text(conf.read_text() + "FirstJobId=46001\nLicenses=fluent:3\n")
    env = dict(os.environ, SLURM_CONF=str(conf))
    env.pop("SLURM_JOB_ID", None)
    c = Cluster(Path(local.dir), conf, env)
    out = c.up("--rest").stdout
    try:
        found = re.search(r"^export SLURM_RESTD_URL=(http://127\.0\.0\.1:\d+)$", out, re.M)
        assert found, f"plurm cluster up --rest printed no URL: {out!r}"
        key = (Path(local.dir) / "jwt_hs256.key").read_bytes()
        assert (Path(local.dir) / "jwt_hs256.key").stat().st_mode & 0o077 == 0
        c.run("scontrol", "create", "reservation", "ReservationName=later", "StartTime=now+3600",
              "Duration=60", "Nodes=n2", f"Users={ME}", check=True)
        work = base / "work"
        work.mkdir()
        yield Rest(c, found.group(1), key, work)
    finally:
        c.down()
