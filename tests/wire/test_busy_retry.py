"""sbatch's retry policy (wire/busy_retry.py): Slurm's busy line once, sleeps of 1, 2, 3 ... s,
15 retries at most; a timed-out reply sent again (safe with the submission's key)."""

from __future__ import annotations

import io

import pytest

from plurm.wire.busy_retry import BUSY_LINE, new_key, submit_retrying
from plurm.wire.client import ClientError


def failing(*codes: str):
    calls = {"n": 0}

    def send() -> dict:
        calls["n"] += 1
        if calls["n"] <= len(codes):
            raise ClientError("Resource temporarily unavailable" if codes[calls["n"] - 1] == "Busy" else "x",
                              codes[calls["n"] - 1])
        return {"job_id": 5}
    return send, calls


def test_busy_then_accepted() -> None:
    send, calls = failing("Busy", "Busy", "Busy")
    err, sleeps = io.StringIO(), []
    assert submit_retrying(send, stderr=err, sleep=sleeps.append) == {"job_id": 5}
    assert err.getvalue() == f"sbatch: error: {BUSY_LINE}\n"
    assert sleeps == [1.0, 2.0, 3.0] and calls["n"] == 4


@pytest.mark.parametrize("prog,line", [("srun", "Slurm controller not responding, sleeping and retrying."),
                                       ("salloc", "Slurm job queue full, sleeping and retrying.")])
def test_srun_and_salloc_say_their_own_lines(prog: str, line: str) -> None:
    send, _calls = failing("Busy", "Busy")
    err = io.StringIO()
    assert submit_retrying(send, prog, stderr=err, sleep=lambda s: None) == {"job_id": 5}
    assert err.getvalue() == f"{prog}: error: {line}\n"


def test_busy_past_the_retries_raises() -> None:
    send, calls = failing(*["Busy"] * 20)
    sleeps: list[float] = []
    with pytest.raises(ClientError) as info:
        submit_retrying(send, stderr=io.StringIO(), sleep=sleeps.append)
    assert info.value.code == "Busy"
    assert sleeps == [float(i) for i in range(1, 16)] and calls["n"] == 16


def test_timeouts_resent_at_once_a_few_times() -> None:
    send, calls = failing("Timeout", "Timeout")
    sleeps: list[float] = []
    assert submit_retrying(send, stderr=io.StringIO(), sleep=sleeps.append) == {"job_id": 5}
    assert sleeps == [] and calls["n"] == 3
    send, calls = failing("Timeout", "Timeout", "Timeout")
    with pytest.raises(ClientError):
        submit_retrying(send, stderr=io.StringIO(), sleep=sleeps.append)
    assert calls["n"] == 3


def test_other_errors_are_not_retried() -> None:
    send, calls = failing("InvalidPartition")
    with pytest.raises(ClientError):
        submit_retrying(send, stderr=io.StringIO(), sleep=lambda s: None)
    assert calls["n"] == 1


def test_keys_are_valid_and_fresh() -> None:
    from plurm.corescheduler.idempotency import check_key

    keys = {new_key() for _ in range(100)}
    assert len(keys) == 100
    for key in keys:
        check_key(key)
