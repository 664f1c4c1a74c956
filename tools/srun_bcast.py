"""srun --bcast, --send-libs, --bcast-exclude, --compress: srun's side.

srun reads the executable (the command's first word, found on PATH as execvp would) and,
with --send-libs, the shared libraries ``ldd`` lists for it outside the excluded folders
(--bcast-exclude, else slurm.conf BcastExclude, else 22.05's /lib,/usr/lib,/lib64,/usr/lib64),
and sends them in the launch request, zlib-compressed; each node writes them (nodeagent/bcast.py)
and runs its copy.  Slurm sends the file in blocks of its own messages (sbcast's protocol);
plurm sends it in the launch request, so it bounds it: MAX_BYTES in all, a larger file is
refused here with a line saying so (22.05 has no such bound).

--compress: 22.05 knows lz4 and none; any other word is its error line and no compression.
plurm's wire always deflates with zlib unless told none (the user sees no difference; lz4 is
not among this Python's modules).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import zlib
from typing import Any

MAX_BYTES = 8 * 1024 * 1024  # as nodeagent/bcast.MAX_BYTES: one launch request carries them
DEFAULT_EXCLUDE = ("/lib", "/usr/lib", "/lib64", "/usr/lib64")  # 22.05's BcastExclude default
LDD_TIMEOUT_S = 30.0


class BcastError(Exception):
    """srun cannot send the file: ``lines`` are srun's words; exit status ``code``."""

    def __init__(self, lines: list[str], code: int = 1) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines
        self.code = code


def bcast_parameters(conf: str | None) -> dict[str, str]:
    """slurm.conf's BcastParameters as key -> value (a bare flag: "")."""
    from plurm.wire.client import conf_value

    text = conf_value(conf, "BcastParameters") if conf else None
    out: dict[str, str] = {}
    for item in filter(None, (text or "").split(",")):
        key, _, value = item.partition("=")
        out[key.strip().lower()] = value.strip()
    return out


def send_libs_wanted(value: Any, params: dict[str, str]) -> bool:
    """--send-libs[=yes|no] (else BcastParameters send_libs); BcastError (255) when neither."""
    if value is None:
        return "send_libs" in params
    if value is True or str(value).lower() in ("yes", "y", "1", "true"):
        return True
    if str(value).lower() in ("no", "n", "0", "false"):
        return False
    raise BcastError(["srun: error: Invalid --send-libs specification"], 255)


def codec_for(value: Any, params: dict[str, str], notes: list[str]) -> str:
    """The wire's compression for --compress[=type]; an unknown type is 22.05's error line."""
    if value is None:
        return "zlib"
    kind = (params.get("compression") or "lz4") if value is True else str(value).lower()
    if kind in ("lz4",):
        return "zlib"
    if kind != "none":
        notes.append(f"srun: error: Compression type '{value}' unknown, disabling compression support.")
    return "none"


def executable(argv0: str, cwd: str) -> str | None:
    """The file srun broadcasts: a name with a slash is taken from ``cwd`` as it is written
    (22.05 names it so, ``/dir/./prog``), a bare name is looked up on PATH."""
    if "/" in argv0:
        return argv0 if argv0.startswith("/") else os.path.join(cwd, argv0)
    return shutil.which(argv0)


def _read(path: str, budget: int, source: str) -> tuple[bytes, int]:
    """A file's bytes and mode, at most ``budget`` of them."""
    try:
        with open(path, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode & 0o7777
            data = handle.read(budget + 1)
    except OSError as exc:
        raise BcastError([f"srun: error: Can't open `{path}`: {exc.strerror}",
                          f"srun: fatal: Failed to broadcast '{source}'. Step launch aborted."]) from None
    if len(data) > budget:
        raise BcastError([f"srun: error: --bcast: '{path}' and its libraries are more than {MAX_BYTES} bytes, "
                          "more than plurm's launch request carries",
                          f"srun: fatal: Failed to broadcast '{source}'. Step launch aborted."])
    return data, mode


def libraries(path: str, exclude: list[str]) -> list[str] | None:
    """The libraries ``ldd`` names for ``path`` outside ``exclude``; None when ldd cannot tell."""
    try:
        done = subprocess.run(["ldd", path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, timeout=LDD_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode:
        return None
    found = []
    for line in done.stdout.decode("utf-8", "replace").splitlines():
        words = line.split()
        lib = words[2] if len(words) >= 3 and words[1] == "=>" else words[0] if words else ""
        if not lib.startswith("/"):
            continue  # linux-vdso, "not found"
        if any(lib.startswith(folder.rstrip("/") + "/") for folder in exclude):
            continue
        found.append(lib)
    return found


def _encode(data: bytes, codec: str) -> str:
    return base64.b64encode(zlib.compress(data, 6) if codec == "zlib" else data).decode("ascii")


def request(options: dict[str, Any], command: list[str], cwd: str, conf: str | None,
            notes: list[str]) -> dict[str, Any] | None:
    """LaunchTasks.launch["bcast"] for srun's options (None without --bcast); srun's words for
    what it noticed go to ``notes``; BcastError when it cannot send."""
    params = bcast_parameters(conf)
    send_libs = send_libs_wanted(options.get("send-libs"), params)  # (checked with or without --bcast)
    if not options.get("bcast"):
        return None
    codec = codec_for(options.get("compress"), params, notes)
    source = executable(command[0], cwd) if command else None
    if source is None:
        raise BcastError([f"srun: fatal: Can't find executable {command[0] if command else ''}"])
    dest = options["bcast"]
    spec: dict[str, Any] = {"source": source, "codec": codec, "send_libs": send_libs}
    if isinstance(dest, str) and dest:
        dest = dest if dest.startswith("/") else os.path.join(cwd, dest)
        spec["dir" if dest.endswith("/") else "path"] = dest
    else:
        spec["dir"] = params.get("destdir") or cwd
    data, mode = _read(source, MAX_BYTES, source)
    spec.update(data=_encode(data, codec), mode=mode)
    budget = MAX_BYTES - len(data)
    if send_libs:
        excluded = options.get("bcast-exclude") or params.get("bcastexclude")
        from plurm.wire.client import conf_value

        text = str(excluded or (conf_value(conf, "BcastExclude") if conf else None) or ",".join(DEFAULT_EXCLUDE))
        exclude = [] if text.upper() == "NONE" else [p for p in text.split(",") if p]
        libs = libraries(source, exclude)
        if libs is None:
            notes.append(f"srun: error: Cannot autodetect libraries for '{source}' with ldd command; "
                         "still sending the file but ignoring send_libs")
            spec["send_libs"] = False
        else:
            spec["libs"] = []
            for lib in libs:
                content, lib_mode = _read(lib, budget, source)
                budget -= len(content)
                spec["libs"].append([os.path.basename(lib), lib_mode, _encode(content, codec)])
    return spec
