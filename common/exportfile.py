"""sbatch ``--export-file=<file|fd>``: environment variables for the job from a file or descriptor.

As sbatch(1) says: a number from 3 up is a readable descriptor (0-2 are not: a name), anything
else a file name; its content is ``NAME=value`` definitions separated by NUL characters, which
lets a value hold newlines.  Content with no NUL is read as one definition per line (what a file
written by hand has).  An entry without ``=`` or whose name is no variable name is skipped; the
content is read up to MAX_BYTES, more is refused (the job's environment travels whole in its
submission).
"""

from __future__ import annotations

import os
import re

MAX_BYTES = 4 * 1024 * 1024
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


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
    except OSError as exc:
        raise ExportFileError(f"--export-file={text}: {exc.strerror or exc}") from None
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


def parse(data: bytes) -> dict[str, str]:
    """``NAME=value`` entries, NUL-separated (else one a line); the last of a name wins."""
    text = data.decode("utf-8", "surrogateescape")
    entries = text.split("\0") if "\0" in text else text.splitlines()
    out: dict[str, str] = {}
    for entry in entries:
        name, sep, value = entry.partition("=")
        if sep and _NAME.match(name):
            out[name] = value
    return out
