"""sbatch ``--export-file=<file|fd>``: environment variables for the job from a file or descriptor.

As sbatch(1) says: a number from 3 up is a readable descriptor (0-2 are not: a name), anything
else a file name; its content is ``NAME=value`` definitions separated by NUL characters, which
lets a value hold newlines (a newline separates nothing: 22.05.8 reads ``A=1\nB=2\n`` as A's
value).  As 22.05.8 does (run on the anchor), the file is the job's environment in place of
sbatch's own: --export's assignments still apply over it, its names add nothing, and with
--export=NONE the file is not read (the job gets the login environment, as without it).
An entry without ``=`` or whose name is no variable name is skipped; the content is read up to
MAX_BYTES, more is refused (the job's environment travels whole in its submission).
"""

from __future__ import annotations

import os
from typing import Any

MAX_BYTES = 4 * 1024 * 1024


class ExportFileError(Exception):
    """sbatch stops (exit 1): the file could not be read, or is too long."""


def read(spec: str) -> dict[str, str]:
    """The definitions of ``spec`` (a descriptor number or a path)."""
    text = str(spec)
    try:
        if text.isdigit() and int(text) >= 3:
            data = _read_fd(int(text))
        else:
            with open(text, "rb") as fh:
                data = fh.read(MAX_BYTES + 1)
    except OSError:  # (22.05.8's words, whatever the reason)
        raise ExportFileError(f"Could not open user environment file {text}") from None
    if len(data) > MAX_BYTES:
        raise ExportFileError(f"--export-file={text}: more than {MAX_BYTES} bytes")
    return parse(data)


def _read_fd(fd: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_BYTES:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def job_source(options: dict[str, Any], environ: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the environment sbatch builds the job's from, the file's entries): ``environ`` and {}
    without --export-file or with --export=NONE, else the file's entries twice."""
    spec = options.get("export-file")
    export = options.get("export") or {}
    if spec is None or (isinstance(export, dict) and export.get("mode") == "NONE"):
        return environ, {}
    entries = read(str(spec))
    return dict(entries), entries


def parse(data: bytes) -> dict[str, str]:
    """``NAME=value`` entries separated by NUL; the last of a name wins."""
    text = data.decode("utf-8", "surrogateescape")
    entries = text.split("\0")
    out: dict[str, str] = {}
    for entry in entries:
        name, sep, value = entry.partition("=")
        if sep and _is_name(name):
            out[name] = value
    return out


def _is_name(text: str) -> bool:
    """A variable name, [A-Za-z_][A-Za-z0-9_]* (without `re`: sbatch imports this on every start)."""
    return text.isascii() and text.isidentifier()
