"""cgroup.conf, beside slurm.conf: which constraints the cgroup plugins apply, and the memory
arithmetic of Slurm 22.05's task/cgroup (``man cgroup.conf``).

Same line syntax as slurm.conf (``Key=Value``, case-insensitive keys, ``#`` comments,
``Include``).  A missing file means Slurm's defaults.  An unknown key is an error, as Slurm
refuses it ("Parsing error at unrecognized key"); the two keys 22.05 still accepts but
ignores (``CgroupReleaseAgentDir``, ``AllowedDevicesFile``) give a warning.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass

from plurm.grammar import confsyntax
from plurm.grammar.confsyntax import Loc
from plurm.nodeagent.cgroups.base import CgroupError, Limits

log = logging.getLogger("plurmd")

PLUGINS = ("autodetect", "cgroup/v1", "cgroup/v2")
MIB = 1 << 20


class ConfError(CgroupError, confsyntax.ConfError):
    """A bad cgroup.conf line; the message starts with ``FILE:LINE:``."""


@dataclass
class CgroupConf:
    plugin: str = "autodetect"  # CgroupPlugin
    mountpoint: str = "/sys/fs/cgroup"  # CgroupMountpoint
    constrain_cores: bool = False
    constrain_ram: bool = False
    allowed_ram_percent: float = 100.0
    constrain_swap: bool = False
    allowed_swap_percent: float = 0.0
    min_ram_mb: int = 30  # MinRAMSpace
    constrain_devices: bool = False
    # Read and kept; only the ones above change what plurm does.
    automount: bool = False
    ignore_systemd: bool = False
    ignore_systemd_on_failure: bool = False
    max_ram_percent: float = 100.0
    max_swap_percent: float = 100.0
    memory_swappiness: int | None = None
    constrain_kmem: bool = False
    allowed_kmem_space: float | None = None
    max_kmem_percent: float = 100.0
    min_kmem_mb: int = 30
    path: str | None = None  # the file read (None: defaults, no file)

    def wanted(self) -> dict[str, str]:
        """The constraining controllers this configuration needs, with the key that asks."""
        out: dict[str, str] = {}
        if self.constrain_cores:
            out["cpuset"] = "ConstrainCores=yes left off"
        if self.constrain_ram or self.constrain_swap:
            out["memory"] = "ConstrainRAMSpace/ConstrainSwapSpace=yes left off"
        if self.constrain_devices:
            out["devices"] = "ConstrainDevices=yes left off"
        return out

    def memory_limits(self, alloc_bytes: int, total_bytes: int = 0
                      ) -> tuple[int | None, int | None, int | None]:
        """(hard RAM, soft RAM, swap beyond RAM) in bytes for an allocation; None: not
        constrained.  ``alloc_bytes`` 0 (no memory allocated): MaxRAMPercent of ``total``.

        As 22.05 writes them (tests/integration/reference/cgroup/variants.*): hard = the
        allocation x AllowedRAMSpace%, at least MinRAMSpace; soft = the allocation, at least
        MinRAMSpace, at most hard; ConstrainSwapSpace: RAM+swap = hard + the allocation x
        AllowedSwapSpace% (10M with 150/50: 30M and 35M), and without ConstrainRAMSpace RAM gets
        the RAM+swap limit ("This amount is thus set to both RAM and RAM+Swap limits"; the
        soft limit stays the allocation's).  At most MaxRAMPercent / MaxSwapPercent of the
        node's RAM when ``total_bytes`` is known."""
        if not (self.constrain_ram or self.constrain_swap):
            return None, None, None
        if alloc_bytes <= 0:
            alloc_bytes = int(total_bytes * self.max_ram_percent / 100)
        floor = self.min_ram_mb * MIB
        ram_pct = self.allowed_ram_percent if self.constrain_ram else 100.0
        hard = max(int(alloc_bytes * ram_pct / 100), floor)
        if total_bytes:
            hard = min(hard, int(total_bytes * self.max_ram_percent / 100))
        soft = min(max(alloc_bytes, floor), hard)
        if not self.constrain_swap:
            return hard, soft, None
        memsw = hard + int(alloc_bytes * self.allowed_swap_percent / 100)
        if total_bytes:
            memsw = min(memsw, int(total_bytes * self.max_swap_percent / 100))
        if not self.constrain_ram:
            hard = memsw
        return hard, soft, max(memsw - hard, 0)

    def limits(self, *, cpus: list[int] | None = None, alloc_ram_bytes: int = 0,
               total_ram_bytes: int = 0,
               denied_devices: list[tuple[str, int, int]] | None = None) -> Limits:
        """The Limits a job (or step) gets under this configuration: CPUs only with
        ConstrainCores, memory per ``memory_limits``, devices only with ConstrainDevices."""
        hard, soft, swap = self.memory_limits(alloc_ram_bytes, total_ram_bytes)
        return Limits(cpus=list(cpus) if self.constrain_cores and cpus is not None else None,
                      ram_bytes=hard, soft_ram_bytes=soft, swap_bytes=swap,
                      denied_devices=list(denied_devices or []) if self.constrain_devices else [])


# key (lower case) -> (CgroupConf field, kind)
_KEYS: dict[str, tuple[str, str]] = {
    "cgroupplugin": ("plugin", "plugin"),
    "cgroupmountpoint": ("mountpoint", "path"),
    "cgroupautomount": ("automount", "bool"),
    "ignoresystemd": ("ignore_systemd", "bool"),
    "ignoresystemdonfailure": ("ignore_systemd_on_failure", "bool"),
    "constraincores": ("constrain_cores", "bool"),
    "constraindevices": ("constrain_devices", "bool"),
    "constrainramspace": ("constrain_ram", "bool"),
    "constrainswapspace": ("constrain_swap", "bool"),
    "constrainkmemspace": ("constrain_kmem", "bool"),
    "allowedramspace": ("allowed_ram_percent", "percent"),
    "allowedswapspace": ("allowed_swap_percent", "percent"),
    "allowedkmemspace": ("allowed_kmem_space", "number"),
    "maxrampercent": ("max_ram_percent", "percent"),
    "maxswappercent": ("max_swap_percent", "percent"),
    "maxkmempercent": ("max_kmem_percent", "percent"),
    "minramspace": ("min_ram_mb", "mb"),
    "minkmemspace": ("min_kmem_mb", "mb"),
    "memoryswappiness": ("memory_swappiness", "swappiness"),
}
_IGNORED = {
    "cgroupreleaseagentdir": "Support for CgroupReleaseAgentDir option has been removed.",
    "alloweddevicesfile": "AllowedDevicesFile option is obsolete, please remove it from your "
                          "configuration.",
}
_NUMBER = re.compile(r"[0-9]{1,20}(\.[0-9]{0,20})?\Z")


def _value(kind: str, key: str, value: str, loc: Loc) -> object:
    text = value.strip()
    if kind == "bool":
        return confsyntax.parse_bool(text, loc, key)
    if kind == "path":
        if not text:
            raise loc.error(f"{key} needs a path")
        return text
    if kind == "plugin":
        if text.lower() not in PLUGINS:
            raise loc.error(f"invalid value {value!r} for {key} (expected one of {', '.join(PLUGINS)})")
        return text.lower()
    if not _NUMBER.fullmatch(text):
        raise loc.error(f"invalid value {value!r} for {key} (expected a number)")
    number = float(text)
    if kind in ("percent", "number"):
        return number
    if kind == "mb":
        return int(number)
    if number > 100 or "." in text:  # swappiness: 0..100
        raise loc.error(f"invalid value {value!r} for {key} (expected 0 to 100)")
    return int(number)


def conf_file(slurm_conf_path: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(slurm_conf_path)), "cgroup.conf")


