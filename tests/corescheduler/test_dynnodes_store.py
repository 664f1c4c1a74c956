"""The dyn_nodes table on both state-store back ends (dynnodes_store.py): what a restarted
controller gets back of the dynamic nodes, written and deleted in the turn's commit."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from plurm.corescheduler import dynnodes_store
from plurm.corescheduler.stores import open_store
from plurm.wire.model import Node


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "state")
    server = request.getfixturevalue("postgres")
    return server.create_database(f"d_{uuid.uuid4().hex[:12]}")


def test_written_in_the_commit_and_loaded_back(location: str) -> None:
    store = open_store(location)
    k1 = Node(name="k1", cpus=4, real_memory=4000, dynamic="external", features=["kube"], gres=["gpu:2"],
              partitions=["all"], responding=True, alloc_cpus=3, boot_time=5.0)
    d1 = Node(name="d1", cpus=2, dynamic="norm", addr="127.0.0.1", port=7001)
    dynnodes_store.write(store, ([k1, d1], []))
    store.rollback()  # (not committed: gone)
    store.close()
    store = open_store(location)
    assert dynnodes_store.load(store) == []
    dynnodes_store.write(store, ([k1, d1], []))
    store.commit()
    store.close()
    store = open_store(location)
    back = dynnodes_store.load(store)
    assert [n.name for n in back] == ["d1", "k1"]
    got = back[1]
    # The configuration comes back, none of the run-time state (the node is heard from again).
    assert (got.cpus, got.real_memory, got.dynamic, got.features, got.gres) == (4, 4000, "external", ["kube"],
                                                                              ["gpu:2"])
    assert (got.partitions, got.responding, got.alloc_cpus, got.boot_time) == ([], False, 0, None)
    assert (back[0].addr, back[0].port) == ("127.0.0.1", 7001)
    dynnodes_store.write(store, ([], ["k1"]))
    store.commit()
    store.close()
    store = open_store(location)
    assert [n.name for n in dynnodes_store.load(store)] == ["d1"]
    store.close()
