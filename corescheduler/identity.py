"""Who sent a request, as the core sees it: resolved before the core is called.

The controller resolves the uid and gid of an authenticated request to a user name
and the names of the user's groups (pwd/grp, corescheduler/directory.py); the core
and the service layer only read this record, so tests and the simulator give
identities without any user database.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Identity:
    uid: int
    gid: int
    user: str
    groups: frozenset[str] = field(default_factory=frozenset)  # names of every group the user is in
    # The cluster's own administrators: root and the user the controller runs as (SlurmUser).
    operator: bool = False
    known: bool = True  # False: the user database has no such uid (Slurm refuses its requests)


def anonymous(uid: int, gid: int) -> Identity:
    """An identity with no user database behind it: the user is named by the uid."""
    return Identity(uid, gid, str(uid), operator=uid == 0)
