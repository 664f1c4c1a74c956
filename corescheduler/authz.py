"""Who may do what to a job, and what a request may carry: Slurm's rules, pure.

Privilege comes in three levels (accounts.py: ``ADMIN_NONE``, ``ADMIN_OPERATOR``,
``ADMIN_SUPER``): root and SlurmUser (``Identity.operator``, resolved by the shell)
and the daemon itself (``who`` is None) are super users; anyone else has the
AdminLevel sacctmgr gave their user name (None when the book does not know them).

- A user acts on their own jobs only (cancel, signal, hold, release, update);
  an Operator or Administrator on every job.
- An owner who is not an operator may lower a job's time limit, and raise it only
  while the job is pending and within its partition's MaxTime; may not set its
  priority at all (higher: access denied; lower: "not persistent, change nice
  instead"); may give it a nice value >= 0 but not a negative one; may move it only
  to a partition they may submit to; their hold is a user hold, which they may
  release and which leaves an admin hold in place; an operator's hold is an admin
  hold, which they may not release.  Someone else's job: "Invalid user id" for an
  update or a hold, "Access/permission denied" for a cancel or a signal.
- A submission's strings are bounded as Slurm bounds them (a batch script by
  SchedulerParameters=max_script_size, 4 MiB by default; a job name, comment or
  account to 1024 characters; a dependency to 128 KiB); a longer one is refused.

The core (update_job, cancel, submit) and the service layer (node updates,
sacctmgr, PrivateData) call these; both are pure and so is this module.
"""

from __future__ import annotations

from typing import Any

from plurm.corescheduler.accounts import ADMIN_NONE, ADMIN_OPERATOR, ADMIN_SUPER, AccountBook
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity

ACCESS_DENIED = "Access/permission denied"
USER_ID_MISSING = "Invalid user id"  # what Slurm answers an update or hold of someone else's job
PRIO_RESET_FAIL = "Changes to job priority are not persistent, change nice instead"
PART_UNAVAILABLE = "Requested partition configuration not available now"
TOO_LONG = "Pathname of a file, directory or other parameter too long"
JOB_HELD = "Job is in held state, pending scheduler release"

DEFAULT_MAX_SCRIPT_SIZE = 4 * 1024 * 1024  # SchedulerParameters=max_script_size

# A submission's strings and the most characters Slurm's controller accepts in each.
STRING_LIMITS = {"name": 1024, "comment": 1024, "account": 1024, "partition": 1024, "qos": 1024,
                 "dependency": 128 * 1024, "work_dir": 4096, "stdout": 4096, "stderr": 4096, "stdin": 4096}

NICE_LIMIT = 2147483645  # |nice| at most NICE_OFFSET - 3, as scontrol and sbatch check
PRIORITY_MAX = 4294967294  # a uint32 below Slurm's INFINITE


def level_of(who: Identity | None, book: AccountBook) -> int:
    """The privilege level of a request's sender."""
    if who is None or who.operator:
        return ADMIN_SUPER
    return book.admin_level(who.user) if book is not None else ADMIN_NONE


def is_operator(who: Identity | None, book: AccountBook) -> bool:
    return level_of(who, book) >= ADMIN_OPERATOR


def is_admin(who: Identity | None, book: AccountBook) -> bool:
    return level_of(who, book) >= ADMIN_SUPER


def denied(message: str = ACCESS_DENIED, detail: str | None = None) -> RequestError:
    """A refusal for want of privilege (code AccessDenied, whichever of Slurm's words it has)."""
    return RequestError(message, "AccessDenied", detail)


def _longer(wanted: int | None, than: int | None) -> bool:
    """Whether time limit ``wanted`` exceeds ``than`` (None: UNLIMITED)."""
    return than is not None and (wanted is None or wanted > than)


def check_owner_update(job: Any, changes: Any, unset: Any, max_time: int | None) -> None:
    """The limits on what a job's owner who is no operator may change (Slurm's update_job);
    ``max_time`` is the MaxTime of the job's partition (None: INFINITE)."""
    if changes.time_limit is not unset and _longer(changes.time_limit, job.time_limit):
        # Longer: while the job is pending and within its partition's MaxTime only.
        if job.state != "PENDING" or _longer(changes.time_limit, max_time):
            raise denied()
    if changes.priority is not None and changes.priority != job.priority:
        # Never a priority of one's own choosing: higher is refused, lower would not last.
        raise denied() if changes.priority > job.priority else RequestError(PRIO_RESET_FAIL, "PrioResetFail")
    if changes.nice is not None and changes.nice < 0 and changes.nice != job.spec.nice:
        raise denied()  # a negative nice raises priority: operators only
    if changes.release and job.held_by == "admin":
        raise denied()  # an operator's hold is the operator's to release


def check_submission(spec: Any, max_script_size: int, privileged: bool) -> None:
    """Refuse what Slurm's controller refuses before it looks at resources."""
    for name, limit in STRING_LIMITS.items():
        value = getattr(spec, name, None)
        if value is not None and len(value) > limit:
            raise RequestError(TOO_LONG, "PathnameTooLong")  # (slurmctld logs job_desc.NAME too long)
    script = spec.script
    if script is not None and len(script) * 4 > max_script_size:  # (4: the most bytes a character takes)
        size = len(script.encode("utf-8", "surrogateescape"))
        if size > max_script_size:
            raise RequestError(TOO_LONG, "PathnameTooLong")
    if spec.nice and abs(spec.nice) > NICE_LIMIT:
        raise RequestError("Invalid nice value", "InvalidNice")
    if spec.nice < 0 and not privileged:
        raise denied()
