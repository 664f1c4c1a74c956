"""gres.conf: which generic resources (GPUs, ...) each node has, and how to find them.

Same line syntax as slurm.conf (the grammar imports slurm_conf.lark's rules; comments,
continuations and ``Include`` go through the same loader).  Keys are case-insensitive::

    AutoDetect=nvml                               # global
    NodeName=n[1-2] AutoDetect=off                # for these nodes
    NodeName=n[1-8] Name=gpu Type=h200 File=/dev/nvidia[0-3] Cores=0-3 Flags=nvidia_gpu_env
    Name=shard Count=8                            # no NodeName: every node

An unknown key or flag is a warning; a bad value is a ``ConfError`` ("FILE:LINE: ...").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from plurm.grammar.confsyntax import (
    ConfError,
    Loc,
    Statement,
    expand_hosts,
    parse_statements,
    read_statements,
    splice_includes,
    split_list,
)

__all__ = ["AUTODETECT_VALUES", "ConfError", "GresConf", "GresEntry", "load_gres_conf",
           "parse_gres_conf_text"]

GRAMMAR = "gres_conf.lark"

GRES_KEYS: dict[str, str] = {k.lower(): k for k in """
AutoDetect Count Cores File Flags Links MultipleFiles Name NodeName Type
""".split()}
GRES_KEYS["corecnt"] = "Cores"  # old spelling

# Slurm's values plus "opencl" and "auto" (plurm's OpenCL backend / try every backend).
AUTODETECT_VALUES = frozenset({"nvml", "rsmi", "oneapi", "opencl", "nrt", "nvidia", "off",
                               "auto"})

KNOWN_FLAGS: dict[str, str] = {f.lower(): f for f in """
CountOnly nvidia_gpu_env amd_gpu_env intel_gpu_env opencl_env no_gpu_env one_sharing
all_sharing explicit env_uuid
""".split()}

_COUNT_RE = re.compile(r"([0-9]{1,30})([KMGTP]?)\Z", re.I)
_CORES_RE = re.compile(r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*\Z")
_LINKS_RE = re.compile(r"-?[0-9]+(,-?[0-9]+)*\Z")
_NAME_RE = re.compile(r"[A-Za-z0-9_.+-]+\Z")


@dataclass
class GresEntry:
    node_names: list[str] | None  # None: every node
    name: str
    type: str | None = None
    files: list[str] = field(default_factory=list)
    count: int | None = None
    cores: str | None = None
    links: str | None = None
    flags: list[str] = field(default_factory=list)
    line: int = 0
    path: str = ""


@dataclass
class GresConf:
    path: str
    autodetect: dict[str | None, str] = field(default_factory=dict)  # None: global
    entries: list[GresEntry] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def for_node(self, node: str) -> list[GresEntry]:
        """The entries that apply to ``node``, in file order."""
        return [e for e in self.entries if e.node_names is None or node in e.node_names]

    def autodetect_for(self, node: str) -> str | None:
        """The AutoDetect value for ``node`` (its own, else the global one)."""
        return self.autodetect.get(node, self.autodetect.get(None))


def _count(value: str, loc: Loc) -> int:
    m = _COUNT_RE.match(value.strip())
    if not m:
        raise loc.error(f"invalid value {value!r} for Count (expected a number, "
                        "optionally with K, M, G, T or P)")
    scale = 1024 ** ("KMGTP".find(m.group(2).upper()) + 1) if m.group(2) else 1
    return int(m.group(1)) * scale


def _entry(stmt: Statement, conf: GresConf) -> None:
    loc = stmt.loc
    raw: dict[str, str] = {}
    for key, value in stmt.pairs:
        canon = GRES_KEYS.get(key.lower())
        if canon is None:
            conf.warnings.append(f"{loc}: unknown key '{key}'")
            continue
        raw[canon] = value
    nodes: list[str] | None = None
    if "NodeName" in raw:
        nodes = expand_hosts(raw["NodeName"], loc, "NodeName")
        if not nodes:
            raise loc.error("NodeName without node names")
    if "AutoDetect" in raw:
        mode = raw["AutoDetect"].strip().lower()
        if mode not in AUTODETECT_VALUES:
            # A vendor's plugin may bring its own AutoDetect value (plurm.accel.detect checks
            # it against the installed backends); anything that cannot be a name is an error.
            if not mode.replace("_", "").replace("-", "").isalnum():
                raise loc.error(f"invalid value {raw['AutoDetect']!r} for AutoDetect (expected one "
                                f"of {', '.join(sorted(AUTODETECT_VALUES))} or a plugin's name)")
            conf.warnings.append(f"{loc}: AutoDetect={raw['AutoDetect']} is not built in: "
                                 "a plugin must provide it")
        for node in nodes or [None]:
            conf.autodetect[node] = mode
        if "Name" not in raw and not set(raw) - {"NodeName", "AutoDetect"}:
            return
    name = raw.get("Name", "")
    if not name:
        raise loc.error("missing Name= (the GRES name, e.g. Name=gpu)")
    if not _NAME_RE.match(name):
        raise loc.error(f"invalid value {name!r} for Name")
    entry = GresEntry(node_names=nodes, name=name, type=raw.get("Type") or None,
                      line=loc.line, path=loc.path)
    for key in ("File", "MultipleFiles"):
        if raw.get(key):
            if entry.files:
                raise loc.error("File and MultipleFiles are mutually exclusive")
            entry.files = expand_hosts(raw[key], loc, key)
    if raw.get("Count"):
        entry.count = _count(raw["Count"], loc)
    if raw.get("Cores"):
        if not _CORES_RE.match(raw["Cores"].strip()):
            raise loc.error(f"invalid value {raw['Cores']!r} for Cores (expected e.g. 0-3,8)")
        entry.cores = raw["Cores"].strip()
    if raw.get("Links"):
        if not _LINKS_RE.match(raw["Links"].strip()):
            raise loc.error(f"invalid value {raw['Links']!r} for Links (expected e.g. -1,16)")
        entry.links = raw["Links"].strip()
    for flag in split_list(raw.get("Flags", "")):
        canon = KNOWN_FLAGS.get(flag.lower())
        if canon is None:
            conf.warnings.append(f"{loc}: unknown Flags value '{flag}'")
            canon = flag
        entry.flags.append(canon)
    conf.entries.append(entry)


def _build(statements: list[Statement], path: str, warnings: list[str]) -> GresConf:
    conf = GresConf(path=path, warnings=warnings)
    for stmt in statements:
        _entry(stmt, conf)
    return conf


def load_gres_conf(path: str | os.PathLike[str]) -> GresConf:
    """Read a gres.conf and its Include files."""
    name = os.fspath(path)
    warnings: list[str] = []
    return _build(read_statements(name, GRAMMAR, warnings), name, warnings)


def parse_gres_conf_text(text: str, path: str = "<string>") -> GresConf:
    """Parse gres.conf text; an Include is resolved relative to ``path``'s directory."""
    warnings: list[str] = []
    statements = splice_includes(parse_statements(text, path, GRAMMAR), path, GRAMMAR,
                                 warnings)
    return _build(statements, path, warnings)
