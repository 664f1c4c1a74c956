"""Admission control: under overload a submission is refused at once with Slurm's EAGAIN
("Resource temporarily unavailable"), never left to time out half-way.

Why: the controller answers in turns (controller.py: drain a batch, handle it, commit,
reply).  A client whose reply comes after its timeout (MessageTimeout, 10 s) reports a
failure although its job may be committed a moment later: a half-accepted submission.
Refusing early keeps each turn short and tells the client the truth: nothing was recorded,
retry.  sbatch then sleeps and retries as Slurm's does ("Slurm temporarily unable to
accept job, sleeping and retrying": wire/busy_retry.py), resending the same idempotency
key, so a retry after a lost reply never makes a second job (idempotency.py).

Four bounds, each refusing with code ``Busy``:

* ``MaxJobCount`` (slurm.conf), when the file sets it: the job records the controller holds
  (finished ones count until MinJobAge purges them), as Slurm counts them.  Unset, plurm sets
  no bound (Slurm's default of 10,000 would refuse the million-job workloads plurm serves);
* ``SchedulerParameters=max_submit_per_turn=N`` (plurm's; 0 or absent: no bound): the
  submissions one turn accepts; the rest of the turn's submissions are refused;
* a turn's time budget (MessageTimeout / 5, 2 s by default): once a turn has spent that long
  handling requests, its remaining submissions are refused, so that the replies already due
  go out long before any client's timeout;
* a submission sealed longer ago than MessageTimeout + STALE_SLACK_S (by the header's time, as
  the controller's clock reads it): its client has given up waiting (each resend is sealed
  anew), so recording it would make the job nobody was told of.  The slack allows for clock
  skew between hosts; a client still waiting is told to retry.  Only a submission without an
  idempotency key meets this bound: a keyed one cannot become a second job (a retry is
  answered with the first), and the header's time is the client's clock -- a host whose
  clock is behind by more than the slack would otherwise never submit (sbatch, srun and
  salloc always send a key).

A resubmission whose key names a job already made is never refused: it is answered with that
job (the answer the client missed).  Bulk submissions (plurm.api's ``submit_jobs``) are one
request: the budget and the per-turn bound judge the message once (a message of 10,000 may
take longer than the budget: it is not cut short), MaxJobCount each entry.  ``--test-only`` records nothing and is never refused.

No I/O here: the controller passes the clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plurm.corescheduler.errors import RequestError

BUSY_CODE = "Busy"
BUSY_MESSAGE = "Resource temporarily unavailable"  # strerror(EAGAIN), what Slurm's sbatch prints last
DEFAULT_MESSAGE_TIMEOUT_S = 10.0
BUDGET_SHARE = 0.2  # of MessageTimeout: the turn's handling time before submissions are refused
STALE_SLACK_S = 5.0  # past MessageTimeout: a submission this old has no client waiting for it
# The controller's listen backlog, as slurmctld's (ss -ltn shows 4096 for it here; libzmq's default
# is 100): a storm's connections wait in the kernel's accept queue while the daemon is busy, instead
# of having their SYNs dropped and retried 1 s, 3 s, 7 s later.
LISTEN_BACKLOG = 4096


class Admission:
    """Whether this turn may take one more submission (see the module's text)."""

    def __init__(self, max_job_count: int = 0, per_turn: int = 0,
                 budget_s: float = DEFAULT_MESSAGE_TIMEOUT_S * BUDGET_SHARE,
                 stale_s: float = DEFAULT_MESSAGE_TIMEOUT_S + STALE_SLACK_S) -> None:
        self.max_job_count = max_job_count  # 0: no bound
        self.per_turn = per_turn  # 0: no bound
        self.budget_s = budget_s
        self.stale_s = stale_s
        self.turn_started = 0.0
        self.accepted = 0  # submissions admitted this turn
        self.refused = 0  # since the start (sdiag-like counter; logged by the controller)

    @classmethod
    def from_conf(cls, conf: Any) -> Admission:
        from plurm.corescheduler.configure import sched_param_int

        raw_timeout = conf.get("MessageTimeout")
        try:
            timeout = float(raw_timeout) if raw_timeout else DEFAULT_MESSAGE_TIMEOUT_S
        except ValueError:
            timeout = DEFAULT_MESSAGE_TIMEOUT_S
        max_jobs = conf.get("MaxJobCount")
        return cls(max_job_count=int(max_jobs) if max_jobs and max_jobs.isdigit() else 0,
                   per_turn=sched_param_int(conf.get("SchedulerParameters") or "", "max_submit_per_turn", 0),
                   budget_s=max(0.1, timeout * BUDGET_SHARE), stale_s=timeout + STALE_SLACK_S)

    def new_turn(self, now: float) -> None:
        """The controller begins draining a batch of requests (``now``: a monotonic clock)."""
        self.turn_started = now
        self.accepted = 0

    def admit(self, now: float, jobs: Mapping[int, Any], msg: Any, uid: int, submit_keys: Any,
              entry_of_bulk: bool = False, age: float = 0.0) -> None:
        """Raise the Busy refusal unless this submission may be recorded now (``age``: how long
        ago its message was sealed, by the controller's wall clock)."""
        if getattr(msg, "test_only", False):
            return
        key = getattr(msg, "key", None)
        if key is not None and submit_keys.find(uid, key) is not None:
            return  # a retry of a job already made: answered with it (idempotency.py)
        if self.max_job_count and len(jobs) >= self.max_job_count:
            self._refuse()
        if not entry_of_bulk:  # (a bulk message was admitted whole: admit_bulk)
            self._admit_one(now, 0.0 if key is not None else age)

    def admit_bulk(self, now: float, age: float = 0.0) -> None:
        """A bulk message: its age, the time budget and the per-turn bound once for the whole
        message (its entries meet MaxJobCount each: :meth:`admit`)."""
        self._admit_one(now, age)

    def _admit_one(self, now: float, age: float) -> None:
        if age > self.stale_s or now - self.turn_started > self.budget_s:
            self._refuse()
        if self.per_turn:
            if self.accepted >= self.per_turn:
                self._refuse()
            self.accepted += 1

    def _refuse(self) -> None:
        self.refused += 1
        raise RequestError(BUSY_MESSAGE, BUSY_CODE)
