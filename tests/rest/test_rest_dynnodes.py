"""Dynamic nodes over plurmrestd (issue 16 item 6): ``POST new/node/`` (v0.0.44, v0.0.45) and
``DELETE node/{node_name}`` (v0.0.43 to v0.0.45) against a real local cluster with
MaxNodeCount, each answer validated against slurmrestd's schema of its path and version;
what REST made, scontrol and ``GET node/`` see, and the other way round.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from resttest import ME, VERSIONS, Rest, call, rest_cluster, validate

NEW_VERSIONS = ("v0.0.44", "v0.0.45")


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rest]:
    base: Path = tmp_path_factory.mktemp("restdyn")
    with rest_cluster(base, 2, 2, 2000, "MaxNodeCount=4\n") as r:
        yield r


@pytest.mark.parametrize("version", NEW_VERSIONS)
def test_new_node_then_delete(rest: Rest, version: str) -> None:
    token = rest.token()
    name = f"r{version[-2:]}"
    line = f"NodeName={name} CPUs=2 RealMemory=1000 Features=rf Gres=gpu:1 State=CLOUD"
    status, body = call(rest.url, "POST", f"/slurm/{version}/new/node/", token, ME, body={"node_conf": line})
    assert status == 200, body
    validate(body, version, "POST", "new/node/")
    assert body["errors"] == []
    shown = rest.cluster.run("scontrol", "show", "node", name, check=True).stdout
    assert "State=IDLE+CLOUD+POWERED_DOWN " in shown and "AvailableFeatures=rf" in shown, shown
    status, body = call(rest.url, "GET", f"/slurm/{version}/node/{name}", token, ME)
    assert status == 200 and body["nodes"][0]["name"] == name, body
    validate(body, version, "GET", "node/{node_name}")
    status, body = call(rest.url, "DELETE", f"/slurm/{version}/node/{name}", token, ME)
    assert status == 200, body
    validate(body, version, "DELETE", "node/{node_name}")
    assert rest.cluster.run("scontrol", "show", "node", name).returncode == 1


def test_v0043_has_no_new_node_but_deletes(rest: Rest) -> None:
    token = rest.token()
    status, body = call(rest.url, "POST", "/slurm/v0.0.43/new/node/", token, ME, body={"node_conf": "NodeName=z"})
    assert status in (404, 405), body
    rest.cluster.run("scontrol", "create", "NodeName=old1", "CPUs=1", "State=CLOUD", check=True)
    status, body = call(rest.url, "DELETE", "/slurm/v0.0.43/node/old1", token, ME)
    assert status == 200, body
    validate(body, "v0.0.43", "DELETE", "node/{node_name}")
    assert rest.cluster.run("scontrol", "show", "node", "old1").returncode == 1


@pytest.mark.parametrize("payload, status, words", [
    ({"node_conf": "NodeName=b1 Bogus=1"}, 400, "Failed to parse nodeline 'NodeName=b1 Bogus=1'"),
    ({"node_conf": "NodeName=b1 State=IDLE"}, 400, "Only State=FUTURE, State=CLOUD and State=EXTERNAL"),
    ({"node_conf": "NodeName=n1 CPUs=1"}, 400, "Node 'n1' already exists"),
    ({"node_conf": "NodeName=b[1-3] CPUs=1 State=CLOUD"}, 500, "node table is full (MaxNodeCount=4)"),
    ({}, 400, "node_conf"),
    ({"node_conf": 7}, 400, "node_conf"),
])
def test_new_node_refusals(rest: Rest, payload: dict, status: int, words: str) -> None:
    got, body = call(rest.url, "POST", "/slurm/v0.0.44/new/node/", rest.token(), ME, body=payload)
    assert got == status, body
    validate(body, "v0.0.44", "POST", "new/node/")
    assert words in body["errors"][0]["description"], body["errors"]
    assert rest.cluster.run("scontrol", "show", "node", "b1").returncode == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_delete_refusals(rest: Rest, version: str) -> None:
    token = rest.token()
    status, body = call(rest.url, "DELETE", f"/slurm/{version}/node/n1", token, ME)
    assert status == 400, body
    validate(body, version, "DELETE", "node/{node_name}")
    assert "Can't delete non-dynamic node 'n1'." in body["errors"][0]["description"]
    status, body = call(rest.url, "DELETE", f"/slurm/{version}/node/nosuch", token, ME)
    assert status == 404, body
    validate(body, version, "DELETE", "node/{node_name}")
    assert body["errors"][0]["description"] == "Invalid node name specified"


def test_only_administrators_create_and_delete(rest: Rest) -> None:
    rest.cluster.run("scontrol", "create", "NodeName=adm1", "CPUs=1", "State=CLOUD", check=True)
    token = rest.token("username=nobody")
    status, body = call(rest.url, "POST", "/slurm/v0.0.45/new/node/", token, body={"node_conf": "NodeName=u1"})
    assert status == 500 and "Invalid user id" in body["errors"][0]["description"], body
    status, body = call(rest.url, "DELETE", "/slurm/v0.0.45/node/adm1", token)
    assert status == 500 and "Invalid user id" in body["errors"][0]["description"], body
    assert rest.cluster.run("scontrol", "show", "node", "adm1").returncode == 0
    rest.cluster.run("scontrol", "delete", "NodeName=adm1", check=True)
