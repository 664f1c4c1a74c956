"""The command side of ``--json``/``--yaml``: the option's value, ``meta`` for the caller, and
the text written (JSON as Slurm's commands indent it; YAML through PyYAML).

This is the one module of the package that knows about commands (argv, the terminal, the
user); the builders beside it stay records in, dicts out.
"""

from __future__ import annotations

import json
import os
import sys

from plurm.tools.dataparser import DEFAULT_VERSION, VERSIONS, UnknownParser, choose_version
from plurm.tools.dataparser import values


class OutputError(Exception):
    """A ``--json=...``/``--yaml=...`` value the command refuses: ``text`` for stderr."""

    def __init__(self, text: str, code: int = 1) -> None:
        super().__init__(text)
        self.text = text
        self.code = code


class Output:
    """What ``--json[=data_parser]`` or ``--yaml[=data_parser]`` asked for."""

    def __init__(self, mime: str, version: str = DEFAULT_VERSION) -> None:
        self.mime = mime  # "json" | "yaml"
        self.version = version


def parse(prog: str, key: str, value: str | None) -> Output:
    """The option (``json``/``yaml``) and its optional value -> Output.

    ``list`` prints the versions plurm has (OutputError with exit 0, as Slurm lists its
    data_parser plugins and exits); an unknown version is an error naming the valid ones.
    """
    if value is not None and value.strip() == "list":
        lines = "".join(f"{prog}: data_parser/{name}\n" for name in VERSIONS)
        raise OutputError(f"{prog}: Possible data_parser plugins:\n{lines}", 0)
    if key == "yaml":
        import importlib.util

        if importlib.util.find_spec("yaml") is None:
            raise OutputError(f"{prog}: fatal: YAML output needs PyYAML (pip install PyYAML)\n")
    try:
        return Output(key, choose_version(value))
    except UnknownParser as exc:
        valid = ", ".join(VERSIONS)
        raise OutputError(f"{prog}: error: Unable to find data_parser plugin: {exc}\n"
                          f"{prog}: error: Valid data_parser plugins: {valid}\n"
                          f"{prog}: fatal: {key.upper()} output not supported by {exc}\n") from None


def meta(prog: str, argv: list[str], out: Output, cluster: str, accounting: bool = False) -> dict:
    """``meta`` for this command line, run by this user on this terminal."""
    import grp
    import pwd

    try:
        user = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        user = str(os.getuid())
    try:
        group = grp.getgrgid(os.getgid()).gr_name
    except KeyError:
        group = str(os.getgid())
    try:
        source = os.ttyname(0) if os.isatty(0) else ""
    except OSError:
        source = ""
    return values.meta(out.version, [prog, *argv], cluster, user, group, source, accounting)


def dumps(obj: dict, mime: str) -> str:
    """The text of an object: pretty JSON (slashes escaped, as Slurm's JSON writer does), or
    a YAML document in the object's own key order."""
    if mime == "yaml":
        import yaml  # (PyYAML: imported only for --yaml)

        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        return yaml.dump(obj, Dumper=dumper, sort_keys=False, explicit_start=True, default_flow_style=False,
                         allow_unicode=True)
    return json.dumps(obj, indent=2).replace("/", "\\/") + "\n"


def text(obj: dict, out: Output) -> str:
    """The object for the chosen version, as the text the command writes."""
    from plurm.tools.dataparser.versions import for_version

    return dumps(for_version(obj, out.version), out.mime)


def write(obj: dict, out: Output) -> None:
    sys.stdout.write(text(obj, out))


# Slurm's error numbers for the load failures the commands report (slurm_errno.h).
_ERRNO = {"Invalid job id specified": values.ESLURM_INVALID_JOB_ID,
          "Invalid node name specified": values.ESLURM_INVALID_NODE_NAME,
          "Invalid partition name specified": values.ESLURM_INVALID_PARTITION_NAME,
          "Unable to contact slurm controller (connect failure)": 1007,
          "Protocol authentication error": 1011}


def load_errors(message: str, source: str) -> list[dict]:
    """The ``errors`` list for a failed load: Slurm's text, its number where Slurm has one."""
    return [values.error(message, _ERRNO.get(message, -1), message, source)]
