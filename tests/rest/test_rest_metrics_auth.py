"""/metrics with ``MetricsAuthUsers=`` set (Slurm 25.11's rule): a token is required, and only
the listed users, root and SlurmUser may read; the probes stay open.  A cluster of its own
(the setting is read when plurmctld and plurmrestd start)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from resttest import ME, Rest, rest_cluster


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rest]:
    base = tmp_path_factory.mktemp("rest_metrics_auth")
    with rest_cluster(base, 1, 2, 1000, "MetricsAuthUsers=nobody\nPrivateData=jobs\n") as r:
        yield r


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
