"""plurmstepd: runs the tasks of one job step on one node (Slurm's slurmstepd).

Started by plurmd with a JSON payload on stdin (the LaunchTasks message,
the node name).  It connects a DEALER back to srun, starts
the node's tasks with their ranks in the environment, forwards their output
as it comes, and reports each task's exit status.  Tasks share its process
group, so plurmd's signals (cancel, time limit) reach them all.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys

import zmq

from plurm.wire import envelope
from plurm.wire.auth import KeyAuth
from plurm.common import environment
from plurm.nodeagent import launch


# The signals a step may be sent that would end or stop this process by default (SIGKILL and
# SIGSTOP cannot be caught: they take it with the tasks, as they should).
FORWARDED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM,
             signal.SIGTERM, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGVTALRM, signal.SIGPROF, signal.SIGPWR,
             signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU)


def _ignored(signum: int, frame: object) -> None:
    """Nothing (see main)."""


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
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 5000)
    sock.connect(f"tcp://{msg['io_host']}:{msg['io_port']}")

    def send(kind: str, body: dict) -> None:
        sock.send_multipart([b""] + envelope.seal(key, kind, body))

    selector = selectors.DefaultSelector()
    procs: dict[int, subprocess.Popen] = {}
    task_ids = msg["task_ids"]
    for local_id, rank in enumerate(task_ids):
        env = environment.task_environment(
            msg["environment"], job_id=msg["job_id"], step_id=msg["step_id"], rank=rank, local_id=local_id,
            node_id=msg["node_id"], ntasks=msg["ntasks"], nodelist=msg["nodelist"],
            tasks_per_node=msg["tasks_per_node"], node_task_ids=task_ids, node_name=node_name)
        try:
            # As the job's owner: the directory, TaskProlog and exec happen after the switch.
            proc = launch.start_task(msg["argv"], env, msg["work_dir"], launch.Owner.from_payload(payload["owner"]),
                                     payload.get("task_prolog"))
        except OSError as exc:
            text = f"slurmstepd: error: execve(): {msg['argv'][0]}: {exc.strerror}\n"
            send("task_output", {"task": rank, "stream": 2, "data": text})
            send("task_exit", {"task": rank, "exit_code": 2, "signal": 0})
            continue
        procs[rank] = proc
        selector.register(proc.stdout, selectors.EVENT_READ, (rank, 1))
        selector.register(proc.stderr, selectors.EVENT_READ, (rank, 2))
    open_streams = 2 * len(procs)
    while open_streams:
        for key_obj, _ in selector.select():
            rank, stream = key_obj.data
            data = os.read(key_obj.fd, 65536)
            if not data:
                selector.unregister(key_obj.fileobj)
                open_streams -= 1
                continue
            send("task_output", {"task": rank, "stream": stream,
                                 "data": data.decode("utf-8", "surrogateescape")})
    for rank, proc in procs.items():
        status = proc.wait()
        code, sig = (0, -status) if status < 0 else (status, 0)
        send("task_exit", {"task": rank, "exit_code": code, "signal": sig})
    send("node_done", {"node": node_name})
    sock.close()
    ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
