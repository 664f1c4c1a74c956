"""Starting a job's processes on a node, as the job's owner: the batch script, and step daemons.

Every process of a job runs with its owner's uid, gid and groups (initgroups: the
user's groups from the group database) and the umask it was submitted with
(SLURM_UMASK); the kernel switches user in the child (subprocess's ``user``,
``group``, ``extra_groups``, ``umask``), never a preexec_fn.  The job's files are
opened after the switch, by the job's own shell: ``-i``, ``-o``, ``-e`` and
``--chdir`` get the owner's permissions, and new output files belong to the owner.

The batch script is written to the node's spool directory and executed by a
small ``/bin/sh`` wrapper (paths are its positional arguments, never part of its
text) that opens the files, changes directory (to /tmp, as slurmstepd does, when
it cannot), runs the TaskProlog, and execs the script, so the kernel honours its
``#!`` line, in a session of its own (its process group is what cancel and time
limits signal) with SLURM_TASK_PID its own pid.  The wrapper is the child of the
run's supervisor (supervisor.py, forked by plurmd), not of plurmd: it outlives plurmd.
A file that cannot be opened fails the launch (LaunchError), except that a missing directory
of the --output/--error file is waited for a short grace first (OUTPUT_DIR_GRACE_S): tools
such as submitit create their log directory just after sbatch returns, and a job may start
sooner.  plurmd does not wait for the opening: it reads the outcome from the supervisor's
pipe on its loop's turns (Opening).  Steps run under ``python -m
plurm.nodeagent.stepd`` (as plurmd's user, like slurmstepd), which starts each
task through the same wrapper as the owner.
"""

from __future__ import annotations

import functools
import json
import os
import pwd
import select
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from plurm.wire import protocol
from plurm.common import environment, rlimits
from plurm.nodeagent import filenames, supervisor
from plurm.nodeagent.prolog import TASK_PROLOG_SH, USER_TASK_PROLOG_SH

UNKNOWN_USER = "User not found on host"  # Slurm's text for a uid the node does not know
OPEN_WAIT_S = 10.0  # how long a launch waits for the job's shell to open its files
# How long a batch job waits for the directory of its --output/--error file to appear before it
# fails as Slurm's does (FAILED, Reason=JobLaunchFailure).  A client library that makes its log
# directory right after sbatch returns needs milliseconds; 5 s covers a loaded submit host and
# a shared file system's attribute cache catching up, and keeps a real mistake short to report.
# Slurm has no such wait (its jobs rarely start within milliseconds of the submission).
OUTPUT_DIR_GRACE_S = 5.0
# Slurm 22.05's ExitCode for a batch job whose files cannot be opened (scontrol: ExitCode=0:53,
# its .batch step CANCELLED 0:53): what plurmd reports for such a launch failure.
OPEN_FAILED_EXIT = (0, 53)


class LaunchError(Exception):
    pass


@dataclass(frozen=True)
class Owner:
    """Whom a job's processes run as."""

    uid: int
    gid: int
    name: str
    home: str
    shell: str
    groups: tuple[int, ...]
    umask: int
    switch: bool  # False: plurmd is not root and runs its own user's jobs as itself

    def popen_kwargs(self, join: list[str] | None = None) -> dict[str, Any]:
        """Popen's arguments for a process of the owner's; ``join``: the cgroup.procs files of
        its step, which the child writes itself into while it is still root, before it becomes
        the owner (``_enter``): nothing of it ever runs outside its cgroup.  (A child that
        became the owner first and waited, stopped or reading, to be moved can be continued
        by any other process of the owner's, SIGCONT or ptrace, and fork outside.)"""
        if join:
            from plurm.nodeagent.cgroups import join as join_cgroup

            return {"umask": self.umask,
                    "preexec_fn": functools.partial(_enter, join_cgroup, list(join), self.uid, self.gid,
                                                    list(self.groups), self.switch)}
        if not self.switch or self._is_me():
            return {"umask": self.umask}
        return {"user": self.uid, "group": self.gid, "extra_groups": list(self.groups), "umask": self.umask}

    def _is_me(self) -> bool:
        """plurmd's own ids and groups already (root's job, as root): the switch would change
        no access (the primary group listed again among the others grants nothing more), and
        without it Popen starts the child with vfork, 2-4 ms less a job (issue 17)."""
        return (os.getresuid() == (self.uid,) * 3 and os.getresgid() == (self.gid,) * 3
                and set(os.getgroups()) - {self.gid} == set(self.groups) - {self.gid})

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        # --export=NONE and lists (SLURM_GET_USER_ENV=1): the user's login environment fills in.
        login = (environment.login_environment(self.name, self.shell, as_root=self.switch)
                 if environment.wants_login_environment(env) else None)
        return environment.owner_variables(env, user=self.name, home=self.home, shell=self.shell, login=login)

    def to_payload(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_payload(cls, data: dict[str, Any]) -> Owner:
        return cls(**{**data, "groups": tuple(data["groups"])})


def _enter(join: Any, paths: list[str], uid: int, gid: int, groups: list[int], switch: bool) -> None:
    """Between fork and exec, as root: into the step's cgroup, then the owner's groups and ids
    (what Popen's user=, group=, extra_groups= do, in the order Popen does them).  Only os
    calls: safe in a child of a process with threads.  An OSError fails the Popen
    (SubprocessError), never a process outside its cgroup."""
    join(paths)
    if switch:
        os.setgroups(groups)
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)