def parse_conf(text: str, path: str = "<string>") -> CgroupConf:
    """Parse cgroup.conf text (no Include expansion)."""
    try:
        statements = confsyntax.parse_statements(text, path)
    except confsyntax.ConfError as exc:
        raise ConfError(str(exc)) from None
    return _from_statements(statements, path)


def read_conf(slurm_conf_path: str) -> CgroupConf:
    """The cgroup.conf beside ``slurm_conf_path``; Slurm's defaults when there is none.
    Raises ConfError on a bad line."""
    path = conf_file(slurm_conf_path)
    if not os.path.exists(path):
        return CgroupConf()
    try:
        statements = confsyntax.read_statements(path)
    except confsyntax.ConfError as exc:
        raise ConfError(str(exc)) from None
    return _from_statements(statements, path)


def _from_statements(statements: list[confsyntax.Statement], path: str) -> CgroupConf:
    conf = CgroupConf(path=path)
    try:
        for stmt in statements:
            for key, value in stmt.pairs:
                low = key.lower()
                if low in _IGNORED:
                    log.warning("%s: %s", stmt.loc, _IGNORED[low])
                    continue
                if low not in _KEYS:
                    raise stmt.loc.error(f"Parsing error at unrecognized key: {key}")
                name, kind = _KEYS[low]
                setattr(conf, name, _value(kind, key, value, stmt.loc))
    except confsyntax.ConfError as exc:
        if isinstance(exc, ConfError):
            raise
        raise ConfError(str(exc)) from None
    return conf
