"""plurmstepd's PMI glue (``--mpi=pmi2``): the node's PMI server on its poller, srun's answers.

``--mpi=pmix`` has a glue of its own with the same methods (nodeagent/pmix_step.py): for_step
chooses.

nodeagent/pmi2.py speaks the protocol; this module gives each task its end (the variables and
the descriptor it inherits), turns the server's events into messages on the step's channel
to srun (``pmi_fence``, ``pmi_abort``; a complaint becomes slurmstepd's error line on the step's
stderr, as 22.05 writes it), and applies srun's ``pmi_fence_done`` and ``pmi_kill``.
"""

from __future__ import annotations

import subprocess
from typing import Any

from plurm.nodeagent import pmi2
from plurm.nodeagent.pmi_abort import SRUN_KINDS, GlueWords, Send, kill_on_srun_word


class StepPmi(GlueWords):
    """The PMI server of this step on this node, wired to plurmstepd's loop."""

    def __init__(self, msg: dict[str, Any], node_name: str, send: Send) -> None:
        self.node_id = int(msg["node_id"])
        self.node_name = node_name
        self.job_step = f"{msg['job_id']}.{msg['step_id']}"
        self.first_rank = (msg.get("task_ids") or [0])[0]
        self.send = send
        self.server = pmi2.NodeServer(job_id=msg["job_id"], step_id=msg["step_id"], ntasks=msg["ntasks"],
                                      tasks_per_node=list(msg["tasks_per_node"]),
                                      mapping=str(msg.get("pmi_mapping") or ""))
        self.registered: set[int] = set()
        self.killed = False

    failed = ""  # (a PMI-2 server always starts; see nodeagent/pmix_step.py)

    @classmethod
    def for_step(cls, msg: dict[str, Any], node_name: str, send: Send) -> Any:
        """The server when srun chose ``--mpi=pmi2`` (or PMIx's, for ``--mpi=pmix``); None: the
        tasks get no PMI."""
        if msg.get("mpi") == "pmi2":
            return cls(msg, node_name, send)
        if msg.get("mpi") in ("pmix", "pmix_v4"):
            from plurm.nodeagent.pmix_step import StepPmix

            return StepPmix(msg, node_name, send)
        return None

    def task_env(self, rank: int) -> tuple[dict[str, str], tuple[int, ...]]:
        """PMI_FD and its companions for task ``rank`` (SLURM_MPI_TYPE as 22.05 sets it), and the
        descriptor the task must inherit."""
        env, fd = self.server.task_end(rank)
        env["SLURM_MPI_TYPE"] = "pmi2"
        return env, (fd,)

    def after_start(self, procs: dict[int, subprocess.Popen], poller: Any) -> None:
        """The tasks have their ends: close ours (a task's exit then reads as EOF; one that never
        started holds no fence up) and watch the connections."""
        for rank in list(self.server.child_ends):
            self.server.started(rank, ran=rank in procs)
        self.poll(poller, {})

    def open(self) -> bool:
        return self.server.open()

    def poll(self, poller: Any, events: dict[Any, int]) -> None:
        """Serve the connections ``events`` says are readable (``{}``: only register them all
        with ``poller``, before the loop); unregister the ones the server closed."""
        import zmq

        live = set(self.server.fds())
        for fd in live - self.registered:
            poller.register(fd, zmq.POLLIN)
        self.registered |= live
        for fd in sorted(self.registered & set(events)):
            if fd in self.server.tasks:
                self._handle(self.server.readable(fd))
        closed = self.registered - set(self.server.fds())
        for fd in closed:
            poller.unregister(fd)
        self.registered -= closed

    def _handle(self, events: list[pmi2.Event]) -> None:
        for event in events:
            if isinstance(event, pmi2.Fence):
                self.send("pmi_fence", {"node_id": self.node_id, "seq": event.seq, "kvs": event.kvs})
            elif isinstance(event, pmi2.Abort):
                self.send("pmi_abort", {"node_id": self.node_id, "rank": event.rank, "exit_code": event.exit_code,
                                        "message": event.message})
            elif isinstance(event, pmi2.Complaint):
                self.say(event.text)

    def from_srun(self, kind: str, body: dict[str, Any], procs: dict[int, subprocess.Popen]) -> bool:
        """srun's PMI messages (False: not one of them)."""
        if kind not in SRUN_KINDS:
            return False
        from plurm.wire import protocol

        msg = self.srun_message(kind, body)
        if isinstance(msg, protocol.PmiFenceDone):
            self.server.fence_done(msg.seq, dict(msg.kvs))
        elif isinstance(msg, protocol.PmiKill) and not self.killed:
            self.killed = True
            kill_on_srun_word(msg, self.node_id, self.node_name, self.job_step, self.first_rank, self.send, procs)
        return True

    def close(self) -> None:
        self.server.close()
