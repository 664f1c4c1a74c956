"""What both PMI glues of plurmstepd share (nodeagent/stepd_pmi.py for pmi2, pmix_step.py for
pmix): the send callback's type, and the end of a step that srun says was aborted."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from typing import Any

Send = Callable[[str, dict], None]


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
