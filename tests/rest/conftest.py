"""The REST tests' cluster: a real local cluster with plurmrestd, as ``plurm cluster up --rest``
starts it (module scope: each test module gets its own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from resttest import ME, Rest, rest_cluster


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rest]:
    base = tmp_path_factory.mktemp("rest")
    with rest_cluster(base, 2, 2, 2000, "FirstJobId=46001\nLicenses=fluent:3\n") as r:
        r.cluster.run("scontrol", "create", "reservation", "ReservationName=later", "StartTime=now+3600",
                      "Duration=60", "Nodes=n2", f"Users={ME}", check=True)
        yield r
