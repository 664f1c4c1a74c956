"""plurmstepd: runs the tasks of one job step on one node (Slurm's slurmstepd).

Started by plurmd with a JSON payload on stdin (the LaunchTasks message,
the node name).  It connects a DEALER back to srun, starts
the node's tasks with their ranks in the environment, forwards their output
as it comes, and reports each task's exit status.  Tasks share its process
group, so plurmd's signals (cancel, time limit) reach them all.

When the job is confined (nodeagent/confinement.py) plurmd has made the step's cgroup
(``step_<n>``) and names it in the payload: each task enters it between fork and exec, while
still root, before it becomes its owner; this process stays outside (an OOM kill in the step
never takes the one that reports it).  At the end it kills what is left in the step's cgroup (daemonized children),
and the node's first task_exit message carries the step's OOM kills and usage on this node
(sampled every JobAcctGatherFrequency; CPU from the cgroup, else from wait4), which srun
gathers for the controller (and prints slurmstepd's OOM line for, after its own words).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import zmq

from plurm.wire import envelope
from plurm.wire.auth import KeyAuth
from plurm.common import environment, rlimits
from plurm.nodeagent import confinement, container, launch, stepbind, stepusage
from plurm.nodeagent.stepd_attach import Listeners
from plurm.nodeagent.stepd_debugger import DebuggerTest
from plurm.nodeagent.stepd_launch import NodeOptions
from plurm.nodeagent.stepd_pmi import StepPmi
from plurm.nodeagent.stepd_io import Stdin, TaskIo, start_task


# The signals a step may be sent that would end or stop this process by default (SIGKILL and
# SIGSTOP cannot be caught: they take it with the tasks, as they should).
FORWARDED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM,
             signal.SIGTERM, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGVTALRM, signal.SIGPROF, signal.SIGPWR,
             signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)


# A task on a pseudo-terminal is in a session of its own (the terminal's): the signals plurmd
# sends this process group are passed on to it.
_PTY_GROUPS: list[int] = []


def _ignored(signum: int, frame: object) -> None:
    """Nothing but passing the signal to a --pty task (see main)."""
    for pgid in _PTY_GROUPS:
        try:
            os.killpg(pgid, signum)
        except OSError:
            pass


def main() -> int:
    payload = json.loads(sys.stdin.buffer.read())
    msg, node_name = payload["msg"], payload["node"]
    # srun's key for this step (sent in its authenticated launch request): the output and
    # exit messages are srun's and this process's business only.
    key = KeyAuth(msg["io_key"].encode())
    # Signals from plurmd hit the whole process group: the tasks handle them; this process
    # stays to report how they ended.  Every signal a job may be sent (cancel, --signal,
    # scancel -s) gets a handler that does nothing: unlike SIG_IGN, exec resets it, so the
    # tasks get each one with its default action.
    for signum in FORWARDED:
        signal.signal(signum, _ignored)
    io = msg.get("io") or {}
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 5000)
    # srun's ROUTER sends this node's stdin to this identity once it has said hello.
    sock.setsockopt(zmq.IDENTITY, f"n{msg['node_id']}".encode())
    sock.connect(f"tcp://{msg['io_host']}:{msg['io_port']}")

    # sattach's listeners (nodeagent/stepd_attach.py): plurmd started this process in its spool.
    attached = Listeners(ctx, os.getcwd(), msg["job_id"], msg["step_id"], msg["node_id"], msg["task_ids"])

    def send(kind: str, body: dict) -> None:
        sock.send_multipart([b""] + envelope.seal(key, kind, body))
        if kind != "stepd_hello":
            attached.send(kind, body)

    send("stepd_hello", {"node_id": msg["node_id"]})
    opts = NodeOptions(msg, payload, node_name, send)  # srun's node-side options (nodeagent/stepd_launch.py)
    debugger = DebuggerTest.of(opts.opts)  # srun --debugger-test: the tasks start stopped (stepd_debugger.py)
    if not opts.begin():  # --bcast could not write the executable here: no task starts (srun was told)
        sock.close()
        attached.close()
        ctx.term()
        return 0
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    pmi = StepPmi.for_step(msg, node_name, send)  # --mpi=pmi2: each task's PMI_FD (nodeagent/pmi2.py)
    readers: dict[int, tuple[int, int]] = {}  # fd -> (rank, stream)
    stdins: dict[int, Stdin] = {}  # rank -> its stdin pipe
    procs: dict[int, subprocess.Popen] = {}
    pty_master: dict[int, int] = {}  # rank -> master fd
    task_ids = msg["task_ids"]
    shared: set[str] = set()  # node-side files already opened (later tasks append)
    cgroup = _step_cgroup(payload.get("cgroup") or {})
    join = list((payload.get("cgroup") or {}).get("join") or []) if cgroup is not None else None
    gauge = stepusage.Gauge()
    step_freq = opts.opts.get("acct_freq")  # srun --acctg-freq=task=N, over JobAcctGatherFrequency (a day at most)
    acct_every = float(step_freq if isinstance(step_freq, int) and not isinstance(step_freq, bool)
                       and 0 <= step_freq <= 86400 else payload.get("acct_freq", 30.0))
    next_sample = time.monotonic() + min(acct_every, 1.0) if acct_every > 0 else float("inf")
    bound = payload.get("binding") or {}  # each task's CPUs, NUMA nodes, GPUs (nodeagent/stepbind.py)
    for local_id, rank in enumerate(task_ids):
        env = environment.task_environment(
            msg["environment"], job_id=msg["job_id"], step_id=msg["step_id"], rank=rank, local_id=local_id,
            node_id=msg["node_id"], ntasks=msg["ntasks"], nodelist=msg["nodelist"],
            tasks_per_node=msg["tasks_per_node"], node_task_ids=task_ids, node_name=node_name)
        place = stepbind.task_place(bound, local_id)
        env.update(place.get("env") or {})
        if place.get("fail"):  # a mask the node cannot set: the task never runs (22.05.8's words)
            first, own = stepbind.task_words(bound, place, node_name, rank, local_id, os.getpid())
            send("task_output", {"task": task_ids[0], "stream": 2, "data": first + own})
            send("task_exit", {"task": rank, "exit_code": 0, "signal": 0,
                               "launch_failed": "Slurmd could not execve job"})
            continue
        pmi_env, pmi_fds = pmi.task_env(rank) if pmi is not None else ({}, ())
        if pmi is not None and pmi.failed:  # --mpi=pmix without a PMIx server (said why): it never runs
            send("task_exit", {"task": rank, "exit_code": 1, "signal": 0, "launch_failed": pmi.failed})
            continue
        env.update(pmi_env)
        limits = rlimits.take(env)  # SLURM_RLIMIT_*: srun's soft limits, set in the task (common/rlimits.py)
        opts.task_env(rank, env)
        task_io = TaskIo.of(io, rank=rank, node_id=msg["node_id"], job_id=msg["job_id"], work_dir=msg["work_dir"],
                            shared=shared)
        argv = opts.task_argv(rank, msg["argv"])  # --multi-prog's line, --bcast's copy
        if argv is None:
            opts.refuse(rank)
            continue
        if debugger is not None:
            argv = debugger.wrap(rank, argv)
        if env.get("SLURM_CONTAINER") and payload.get("oci") is not None:  # --container (nodeagent/container.py)
            try:
                argv = container.task_argv(payload["oci"], argv, env, bundle=env["SLURM_CONTAINER"],
                                           work_dir=msg["work_dir"], spool=os.getcwd(), job_id=msg["job_id"],
                                           step_id=msg["step_id"], task_id=rank, node=node_name,
                                           user=payload["owner"]["name"], uid=payload["owner"]["uid"],
                                           gids=(payload["owner"]["gid"], *payload["owner"]["groups"]))
            except (container.ContainerError, OSError) as exc:
                send("task_output", {"task": rank, "stream": 2,
                                     "data": f"slurmstepd: error: container: {exc}\n"})
                send("task_exit", {"task": rank, "exit_code": 1, "signal": 0,
                                   "launch_failed": "Slurmd could not execve job"})
                continue
        try:
            # As the job's owner: the directory, files, TaskProlog and exec happen after the switch
            # (and after it entered the step's cgroup, as root: ``join``).
            started = start_task(argv, env, msg["work_dir"], launch.Owner.from_payload(payload["owner"]),
                                 payload.get("task_prolog"), task_io, join=join, cpus=place.get("cpus"),
                                 mems=place.get("mems"), mems_prefer=bool(place.get("mems_prefer")),
                                 pass_fds=pmi_fds, user_prolog=opts.user_prolog, limits=limits)
        except OSError as exc:
            text = f"slurmstepd: error: execve(): {msg['argv'][0]}: {exc.strerror}\n"
            send("task_output", {"task": rank, "stream": 2, "data": text})
            send("task_exit", {"task": rank, "exit_code": 2, "signal": 0})
            continue
        except subprocess.SubprocessError:  # its preexec_fn: the cgroup could not be entered, it never ran
            text = f"slurmstepd: error: task {rank}: cannot join the step's cgroup\n"
            send("task_output", {"task": rank, "stream": 2, "data": text})
            send("task_exit", {"task": rank, "exit_code": 1, "signal": 0})
            continue
        proc = started.proc
        procs[rank] = proc
        opts.started(rank, local_id, proc.pid)
        first, own = stepbind.task_words(bound, place, node_name, rank, local_id, proc.pid)
        for to, words in ((task_ids[0], first), (rank, own)):  # before the task's own output
            if words:
                send("task_output", {"task": to, "stream": 2, "data": words})
        if started.master is not None:
            pty_master[rank] = started.master
            readers[started.master] = (rank, 1)
            stdins[rank] = Stdin(started.master, close_on_eof=False)
            _PTY_GROUPS.append(proc.pid)
        for stream, pipe in ((1, proc.stdout), (2, proc.stderr)):
            if pipe is not None:
                readers[pipe.fileno()] = (rank, stream)
        if started.stdin_fd is not None:
            stdins[rank] = Stdin(started.stdin_fd)
    if debugger is not None:  # once they have stopped: their pids to srun, which kills them
        debugger.report(procs, send, msg["node_id"])
    for fd in readers:
        poller.register(fd, zmq.POLLIN)
    if pmi is not None:
        pmi.after_start(procs, poller)
    writing: set[int] = set()  # stdin pipes (not also read) registered for room to write
    ended: set[int] = set()  # tasks whose end srun was told of as it happened (srun -W: task_ended)
    next_end_check = 0.0
    while readers or (pmi is not None and pmi.open()):  # (tasks writing to files still speak PMI)
        for pipe in stdins.values():  # input waiting for a task that has not taken it: watch for room
            if pipe.fd >= 0 and pipe.buffer:
                if pipe.fd in readers:  # a pty master: read and written
                    poller.register(pipe.fd, zmq.POLLIN | zmq.POLLOUT)
                elif pipe.fd not in writing:
                    poller.register(pipe.fd, zmq.POLLOUT)
                    writing.add(pipe.fd)
        events = dict(poller.poll(1000))
        if time.monotonic() >= next_end_check:  # (twice a second at most: one waitid per task)
            next_end_check = time.monotonic() + 0.5
            for rank, status in _ended_now(procs, ended):
                send("task_ended", {"task": rank, **status})
        if time.monotonic() >= next_sample:
            next_sample = time.monotonic() + acct_every
            gauge.add(stepusage.step_usage(os.getpid()))
        attached.poll(poller)
        if events.get(sock):
            _from_srun(sock, key, stdins, pty_master, pmi, procs)
        if pmi is not None:
            pmi.poll(poller, events)
        for peer, peer_key in attached.peers:  # sattach's stdin, signed with its own key
            if events.get(peer):
                _from_srun(peer, peer_key, stdins, pty_master)
        for fd, event in events.items():
            if not isinstance(fd, int) or fd not in readers or not event & (zmq.POLLIN | zmq.POLLERR):
                continue
            rank, stream = readers[fd]
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            except OSError:  # a pseudo-terminal whose task side has closed: EIO
                data = b""
            if not data:
                poller.unregister(fd)
                del readers[fd]
                continue
            send("task_output", {"task": rank, "stream": stream, "data": data.decode("utf-8", "surrogateescape")})
        for pipe in stdins.values():
            before = pipe.orig
            pipe.flush()
            if before in writing and (pipe.fd < 0 or not pipe.buffer):
                poller.unregister(before)
                writing.discard(before)
            elif before in readers and not pipe.buffer:
                poller.register(before, zmq.POLLIN)
    cpu = {"user_cpu_s": 0.0, "system_cpu_s": 0.0}
    peak_kb = 0
    statuses: dict[int, int] = {}
    for rank, proc in procs.items():
        statuses[rank], used = _wait(proc)
        opts.ended(rank, task_ids.index(rank), proc.pid, statuses[rank])  # --task-epilog, --slurmd-debug
        cpu["user_cpu_s"] += used.ru_utime if used else 0.0
        cpu["system_cpu_s"] += used.ru_stime if used else 0.0
        peak_kb = max(peak_kb, used.ru_maxrss if used else 0)
    oom = 0
    if cgroup is not None:
        oom, cpu = _finish(cgroup, cpu)
    usage = gauge.usage(cpu, peak_kb)
    first = True  # (srun tells the OOM kills, slurmstepd's line after its own: it has every node's)
    for rank in task_ids:
        if rank not in statuses:
            continue
        status = statuses[rank]
        code, sig = (0, -status) if status < 0 else (status, 0)
        body = {"task": rank, "exit_code": code, "signal": sig}
        if first:  # the node's figures, once (srun sums and takes maxima over its messages)
            body.update(oom_kills=oom, usage=usage)
            first = False
        send("task_exit", body)
    opts.finish()
    send("node_done", {"node": node_name})
    for pipe in stdins.values():
        if pipe.fd >= 0 and pipe.fd not in pty_master.values():
            os.close(pipe.fd)
    for fd in pty_master.values():
        os.close(fd)
    if pmi is not None:
        pmi.close()
    sock.close()
    attached.close()
    ctx.term()
    return 0


def _step_cgroup(setup: dict) -> Any:
    """The step's cgroup as plurmd made it (None: unconfined)."""
    if not setup:
        return None
    try:
        return confinement.step_cgroup(setup)
    except Exception as exc:  # plurmd made it a moment ago: the tasks run, unconfined, and say so
        sys.stderr.write(f"plurmstepd: the step's cgroup: {exc}\n")
        return None


