"""Admission control's rules, sans IO (corescheduler/admission.py); the daemons' side of it runs
in tests/integration/test_storm_admission.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from plurm.corescheduler.admission import Admission
from plurm.corescheduler.errors import RequestError


class Keys:
    def __init__(self, known: dict[tuple[int, str], int]) -> None:
        self.known = known

    def find(self, uid: int, key: str) -> int | None:
        return self.known.get((uid, key))


def sub(key: str | None = None, test_only: bool = False) -> SimpleNamespace:
    return SimpleNamespace(key=key, test_only=test_only)


def refused(adm: Admission, now: float, jobs: dict, msg: SimpleNamespace, keys: Keys = Keys({}),
            bulk: bool = False, age: float = 0.0) -> bool:
    try:
        adm.admit(now, jobs, msg, 1000, keys, bulk, age)
    except RequestError as exc:
        assert (exc.code, str(exc)) == ("Busy", "Resource temporarily unavailable")
        return True
    return False


def test_per_turn_bound_refuses_the_rest_of_the_turn_then_resets() -> None:
    adm = Admission(per_turn=2)
    adm.new_turn(0.0)
    assert [refused(adm, 0.0, {}, sub()) for _ in range(4)] == [False, False, True, True]
    adm.new_turn(1.0)
    assert not refused(adm, 1.0, {}, sub())
    assert adm.refused == 2


def test_max_job_count_counts_the_records_held() -> None:
    adm = Admission(max_job_count=3)
    adm.new_turn(0.0)
    assert not refused(adm, 0.0, {1: None, 2: None}, sub())
    assert refused(adm, 0.0, {1: None, 2: None, 3: None}, sub())


def test_turn_budget() -> None:
    adm = Admission(budget_s=2.0)
    adm.new_turn(10.0)
    assert not refused(adm, 11.9, {}, sub())
    assert refused(adm, 12.1, {}, sub())


def test_a_submission_older_than_its_clients_patience() -> None:
    adm = Admission(stale_s=15.0)
    adm.new_turn(0.0)
    assert not refused(adm, 0.0, {}, sub(), age=14.0)
    assert refused(adm, 0.0, {}, sub(), age=16.0)
    with pytest.raises(RequestError):
        adm.admit_bulk(0.0, 16.0)
    # A keyed submission cannot become a second job: its age (the client's clock, perhaps
    # behind) does not refuse it -- a host 16 s behind could otherwise never submit.
    assert not refused(adm, 0.0, {}, sub(key="k1"), age=16.0)


def test_known_key_and_test_only_are_never_refused() -> None:
    adm = Admission(max_job_count=1, per_turn=1)
    adm.new_turn(0.0)
    full = {7: None}
    assert not refused(adm, 0.0, full, sub(key="k"), Keys({(1000, "k"): 7}))
    assert refused(adm, 0.0, full, sub(key="k"), Keys({(1001, "k"): 7}))  # another user's key: nothing known
    assert not refused(adm, 0.0, full, sub(test_only=True))


def test_bulk_counts_once_per_message() -> None:
    adm = Admission(per_turn=1)
    adm.new_turn(0.0)
    adm.admit_bulk(0.0)
    # (its entries, past the budget too: the message was admitted whole)
    assert [refused(adm, 9.0, {}, sub(), bulk=True) for _ in range(3)] == [False] * 3
    assert refused(adm, 9.0, {1: None}, sub(), bulk=True) is False
    with pytest.raises(RequestError):
        adm.admit_bulk(0.0)
    adm.new_turn(10.0)
    with pytest.raises(RequestError):
        adm.admit_bulk(12.5)  # past the budget


def test_from_conf() -> None:
    conf = {"MaxJobCount": "50", "SchedulerParameters": "bf_interval=1,max_submit_per_turn=8", "MessageTimeout": "20"}
    adm = Admission.from_conf(SimpleNamespace(get=conf.get))
    assert (adm.max_job_count, adm.per_turn, adm.budget_s, adm.stale_s) == (50, 8, 4.0, 25.0)
    empty = Admission.from_conf(SimpleNamespace(get={}.get))
    assert (empty.max_job_count, empty.per_turn, empty.budget_s, empty.stale_s) == (0, 0, 2.0, 15.0)
