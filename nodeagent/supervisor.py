"""The batch script's supervisor: the part of Slurm's slurmstepd that holds a batch job.

plurmd forks one per batch run (no new interpreter: a launch costs a fork, not a Python
start-up), which leaves plurmd's session and drops every descriptor plurmd holds (its
sockets, the node's port above all, must not outlive it here).  Given the job shell's argv
and environment, whom it runs as (subprocess's user/group/extra_groups/umask), the run's
spool directory, and how long to wait for the shell to open the job's files, it

1. starts the job's shell in another session: that process group is what cancel, signals
   and time limits hit, and this process is outside it, so that a SIGKILL of the job
   never takes away the one that records how it ended; when the job is confined, the
   shell enters its step_batch cgroup between fork and exec, still root, before it becomes
   the job's owner (launch.Owner.popen_kwargs' ``join``), so that nothing of the job ever
   runs outside its cgroup (and this process stays outside: the job's end, or an OOM kill
   in it, never takes it);
2. writes ``procs.json`` (its pid and start time, the job's group) and tells plurmd on a
   pipe, one JSON line each, the shell's pid, then what the shell said before its files
   were open (launch.py reads a failure in it);
3. before that, holds the shell (it reads its stdin first) while a directory its --output/
   --error file goes in does not exist yet, for a grace (``dir_grace_s``,
   launch.OUTPUT_DIR_GRACE_S), checked as this process sees the file system: a directory
   the owner may not enter exists, and the shell fails on it at once;
4. waits for the shell (wait4: its CPU times and peak RSS, with those of the descendants it
   waited for, go to ``status.json`` as ``rusage``: the job's usage when it has no cgroup),
   SIGKILLs what is left of its group (backgrounded processes go with the script, as
   before), writes ``status.json`` atomically and exits.

plurmd learns of the end from that file and need not be this process's parent: a plurmd
killed with -9, or stopped for an upgrade, leaves the job running, and the next one
adopts it from the spool (nodeagent/jobstate.py).  SIGTERM, SIGINT and SIGHUP are
ignored here (a handler that does nothing: exec resets it, so the job still gets them).
The forked child never logs, never touches plurmd's ZeroMQ objects, and leaves by
``os._exit``: nothing of plurmd's state (its threads' locks, its sockets) is used.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
import traceback

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


def _await_dirs(dirs: list[str], grace_s: float, shell: subprocess.Popen) -> None:
    """Until every directory exists (ENOENT only: any other error is the shell's to report),
    or the grace is over; polled, since inotify cannot watch a path whose parents are missing."""
    deadline = time.monotonic() + grace_s
    for path in dirs:
        while time.monotonic() < deadline and shell.poll() is None:  # (a cancel ends the wait)
            try:
                os.stat(path)
                break
            except FileNotFoundError:
                time.sleep(0.05)
            except OSError:
                break


def start(payload: dict) -> tuple[int, int]:
    """Fork the supervisor of one run: (its pid, the read end of the pipe it answers on)."""
    read_end, write_end = os.pipe()
    log_fd = os.open(os.path.join(payload["run_dir"], "supervisor.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                     0o600)
    pid = os.fork()
    if pid == 0:  # the supervisor
        status = 1
        try:
            os.close(read_end)
            _detach(write_end, log_fd)
            status = _supervise(payload)
        except BaseException:
            try:
                os.write(2, traceback.format_exc().encode())
            except OSError:
                pass
        finally:
            os._exit(status)
    os.close(write_end)
    os.close(log_fd)
    return pid, read_end


def _detach(answers: int, log_fd: int) -> None:
    """Out of plurmd's session, with plurmd's signal handling and descriptors left behind."""
    os.setsid()
    try:  # `ps -o comm`, top, pgrep: a supervisor, not a second plurmd (its cmdline stays plurmd's)
        with open("/proc/self/comm", "w") as comm:
            comm.write("plurmsupervisor")  # (15 characters: the kernel keeps no more)
    except OSError:
        pass
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _ignored)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(answers, 1)
    os.dup2(log_fd, 2)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))


def _supervise(payload: dict) -> int:
    run_dir: str = payload["run_dir"]
    read_end, write_end = os.pipe()
    try:
        shell = subprocess.Popen(payload["argv"], cwd="/", env=payload["env"], stdin=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL, stderr=write_end, start_new_session=True,
                                 close_fds=True, **payload["popen"])
    except OSError as exc:
        _say({"error": f"cannot start the job's shell: {exc.strerror}"})
        return 1
    except subprocess.SubprocessError:  # its preexec_fn (launch.Owner.popen_kwargs): it never ran
        _say({"error": "cannot put the job in its cgroup"})
        return 1
    finally:
        os.close(write_end)
    me = os.getpid()
    jobstate.write_json(os.path.join(run_dir, "procs.json"),
                        {"pid": me, "ticks": jobstate.start_ticks(me), "pgid": shell.pid})
    _say({"pid": shell.pid})
    _await_dirs(payload.get("wait_dirs", ()), float(payload.get("dir_grace_s", 0.0)), shell)
    assert shell.stdin is not None
    shell.stdin.close()  # the shell's first read returns: it opens the files now
    _say({"said": _read_until_closed(read_end, float(payload.get("wait_s", 10.0)))})
    # plurmd has what it needs from our pipe; it may go away from now on.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    os.close(devnull)
    status, rusage = _wait(shell)
    try:  # the group only: its leader's pid is free again and may be another process's
        os.killpg(shell.pid, signal.SIGKILL)
    except OSError:
        pass
    jobstate.write_json(os.path.join(run_dir, "status.json"),
                        {"status": status, "end_time": time.time(), "rusage": rusage})
    return 0


def _wait(shell: subprocess.Popen) -> tuple[int, dict[str, float]]:
    """The shell's status as Popen.returncode has it, and its resource usage (with that of
    the descendants it waited for): user and system CPU seconds, the largest RSS in KiB."""
    while True:
        try:
            _pid, status, usage = os.wait4(shell.pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:  # (never: it is our child) the status is lost
            return shell.wait(), {}
    shell.returncode = os.waitstatus_to_exitcode(status)
    return shell.returncode, {"user_cpu_s": usage.ru_utime, "system_cpu_s": usage.ru_stime,
                              "max_rss_kb": usage.ru_maxrss}
