"""Exactly one active controller: a lease row in PostgreSQL, with fencing.

The ``lease`` row (store_pg's schema) says who holds control (``holder``, a SlurmctldHost
name), since which election (``epoch``), until when (``expires``, computed by the
server's clock, so no two hosts' clocks are compared) and from which server session
(``backend_pid``).

- **Fencing**: every write transaction of the active controller renews the lease under
  the row's lock with its epoch (``UPDATE lease ... WHERE holder=me AND epoch=mine``).  The
  update must hit the row, else the transaction is rolled back and the controller steps
  down (store.Fenced).  A controller that comes back after a pause (SIGSTOP, a cut
  network) finds a newer epoch and can never write.  The idle controller renews about
  every second through the same path (an empty commit).
- **Takeover**: a standby takes the lease (``epoch + 1``) when it has expired, when it was
  released, or when the holder's server session is gone (kill -9 closes the connection:
  the standby need not wait out the whole timeout; fencing makes this safe even if the
  holder were alive).  A SIGSTOPped holder keeps its session, so there only time counts.
- **Hand-back** (slurm.conf(5), ``scontrol takeover``): a controller asks for control by
  naming itself in ``handback_to``; the holder sees it on its next renewal, commits and
  releases; the lease then goes only to the one that asked (or to anyone after one more
  timeout, should it have died meanwhile).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from plurm.corescheduler.store import Fenced, StoreError

log = logging.getLogger("plurmctld")

_ACQUIRE = """
UPDATE lease SET holder = %(me)s, epoch = epoch + 1, expires = now() + %(t)s * interval '1 second',
                 backend_pid = pg_backend_pid(), handback_to = NULL
 WHERE id = 1
   AND (holder IS NULL OR holder = %(me)s OR expires < now()
        OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = lease.backend_pid))
   AND (handback_to IS NULL OR handback_to = %(me)s OR expires < now() - %(t)s * interval '1 second')
RETURNING epoch
"""
_RENEW = """
UPDATE lease SET expires = now() + %(t)s * interval '1 second', backend_pid = pg_backend_pid()
 WHERE id = 1 AND holder = %(me)s AND epoch = %(epoch)s
RETURNING handback_to
"""
_RELEASE = """
UPDATE lease SET holder = NULL, expires = now(), handback_to = %(to)s
 WHERE id = 1 AND holder = %(me)s AND epoch = %(epoch)s
"""
_REQUEST = "UPDATE lease SET handback_to = %(me)s WHERE id = 1 AND holder IS DISTINCT FROM %(me)s"
_STATUS = """
SELECT holder, epoch, EXTRACT(EPOCH FROM expires - now()),
       EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = lease.backend_pid), handback_to
  FROM lease WHERE id = 1
"""


@dataclass(frozen=True)
class LeaseState:
    holder: str | None
    epoch: int
    expires_in_s: float
    holder_connected: bool
    handback_to: str | None


class Lease:
    """One controller's side of the election, over its store's connection (store_pg.PgStore)."""

    def __init__(self, store, holder: str, timeout_s: float) -> None:
        self.store = store
        self.holder = holder
        self.timeout_s = timeout_s
        self.epoch: int | None = None  # set while this controller holds the lease
        self.handback_to: str | None = None  # who asked for control at the last renewal
        store.lease = self

    def _params(self, **extra: object) -> dict[str, object]:
        return dict(me=self.holder, t=self.timeout_s, epoch=self.epoch, **extra)

    def _execute(self, sql: str, params: dict[str, object]):
        db = self.store._db
        if not self.store.connected:
            raise StoreError(f"{self.store.location}: the connection to the server was lost")
        try:
            return db.execute(sql, params)
        except self.store._driver_errors as exc:
            raise self.store._error(exc) from exc

    def _commit(self) -> None:
        from plurm.corescheduler.store import SqlStore

        SqlStore.commit(self.store)  # the plain commit: PgStore.commit would renew first

    def try_acquire(self) -> bool:
        """Take the lease if it is free, expired or its holder's session is gone (its own
        transaction: call it with nothing else uncommitted)."""
        self.store.rollback()  # also reconnects a broken connection
        row = self._execute(_ACQUIRE, self._params()).fetchone()
        self._commit()
        if row is None:
            return False
        self.epoch = int(row[0])
        self.handback_to = None
        return True

    def renew_in_transaction(self) -> None:
        """Inside the caller's transaction (store_pg.PgStore.commit): still ours, or Fenced."""
        row = self._execute(_RENEW, self._params()).fetchone()
        if row is None:
            epoch, self.epoch = self.epoch, None
            raise Fenced(f"the lease (epoch {epoch}) is no longer {self.holder}'s: another controller took over")
        self.handback_to = row[0]

    def release(self, to: str | None = None) -> None:
        """Give control up (after committing), to ``to`` when someone asked for it."""
        if self.epoch is None:
            return
        try:
            self._execute(_RELEASE, self._params(to=to))
            self._commit()
        finally:
            self.epoch = None

    def request(self) -> None:
        """Ask the holder to hand control to this controller (its own transaction)."""
        self.store.rollback()
        self._execute(_REQUEST, self._params())
        self._commit()

    def state(self) -> LeaseState:
        self.store.rollback()
        row = self._execute(_STATUS, {}).fetchone()
        self._commit()
        return LeaseState(row[0], int(row[1]), float(row[2]), bool(row[3]), row[4])
