"""Slurm's data_parser objects: what ``--json`` and ``--yaml`` print, records in, dicts out.

Slurm 23.02+ commands print the same objects its REST daemon answers with (the OpenAPI
specs of data_parser v0.0.42..v0.0.45): ``squeue``/``scontrol show job`` the job info
response, ``scontrol show node`` the nodes response, ``scontrol show partition`` the
partitions response, ``sinfo`` the sinfo response, ``sacct`` slurmdbd's jobs response and
``sshare`` the shares response, each with ``meta``, ``errors`` and ``warnings``.

The builders take the records the commands already render (the controller's job, node,
partition, step and share dicts) and return plain dicts, with no command-line concern, so
that a REST daemon can answer with them too:

- ``values``: the shared pieces (no-value structs, exit codes, TRES lists, meta, errors);
- ``jobs``: job info (squeue, scontrol show job);
- ``nodes``: nodes, partitions and sinfo's lines;
- ``accounting``: slurmdbd's jobs with their steps (sacct);
- ``shares``: fair-share associations (sshare);
- ``versions``: what differs between the four versions (fields a version lacks);
- ``emit``: JSON or YAML text of an object, as the commands write it.

Start-up budget: this package is imported only when ``--json``/``--yaml`` is given.
"""

from __future__ import annotations

# The versions whose specs plurm follows, oldest first; the default is the target
# (Slurm 25.11's newest at the time these were chosen).
VERSIONS = ("v0.0.42", "v0.0.43", "v0.0.44", "v0.0.45")
DEFAULT_VERSION = "v0.0.44"


class UnknownParser(ValueError):
    """``--json=v0.0.20``: a data_parser version that is not one of VERSIONS."""


def choose_version(value: str | None) -> str:
    """The ``--json[=data_parser]`` argument -> a version of VERSIONS.

    Slurm accepts the plugin name with or without its ``data_parser/`` type, and flags after
    a ``+`` (``v0.0.44+complex``), which plurm accepts and ignores.
    """
    if not value:
        return DEFAULT_VERSION
    name = value.strip()
    if name.startswith("data_parser/"):
        name = name[len("data_parser/"):]
    name = name.split("+", 1)[0]
    if name == "latest":
        return VERSIONS[-1]
    if name not in VERSIONS:
        raise UnknownParser(name)
    return name
