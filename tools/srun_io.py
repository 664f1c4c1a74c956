"""Where srun's tasks read and write: -i/-o/-e, --input, --pty, as Slurm 22.05's srun does.

A filename pattern is one of Slurm's four kinds (srun(1), "IO Redirection"):
- ``none``: /dev/null for every task;
- a task number: that task's stream goes to (or comes from) srun, the others' to /dev/null;
- a pattern naming a task or node (``%t``, ``%n``, ``%N``): one file per task, opened on its
  node by the task's own shell (as the job's owner: plurmstepd runs as root);
- anything else: one file, opened here by srun (as the user), which writes every task's
  output into it (``-l`` labels included) or reads it and forwards it to every task.
No ``-o``: srun's own stdout and stderr.  No ``-e``: stderr follows ``-o``.  stdin goes to
every task by default (``--input=all``); with ``--pty`` task 0 runs on a pseudo-terminal and
alone gets stdin, and only its output is shown.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from plurm.nodeagent import filenames

_PER_TASK = re.compile(r"%\d*[tnN]")


class IoError(Exception):
    """A file srun itself could not open (srun exits 1 before launching anything)."""


@dataclass
class OutStream:
    """What srun does with one output stream (1: stdout, 2: stderr) of the tasks."""

    mode: str = "srun"  # "srun" (shown here), "null", "node" (a file per task, on the node)
    only_task: int | None = None  # a task number: only that task's output is shown
    pattern: str = ""  # mode "node": the pattern the node expands
    handle: BinaryIO | None = None  # a file srun opened (mode "srun" writes there)

    def wants(self, task: int) -> bool:
        return self.mode == "srun" and (self.only_task is None or self.only_task == task)


@dataclass
class IoPlan:
    stdin_tasks: list[int] | None = None  # ranks that get srun's stdin (None: none do)
    stdin_source: BinaryIO | None = None  # srun's stdin, or a file srun opened
    stdin_pattern: str = ""  # a per-task file the node opens
    out: OutStream = field(default_factory=OutStream)
    err: OutStream = field(default_factory=OutStream)
    err_follows_out: bool = True  # no -e: a node-side -o file takes stderr too
    pty: bool = False

    def node_io(self, names: dict[str, Any]) -> dict[str, Any]:
        """The part of the launch request plurmstepd reads (LaunchTasks.io)."""
        io: dict[str, Any] = {"names": names, "pty": self.pty}
        io["stdin"] = ("file", self.stdin_pattern) if self.stdin_pattern else \
            ("pipe", self.stdin_tasks) if self.stdin_tasks is not None else ("null", None)
        for key, stream in (("stdout", self.out), ("stderr", self.err)):
            io[key] = ("file", stream.pattern) if stream.mode == "node" else \
                ("null", None) if stream.mode == "null" else ("pipe", stream.only_task)
        if self.err_follows_out and self.out.mode == "node":
            io["stderr"] = ("same", None)
        if self.pty:
            io["winsize"] = terminal_size()
        return io

    def close(self) -> None:
        for stream in (self.out, self.err):
            if stream.handle is not None and not stream.handle.closed:
                stream.handle.close()
        if self.stdin_source is not None and self.stdin_source is not sys.stdin.buffer:
            self.stdin_source.close()


def _task_number(value: str, ntasks: int) -> int | None:
    if value.isdigit():
        number = int(value)
        return number if number < ntasks else None
    return None


def plan(options: dict[str, Any], ntasks: int, names: dict[str, Any], work_dir: str) -> IoPlan:
    """The plan for these srun options; ``names`` expands the patterns srun opens itself."""
    result = IoPlan(pty=bool(options.get("pty")))

    def expand(pattern: str) -> str:
        return filenames.resolve(filenames.expand(pattern, **names), work_dir)

    def output(value: str | None, what: str) -> OutStream:
        if value is None:
            return OutStream()
        if value == "none":
            return OutStream(mode="null")
        number = _task_number(value, ntasks)
        if number is not None:
            return OutStream(only_task=number)
        if _PER_TASK.search(value):
            return OutStream(mode="node", pattern=value)
        try:
            return OutStream(handle=open(expand(value), "wb"))
        except OSError as exc:
            raise IoError(f"srun: error: Could not open {what} file: {exc.strerror}") from None

    out_value, err_value = options.get("output"), options.get("error")
    result.out = output(out_value, "stdout")
    if err_value is None and out_value is not None:
        # stderr goes where stdout goes; a file srun opened is shared, not opened twice
        result.err = OutStream(mode=result.out.mode, only_task=result.out.only_task, pattern=result.out.pattern,
                               handle=result.out.handle)
    else:
        result.err = output(err_value, "stderr")
        result.err_follows_out = False
    value = options.get("input")
    if result.pty:
        result.stdin_tasks = [0]
        result.stdin_source = sys.stdin.buffer
        result.out.only_task = result.err.only_task = 0 if result.out.mode == "srun" else None
    elif value is None or value == "all":
        result.stdin_tasks = list(range(ntasks))
        result.stdin_source = sys.stdin.buffer
    elif value == "none":
        pass
    elif _task_number(value, ntasks) is not None:
        result.stdin_tasks = [int(value)]
        result.stdin_source = sys.stdin.buffer
    elif _PER_TASK.search(value):
        result.stdin_pattern = value
    else:
        try:
            result.stdin_source = open(expand(value), "rb")
        except OSError as exc:
            raise IoError(f"srun: error: Could not open stdin file: {exc.strerror}") from None
        result.stdin_tasks = list(range(ntasks))
    return result


def terminal_size() -> list[int]:
    """[rows, cols] of srun's terminal (0, 0 when it has none, as stty says then)."""
    try:
        size = os.get_terminal_size(sys.stdin.fileno())
    except OSError:
        return [0, 0]
    return [size.lines, size.columns]


