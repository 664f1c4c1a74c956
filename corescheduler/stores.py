"""Which state store StateSaveLocation names (apart from store.py, which store_pg builds on:
no import cycle between the two back ends)."""

from __future__ import annotations

import os
import sqlite3

from plurm.corescheduler.store import STATE_FILE, SqlStore, StateStore, is_postgresql


def open_store(location: str) -> SqlStore:
    """A PostgreSQL URL, else a directory holding the SQLite file.  The PostgreSQL driver is
    imported only here, only for such a URL."""
    if is_postgresql(location):
        from plurm.corescheduler.store_pg import PgStore

        return PgStore(location)
    os.makedirs(location, exist_ok=True)
    path = os.path.join(location, STATE_FILE)
    try:
        return StateStore(path)
    except sqlite3.Error as exc:  # sqlite's own words do not say which file
        raise RuntimeError(f"cannot open the state store {path}: {exc}") from None