def owner_of(uid: int, gid: int, env: dict[str, str], job_uid: int | None = None) -> Owner:
    """The job's owner on this node, or LaunchError when this node cannot run as them."""
    if job_uid is not None and job_uid != uid:
        raise LaunchError(f"launch request for uid {uid} does not match the job's owner (uid {job_uid})")
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        raise LaunchError(UNKNOWN_USER) from None
    me = os.geteuid()
    if me != 0 and uid != me:
        raise LaunchError(f"plurmd runs as uid {me}, not root: it runs only that user's jobs, "
                          f"not those of {entry.pw_name} (uid {uid})")
    groups = os.getgrouplist(entry.pw_name, gid) if me == 0 else os.getgroups()
    ordered = tuple(dict.fromkeys([gid, *groups]))
    return Owner(uid, gid, entry.pw_name, entry.pw_dir, entry.pw_shell, ordered,
                 environment.submit_umask(env), switch=me == 0)


# ----------------------------------------------------------------- the job's shell
# $__plurm_wd: the directory to work in.  Slurm's slurmstepd goes to /tmp when it cannot.
# slurmstepd changes directory without a shell: the job sees no OLDPWD of ours.
CHDIR_SH = r'''
__plurm_op=${OLDPWD-@plurm-unset}
cd -- "$__plurm_wd" 2>/dev/null || {
  if [ -e "$__plurm_wd" ]; then
    if [ -d "$__plurm_wd" ]; then __plurm_r='Permission denied'; else __plurm_r='Not a directory'; fi
  else
    __plurm_p=${__plurm_wd%/*}
    if [ -n "$__plurm_p" ] && [ -d "$__plurm_p" ] && ! [ -x "$__plurm_p" ]; then
      __plurm_r='Permission denied'
    else
      __plurm_r='No such file or directory'
    fi
  fi
  printf "slurmstepd: error: couldn't chdir to \`%s': %s: going to /tmp instead\n" "$__plurm_wd" "$__plurm_r" >&2
  cd /tmp || { echo "slurmstepd: error: couldn't chdir to /tmp either. dying." >&2; exit 1; }
}
if [ "$__plurm_op" = @plurm-unset ]; then unset OLDPWD; else OLDPWD=$__plurm_op; fi
unset __plurm_wd __plurm_r __plurm_p __plurm_op
SLURM_TASK_PID=$$
export SLURM_TASK_PID
'''

# Batch: $1 directory, $2 stdin, $3 stdout, $4 stderr ("": with stdout), $5 open mode,
# $6 TaskProlog (""), then the script and its arguments.  stderr is a pipe to plurmd until
# the files are open: a failure is the shell's message and a marker naming the stream.
# The first read returns when the supervisor closes the shell's stdin: once the output
# directories exist, or their grace is over (supervisor.py).
BATCH_SH = r'''__plurm_wd=$1 __plurm_tp=$6
read -r __plurm_go || :
unset __plurm_go
command exec <"$2" || { echo '@plurm-open stdin' >&2; exit 1; }
if [ "$5" = append ]; then command exec >>"$3"; else command exec >"$3"; fi || {
  echo '@plurm-open stdout' >&2; exit 1; }
if [ -z "$4" ]; then command exec 2>&1
elif [ "$5" = append ]; then command exec 2>>"$4"
else command exec 2>"$4"
fi || { echo '@plurm-open stderr' >&2; exit 1; }
shift 6
''' + CHDIR_SH + TASK_PROLOG_SH + 'exec "$@"\n'