class RawTerminal:
    """srun --pty puts its own terminal in raw mode, so that Ctrl-C, Ctrl-Z and line editing
    reach the task's pseudo-terminal as characters (its line discipline acts on them)."""

    def __init__(self) -> None:
        self.saved: list[Any] | None = None

    def __enter__(self) -> RawTerminal:
        import termios
        import tty

        fd = sys.stdin.fileno()
        if os.isatty(fd):
            self.saved = termios.tcgetattr(fd)
            # TCSANOW, not setraw's default TCSAFLUSH: what the user typed ahead (while salloc
            # or srun waited) is kept and goes to the task.
            tty.setraw(fd, termios.TCSANOW)
        return self

    def __exit__(self, *exc: object) -> None:
        import termios

        if self.saved is not None:
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self.saved)


def ranges(tasks: list[int]) -> str:
    """Task ids as Slurm lists them: "0-1,4"."""
    out: list[str] = []
    start = prev = None
    for t in sorted(tasks):
        if prev is not None and t == prev + 1:
            prev = t
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = t
    if start is not None:
        out.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(out)


def step_messages(sock: Any, auth: Any) -> list[tuple[bytes, str, dict]]:
    """What plurmstepd sent on ``sock`` (srun's and sattach's ROUTER), drained without waiting:
    (the sender's routing id, message type, body) of each message signed with the step's I/O
    key.  Anything else (not signed with it, not a JSON object, too few frames) is dropped:
    only the step's own plurmstepd holds the key."""
    import json

    import zmq

    from plurm.wire import envelope

    messages: list[tuple[bytes, str, dict]] = []
    while True:
        try:
            frames = sock.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return messages
        try:
            header, raw, _ = envelope.open_envelope(auth, frames[2:] if frames[1:2] == [b""] else frames[1:])
            body = json.loads(raw)
        except (envelope.WireError, ValueError, IndexError):
            continue
        if isinstance(body, dict):
            messages.append((frames[0], str(header["type"]), body))
