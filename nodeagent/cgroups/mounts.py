"""Which cgroup file systems are mounted where, from /proc/self/mounts (never guessed from
directory names: an empty /sys/fs/cgroup/memory directory is not a memory hierarchy)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

MOUNTS = "/proc/self/mounts"


@dataclass(frozen=True)
class Mount:
    path: str
    fstype: str  # "cgroup" (v1) or "cgroup2"
    options: frozenset[str]


def _unescape(field: str) -> str:
    # The kernel writes space, tab, newline and backslash in mount paths as \ooo.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def cgroup_mounts(mounts_file: str = MOUNTS) -> list[Mount]:
    try:
        with open(mounts_file, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out: list[Mount] = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 4 and fields[2] in ("cgroup", "cgroup2"):
            out.append(Mount(_unescape(fields[1]), fields[2], frozenset(fields[3].split(","))))
    return out


def v1_controllers(mounts: list[Mount], mountpoint: str) -> dict[str, str]:
    """controller -> the directory of its v1 hierarchy, preferring ``<mountpoint>/<name>``
    (Slurm's layout; a co-mounted ``cpu,cpuacct`` answers for both names) and else any mount
    of it under ``mountpoint``."""
    real_mp = os.path.realpath(mountpoint)
    out: dict[str, str] = {}
    for mount in mounts:
        if mount.fstype != "cgroup":
            continue
        real = os.path.realpath(mount.path)
        if real != real_mp and not real.startswith(real_mp.rstrip("/") + "/"):
            continue
        for option in mount.options:
            name = option.removeprefix("name=")
            preferred = os.path.realpath(os.path.join(mountpoint, name)) == real
            if name not in out or preferred:
                out[name] = mount.path
    return out


def v2_mount(mounts: list[Mount], mountpoint: str) -> str | None:
    """The cgroup2 mount at exactly ``mountpoint``, if that is one."""
    real_mp = os.path.realpath(mountpoint)
    for mount in mounts:
        if mount.fstype == "cgroup2" and os.path.realpath(mount.path) == real_mp:
            return mount.path
    return None
