"""An opt-in CPU profile of a daemon's main loop, for finding where a job's time goes.

``PLURM_CPROFILE=DIR`` in a daemon's environment runs its loop under cProfile timed by the
calling thread's CPU clock (``time.thread_time``: CPU spent, not time waited; the kernel's
share of fork, mkdir and writes included), and writes ``DIR/<daemon>-<pid>.prof`` when the
loop returns (a clean stop: SIGTERM).  Read it with ``python -m pstats``.  Unset, this costs
one environment lookup at start.  Processes forked from a profiled loop (a run's supervisor)
leave by ``os._exit`` and write nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def run(loop: Callable[[], None]) -> None:
    """``loop()``, profiled when PLURM_CPROFILE names a directory."""
    where = os.environ.get("PLURM_CPROFILE")
    if not where:
        loop()
        return
    import cProfile
    import time

    profile = cProfile.Profile(time.thread_time)
    profile.enable()
    try:
        loop()
    finally:
        profile.disable()
        name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] != "-m" else "daemon"
        if name in ("__main__.py", "-c", ""):
            name = "daemon"
        os.makedirs(where, exist_ok=True)
        profile.dump_stats(os.path.join(where, f"{name}-{os.getpid()}.prof"))
