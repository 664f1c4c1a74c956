"""Pause CPython's cyclic garbage collector for the length of one scheduling pass.

A pass over a long queue allocates hundreds of thousands of short-lived,
acyclic objects (allocations, reservations, tuples) while the controller
holds as many long-lived ones (jobs, their specs).  Every few hundred
allocations trigger a collection, and every few of those a full one that
walks every live job: at 10,000 nodes x 100,000 jobs that was about 1 s of
a 5.6 s backfill pass (docs/performance.md).  Reference counting frees what
a pass drops, so nothing waits for the collector; it runs again after.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block (also as a decorator); nests."""
    if not gc.isenabled():  # paused by an enclosing pass (or by the program): leave it so
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
