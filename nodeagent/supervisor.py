"""The batch script's supervisor: the part of Slurm's slurmstepd that holds a batch job.

plurmd starts one per batch run (``python -m plurm.nodeagent.supervisor``), in a session
of its own, with a JSON payload on stdin: the job shell's argv and environment, whom it
runs as (subprocess's user/group/extra_groups/umask), the run's spool directory, and how
long to wait for the shell to open the job's files.  It

1. starts the job's shell in another session: that process group is what cancel, signals
   and time limits hit, and this process is outside it, so that a SIGKILL of the job
   never takes away the one that records how it ended;
2. writes ``procs.json`` (its pid and start time, the job's group) and tells plurmd on
   its stdout, one JSON line each, the shell's pid, then what the shell said before its
   files were open (launch.py reads a failure in it);
3. waits for the shell, SIGKILLs what is left of its group (backgrounded processes go
   with the script, as before), writes ``status.json`` atomically and exits.

plurmd learns of the end from that file and need not be this process's parent: a plurmd
killed with -9, or stopped for an upgrade, leaves the job running, and the next one
adopts it from the spool (nodeagent/jobstate.py).  SIGTERM, SIGINT and SIGHUP are
ignored here (a handler that does nothing: exec resets it, so the job still gets them).
Only the standard library and jobstate are imported: this starts once per job.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

from plurm.nodeagent import jobstate


def _ignored(signum: int, frame: object) -> None:
    """Nothing: unlike SIG_IGN, exec resets a handler, so the job's shell gets the default."""


def _say(data: dict) -> None:
    """A line to plurmd; a plurmd that died meanwhile is no reason to stop supervising."""
    try:
        os.write(1, json.dumps(data).encode() + b"\n")
    except OSError:
        pass


def _read_until_closed(fd: int, wait_s: float) -> str:
    """What the job's shell says before it moves stderr to the job's file (EOF)."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + wait_s
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break  # a file that blocks on open (a FIFO): the job goes on, and so do we
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            data = os.read(fd, 65536)
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def main() -> int:
    payload = json.loads(sys.stdin.buffer.read())
    run_dir: str = payload["run_dir"]
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _ignored)
    read_end, write_end = os.pipe()
    try:
        shell = subprocess.Popen(payload["argv"], cwd="/", env=payload["env"], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=write_end, start_new_session=True,
                                 close_fds=True, **payload["popen"])
    except OSError as exc:
        _say({"error": f"cannot start the job's shell: {exc.strerror}"})
        return 1
    finally:
        os.close(write_end)
    me = os.getpid()
    jobstate.write_json(os.path.join(run_dir, "procs.json"),
                        {"pid": me, "ticks": jobstate.start_ticks(me), "pgid": shell.pid})
    _say({"pid": shell.pid})
    _say({"said": _read_until_closed(read_end, float(payload.get("wait_s", 10.0)))})
    # plurmd has what it needs from our stdio; it may go away from now on.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    status = shell.wait()
    try:  # the group only: its leader's pid is free again and may be another process's
        os.killpg(shell.pid, signal.SIGKILL)
    except OSError:
        pass
    jobstate.write_json(os.path.join(run_dir, "status.json"), {"status": status, "end_time": time.time()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
