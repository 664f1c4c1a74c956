"""srun ``--debugger-test``: print the stopped tasks' process table, then end the step.

As Slurm 22.05.8's srun (captured on the anchor: tests/integration/reference/srun-client/
capture3.txt, capture3b.txt): each node's tasks start stopped before their program runs
(nodeagent/stepd_debugger.py); srun prints one line per task, ``srun: task:0, host:n1,
pid:21524, executable:sleep`` (the MPIR process table a debugger would read), then ends the
step: "forcing job termination", the abort line, slurmstepd's cancel line, and each task
``Killed`` (exit 137).  22.05's srun then hangs until it is killed; plurm's does not.
"""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only
    from typing import Any

MAX_EXECUTABLE = 4096  # what srun prints of a node's word for a task's program (PATH_MAX)


class ProcTable:
    """The step's tasks as the nodes report them (``debugger_tasks``), until every node has."""

    def __init__(self, nodes: int) -> None:
        self.nodes = nodes
        self.reported: set[int] = set()  # node ids
        self.tasks: dict[int, tuple[str, int, str]] = {}  # rank -> (host, pid, executable)
        self.done = False

    def add(self, node_id: int, host_of: dict[int, str], node_of: dict[int, int], body: dict[str, Any]) -> bool:
        """One node's message (signed with the step's key, still checked: only the node's own
        ranks, integer pids); True once every node has reported."""
        if node_id in self.reported or not 0 <= node_id < self.nodes:
            return False
        self.reported.add(node_id)
        for entry in body.get("tasks") or []:
            if not isinstance(entry, dict):
                continue
            rank, pid, exe = entry.get("task"), entry.get("pid"), entry.get("executable")
            if (not isinstance(rank, int) or isinstance(rank, bool) or node_of.get(rank) != node_id
                    or not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not isinstance(exe, str)):
                print(f"srun: error: debugger: node {node_id}: a malformed task entry ignored", file=sys.stderr)
                continue
            self.tasks[rank] = (host_of.get(rank, "?"), pid, exe[:MAX_EXECUTABLE])
        return len(self.reported) == self.nodes

    def lines(self) -> list[str]:
        return [f"srun: task:{rank}, host:{host}, pid:{pid}, executable:{exe}"
                for rank, (host, pid, exe) in sorted(self.tasks.items())]


def on_tasks(step: Any, body: dict[str, Any]) -> None:
    """A node's ``debugger_tasks``: once all nodes have sent theirs, the table and the step's end."""
    table: ProcTable | None = step.__dict__.get("_debugger")
    if table is None:
        table = step.__dict__["_debugger"] = ProcTable(len(step.step["nodes"]))
    node_id = body.get("node_id")
    if table.done or not isinstance(node_id, int) or isinstance(node_id, bool):
        return
    if not table.add(node_id, step.task_node, step.rank_node, body):
        return
    table.done = True
    first = min(step.task_node) if step.task_node else 0
    node = step.task_node.get(first, "?")
    job, step_id = step.job["job_id"], step.step["step_id"]
    clock = time.strftime("%Y-%m-%dT%H:%M:%S")
    lines = table.lines() + [
        "srun: forcing job termination",
        "srun: got SIGCONT",  # (22.05's srun says so here: its own SIGCONT handler's line)
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
        f"slurmstepd-{node}: error: *** STEP {job}.{step_id} ON {node} CANCELLED AT {clock} ***"]
    print("\n".join(lines), file=sys.stderr, flush=True)
    for target in range(len(step.step["nodes"])):  # each plurmstepd SIGKILLs its (stopped) tasks
        step._to_node(target, "kill_tasks", {})