# A task of a step: $1 directory, $2 TaskProlog (""), $3 srun --task-prolog (""), then the
# command (stdio: stepd's pipes).
TASK_SH = r'''__plurm_wd=$1 __plurm_tp=$2 __plurm_utp=$3
shift 3
''' + CHDIR_SH + TASK_PROLOG_SH + USER_TASK_PROLOG_SH + r'''
command -v -- "$1" >/dev/null 2>&1 || {
  printf 'slurmstepd: error: execve(): %s: No such file or directory\n' "$1" >&2; exit 2; }
exec "$@"
'''

# The shells' words for ENOENT (dash) as strerror says it.
_SHELL_REASONS = {"No such file": "No such file or directory", "Directory nonexistent": "No such file or directory"}


def _ignored(signum: int, frame: Any) -> None:
    """A handler that does nothing: unlike SIG_IGN, exec resets it to the default."""


def _default_on_exec() -> None:
    """Signals this process ignores (stepd: SIGTERM, SIGINT) must reach its tasks."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        if signal.getsignal(signum) == signal.SIG_IGN:
            signal.signal(signum, _ignored)


def start_task(argv: list[str], env: dict[str, str], work_dir: str, owner: Owner,
               task_prolog: str | None = None) -> subprocess.Popen:
    """One task of a step, as its owner, its output on pipes (stepd reads them)."""
    _default_on_exec()
    return subprocess.Popen(["/bin/sh", "-c", TASK_SH, "slurmstepd", work_dir, task_prolog or "", "", *argv],
                            cwd="/", env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, close_fds=True, restore_signals=True,
                            **owner.popen_kwargs())


def output_paths(msg: protocol.LaunchJob, node_name: str) -> tuple[str, str, str]:
    job = msg.job
    spec = job["spec"]
    is_array = job.get("array_job_id") is not None
    common = dict(job_id=msg.job_id, job_name=spec.get("name", ""), user=spec.get("user", ""),
                  array_job_id=job.get("array_job_id"), array_task_id=job.get("array_task_id"))
    out = filenames.expand(msg.stdout or filenames.default_output(is_array), **common)
    err = filenames.expand(msg.stderr, **common) if msg.stderr else out
    inp = filenames.expand(msg.stdin or "/dev/null", **common)
    return (filenames.resolve(out, msg.work_dir), filenames.resolve(err, msg.work_dir),
            filenames.resolve(inp, msg.work_dir))


def _write_script(msg: protocol.LaunchJob, spool: str, owner: Owner) -> str:
    job_dir = os.path.join(spool, f"job{msg.job_id:05d}")
    os.makedirs(job_dir, mode=0o700, exist_ok=True)
    script_path = os.path.join(job_dir, "slurm_script")
    with open(script_path, "w", encoding="utf-8") as handle:
        handle.write(msg.script)
    os.chmod(script_path, 0o700)
    if owner.switch and owner.uid != os.geteuid():
        os.chown(script_path, owner.uid, owner.gid)
        os.chown(job_dir, owner.uid, owner.gid)
    os.chmod(job_dir, 0o700)
    return script_path


def _open_failure(said: str, paths: dict[str, str]) -> str | None:
    lines = said.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("@plurm-open "):
            stream = line.split()[1]
            reason = lines[i - 1].rsplit(": ", 1)[-1] if i else "failed"
            return f"Could not open {stream} file {paths[stream]}: {_SHELL_REASONS.get(reason, reason)}"
    return None


class Child:
    """A process this plurmd forked (a run's supervisor), reaped as Popen reaps its own."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: it has ended all the same
                self.returncode = -1
                return self.returncode
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"process {self.pid} still runs after {timeout} s")
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode


@dataclass
class BatchStart:
    """A batch script that started: its supervisor (our child until plurmd restarts) and
    the job's process group."""

    supervisor: Child
    pgid: int
    run_dir: str
    opening: Opening | None = None

    def wait(self, timeout: float | None = None) -> int:
        """The script's exit status (as Popen.returncode has it), once its supervisor is done;
        LaunchError when the shell could not open the job's files."""
        from plurm.nodeagent.jobstate import read_status

        if self.opening is not None:
            failure = self.opening.finish(OUTPUT_DIR_GRACE_S + OPEN_WAIT_S + 30.0 if timeout is None else timeout)
            if failure is not None:
                self.supervisor.wait(timeout)
                raise LaunchError(failure)
        self.supervisor.wait(timeout)
        status = read_status(self.run_dir)
        if status is None:
            raise LaunchError(f"the job's supervisor ended without a status (exit {self.supervisor.returncode})")
        return status[0]


