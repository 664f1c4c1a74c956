"""/metrics with ``MetricsAuthUsers=`` set (Slurm 25.11's rule): a token is required, and only
the listed users, root and SlurmUser may read; the probes stay open.  A cluster of its own
(the setting is read when plurmctld and plurmrestd start)."""

from __future__ import annotations

import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from plurmtest import Cluster
from resttest import ME, Rest


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rest]:
    from plurm.tools.localcluster import ClusterShape, LocalCluster

    base = tmp_path_factory.mktemp("rest_metrics_auth")
    local = LocalCluster(str(base / "cluster"))
    local.write_files(ClusterShape(nodes=1, cpus_per_node=2, memory_per_node=1000))
    conf = Path(local.conf_path)
    conf.write_text(conf.read_text() + "MetricsAuthUsers=nobody\nPrivateData=jobs\n")
    env = dict(os.environ, SLURM_CONF=str(conf))
    env.pop("SLURM_JOB_ID", None)
    c = Cluster(Path(local.dir), conf, env)
    out = c.up("--rest").stdout
    try:
        found = re.search(r"^export SLURM_RESTD_URL=(http://127\.0\.0\.1:\d+)$", out, re.M)
        assert found, out
        yield Rest(c, found.group(1), (Path(local.dir) / "jwt_hs256.key").read_bytes(), base)
    finally:
        c.down()


def get(rest: Rest, path: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(rest.url + path, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_a_token_is_required(rest: Rest) -> None:
    status, text = get(rest, "/metrics")
    assert status == 401 and "MetricsAuthUsers" in text, (status, text)


def test_listed_users_and_root_read_others_are_refused(rest: Rest) -> None:
    for user in ("nobody", ME):  # listed; the cluster's own user (SlurmUser / root) always
        status, text = get(rest, "/metrics/nodes", rest.token(f"username={user}"))
        assert status == 200, (user, status, text)
        assert "slurm_cpus_total" in {f.name for f in text_string_to_metric_families(text)}
    status, text = get(rest, "/metrics", rest.token("username=daemon"))
    assert status == 403 and "not in MetricsAuthUsers" in text, (status, text)
    assert "metrics refused to daemon" in rest.log("plurmctld")


def test_probes_stay_open(rest: Rest) -> None:
    assert get(rest, "/livez") == (200, "ok\n") and get(rest, "/readyz") == (200, "ok\n")
