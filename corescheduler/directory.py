"""The system's user database, read by the controller shell (never by the core).

Resolves an authenticated uid and gid to an ``Identity``: the user's name (the uid
as text when the user is unknown, as Slurm shows it) and the names of all the
user's groups (for partitions' AllowGroups).  Results are cached for a minute:
every request resolves its sender, and NSS look-ups can be slow (LDAP, sssd).
"""

from __future__ import annotations

import grp
import os
import pwd
import time

from plurm.corescheduler.identity import Identity

CACHE_S = 60.0


class Directory:
    def __init__(self, slurm_uid: int | None = None) -> None:
        self.slurm_uid = os.getuid() if slurm_uid is None else slurm_uid
        self._cache: dict[tuple[int, int], tuple[float, Identity]] = {}

    def identity(self, uid: int, gid: int) -> Identity:
        now = time.monotonic()
        hit = self._cache.get((uid, gid))
        if hit is not None and now - hit[0] < CACHE_S:
            return hit[1]
        name = user_name(uid)
        known = name != str(uid)
        try:
            groups = frozenset(grp.getgrgid(g).gr_name for g in os.getgrouplist(name, gid))
        except (KeyError, OSError):
            groups = frozenset()
        who = Identity(uid, gid, name, groups, operator=uid in (0, self.slurm_uid), known=known or uid == 0)
        self._cache[(uid, gid)] = (now, who)
        return who

    @staticmethod
    def resolve_user(text: str) -> int | None:
        """A user name or uid (sbatch --uid) as a uid; None when no such user exists."""
        try:
            return pwd.getpwnam(text).pw_uid
        except KeyError:
            if text.isdigit():
                try:
                    return pwd.getpwuid(int(text)).pw_uid
                except KeyError:
                    return None
            return None

    @staticmethod
    def resolve_group(text: str) -> int | None:
        """A group name or gid (sbatch --gid) as a gid; None when no such group exists."""
        try:
            return grp.getgrnam(text).gr_gid
        except KeyError:
            return int(text) if text.isdigit() else None

    def cluster_identity(self) -> Identity:
        """The controller's own user, for what the cluster does by itself (draining a node)."""
        return self.identity(self.slurm_uid, os.getgid())


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