def start_batch(msg: protocol.LaunchJob, node_name: str, spool: str, where: dict[str, Any],
                run_dir: str | None = None, binding: Any = environment.default_binding,
                task_prolog: str | None = None, dir_grace_s: float = OUTPUT_DIR_GRACE_S,
                cgroup_procs: list[str] | None = None) -> BatchStart:
    """The job's shell under its supervisor (nodeagent/supervisor.py), which outlives plurmd;
    its records go to ``run_dir`` (default: the run's directory in ``spool``); its
    shell enters the cgroup of ``cgroup_procs`` (its step_batch) before it runs.  Returns
    once the shell runs; whether it could open its files is ``BatchStart.opening``'s to say."""
    from plurm.nodeagent.jobstate import run_dir as default_run_dir

    run_dir = run_dir or default_run_dir(spool, msg.job_id, int(msg.job.get("restarts") or 0))
    owner = owner_of(msg.uid, msg.gid, msg.environment, msg.job.get("spec", {}).get("user_id"))
    script_path = _write_script(msg, spool, owner)
    env = environment.batch_environment(msg.job, msg.environment, node_name, binding=binding, **where)
    env.pop("SLURM_UMASK", None)  # applied, not shown to the script (as slurmstepd does)
    env = owner.environment(env)
    limits = rlimits.take(env)  # SLURM_RLIMIT_*: sbatch's soft limits, set in the shell (common/rlimits.py)
    out_path, err_path, in_path = output_paths(msg, node_name)
    mode = "append" if msg.open_mode == "append" else "truncate"
    argv = ["/bin/sh", "-c", BATCH_SH, "slurmstepd", msg.work_dir, in_path, out_path,
            "" if err_path == out_path else err_path, mode, task_prolog or "", script_path, *msg.args]
    wait_dirs = sorted({os.path.dirname(p) for p in (out_path, err_path)} - {""})
    # (The payload stays in memory: the supervisor is a fork of this process, preexec_fn and all.)
    payload = {"argv": argv, "env": env, "popen": rlimits.preexec(owner.popen_kwargs(cgroup_procs), limits),
               "run_dir": run_dir,
               "wait_s": OPEN_WAIT_S, "wait_dirs": wait_dirs, "dir_grace_s": dir_grace_s}
    pid, answers = supervisor.start(payload)
    try:
        first, rest = _first_reply(answers, 30.0)
    except BaseException:
        os.close(answers)
        raise
    child = Child(pid)
    if first is None or "pid" not in first:
        os.close(answers)
        child.wait()
        why = first.get("error") if first else None
        raise LaunchError(str(why or "the job's supervisor did not start"))
    opening = Opening(answers, rest, {"stdin": in_path, "stdout": out_path, "stderr": err_path})
    return BatchStart(child, int(first["pid"]), run_dir, opening)


class Opening:
    """The job's shell opening its files, as its supervisor tells on the pipe: read without
    blocking, so that plurmd serves on while a job waits for its output directory."""

    def __init__(self, fd: int, buffered: bytes, paths: dict[str, str]) -> None:
        self.fd: int | None = fd
        self.buf = buffered
        self.paths = paths
        self.failure: str | None = None
        os.set_blocking(fd, False)

    def fileno(self) -> int:
        return -1 if self.fd is None else self.fd

    @property
    def done(self) -> bool:
        return self.fd is None

    def poll(self) -> bool:
        """Read what has come; True once the outcome is known (``failure``: None, or why)."""
        while self.fd is not None and b"\n" not in self.buf:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return False
            except OSError:
                data = b""
            if not data:
                break  # the supervisor closed its side (it went on, or died): nothing more comes
            self.buf += data
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
            line = self.buf.split(b"\n", 1)[0]
            try:
                said = json.loads(line).get("said", "") if line else ""
            except (ValueError, AttributeError):
                said = ""
            self.failure = _open_failure(str(said), self.paths)
        return True

    def finish(self, timeout: float) -> str | None:
        """Wait (a test's or a BatchStart.wait's caller) for the outcome: the failure, or None."""
        deadline = time.monotonic() + timeout
        while not self.poll():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            select.select([self.fd], [], [], min(left, 0.5))
        return self.failure

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


