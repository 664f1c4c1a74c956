"""What both PMI glues of plurmstepd share (nodeagent/stepd_pmi.py for pmi2, pmix_step.py for
pmix): the send callback's type, slurmstepd's error line, the reading of srun's PMI messages,
and the end of a step that srun says was aborted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

Send = Callable[[str, dict], None]
SRUN_KINDS = ("pmi_fence_done", "pmi_kill")  # what srun sends the glues


class GlueWords:
    """slurmstepd's error line, for a glue with ``node_name``, ``job_step``, ``first_rank`` and ``send``."""

    node_name: str
    job_step: str
    first_rank: int
    send: Send

    def say(self, text: str) -> None:
        """On the step's stderr (the node's first task's) and in the log."""
        sys.stderr.write(f"plurmstepd {self.job_step}: {text}\n")
        self.send("task_output", {"task": self.first_rank, "stream": 2,
                                  "data": f"slurmstepd-{self.node_name}: error: {text}\n"})

    def srun_message(self, kind: str, body: dict[str, Any]) -> Any:
        """One of srun's ``SRUN_KINDS`` messages read (None: unreadable, logged)."""
        from plurm.wire import protocol

        try:
            return protocol.pmi_message(kind, body)
        except protocol.SchemaError as exc:
            sys.stderr.write(f"plurmstepd {self.job_step}: {exc}\n")
            return None


def kill_on_srun_word(msg: Any, node_id: int, node_name: str, job_step: str, first_rank: int, send: Send,
                      procs: dict[int, subprocess.Popen]) -> None:
    """srun's ``pmi_kill`` (an abort somewhere in the step): slurmstepd's line, then every task killed."""
    if node_id == 0:  # one line for the step, as 22.05's first node writes it
        clock = msg.clock or "unknown"
        send("task_output", {"task": first_rank, "stream": 2, "data":
                             f"slurmstepd-{node_name}: error: *** STEP {job_step} ON "
                             f"{node_name} CANCELLED AT {clock} ***\n"})
    for proc in procs.values():
        if proc.returncode is None:
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except OSError:
                pass
