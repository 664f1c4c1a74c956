"""A submission that survives a busy or slow controller: Slurm's sbatch retry, made safe.

What Slurm's sbatch does when slurmctld answers EAGAIN (too busy, or MaxJobCount reached):
it prints ``sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying``
once, sleeps 1 s, 2 s, 3 s ... and tries again, at most 15 times; past that it fails with
``Batch job submission failed: Resource temporarily unavailable``.  srun and salloc do the same
with their own lines (BUSY_LINES: the texts as the 22.05.8 binaries here hold them, the
trailing period or its absence included).

What plurm adds: every submission carries a fresh idempotency key
(corescheduler/idempotency.py), so when a reply is lost or late (``Socket timed out on
send/recv operation``) the command may send the same submission again: the controller
answers with the job the first attempt made, if it made one, instead of a second job.
Slurm's sbatch gives up on a timeout, and the job it may have created is one the user
does not know of; plurm retries a timeout a few times before giving up.

Kept light (stdlib only): it sits on sbatch's path.
"""

from __future__ import annotations

import os
import sys
import time

from plurm.wire.client import ClientError

TYPE_CHECKING = False  # (typing costs ~2.5 ms where site has not imported it: annotations only)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, Any

BUSY_CODE = "Busy"  # the controller's refusal under overload (corescheduler/admission.py)
MAX_RETRIES = 15  # as Slurm's sbatch
TIMEOUT_RETRIES = 2  # resends after a timed-out reply (safe: the key)
BUSY_LINES = {"sbatch": "Slurm temporarily unable to accept job, sleeping and retrying",
              "srun": "Slurm controller not responding, sleeping and retrying.",
              "salloc": "Slurm job queue full, sleeping and retrying."}
BUSY_LINE = BUSY_LINES["sbatch"]


def new_key() -> str:
    """A submission's key: random, within idempotency.check_key's alphabet."""
    return "sb:" + os.urandom(9).hex()


def submit_retrying(send: Callable[[], dict[str, Any]], prog: str = "sbatch", stderr: IO[str] | None = None,
                    sleep: Callable[[float], None] = time.sleep, max_retries: int = MAX_RETRIES,
                    timeout_retries: int = TIMEOUT_RETRIES) -> dict[str, Any]:
    """``send()`` (one submission, the same key every time) until it is answered.

    Busy: the first refusal prints Slurm's line, each retry sleeps one second longer than the
    last; after ``max_retries`` the refusal is raised.  Timeout: sent again at once, at most
    ``timeout_retries`` times.  Any other error is raised as it is."""
    busy = timeouts = 0
    while True:
        try:
            return send()
        except ClientError as exc:
            if exc.code == BUSY_CODE and busy < max_retries:
                if busy == 0:
                    print(f"{prog}: error: {BUSY_LINES.get(prog, BUSY_LINE)}", file=stderr or sys.stderr,
                          flush=True)
                busy += 1
                sleep(float(busy))
                continue
            if exc.code == "Timeout" and timeouts < timeout_retries:
                timeouts += 1
                continue
            raise
