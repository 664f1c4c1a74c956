"""Dynamic nodes in the state store: the ``dyn_nodes`` table (store.py and store_pg.py create
it: ``name`` the key, ``data`` the Node record as JSON, dynnodes_conf.stored).

Functions over a ``SqlStore`` (SQLite or PostgreSQL alike, through its ``_run``), so that the
writes join the controller's group commit: a created node is durable before it is reported.
"""

from __future__ import annotations

from typing import Any

import msgspec
from plurm.corescheduler.dynnodes_conf import stored
from plurm.corescheduler.store import _upsert
from plurm.wire.model import Node

_PUT = _upsert("dyn_nodes", "name, data", "name")
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Node)


def write(store: Any, changes: tuple[list[Node], list[str]]) -> None:
    """The core's take_dynamic_changes(), written (uncommitted until the turn's commit)."""
    put, gone = changes
    for node in put:
        store._run(_PUT, (node.name, _encoder.encode(stored(node))))
    for name in gone:
        store._run("DELETE FROM dyn_nodes WHERE name=?", (name,))


def load(store: Any) -> list[Node]:
    """The dynamic nodes kept, by name (the scheduler's tie-break order after a restart)."""
    rows = store._run("SELECT data FROM dyn_nodes ORDER BY name").fetchall()
    return [_decoder.decode(bytes(row[0]) if isinstance(row[0], memoryview) else row[0]) for row in rows]
