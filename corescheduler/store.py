"""The controller's durable state: one SQLite database in WAL mode (or PostgreSQL).

``stores.open_store(location)`` picks the back end from StateSaveLocation: a directory keeps
the embedded SQLite file inside it (the default: no server needed); a
``postgresql://USER@HOST:PORT/DB`` URL selects store_pg.PgStore, the same tables and
semantics on a server that two controllers share (the standby's way to the state).
Both back ends speak the SQL of ``SqlStore`` below; a back end's failure is raised as
``StoreError`` (``Fenced`` when another controller holds the lease), never as the
driver's own class, so the controller handles one type.

Every accepted change is written here and committed before the request
that caused it is answered (the controller groups the changes of one loop
turn into one transaction: group commit).  A controller killed with -9
restarts from this file alone.  Accounting rows of finished jobs live in
the same database, so sacct reads what the controller committed.

Durability level: WAL with synchronous=NORMAL survives any crash of the
process; an operating-system crash may lose the last commits.
PLURM_STORE_SYNC=FULL fsyncs every commit.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import msgspec

from plurm.corescheduler import effects as fx
from plurm.corescheduler.accounts import Account, AccountBook, Link, Qos, User
from plurm.wire.model import Job, StepRecord

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (job_id INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS job_scripts (job_id INTEGER PRIMARY KEY, script TEXT, environment BLOB);
CREATE TABLE IF NOT EXISTS dyn_nodes (name TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS acct_jobs (
    job_id INTEGER PRIMARY KEY,
    array_job_id INTEGER,
    user_id INTEGER NOT NULL,
    end_time REAL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS acct_jobs_array ON acct_jobs (array_job_id);
CREATE TABLE IF NOT EXISTS acct_steps (
    job_id INTEGER NOT NULL,
    step_id TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (job_id, step_id)
);
CREATE INDEX IF NOT EXISTS acct_jobs_end ON acct_jobs (end_time);
CREATE TABLE IF NOT EXISTS assoc_accounts (name TEXT PRIMARY KEY, parent TEXT, description TEXT,
                                           organization TEXT, shares INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS assoc_users (name TEXT PRIMARY KEY, default_account TEXT NOT NULL,
                                        admin TEXT NOT NULL DEFAULT 'None');
CREATE TABLE IF NOT EXISTS assoc_links (account TEXT NOT NULL, user TEXT NOT NULL,
                                        shares INTEGER NOT NULL DEFAULT 1, usage REAL NOT NULL DEFAULT 0,
                                        decayed_at REAL NOT NULL DEFAULT 0, PRIMARY KEY (account, user));
CREATE TABLE IF NOT EXISTS assoc_qos (name TEXT PRIMARY KEY, description TEXT,
                                      priority INTEGER NOT NULL DEFAULT 0, max_jobs_per_user INTEGER,
                                      preempt TEXT NOT NULL DEFAULT '', preempt_mode TEXT);
"""

_job_encoder = msgspec.json.Encoder()
_job_decoder = msgspec.json.Decoder(Job)
_step_decoder = msgspec.json.Decoder(StepRecord)
_env_decoder = msgspec.json.Decoder(dict[str, str])


class StoreError(Exception):
    """The store could not read or write (disk full, I/O error, read-only file, server gone)."""


class Fenced(StoreError):
    """Another controller holds the lease: this one may not write (store_pg, lease.py)."""


def _upsert(table: str, columns: str, key: str) -> str:
    """INSERT ... ON CONFLICT DO UPDATE: the one upsert SQLite (3.24+) and PostgreSQL share."""
    names = [c.strip() for c in columns.split(",")]
    keys = {k.strip() for k in key.split(",")}
    updates = ", ".join(f"{n}=excluded.{n}" for n in names if n not in keys)
    return (f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(names))}) "
            f"ON CONFLICT ({key}) DO UPDATE SET {updates}")