def _ended_now(procs: dict[int, subprocess.Popen], ended: set[int]) -> list[tuple[int, dict[str, int]]]:
    """The tasks that exited since the last look, with their status, not reaped (WNOWAIT: the
    usage is read by wait4 once the step is done, and the exits are told then)."""
    out = []
    for rank, proc in procs.items():
        if rank in ended:
            continue
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None
        if info is None:
            continue
        ended.add(rank)
        killed = info.si_code in (os.CLD_KILLED, os.CLD_DUMPED)
        out.append((rank, {"exit_code": 0 if killed else info.si_status, "signal": info.si_status if killed else 0}))
    return out


def _wait(proc: subprocess.Popen) -> tuple[int, Any]:
    """A task's status (as Popen.returncode has it) and its resource usage (wait4)."""
    while True:
        try:
            _pid, status, used = os.wait4(proc.pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            return proc.wait(), None
        proc.returncode = os.waitstatus_to_exitcode(status)
        return proc.returncode, used


def _finish(cgroup: Any, cpu: dict[str, float]) -> tuple[int, dict[str, float]]:
    """Kill what the tasks left in the step's cgroup; its OOM kills and CPU seconds."""
    oom = 0
    try:
        cgroup.kill_all(signal.SIGKILL)
        oom = int(cgroup.oom_kills())
        used = cgroup.usage()
        if used.get("cpu_total_ns"):
            cpu = {"user_cpu_s": used.get("cpu_user_ns", 0) / 1e9, "system_cpu_s": used.get("cpu_system_ns", 0) / 1e9}
        cgroup.remove()  # (the job's end removes what is left)
    except Exception as exc:
        sys.stderr.write(f"plurmstepd: the step's cgroup at its end: {exc}\n")
    return oom, cpu


def _from_srun(sock: zmq.Socket, key: KeyAuth, stdins: dict[int, Stdin], pty_master: dict[int, int],
               pmi: StepPmi | None = None, procs: dict[int, subprocess.Popen] | None = None) -> None:
    """stdin data and window sizes from srun, and its PMI answers when ``pmi`` (signed with the
    step's key; anything else is dropped)."""
    while True:
        try:
            frames = sock.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            return
        try:
            header, raw, _sender = envelope.open_envelope(key, frames[1:] if frames and frames[0] == b"" else frames)
            body = json.loads(raw)
        except (envelope.WireError, ValueError):
            continue
        if not isinstance(body, dict):
            continue
        if pmi is not None and pmi.from_srun(str(header["type"]), body, procs or {}):
            continue
        if header["type"] == "stdin" and isinstance(body.get("data"), str):
            for rank in body.get("tasks") or []:
                pipe = stdins.get(rank) if isinstance(rank, int) else None
                if pipe is not None:
                    pipe.write(body["data"].encode("utf-8", "surrogateescape"), bool(body.get("eof")))
        elif header["type"] == "winsize":
            from plurm.nodeagent.stepd_io import set_winsize

            for fd in pty_master.values():
                set_winsize(fd, body.get("size"))
        elif header["type"] == "kill_tasks":  # srun -W (tools/srun_wait.py)
            _kill_tasks(procs or {})


def _kill_tasks(procs: dict[int, subprocess.Popen]) -> None:
    """Every process of the step's tasks SIGKILLed, this one kept (slurmstepd kills its step's
    processes, not itself): those of this process group (started with it) and of a pty task's
    own session.  (plurmd's signal_tasks reaches the whole group: SIGKILL there ends this one too.)"""
    me = os.getpid()
    groups = {os.getpgid(0)}
    for proc in procs.values():
        try:
            groups.add(os.getpgid(proc.pid))
        except ProcessLookupError:
            pass
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                pgrp = int(fh.read().rsplit(")", 1)[1].split()[2])
            if pgrp in groups:
                os.kill(int(entry), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue


if __name__ == "__main__":
    sys.exit(main())
