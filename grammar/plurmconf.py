"""plurm.conf: plurm's own settings, in a file beside slurm.conf.

Settings that real Slurm has no key for (the freeze policy's, for a start) cannot go into
slurm.conf or cgroup.conf: Slurm rejects an unknown key there, and a site that runs both
must be able to share those files.  plurm.conf uses slurm.conf's syntax (``Key=Value``,
several per line, ``#`` comments, continuation lines, ``Include``)::

    FreezePolicy=memory,device
    FreezeMemoryFraction=0.9   FreezeMemoryFor=30

Keys are case-insensitive; the last assignment of a key wins, as in slurm.conf.  This
module only reads the file: what a key means is its consumer's (plurm.nodeagent.freezepolicy,
a plugin's freeze policy), which reports a bad value with ``PlurmConf.error`` so that the
message names the file and line where the value was set.  A missing file is an empty one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field

from plurm.grammar.confsyntax import ConfError, Loc, read_statements

__all__ = ["FILE_NAME", "ConfError", "PlurmConf", "Setting", "plurm_conf_path", "read_plurm_conf"]

FILE_NAME = "plurm.conf"


@dataclass(frozen=True)
class Setting:
    """One key's value and where it was set (the last assignment)."""

    key: str      # as written in the file
    value: str
    loc: Loc


@dataclass
class PlurmConf:
    """The settings of one plurm.conf, by lower-cased key."""

    path: str
    settings: dict[str, Setting] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def get(self, key: str, default: str | None = None) -> str | None:
        setting = self.settings.get(key.lower())
        return default if setting is None else setting.value

    def __contains__(self, key: str) -> bool:
        return key.lower() in self.settings

    def __iter__(self) -> Iterator[Setting]:
        return iter(self.settings.values())

    def where(self, key: str) -> Loc:
        """Where ``key`` was set; the file itself (line 0) when it was not."""
        setting = self.settings.get(key.lower())
        return setting.loc if setting is not None else Loc(self.path, 0)

    def error(self, key: str, message: str) -> ConfError:
        """A ``ConfError`` "FILE:LINE: message" pointing at where ``key`` was set."""
        return self.where(key).error(message)


def plurm_conf_path(slurm_conf_path: str | os.PathLike[str]) -> str:
    """plurm.conf's path: the directory of slurm.conf."""
    return os.path.join(os.path.dirname(os.path.abspath(os.fspath(slurm_conf_path))), FILE_NAME)


def read_plurm_conf(path: str | os.PathLike[str]) -> PlurmConf:
    """Read a plurm.conf; a missing file gives an empty ``PlurmConf``.

    Raises ``ConfError`` ("FILE:LINE: ...") for a syntax error, an unreadable file or a
    bad ``Include``; values are not checked here.
    """
    name = os.fspath(path)
    conf = PlurmConf(path=name)
    if not os.path.exists(name):
        return conf
    for statement in read_statements(name, warnings=conf.warnings):
        for key, value in statement.pairs:
            conf.settings[key.lower()] = Setting(key, value, statement.loc)
    return conf