_PUT_META = _upsert("meta", "key, value", "key")
_PUT_JOB = _upsert("jobs", "job_id, data", "job_id")
_PUT_SCRIPT = _upsert("job_scripts", "job_id, script, environment", "job_id")
_PUT_ACCT_JOB = _upsert("acct_jobs", "job_id, array_job_id, user_id, end_time, submit_time, data", "job_id")
# sacct -S/-E in SQL: the submission time beside the end (acct_jobs_window); a store from before
# the column gets it filled from the records (WINDOW_FILL; store_pg has its own).
WINDOW_INDEX = "CREATE INDEX IF NOT EXISTS acct_jobs_window ON acct_jobs (end_time, submit_time)"
WINDOW_FILL = "UPDATE acct_jobs SET submit_time = COALESCE(json_extract(data, '$.submit_time'), 0)"

_PUT_ACCT_STEP = _upsert("acct_steps", "job_id, step_id, data", "job_id, step_id")


class SqlStore:
    """The tables and what the controller asks of them, over a DB-API connection.

    A back end sets ``_db`` and may translate the ``?`` placeholders (``_sql``); every
    query goes through ``_run``/``_run_many`` so that a back end's failure becomes a
    StoreError.  Writes are uncommitted until ``commit()`` (the controller's group commit).
    """

    location = ""
    dirty = False  # something was written since the last commit
    # The first failure of this transaction: later writes are skipped and commit() raises it, so
    # a write that fails wherever the controller makes it (a handler, the scheduler) surfaces
    # once, at the group commit, where the whole turn is refused.
    failure: StoreError | None = None
    _db: Any
    _driver_errors: tuple[type[BaseException], ...] = ()

    def _sql(self, query: str) -> str:
        return query

    def _run(self, query: str, params: Sequence[object] = ()) -> Any:
        write = query[0] in "IDU"  # INSERT, DELETE, UPDATE: this turn has something to commit
        if write:
            self.dirty = True
            if self.failure is not None:
                return None  # the transaction is lost already: commit() says so
        try:
            return self._db.execute(self._sql(query), params)
        except self._driver_errors as exc:
            error = self._error(exc)
            self.failure = self.failure or error
            if write:
                return None
            raise error from exc  # a failed read alone does not refuse a turn that wrote nothing

    def _run_many(self, query: str, rows: list[Sequence[object]]) -> None:
        if not rows:
            return
        self.dirty = True
        if self.failure is not None:
            return
        try:
            self._db.executemany(self._sql(query), rows)
        except self._driver_errors as exc:
            self.failure = self._error(exc)

    def _error(self, exc: BaseException) -> StoreError:
        return StoreError(f"{self.location}: {exc}".strip())

    def _check_version(self) -> None:
        version = self.get_meta("schema_version")
        if version is None:
            self.set_meta("schema_version", str(SCHEMA_VERSION))
        elif int(version) > SCHEMA_VERSION:
            raise RuntimeError(f"state store {self.location} was written by a newer plurm (schema {version})")

    # -- transactions
    def commit(self) -> None:
        if self.failure is not None:
            failure = self.failure
            self.rollback()
            raise failure
        try:
            self._db.commit()
        except self._driver_errors as exc:
            raise self._error(exc) from exc
        self.dirty = False

    def end_read(self) -> None:
        """A turn that wrote nothing: end its read transaction, if the driver opened one."""
        if self.failure is not None:
            self.rollback()

    def rollback(self) -> None:
        """Forget this turn's uncommitted writes (after a failed commit)."""
        self.dirty = False
        self.failure = None
        try:
            self._db.rollback()
        except self._driver_errors as exc:
            raise self._error(exc) from exc

    def probe(self) -> None:
        """One small committed write: raises StoreError while the store cannot write."""
        self.set_meta("probe", "1")
        self.commit()

    def close(self) -> None:
        try:
            self._db.commit()
        except self._driver_errors:
            pass  # closing a store that failed: nothing more can be saved
        self._db.close()

    def apply(self, effects: Iterable[fx.Effect]) -> None:
        """Write what the core decided (uncommitted: the controller commits once per turn)."""
        for effect in effects:
            kind = type(effect)
            if kind is fx.SaveJob:
                self.put_job(effect.job)
            elif kind is fx.SaveAcctStep:
                self.put_acct_step(effect.step)
            elif kind is fx.SaveAcctJob:
                self.put_acct_job(effect.job)
            elif kind is fx.SaveScript:
                self.put_script(effect.job_id, effect.script, effect.environment)
            elif kind is fx.CopyScript:
                script, environment = self.get_script(effect.source)
                self.put_script(effect.job_id, script, environment)
            elif kind is fx.DeleteJob:
                self.delete_job(effect.job_id)
            elif kind is fx.SetNextJobId:
                self.set_meta("next_job_id", str(effect.next_job_id))
            else:
                raise TypeError(f"unknown effect {effect!r}")

    # -- meta
    def get_meta(self, key: str) -> str | None:
        row = self._run("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self._run(_PUT_META, (key, value))

    # -- jobs
    def put_job(self, job: Job) -> None:
        self._run(_PUT_JOB, (job.job_id, _job_encoder.encode(job)))

    def put_jobs(self, jobs: Iterable[Job]) -> None:
        self._run_many(_PUT_JOB, [(job.job_id, _job_encoder.encode(job)) for job in jobs])

    def delete_job(self, job_id: int) -> None:
        self._run("DELETE FROM jobs WHERE job_id=?", (job_id,))
        self._run("DELETE FROM job_scripts WHERE job_id=?", (job_id,))

    def load_jobs(self) -> list[Job]:
        return [_job_decoder.decode(row[0]) for row in self._run("SELECT data FROM jobs ORDER BY job_id")]

    def put_script(self, job_id: int, script: str | None, environment: dict[str, str]) -> None:
        self._run(_PUT_SCRIPT, (job_id, script, _job_encoder.encode(environment)))

    def get_script(self, job_id: int) -> tuple[str | None, dict[str, str]]:
        row = self._run("SELECT script, environment FROM job_scripts WHERE job_id=?", (job_id,)).fetchone()
        if row is None:
            return None, {}
        return row[0], _env_decoder.decode(row[1])

    # -- accounting
    def put_acct_job(self, job: Job) -> None:
        self._run(_PUT_ACCT_JOB, (job.job_id, job.array_job_id, job.spec.user_id, job.end_time, job.submit_time,
                                  _job_encoder.encode(job)))

    def put_acct_step(self, step: StepRecord) -> None:
        self._run(_PUT_ACCT_STEP, (step.job_id, step.step_id, _job_encoder.encode(step)))

    def acct_jobs(self, user_ids: list[int] | None = None, since: float | None = None,
                  job_ids: list[int] | None = None, until: float | None = None) -> Iterator[Job]:
        """Finished jobs; ``job_ids`` match a job or every task of an array; ``since``/``until``:
        ended at or after ``since``, submitted at or before ``until`` (sacct -S/-E)."""
        query = "SELECT data FROM acct_jobs"
        clauses: list[str] = []
        params: list[object] = []
        if job_ids:
            marks = ",".join("?" * len(job_ids))
            clauses.append(f"(job_id IN ({marks}) OR array_job_id IN ({marks}))")
            params.extend(job_ids)
            params.extend(job_ids)
        if user_ids:
            clauses.append(f"user_id IN ({','.join('?' * len(user_ids))})")
            params.extend(user_ids)
        if since is not None:  # (a finished job has its end_time: the window's index serves it)
            clauses.append("end_time >= ?")
            params.append(since)
        if until is not None:
            clauses.append("submit_time <= ?")
            params.append(until)
        if clauses:
            query = query.replace("SELECT data", "SELECT job_id, data") + " WHERE " + " AND ".join(clauses)
            # Ordered here, not by SQL: ORDER BY job_id makes the planner scan the table.
            rows = sorted(self._run(query, params).fetchall())
            for _job_id, data in rows:
                yield _job_decoder.decode(data)
            return
        for (data,) in self._run(query + " ORDER BY job_id", params).fetchall():
            yield _job_decoder.decode(data)

    def acct_steps(self, job_ids: list[int]) -> list[StepRecord]:
        if not job_ids:
            return []
        steps: list[StepRecord] = []
        for start in range(0, len(job_ids), 500):
            chunk = job_ids[start:start + 500]
            steps.extend(_step_decoder.decode(row[0]) for row in self._run(
                f"SELECT data FROM acct_steps WHERE job_id IN ({','.join('?' * len(chunk))})", chunk))
        return steps

    # -- associations (sacctmgr's tables; the core holds them as an AccountBook)
    def load_accounts(self, half_life_s: float) -> AccountBook:
        return AccountBook(
            half_life_s=half_life_s,
            accounts_by_name={r[0]: Account(*r) for r in self._run(
                "SELECT name, parent, description, organization, shares FROM assoc_accounts")},
            users_by_name={r[0]: User(*r) for r in self._run("SELECT name, default_account, admin FROM assoc_users")},
            links_by_key={(r[0], r[1]): Link(*r) for r in self._run(
                'SELECT account, "user", shares, usage, decayed_at FROM assoc_links')},
            qos_by_name={r[0]: Qos(r[0], r[1] or "", *r[2:]) for r in self._run(
                "SELECT name, description, priority, max_jobs_per_user, preempt, preempt_mode FROM assoc_qos")})

    def save_accounts(self, book: AccountBook) -> None:
        """Replace the tables with the book (small: a site's accounts, users and QOS)."""
        for table in ("assoc_accounts", "assoc_users", "assoc_links", "assoc_qos"):
            self._run(f"DELETE FROM {table}")
        self._run_many("INSERT INTO assoc_accounts VALUES (?, ?, ?, ?, ?)",
                       [(a.name, a.parent, a.description, a.organization, a.shares)
                        for a in book.accounts_by_name.values()])
        self._run_many("INSERT INTO assoc_users VALUES (?, ?, ?)",
                       [(u.name, u.default_account, u.admin) for u in book.users_by_name.values()])
        self._run_many("INSERT INTO assoc_links VALUES (?, ?, ?, ?, ?)",
                       [(k.account, k.user, k.shares, k.usage, k.decayed_at) for k in book.links_by_key.values()])
        self._run_many("INSERT INTO assoc_qos VALUES (?, ?, ?, ?, ?, ?)",
                       [(q.name, q.description, q.priority, q.max_jobs_per_user, q.preempt, q.preempt_mode)
                        for q in book.qos_by_name.values()])
        book.dirty = False


class StateStore(SqlStore):
    """The embedded back end: one SQLite file (``path``), WAL, synchronous=NORMAL."""

    _driver_errors = (sqlite3.Error, OSError)

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.path = self.location = path
        self._db = sqlite3.connect(path, isolation_level="DEFERRED", check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        sync = os.environ.get("PLURM_STORE_SYNC", "NORMAL").upper()
        self._db.execute(f"PRAGMA synchronous={'FULL' if sync == 'FULL' else 'NORMAL'}")
        self._db.executescript(_SCHEMA)
        if "submit_time" not in {row[1] for row in self._db.execute("PRAGMA table_info(acct_jobs)")}:
            self._db.execute("ALTER TABLE acct_jobs ADD COLUMN submit_time REAL")  # (a store from before it)
            self._db.execute(WINDOW_FILL)
        self._db.execute(WINDOW_INDEX)
        self._check_version()
        self.commit()

    @property
    def db(self) -> sqlite3.Connection:
        """The connection, for stores that share this database and its transactions."""
        return self._db


STATE_FILE = "plurm_state.db"  # inside a StateSaveLocation directory (stores.open_store)


def is_postgresql(location: str | None) -> bool:
    return bool(location) and location.startswith(("postgresql://", "postgres://"))
