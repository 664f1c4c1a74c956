"""plurmstepd's PMIx glue (``--mpi=pmix``): nodeagent/pmix_server.py on the step's loop, srun's answers.

The same duties as nodeagent/stepd_pmi.py's StepPmi has for ``--mpi=pmi2``, with the same
messages to and from srun: a fence's packed data goes as ``pmi_fence`` (one key per node,
``pmix.<node id>``, the data in base64: srun's relay joins the nodes' keys as it joins PMI-2's
puts, tools/srun_pmi.py), ``pmi_fence_done`` brings every node's part back, ``pmi_abort`` and
``pmi_kill`` end the step.

A PMIx layer that fails never leaves srun waiting: a library that is missing or refuses to start
makes every task of the node a launch failure (with slurmstepd's error line); a task that
connected and then ended without PMIx_Finalize, or one that never started, ends the step as an
abort does -- its peers would wait in their next fence for ever.
"""

from __future__ import annotations

import base64
import ctypes
import os
import subprocess
from typing import Any

from plurm.nodeagent import pmix_server
from plurm.nodeagent.pmi_abort import SRUN_KINDS, GlueWords, Send, kill_on_srun_word

KEY_PREFIX = "pmix."


class StepPmix(GlueWords):
    """The PMIx server of this step on this node, wired to plurmstepd's loop."""

    def __init__(self, msg: dict[str, Any], node_name: str, send: Send) -> None:
        self.node_id = int(msg["node_id"])
        self.node_name = node_name
        self.job_step = f"{msg['job_id']}.{msg['step_id']}"
        self.task_ids = list(msg.get("task_ids") or [])
        self.first_rank = (self.task_ids or [0])[0]
        self.send = send
        self.mpi_type = str(msg.get("mpi") or "pmix")  # SLURM_MPI_TYPE: the name srun was given, as 22.05 sets it
        self.killed = False
        self.failed = ""  # why the tasks cannot have PMIx (they are then not started)
        self.procs: dict[int, subprocess.Popen] = {}
        self.aborted = False
        node_of = pmix_server.node_of_rank(list(msg["tasks_per_node"]), self.node_id, self.task_ids,
                                           _layout(msg, self.node_id, self.task_ids))
        self.server = pmix_server.NodeServer(job_id=msg["job_id"], step_id=msg["step_id"], node_id=self.node_id,
                                             nodelist=list(msg["nodelist"]), ntasks=int(msg["ntasks"]),
                                             node_of=node_of, uid=int(msg.get("uid", 0)),
                                             gid=int(msg.get("gid", 0)))
        try:
            self.server.start()
        except (pmix_server.PmixError, OSError, ValueError, ctypes.ArgumentError) as exc:
            self._fail(str(exc) if isinstance(exc, pmix_server.PmixError) else f"mpi/pmix: cannot start: {exc}")
        self.shared_host_env = _shared_host_env(msg, node_name, self.server.tmpdir)

    def _fail(self, why: str) -> None:
        """No PMIx for this node's tasks: they are launch failures (22.05's words for a failed
        mpi/pmix prefork), and the step ends (the other nodes' tasks would wait in a fence)."""
        if self.failed:
            return
        self.failed = "Unspecified error"
        self.say(why)
        self._abort(self.first_rank, 1, "")

    def task_env(self, rank: int) -> tuple[dict[str, str], tuple[int, ...]]:
        """PMIx_server_setup_fork's variables for task ``rank`` and SLURM_MPI_TYPE, as 22.05 sets them."""
        if self.failed:
            return {}, ()
        try:
            env = self.server.task_env(rank)
        except pmix_server.PmixError as exc:
            self._fail(str(exc))
            return {}, ()
        env["SLURM_MPI_TYPE"] = self.mpi_type
        env.update(self.shared_host_env)
        return env, ()

    def after_start(self, procs: dict[int, subprocess.Popen], poller: Any) -> None:
        import zmq

        self.procs = procs
        poller.register(self.server.wake_r, zmq.POLLIN)
        missing = [rank for rank in self.task_ids if rank not in procs]
        if missing and not self.failed and len(missing) < len(self.server.node_of):
            self.say(f"mpi/pmix: task {missing[0]} did not start: ending the step (its peers would wait for it)")
            self._abort(missing[0], 1, "")

    def open(self) -> bool:
        """Whether a task still runs (the fences go through this loop until none does)."""
        return any(_running(proc) for proc in self.procs.values())

    def poll(self, poller: Any, events: dict[Any, int]) -> None:
        if self.failed:
            return
        for event in self.server.take_events():  # (every turn: a finalize noted just before an exit counts)
            self._handle(event)
        self._check_ended()

    def _handle(self, event: pmix_server.Event) -> None:
        if isinstance(event, pmix_server.Fence):
            data = base64.b64encode(event.data).decode("ascii")
            self.send("pmi_fence", {"node_id": self.node_id, "seq": event.seq,
                                    "kvs": {f"{KEY_PREFIX}{self.node_id:06d}": data}})
        elif isinstance(event, pmix_server.Abort):
            self._abort(event.rank, event.status or 1, event.message)

    def _check_ended(self) -> None:
        """A task that connected and ended without finalizing: its peers' fences would hang."""
        if self.aborted or self.killed:
            return
        for rank, proc in self.procs.items():
            if rank in self.server.finalized or rank not in self.server.connected or _running(proc):
                continue
            self.say(f"mpi/pmix: task {rank} ended without PMIx_Finalize: ending the step")
            self._abort(rank, 1, "")
            return

    def _abort(self, rank: int, status: int, message: str) -> None:
        if self.aborted:
            return
        self.aborted = True
        self.send("pmi_abort", {"node_id": self.node_id, "rank": rank, "exit_code": status, "message": message})

    def from_srun(self, kind: str, body: dict[str, Any], procs: dict[int, subprocess.Popen]) -> bool:
        """srun's PMI messages (False: not one of them)."""
        if kind not in SRUN_KINDS:
            return False
        from plurm.wire import protocol

        msg = self.srun_message(kind, body)
        if isinstance(msg, protocol.PmiFenceDone):
            blobs: list[bytes] = []
            try:
                for key in sorted(k for k in msg.kvs if k.startswith(KEY_PREFIX)):
                    blobs.append(base64.b64decode(msg.kvs[key], validate=True))
            except ValueError as exc:
                self.say(f"mpi/pmix: fence {msg.seq}: a node's data is not base64 ({exc}): ending the step")
                self.server.fence_done(msg.seq, [], ok=False)
                self._abort(self.first_rank, 1, "")
                return True
            self.server.fence_done(msg.seq, blobs)
        elif isinstance(msg, protocol.PmiKill) and not self.killed:
            self.killed = True
            kill_on_srun_word(msg, self.node_id, self.node_name, self.job_step, self.first_rank, self.send, procs)
        return True

    def close(self) -> None:
        self.server.close()


