"""The state store on PostgreSQL: ``StateSaveLocation=postgresql://USER@HOST:PORT/DB``.

The same tables and semantics as the embedded SQLite store (store.py's SqlStore does
the queries; this module gives the connection, the column types and the placeholders),
plus the ``lease`` row through which two controllers agree on which one writes
(lease.py).  Accounting rows live here too, so sacct reads what the active controller
committed, whichever it is.

The driver is psycopg 3 (the ``postgresql`` extra), imported only when such a URL is
configured.  A broken connection is never reopened in the middle of a transaction (the
turn's first writes would be lost and its last ones committed): ``rollback()`` and
``probe()``, which start a transaction afresh, reconnect.
"""

from __future__ import annotations

from typing import Any

from plurm.corescheduler.store import SCHEMA_VERSION, WINDOW_INDEX, Fenced, SqlStore, StoreError

try:
    import psycopg
except ImportError as _exc:  # pragma: no cover - depends on the installation
    raise RuntimeError("StateSaveLocation=postgresql://... needs psycopg: pip install 'plurm[postgresql]'"
                       ) from _exc

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (job_id BIGINT PRIMARY KEY, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS job_scripts (job_id BIGINT PRIMARY KEY, script TEXT, environment BYTEA);
CREATE TABLE IF NOT EXISTS dyn_nodes (name TEXT PRIMARY KEY, data BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS acct_jobs (
    job_id BIGINT PRIMARY KEY,
    array_job_id BIGINT,
    user_id BIGINT NOT NULL,
    end_time DOUBLE PRECISION,
    data BYTEA NOT NULL
);
CREATE INDEX IF NOT EXISTS acct_jobs_array ON acct_jobs (array_job_id);
CREATE TABLE IF NOT EXISTS acct_steps (
    job_id BIGINT NOT NULL,
    step_id TEXT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (job_id, step_id)
);
CREATE INDEX IF NOT EXISTS acct_jobs_end ON acct_jobs (end_time);
CREATE TABLE IF NOT EXISTS assoc_accounts (name TEXT PRIMARY KEY, parent TEXT, description TEXT,
                                           organization TEXT, shares BIGINT NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS assoc_users (name TEXT PRIMARY KEY, default_account TEXT NOT NULL,
                                        admin TEXT NOT NULL DEFAULT 'None');
CREATE TABLE IF NOT EXISTS assoc_links (account TEXT NOT NULL, "user" TEXT NOT NULL,
                                        shares BIGINT NOT NULL DEFAULT 1,
                                        usage DOUBLE PRECISION NOT NULL DEFAULT 0,
                                        decayed_at DOUBLE PRECISION NOT NULL DEFAULT 0,
                                        PRIMARY KEY (account, "user"));
CREATE TABLE IF NOT EXISTS assoc_qos (name TEXT PRIMARY KEY, description TEXT,
                                      priority BIGINT NOT NULL DEFAULT 0, max_jobs_per_user BIGINT,
                                      preempt TEXT NOT NULL DEFAULT '', preempt_mode TEXT);
CREATE TABLE IF NOT EXISTS lease (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    holder TEXT,
    epoch BIGINT NOT NULL,
    expires TIMESTAMPTZ NOT NULL,
    backend_pid INTEGER,
    handback_to TEXT
);
INSERT INTO lease (id, epoch, expires) VALUES (1, 0, now()) ON CONFLICT (id) DO NOTHING;
"""
_SCHEMA_LOCK = 0x706C75726D  # "plurm": two controllers starting at once create the tables once


class PgStore(SqlStore):
    _driver_errors = (psycopg.Error,)

    def __init__(self, url: str, timeout_s: float = 120.0) -> None:
        self.location = _redacted(url)
        self._url = url
        self.timeout_s = timeout_s
        self.lease: Any = None  # lease.Lease once this controller takes part in the election
        self._db = None
        self._db_seen = False
        try:
            self._connect()
        except StoreError as exc:
            raise RuntimeError(f"cannot open the state store {self.location}: {exc}") from None
        try:
            self._run("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))
            self._db.execute(_SCHEMA)
            self._add_window_column()  # (sacct -S/-E in SQL: store.WINDOW_INDEX)
            self._check_version()
            super().commit()
        except (StoreError, psycopg.Error) as exc:
            raise RuntimeError(f"cannot create the tables in {self.location}: {exc}") from None

    def _add_window_column(self) -> None:
        """acct_jobs.submit_time, filled from the records of a store from before it, and its index."""
        if not self._run("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()"
                         " AND table_name = 'acct_jobs' AND column_name = 'submit_time'").fetchone():
            self._run("ALTER TABLE acct_jobs ADD COLUMN submit_time DOUBLE PRECISION")
            self._run("UPDATE acct_jobs SET submit_time = "
                      "COALESCE((convert_from(data, 'UTF8')::jsonb->>'submit_time')::float8, 0)")
        self._run(WINDOW_INDEX)

    def set_timeout(self, timeout_s: float) -> None:
        """SlurmctldTimeout: the lease's length, and how long a stuck session may hold locks."""
        self.timeout_s = timeout_s
        self._session_settings()

    def _connect(self) -> None:
        try:
            self._db = psycopg.connect(
                # Short: a reconnect runs in the controller's loop, which answers nothing meanwhile.
                self._url, connect_timeout=2 if self._db_seen else 5, autocommit=False,
                # A cut network is noticed by the kernel within seconds, not TCP's 15 minutes.
                keepalives=1, keepalives_idle=5, keepalives_interval=2, keepalives_count=3,
                tcp_user_timeout=int(max(2.0, self.timeout_s / 2) * 1000))
            self._session_settings()
            self._db_seen = True
        except psycopg.Error as exc:
            self._db = None
            raise self._error(exc) from exc

    def _session_settings(self) -> None:
        """A controller paused in a transaction (SIGSTOP) must not hold the lease row or job rows
        past its lease: the server ends such a session; a lock wait gives up instead of hanging."""
        if self._db is None:
            return
        half = int(max(1.0, self.timeout_s / 2) * 1000)
        self._run(f"SET idle_in_transaction_session_timeout = {half}")
        self._run(f"SET lock_timeout = {min(half, 5000)}")
        super().commit()

    def _sql(self, query: str) -> str:
        return query.replace("?", "%s")

    def _run(self, query: str, params: Any = ()) -> Any:
        if self._db is None or self._db.broken or self._db.closed:
            error = StoreError(f"{self.location}: the connection to the server was lost")
            self.failure = self.failure or error
            if query[0] in "IDU":
                self.dirty = True
                return None  # as SqlStore._run: a write's failure waits for the commit
            raise error
        return super()._run(query, params)

    def _run_many(self, query: str, rows: list[Any]) -> None:
        if not rows:
            return
        self.dirty = True
        if self.failure is not None:
            return
        if self._db is None or self._db.broken or self._db.closed:
            self.failure = StoreError(f"{self.location}: the connection to the server was lost")
            return
        try:
            with self._db.cursor() as cursor:  # psycopg's executemany is the cursor's
                cursor.executemany(self._sql(query), rows)
        except psycopg.Error as exc:
            self.failure = self._error(exc)

    @property
    def connected(self) -> bool:
        return self._db is not None and not self._db.broken and not self._db.closed

    def reconnect_if_broken(self) -> None:
        if not self.connected:
            if self._db is not None:
                try:
                    self._db.close()
                except psycopg.Error:
                    pass
            self._connect()

    # -- transactions: every commit of the lease holder renews the lease in the same transaction
    def commit(self) -> None:
        if self.failure is not None:
            failure = self.failure
            self.rollback()
            raise failure
        if self.lease is not None:  # only the holder writes, and only while it still holds it
            try:
                if self.lease.epoch is None:
                    raise Fenced(f"{self.lease.holder} does not hold the lease: it may not write")
                self.lease.renew_in_transaction()
            except Fenced:
                self.rollback()
                raise
        super().commit()

    def end_read(self) -> None:
        if self.failure is not None:
            self.rollback()
            return
        if self.connected and self._db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            try:
                self._db.commit()
            except psycopg.Error:
                pass  # a read transaction: nothing of it needed keeping

    def rollback(self) -> None:
        self.dirty = False
        self.failure = None
        try:
            if self.connected:
                super().rollback()
            else:
                self.reconnect_if_broken()
        except StoreError:
            try:
                self.reconnect_if_broken()
            except StoreError:
                pass  # the server is still gone: the next statement says so (probe() retries)

    def probe(self) -> None:
        self.reconnect_if_broken()
        super().probe()

    def close(self) -> None:
        if self._db is not None and self.connected:
            super().close()


def _redacted(url: str) -> str:
    """The URL without a password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if at and ":" in creds:
        creds = creds.split(":", 1)[0] + ":***"
    return f"{scheme}{sep}{creds}{at}{host}"


__all__ = ["PgStore", "SCHEMA_VERSION"]
