"""What srun's node-side launch options ask of plurmd (LaunchTasks.launch).

The options that take effect where the tasks start rather than in srun — ``--task-prolog``,
``--task-epilog``, ``--slurmd-debug``, ``--multi-prog``, ``--bcast`` (with ``--compress``,
``--send-libs``, ``--bcast-exclude``), ``--accel-bind`` — travel to plurmd in one dict, read by
each node's plurmstepd (nodeagent/stepd_launch.py).  srun checks them as 22.05's srun does:
``check`` before it asks for an allocation (the option's syntax, 22.05's exit 255; the
--multi-prog file, exit 1), ``prepare`` once the step's task count is known (the file's ranks,
the executable --bcast sends).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from plurm.common import multiprog
from plurm.tools import srun_bcast

# --slurmd-debug's words (22.05: a number 0-4 or one of these); anything else is srun's
# "max debug increment" (4).
DEBUG_TAGS = {"quiet": 0, "fatal": 1, "error": 2, "info": 3, "verbose": 4}
MAX_DEBUG = 4


class LaunchOptionError(Exception):
    """srun stops: ``lines`` are its words, ``code`` its exit status."""

    def __init__(self, lines: list[str], code: int = 1) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines
        self.code = code


def slurmd_debug(value: Any, notes: list[str]) -> int | None:
    """--slurmd-debug's level (None: not given)."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if text in DEBUG_TAGS:
        return DEBUG_TAGS[text]
    if text.isdigit() and int(text) <= MAX_DEBUG:
        return int(text)
    notes.append(f"srun: Using srun's max debug increment of {MAX_DEBUG}")
    return MAX_DEBUG


def accel_bind(value: Any) -> str | None:
    """--accel-bind's letters (g: GPUs closest to the task's CPUs, n: NICs, v: verbose)."""
    if value is None:
        return None
    text = str(value)
    if not text or any(c not in "gnv" for c in text):
        raise LaunchOptionError(["srun: error: Invalid --accel-bind specification"], 255)
    return "".join(sorted(set(text), key="gnv".index))


def _multi_prog(command: list[str], ntasks: int) -> list[dict[str, Any]]:
    name = command[0] if command else ""
    try:
        return [r.to_wire() for r in multiprog.parse(multiprog.read(name), name, ntasks)]
    except multiprog.MultiProgError as exc:
        raise LaunchOptionError([f"srun: error: {line}" for line in exc.lines]) from None


def check(options: dict[str, Any], command: list[str]) -> int | None:
    """Before the allocation: None when srun may go on, else its exit status (said why)."""
    notes: list[str] = []
    try:
        accel_bind(options.get("accel-bind"))
        srun_bcast.send_libs_wanted(options.get("send-libs"), {})
        slurmd_debug(options.get("slurmd-debug"), notes)
        if options.get("multi-prog"):
            ntasks = options.get("ntasks")
            if isinstance(ntasks, int) and not isinstance(ntasks, bool):
                _multi_prog(command, ntasks)
            else:  # (its ranks are checked once the step's task count is known)
                multiprog.read(command[0] if command else "")
    except (LaunchOptionError, srun_bcast.BcastError) as exc:
        print("\n".join(exc.lines), file=sys.stderr)
        return exc.code
    except multiprog.MultiProgError as exc:
        print("\n".join(f"srun: error: {line}" for line in exc.lines), file=sys.stderr)
        return 1
    for note in notes:
        print(note, file=sys.stderr)
    return None


def node_options(options: dict[str, Any], command: list[str] | None = None, ntasks: int = 1,
                 cwd: str | None = None, conf: str | None = None, notes: list[str] | None = None) -> dict[str, Any]:
    """The launch request's ``launch`` field for srun's parsed ``options``; LaunchOptionError
    when the step cannot start (srun's words)."""
    command = list(command or [])
    notes = notes if notes is not None else []
    out: dict[str, Any] = {}
    for key, name in (("task-prolog", "task_prolog"), ("task-epilog", "task_epilog")):
        if options.get(key):
            path = str(options[key])  # (relative: from the step's working directory, as slurmstepd has it)
            out[name] = path if path.startswith("/") or cwd is None else os.path.join(cwd, path)
    level = slurmd_debug(options.get("slurmd-debug"), [])
    if level is not None:
        out["slurmd_debug"] = level
    accel = accel_bind(options.get("accel-bind"))
    if accel:
        out["accel_bind"] = accel
    if options.get("multi-prog"):
        out["multi_prog"] = _multi_prog(command, ntasks)
    if options.get("debugger-test"):  # the tasks start stopped (nodeagent/stepd_debugger.py)
        out["debugger_test"] = True
    freq = options.get("acctg-freq")  # --acctg-freq=task=N: the step's sampling interval (0: at its end only)
    if isinstance(freq, dict) and isinstance(freq.get("task"), int):
        out["acct_freq"] = freq["task"]
    try:
        bcast = srun_bcast.request(options, command, cwd or os.getcwd(), conf, notes)
    except srun_bcast.BcastError as exc:
        raise LaunchOptionError(exc.lines, exc.code) from None
    if bcast is not None and not options.get("multi-prog"):
        out["bcast"] = bcast
    return out


def prepare(step: Any, options: dict[str, Any], command: list[str]) -> int | None:
    """srun's call once the step exists: ``step.node_options`` set, None; else srun's exit
    status, its words printed (the caller ends the step)."""
    notes: list[str] = []
    try:
        step.node_options = node_options(options, command, step.ntasks, os.getcwd(), step.conn.settings.conf, notes)
    except LaunchOptionError as exc:
        for note in notes:
            print(note, file=sys.stderr)
        print("\n".join(exc.lines), file=sys.stderr)
        return exc.code
    for note in notes:
        print(note, file=sys.stderr)
    return None


def abandon(conn: Any, job_id: int, step_id: int, own_allocation: bool) -> None:
    """A step that never launched: ended (exit 1), and srun's own allocation released."""
    from plurm.tools.allocation import release
    from plurm.wire.client import ClientError

    try:
        conn.request("step_complete", {"job_id": job_id, "step_id": step_id, "exit_code": 1, "exit_signal": 0})
    except ClientError:
        pass
    if own_allocation:
        release(conn, job_id, 1)


def say(step: Any, body: dict[str, Any]) -> None:
    """A node's words for srun to say as its own (a --bcast that failed there: 22.05's srun
    says them once, and no task line for the tasks that never started)."""
    said: set[str] = step.__dict__.setdefault("_node_words", set())
    for line in body.get("lines") or []:
        if isinstance(line, str) and (line not in said or not line.startswith("srun: fatal:")):
            said.add(line)
            print(line, file=sys.stderr)
    for task in body.get("tasks") or []:
        if isinstance(task, int):
            step.reported.add(task)
