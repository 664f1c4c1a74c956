"""srun --bcast on the node: the executable (and with --send-libs its libraries) written
where the tasks run it, before they start.

srun sends the files in the launch request (tools/srun_bcast.py: LaunchTasks.launch["bcast"]),
compressed (zlib) and bounded (MAX_BYTES in all, checked again here while decompressing: a
request cannot make this node hold more).  The destination is 22.05's: the path srun names;
in a directory srun names (a ``--bcast=dir/``, BcastParameters DestDir=, else the step's
working directory) ``slurm_bcast_<job>.<step>_<node>``; the libraries in ``<that>_libs``
(mode 0700), which the tasks find first on LD_LIBRARY_PATH.

The files are written by a process of the step's owner (``python -m plurm.nodeagent.bcast``,
the files on its stdin), never by plurmstepd as root in a directory of the user's; a file
that exists is replaced (O_NOFOLLOW: not through a link).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import zlib
from typing import Any

MAX_BYTES = 8 * 1024 * 1024  # the executable and its libraries together, uncompressed
WRITE_TIMEOUT_S = 60.0


class BcastError(Exception):
    """The files could not be written: the reason, as strerror says it."""


def destination(spec: dict[str, Any], job_id: int, step_id: int, node: str) -> str:
    """Where this node's copy of the executable goes."""
    path = spec.get("path")
    if isinstance(path, str) and path:
        return path
    folder = spec.get("dir")
    if not isinstance(folder, str) or not folder:
        raise BcastError("Invalid argument")
    return os.path.join(folder, f"slurm_bcast_{job_id}.{step_id}_{node}")


def _decoded(item: Any, codec: str, budget: int) -> bytes:
    """One file's bytes; BcastError when malformed or past the ``budget`` left."""
    if not isinstance(item, str):
        raise BcastError("Invalid argument")
    try:
        raw = base64.b64decode(item.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise BcastError("Invalid argument") from None
    if codec == "none":
        data = raw
    elif codec == "zlib":
        inflate = zlib.decompressobj()
        try:
            data = inflate.decompress(raw, budget + 1)
        except zlib.error:
            raise BcastError("Invalid argument") from None
        if inflate.unconsumed_tail:
            raise BcastError("File too large")
    else:
        raise BcastError("Invalid argument")
    if len(data) > budget:
        raise BcastError("File too large")
    return data


def plan(spec: dict[str, Any], target: str) -> list[dict[str, Any]]:
    """The files to write (path, mode, data as base64) and the libraries' folder, checked
    and bounded here, before any owner process sees them."""
    codec = str(spec.get("codec") or "none")
    budget = MAX_BYTES
    data = _decoded(spec.get("data"), codec, budget)
    budget -= len(data)
    mode = spec.get("mode") if isinstance(spec.get("mode"), int) else 0o700
    files = [{"path": target, "mode": mode & 0o7777, "data": base64.b64encode(data).decode()}]
    libs = spec.get("libs")
    if isinstance(libs, list) and spec.get("send_libs"):
        folder = target + "_libs"
        files.append({"dir": folder})
        for entry in libs:
            if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
                raise BcastError("Invalid argument")
            name = os.path.basename(entry[0])
            if name in ("", ".", ".."):
                raise BcastError("Invalid argument")
            content = _decoded(entry[2], codec, budget)
            budget -= len(content)
            lib_mode = entry[1] if isinstance(entry[1], int) else 0o755
            files.append({"path": os.path.join(folder, name), "mode": lib_mode & 0o7777,
                          "data": base64.b64encode(content).decode()})
    return files


def install(spec: dict[str, Any], target: str, popen_kwargs: dict[str, Any]) -> str | None:
    """Write the files as the owner (``popen_kwargs``: launch.Owner.popen_kwargs()); the
    libraries' folder (None without --send-libs); BcastError with the reason otherwise."""
    files = plan(spec, target)
    try:
        done = subprocess.run([sys.executable, "-m", "plurm.nodeagent.bcast"], input=json.dumps(files).encode(),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd="/", close_fds=True,
                              timeout=WRITE_TIMEOUT_S, env={"PATH": "/usr/bin:/bin", **_python_path()},
                              **popen_kwargs)
    except subprocess.TimeoutExpired:
        raise BcastError("Connection timed out") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise BcastError(getattr(exc, "strerror", None) or str(exc)) from None
    if done.returncode:
        raise BcastError(done.stdout.decode("utf-8", "replace").strip() or "Input/output error")
    folders = [f["dir"] for f in files if "dir" in f]
    return folders[0] if folders else None


def _python_path() -> dict[str, str]:
    """Where this plurm is, for the owner's interpreter (an editable install's path hook is
    in site-packages; a checkout run in place needs PYTHONPATH)."""
    value = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": value} if value else {}


def _write(files: list[dict[str, Any]]) -> None:
    """In the owner's process: each folder made (0700), each file written and given its mode."""
    for item in files:
        if "dir" in item:
            try:
                os.mkdir(item["dir"], 0o700)
            except FileExistsError:
                pass
            continue
        data = base64.b64decode(item["data"])
        fd = os.open(item["path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, item["mode"])
        finally:
            os.close(fd)


def main() -> int:
    files = json.loads(sys.stdin.buffer.read(4 * MAX_BYTES))
    try:
        _write(files)
    except OSError as exc:
        sys.stdout.write(exc.strerror or str(exc))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
