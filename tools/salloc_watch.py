"""salloc's command while its allocation lasts: run it, watch the allocation, and when the
controller revokes it (scancel, time limit) say so and, with ``-K/--kill-command[=signal]``,
signal the command.

As the real 22.05.8 does (tests/integration/reference/immediate/captures.txt):
- ``salloc: Job allocation J has been revoked.`` (scancel and other ends), or ``salloc: Job J
  has exceeded its time limit and its allocation has been revoked.``; no ``Relinquishing``
  line after it.  Without -K the command runs on to its end.
- -K's default signal is SIGTERM, with a terminal too (the man page says SIGHUP for an
  interactive session; 22.05.8 sent SIGTERM even to an interactive bash on a pseudo-terminal,
  which ignores it).  The signal goes to the command's process group (its children too).
- The exit status: the command's; killed by SIGHUP, SIGINT, SIGQUIT or SIGKILL: 0; by any
  other signal: 1.

Stdlib only (salloc's start-up path).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

POLL_S = 0.5  # how often the allocation is looked at while the command runs
# Killed by one of these: the user's own doing, so salloc exits 0 (22.05).
_USER_SIGNALS = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGKILL)


class BadSignal(ValueError):
    pass


def kill_signal(value: Any) -> int | None:
    """-K's signal: None when -K is not given; a name (TERM, SIGTERM, any case) or a number."""
    if value is None or value is False:
        return None
    if value is True or value == "":
        return int(signal.SIGTERM)
    text = str(value).strip()
    if text.isdigit():
        number = int(text)
        if number < 1 or number > 255:  # (22.05 refuses 0; a number it does not know it takes)
            raise BadSignal(text)
        return number
    name = text.upper()
    name = name if name.startswith("SIG") else "SIG" + name
    try:
        return int(signal.Signals[name])
    except KeyError:
        raise BadSignal(text) from None


def exit_status(returncode: int) -> int:
    if returncode >= 0:
        return returncode
    return 0 if -returncode in _USER_SIGNALS else 1


def revoked_line(job_id: int, state: str) -> str:
    if state == "TIMEOUT":
        return f"salloc: Job {job_id} has exceeded its time limit and its allocation has been revoked."
    return f"salloc: Job allocation {job_id} has been revoked."


def run(conn: Any, job_id: int, command: list[str], env: dict[str, str], signum: int | None) -> tuple[int, bool]:
    """Run the command to its end; (exit status, whether the allocation was revoked meanwhile).

    With -K the command gets a process group of its own (so that the signal reaches its
    children and not salloc's caller), and the terminal's foreground when salloc has one."""
    from plurm.tools.allocation import job_record

    tty = _terminal() if signum is not None else None
    proc = subprocess.Popen(command, env=env, process_group=0 if signum is not None else None,
                            preexec_fn=(lambda: _take_terminal(tty, signal.SIG_DFL)) if tty is not None else None)
    if tty is not None:  # salloc, now in the background there, may still write its lines (TOSTOP)
        previous_ttou = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    revoked = False
    try:
        while True:
            try:
                returncode = proc.wait(timeout=POLL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            if revoked:
                continue
            job = job_record(conn, job_id)
            state = job.get("state", "RUNNING") if job is not None else "RUNNING"
            if state in ("RUNNING", "SUSPENDED"):  # (no answer: the controller may be restarting)
                continue
            revoked = True
            print(revoked_line(job_id, state), file=sys.stderr, flush=True)
            if signum is not None:
                try:
                    os.killpg(proc.pid, signum)
                except (ProcessLookupError, PermissionError, OSError):
                    pass
    finally:
        if tty is not None:
            _take_terminal(tty, previous_ttou)  # the terminal back to salloc's group
    return exit_status(returncode), revoked


def _terminal() -> int | None:
    """salloc's stdin when it is its terminal and salloc is in the foreground there."""
    try:
        if os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp():
            return 0
    except OSError:
        pass
    return None


def _take_terminal(fd: int, after: Any) -> None:
    """Make the calling process's group the terminal's foreground (SIGTTOU ignored meanwhile:
    a background group that sets the foreground is otherwise stopped), then SIGTTOU ``after``."""
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(fd, os.getpgrp())
    except OSError:
        pass
    finally:
        signal.signal(signal.SIGTTOU, after)