def _shared_host_env(msg: dict[str, Any], node_name: str, tmpdir: str) -> dict[str, str]:
    """Open MPI's shared-memory segments for a node that is not its host (a local cluster's n1,
    n2 ... on one machine): Open MPI names them by host name, job and local rank, so the ranks of
    two such nodes would map each other's segments (and crash in btl/vader).  Each node's go in
    its PMIx directory instead, unless the step's environment chose a place; a node that is its
    host (a real cluster) keeps Open MPI's default."""
    import socket

    name = "OMPI_MCA_btl_vader_backing_directory"
    host = socket.gethostname().split(".")[0]
    if not tmpdir or node_name == host or len(msg.get("nodelist") or []) < 2 or name in (msg.get("environment") or {}):
        return {}
    return {name: tmpdir}


def _layout(msg: dict[str, Any], node_id: int, task_ids: list[int]) -> list[int] | None:
    """Each rank's node from srun's process mapping (its -m layout); None when srun sent none, or
    one that contradicts this node's own ranks or nodes."""
    from plurm.nodeagent.pmi_wire import mapping_nodes

    nodes = mapping_nodes(str(msg.get("pmi_mapping") or ""), int(msg["ntasks"]))
    if nodes is None or max(nodes) >= len(msg["nodelist"]):
        return None
    if [rank for rank, node in enumerate(nodes) if node == node_id] != sorted(task_ids):
        return None
    return nodes


def _running(proc: subprocess.Popen) -> bool:
    """Whether the task still runs (not reaped: plurmstepd reads its usage at the end)."""
    if proc.returncode is not None:
        return False
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return False
