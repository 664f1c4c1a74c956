"""The two state-store back ends (SQLite in a directory, PostgreSQL by URL) keep the same
tables with the same meaning, fail with StoreError, and roll back what was not committed."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from osusers import make_reachable
from plurm.corescheduler import effects as fx
from plurm.corescheduler.accounts import Account, AccountBook, Link, Qos, User
from plurm.corescheduler.store import SqlStore, StoreError
from plurm.corescheduler.stores import open_store
from plurm.wire.model import Job, JobSpec, StepRecord


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "state")
    server = request.getfixturevalue("postgres")
    return server.create_database(f"s_{uuid.uuid4().hex[:12]}")


def _job(job_id: int, state: str = "PENDING", **kw) -> Job:
    return Job(job_id=job_id, spec=JobSpec(name=f"j{job_id}", user_id=1000 + job_id % 2, group_id=1000),
               state=state, submit_time=100.0 + job_id, **kw)


def _reopen(store: SqlStore, location: str) -> SqlStore:
    store.close()
    return open_store(location)


def test_jobs_scripts_meta_round_trip(location: str) -> None:
    store = open_store(location)
    store.apply([fx.SaveJob(_job(1)), fx.SaveJob(_job(2, "RUNNING")), fx.SetNextJobId(3),
                 fx.SaveScript(1, "#!/bin/sh\necho 'quoted' \"?\" %s\n", {"A": "1", "PATH": "/bin"}),
                 fx.CopyScript(source=1, job_id=2)])
    store.commit()
    store = _reopen(store, location)
    assert [(j.job_id, j.state, j.spec.name) for j in store.load_jobs()] == [(1, "PENDING", "j1"), (2, "RUNNING", "j2")]
    assert store.get_meta("next_job_id") == "3"
    assert store.get_script(2) == ("#!/bin/sh\necho 'quoted' \"?\" %s\n", {"A": "1", "PATH": "/bin"})
    store.apply([fx.SaveJob(_job(1, "COMPLETED")), fx.DeleteJob(2)])  # an upsert and a delete
    store.commit()
    store = _reopen(store, location)
    assert [(j.job_id, j.state) for j in store.load_jobs()] == [(1, "COMPLETED")]
    assert store.get_script(2) == (None, {})
    store.close()


def test_accounting_rows_and_queries(location: str) -> None:
    store = open_store(location)
    jobs = [_job(i, "COMPLETED", end_time=1000.0 + i) for i in range(1, 6)]
    jobs.append(_job(7, "COMPLETED", end_time=900.0, array_job_id=5, array_task_id=1))
    store.apply([fx.SaveAcctJob(j) for j in jobs])
    store.apply([fx.SaveAcctStep(StepRecord(job_id=1, step_id="batch", name="batch")),
                 fx.SaveAcctStep(StepRecord(job_id=1, step_id="0", name="hostname"))])
    store.commit()
    store = _reopen(store, location)
    assert [j.job_id for j in store.acct_jobs()] == [1, 2, 3, 4, 5, 7]
    assert [j.job_id for j in store.acct_jobs(user_ids=[1001])] == [1, 3, 5, 7]
    assert [j.job_id for j in store.acct_jobs(since=1003.0)] == [3, 4, 5]
    assert [j.job_id for j in store.acct_jobs(job_ids=[5])] == [5, 7]  # the array's task too
    assert sorted(s.step_id for s in store.acct_steps([1, 2])) == ["0", "batch"]
    store.close()


def test_associations_round_trip(location: str) -> None:
    store = open_store(location)
    book = AccountBook(
        half_life_s=3600.0,
        accounts_by_name={"root": Account("root", None, "root", "root", 1),
                          "physics": Account("physics", "root", "Physics", "uni", 5)},
        users_by_name={"alice": User("alice", "physics", "Operator")},
        links_by_key={("physics", "alice"): Link("physics", "alice", 2, 123.5, 99.0)},
        qos_by_name={"normal": Qos("normal", "default", 10, 4, "", None)})
    store.save_accounts(book)
    store.commit()
    store = _reopen(store, location)
    loaded = store.load_accounts(3600.0)
    assert loaded.accounts_by_name == book.accounts_by_name
    assert loaded.users_by_name == book.users_by_name
    assert loaded.links_by_key == book.links_by_key
    assert loaded.qos_by_name == book.qos_by_name
    store.close()


def test_rollback_forgets_uncommitted_writes(location: str) -> None:
    store = open_store(location)
    store.apply([fx.SaveJob(_job(1))])
    store.commit()
    store.apply([fx.SaveJob(_job(2)), fx.SetNextJobId(9)])
    assert store.dirty
    store.rollback()
    assert not store.dirty
    store = _reopen(store, location)
    assert [j.job_id for j in store.load_jobs()] == [1]
    assert store.get_meta("next_job_id") is None
    store.close()


_READONLY_CHECK = """
import sys
from plurm.corescheduler.stores import open_store

try:
    open_store(sys.argv[1])
except RuntimeError as exc:
    print("refused:", exc)
    sys.exit(0)
sys.exit("a read-only store was opened for writing")
"""


def test_a_readonly_sqlite_store_is_refused_at_start(tmp_path: Path) -> None:
    """Files and folder read-only: the controller cannot start on them, and says which file (a
    store that turns read-only later is a failed commit: test_store_failure.py).  Root writes
    read-only files anyway, so as root the check runs as nobody."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="plurm-ro-"))  # not under pytest's 0700 folder: nobody enters it
    try:
        base.chmod(0o755)
        state = base / "state"
        store = open_store(str(state))
        store.apply([fx.SaveJob(_job(1))])
        store.commit()
        store.close()
        for path in state.iterdir():
            path.chmod(0o444)
        state.chmod(0o555)
        as_nobody = {}
        if os.geteuid() == 0:
            # nobody runs this Python (pyenv's, under /root: 0700 on a fresh machine) and this plurm
            make_reachable(Path(sys.executable).resolve(), Path(sys.prefix), Path(__file__).resolve().parents[2])
            as_nobody = {"user": "nobody", "group": "nogroup"}
        proc = subprocess.run([sys.executable, "-c", _READONLY_CHECK, str(state)], capture_output=True, text=True,
                              timeout=60, cwd="/", **as_nobody)
        assert proc.returncode == 0, proc.stderr
        assert "refused: cannot open the state store" in proc.stdout and "readonly" in proc.stdout
    finally:
        state.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)


def test_a_stopped_server_fails_with_store_error_then_recovers(postgres) -> None:
    url = postgres.create_database(f"s_{uuid.uuid4().hex[:12]}")
    store = open_store(url)
    store.apply([fx.SaveJob(_job(1))])
    store.commit()
    postgres.stop()
    try:
        with pytest.raises(StoreError):
            store.apply([fx.SaveJob(_job(2))])
            store.commit()
        store.rollback()  # the connection is gone: rollback must not raise
        with pytest.raises(StoreError):
            store.probe()
    finally:
        postgres.start()
    store.probe()  # reconnects
    store.apply([fx.SaveJob(_job(3))])
    store.commit()
    assert [j.job_id for j in store.load_jobs()] == [1, 3]  # job 2 was never committed
    store.close()


def test_the_url_password_is_not_in_messages() -> None:
    from plurm.corescheduler.store_pg import _redacted

    assert _redacted("postgresql://u:secret@h:5/db") == "postgresql://u:***@h:5/db"
    assert _redacted("postgresql://u@h:5/db") == "postgresql://u@h:5/db"
