"""The collector pause around scheduling passes: off inside, back on after, even on error."""

from __future__ import annotations

import gc

import pytest

from plurm.corescheduler.gcpause import collector_paused


def test_paused_inside_and_restored_after_an_error() -> None:
    assert gc.isenabled()
    with pytest.raises(ValueError):
        with collector_paused():
            assert not gc.isenabled()
            with collector_paused():  # a pass inside a pass
                assert not gc.isenabled()
            assert not gc.isenabled()
            raise ValueError
    assert gc.isenabled()


def test_left_off_when_the_program_turned_it_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_scheduling_passes_run_with_it_paused(monkeypatch) -> None:
    from plurm.corescheduler import backfill
    from plurm.corescheduler.scheduler import Scheduler

    seen = []
    monkeypatch.setattr(Scheduler, "prepare", lambda self: seen.append(gc.isenabled()))
    sched = Scheduler({}, {}, 0)
    sched.schedule([], 0.0)
    # A cycle with nothing to plan returns at once; one resuming a yielded cycle plans.
    resume = backfill.BackfillCursor(tested=0, done=frozenset(), reservations=())
    backfill.plan_backfill(sched, [], [], 0.0, backfill.BackfillParams(bf_continue=True), cursor=resume)
    assert seen == [False, False] and gc.isenabled()
