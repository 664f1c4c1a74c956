"""srun's side of ``--mpi=pmi2`` and ``--mpi=pmix``: the meeting point of the step's fences, and MPI_Abort.

``--mpi=pmix`` uses the same messages: each node's packed PMIx fence data is one put of its own
(``pmix.<node id>``, nodeagent/pmix_step.py), so joining the puts joins the nodes' data.

Each node's plurmstepd sends ``pmi_fence`` once all its tasks are in a fence, with their puts
(nodeagent/pmi2.py); when every node of the step has sent fence ``seq``, srun answers each one
``pmi_fence_done`` with all the puts, and the tasks go on.  srun talks to every plurmstepd of
the step already (their output, the stdin it forwards), over a channel signed with the step's
own key, so the exchange needs no new socket and keeps the controller off the step's path.

``pmi_abort`` (a task's MPI_Abort) ends the step as 22.05's srun does: "Job step aborted",
then every node kills its tasks (``pmi_kill``), which srun reports Killed (exit 137).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

# srun holds one round's puts from every node: a bound on what a broken step can make it keep.
MAX_ROUND_BYTES = 64 * 1024 * 1024


class FenceRelay:
    """The fences of one step across its ``nodes`` nodes; ``send(node_id, kind, body)`` reaches
    a node's plurmstepd."""

    def __init__(self, nodes: int, send: Callable[[int, str, dict[str, Any]], None]) -> None:
        self.nodes = nodes
        self.send = send
        self.seq = 0
        self.arrived: dict[int, dict[str, str]] = {}  # node id -> its puts, for fence self.seq
        self.size = 0
        self.aborted_clock = ""

    def on_message(self, kind: str, body: dict[str, Any]) -> None:
        """One PMI message from a plurmstepd (a malformed one is logged and dropped)."""
        from plurm.wire import protocol

        try:
            msg = protocol.pmi_message(kind, body)
        except protocol.SchemaError as exc:
            print(f"srun: error: mpi/pmi2: {exc}", file=sys.stderr)
            return
        if isinstance(msg, protocol.PmiFence):
            self._fence(msg)
        elif isinstance(msg, protocol.PmiAbort):
            self.abort()

    def _fence(self, msg: Any) -> None:
        if not 0 <= msg.node_id < self.nodes or msg.seq != self.seq or msg.node_id in self.arrived:
            print(f"srun: error: mpi/pmi2: node {msg.node_id}: fence {msg.seq} out of turn (at {self.seq})",
                  file=sys.stderr)
            return
        self.size += sum(len(k) + len(v) for k, v in msg.kvs.items())
        if self.size > MAX_ROUND_BYTES:
            print(f"srun: error: mpi/pmi2: fence {msg.seq}: more than {MAX_ROUND_BYTES} bytes of puts",
                  file=sys.stderr)
            self.abort()
            return
        self.arrived[msg.node_id] = dict(msg.kvs)
        if len(self.arrived) < self.nodes:
            return
        merged: dict[str, str] = {}
        for node_id in sorted(self.arrived):
            merged.update(self.arrived[node_id])
        seq, self.seq, self.arrived, self.size = self.seq, self.seq + 1, {}, 0
        for node_id in range(self.nodes):
            self.send(node_id, "pmi_fence_done", {"seq": seq, "kvs": merged})

    def abort(self) -> None:
        """A task's MPI_Abort: end the step on every node (once)."""
        if self.aborted_clock:
            return
        self.aborted_clock = time.strftime("%Y-%m-%dT%H:%M:%S")
        print("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.", file=sys.stderr)
        for node_id in range(self.nodes):
            self.send(node_id, "pmi_kill", {"clock": self.aborted_clock})


def relay_for(mpi: str, nodes: int, send: Callable[[int, str, dict[str, Any]], None]) -> FenceRelay | None:
    """The step's relay when its MPI type serves PMI or PMIx (None for ``none``)."""
    return FenceRelay(nodes, send) if mpi in ("pmi2", "pmix", "pmix_v4") else None


def process_mapping(layout: list[list[int]]) -> str:
    """PMI_process_mapping of the step: ``layout`` is each node's ranks (srun's -m layout)."""
    from plurm.nodeagent.pmi_wire import process_mapping as mapping

    node_of = {rank: node for node, ranks in enumerate(layout) for rank in ranks}
    return mapping([node_of[rank] for rank in sorted(node_of)])
