"""Real test users on this machine, created by the fixtures (never by hand).

Multi-user tests (authorization, jobs run as their owners) need real accounts:
``ensure_test_users()`` creates them with useradd when the tests run as root (CI
does) and returns their records; without root it raises ``Unavailable`` with the
reason, which the fixtures turn into a skip.  The accounts are left in place after
the run (creating them again costs a fork of useradd each), and their names start
with ``plurmt`` so that they never collide with real users.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

GROUP = "plurmtgrp"  # a supplementary group both test users are in
USERS = ("plurmta", "plurmtb", "plurmtop")  # plurmtop: made an Operator (sacctmgr) where a test needs one


class Unavailable(Exception):
    pass


@dataclass(frozen=True)
class TestUser:
    name: str
    uid: int
    gid: int
    home: str
    groups: tuple[int, ...]  # every gid the user is in, primary first

    __test__ = False  # not a pytest test class


def _record(name: str) -> TestUser:
    entry = pwd.getpwnam(name)
    groups = os.getgrouplist(name, entry.pw_gid)
    return TestUser(name, entry.pw_uid, entry.pw_gid, entry.pw_dir,
                    tuple([entry.pw_gid] + [g for g in groups if g != entry.pw_gid]))


def ensure_test_users() -> dict[str, TestUser]:
    """plurmta, plurmtb and plurmtop, each with a primary group of its own and in plurmtgrp."""
    if os.geteuid() != 0:
        raise Unavailable("creating test users needs root (CI runs as root)")
    if shutil.which("useradd") is None:
        raise Unavailable("useradd is not installed")
    try:
        grp.getgrnam(GROUP)
    except KeyError:
        subprocess.run(["groupadd", GROUP], check=True, capture_output=True)
    for name in USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "--create-home", "--user-group", "--groups", GROUP,
                            "--shell", "/bin/sh", name], check=True, capture_output=True)
    make_reachable(Path(sys.executable).resolve(), Path(sys.prefix), Path(__file__).resolve().parents[1])
    return {name: _record(name) for name in USERS}


def make_reachable(*paths: Path) -> None:
    """Let every user pass through the folders above ``paths`` (search permission, o+x:
    no listing, no reading): the test users run this Python (pyenv puts it under
    /root, mode 0700 on Debian) and this checkout's plurm."""
    for path in paths:
        for folder in reversed(path.parents if path.is_file() else [path, *path.parents]):
            mode = folder.stat().st_mode
            if not mode & stat.S_IXOTH:
                folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)


def as_user(user: TestUser) -> dict:
    """subprocess keyword arguments that run a command as ``user`` (uid, gid, groups, umask)."""
    return {"user": user.uid, "group": user.gid, "extra_groups": list(user.groups), "umask": 0o022}