# dd's O_NONBLOCK open: a FIFO the owner put in the error file's place (no reader) fails at
# once rather than holding plurmd's loop until the timeout; a regular file is appended to.
APPEND_SH = 'printf "%s" "$1" | dd of="$2" oflag=append,nonblock conv=notrunc status=none'


def append_as_owner(path: str, text: str, uid: int, timeout: float = 10.0) -> bool:
    """Append ``text`` to a job's file as its owner (slurmstepd's OOM line in the job's error
    file): opened by a shell of the owner's, never by root in a directory of theirs.  False
    when it could not be written."""
    kwargs: dict[str, Any] = {}
    if os.geteuid() == 0 and uid >= 0 and uid != os.geteuid():
        try:
            entry = pwd.getpwuid(uid)
        except KeyError:
            return False
        kwargs = {"user": uid, "group": entry.pw_gid,
                  "extra_groups": os.getgrouplist(entry.pw_name, entry.pw_gid)}
    try:
        done = subprocess.run(["/bin/sh", "-c", APPEND_SH, "slurmstepd", text, path], cwd="/",
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={"PATH": "/usr/bin:/bin"}, timeout=timeout, **kwargs)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _daemon_environment() -> dict[str, str]:
    """plurmd's environment without any job's variables (a plurmd started from inside a job)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}


def _first_reply(fd: int, wait_s: float) -> tuple[dict[str, Any] | None, bytes]:
    """The supervisor's first line (the shell's pid, or why it could not start), and what
    came after it; None when it died without a word."""
    buf = b""
    deadline = time.monotonic() + wait_s
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        data = os.read(fd, 65536)
        if not data:
            break
        buf += data
    line, _, rest = buf.partition(b"\n")
    try:
        value = json.loads(line) if line else None
    except ValueError:
        value = None
    return (value if isinstance(value, dict) else None), rest


def start_stepd(msg: protocol.LaunchTasks, node_name: str, spool: str, key_path: str,
                task_prolog: str | None = None, cgroup: dict[str, Any] | None = None,
                acct_freq: float = 30.0, binding: dict[str, Any] | None = None,
                oci: dict[str, str] | None = None, task_epilog: str | None = None) -> subprocess.Popen:
    """The step's plurmstepd, as plurmd's user; it starts the tasks as their owner, in the
    step's cgroup when ``cgroup`` names one (confinement.Setup.payload), and samples their
    usage every ``acct_freq`` seconds; ``binding``: each task's CPUs, NUMA nodes and GPUs
    (nodeagent/stepbind.plan); ``task_epilog``: slurm.conf's TaskEpilog, run after each task's
    srun --task-epilog (nodeagent/stepd_launch.py)."""
    owner = owner_of(msg.uid, msg.gid, msg.environment)
    msg.environment = owner.environment(msg.environment)
    payload = json.dumps({"msg": protocol.to_builtins(msg), "node": node_name, "key_path": key_path,
                          "owner": owner.to_payload(), "task_prolog": task_prolog, "cgroup": cgroup or {},
                          "acct_freq": acct_freq, "binding": binding or {}, "task_epilog": task_epilog,
                          "oci": oci})  # oci.conf, for --container steps (nodeagent/container.py)
    env = _daemon_environment()
    proc = subprocess.Popen([sys.executable, "-m", "plurm.nodeagent.stepd"], stdin=subprocess.PIPE,
                            cwd=spool, env=env, start_new_session=True, close_fds=True)
    assert proc.stdin is not None
    proc.stdin.write(payload.encode())
    proc.stdin.close()
    return proc


def step_job(msg: protocol.LaunchTasks, nodes: list[str]) -> dict[str, Any]:
    """The job as a Prolog sees it, on a node where its first process is a step (slurmd runs
    the Prolog at a job's first launch on each node): from the step's credential and
    environment."""
    from plurm.grammar.hostlist import expand

    try:
        user = pwd.getpwuid(msg.uid).pw_name
    except KeyError:
        user = str(msg.uid)
    env = msg.environment
    job_nodes = expand(env["SLURM_JOB_NODELIST"]) if env.get("SLURM_JOB_NODELIST") else list(msg.nodelist)
    return {"job_id": msg.job_id, "partition": env.get("SLURM_JOB_PARTITION", ""), "nodes": job_nodes or nodes,
            "spec": {"user_id": msg.uid, "group_id": msg.gid, "user": user}}
