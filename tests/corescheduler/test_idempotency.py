"""Idempotent submission in the service layer (corescheduler/idempotency.py), on a real
ClusterCore: per-uid keys, the horizon (the key goes with the purged record), arrays."""

from __future__ import annotations

import pytest

from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import protocol
from plurm.wire.model import JobSpec, Node, Partition

T0 = 1_000_000.0
ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
BOB = Identity(1002, 1002, "bob", frozenset({"bob"}))


def _service() -> Service:
    nodes = {"n1": Node(name="n1", cpus=4, real_memory=4000, responding=True, boot_time=1.0)}
    core = ClusterCore(nodes, {"debug": Partition(name="debug", nodes=["n1"], default=True)},
                       CoreSettings(cluster_name="t"), now=T0)
    return Service(core)


def _submit(service: Service, who: Identity, key: str | None, now: float = T0, **spec) -> dict:
    msg = protocol.SubmitJob(spec=JobSpec(script="#!/bin/sh\ntrue\n", hold=True, **spec), key=key)
    return service.submit(msg, who, now)


def test_a_key_is_per_uid_and_answers_with_the_first_job() -> None:
    service = _service()
    first = _submit(service, ALICE, "k")
    assert _submit(service, ALICE, "k") == {"job_id": first["job_id"], "warnings": [], "duplicate": True}
    bobs = _submit(service, BOB, "k")
    assert bobs["job_id"] != first["job_id"] and "duplicate" not in bobs
    assert service.core.jobs[first["job_id"]].submit_key == "k"
    assert len(service.core.jobs) == 2


def test_the_key_lives_as_long_as_the_job_record() -> None:
    service = _service()
    first = _submit(service, ALICE, "k")["job_id"]
    service.cancel(protocol.CancelJob(job_ids=[str(first)]), ALICE, T0 + 1)
    assert _submit(service, ALICE, "k", now=T0 + 2)["job_id"] == first  # ended, not purged yet
    purge_at = T0 + service.core.settings.min_job_age + 10
    service.core.tick(purge_at)
    assert first not in service.core.jobs
    again = _submit(service, ALICE, "k", now=purge_at)
    assert again["job_id"] != first and "duplicate" not in again


def test_a_rebuilt_index_finds_keys_from_the_records_alone() -> None:
    """As after a controller restart: a new Service over the same jobs knows their keys."""
    service = _service()
    array = _submit(service, ALICE, "arr", array_spec="1-4", array_indices=[1, 2, 3, 4])["job_id"]
    single = _submit(service, ALICE, "one")["job_id"]
    fresh = Service(service.core)
    assert _submit(fresh, ALICE, "arr")["job_id"] == array
    assert _submit(fresh, ALICE, "one")["job_id"] == single


@pytest.mark.parametrize("key", ["", " ", "a b", "x" * 129, "\x00", "é"])
def test_bad_keys_are_refused(key: str) -> None:
    with pytest.raises(RequestError) as refused:
        _submit(_service(), ALICE, key)
    assert refused.value.code == "InvalidIdempotencyKey"
