"""srun ``-W/--wait=<seconds>`` and ``-K/--kill-on-bad-exit``: a step ended before all its tasks end.

As Slurm 22.05.8's srun does it (captured on the anchor: tests/tools/reference/options_rest/
srun_wait.txt): once a task has ended and others still run ``seconds`` later, srun says which
tasks run and which ended, terminates the step (its tasks are killed), and reports them as any
ended task (``srun: error: n1: task 1: Killed``, exit 137).  0, the default, waits for all
(slurm.conf's WaitTime is not read: plurm's default is its 0).
"""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only
    from typing import Any


class FirstExitWait:
    """The step's early end, watched from srun's relay loop: -W (``seconds`` after the first
    task's end) and -K (``kill_bad``: at the first task that ends badly)."""

    def __init__(self, step: Any, seconds: int, kill_bad: bool = False) -> None:
        self.step = step
        self.seconds = seconds
        self.kill_bad = kill_bad
        self.first_exit: float | None = None
        self.fired = False
        self.forced = False  # -K ended it: "Force Terminated", exit 143

    @classmethod
    def of(cls, step: Any) -> FirstExitWait:
        return cls(step, int(getattr(step, "wait_s", 0) or 0), bool(getattr(step, "kill_bad", False)))

    def check(self, now: float) -> None:
        """Called on each turn of srun's relay loop."""
        step = self.step
        done = {**step.ended, **step.exits}  # plurmstepd tells each end as it happens (task_ended)
        if self.fired or not done:
            return
        bad = [t for t, status in sorted(done.items()) if status != (0, 0)]
        if self.kill_bad and bad and len(done) < step.ntasks:
            self.fired = True
            self._kill_bad(bad)
            return
        if self.seconds <= 0:
            return
        if self.first_exit is None:
            self.first_exit = now
        if len(done) < step.ntasks and now - self.first_exit >= self.seconds:
            self.fired = True
            self._terminate()

    def _terminate(self) -> None:
        from plurm.tools.srun_io import ranges

        step = self.step
        name = f"StepId={step.job['job_id']}.{step.step['step_id']}"
        done = {**step.ended, **step.exits}
        running = [t for t in range(step.ntasks) if t not in done]
        ended = [t for t in range(step.ntasks) if t in done and done[t] == (0, 0)]
        abnormal = [t for t in range(step.ntasks) if t in done and done[t] != (0, 0)]
        lines = [f"srun: First task exited {self.seconds}s ago"]
        for tasks, what in ((running, "running"), (ended, "exited"), (abnormal, "exited abnormally")):
            if tasks:
                lines.append(f"srun: {name} {'task' if len(tasks) == 1 else 'tasks'} {ranges(tasks)}: {what}")
        lines.append(f"srun: launch/slurm: _step_signal: Terminating {name}")
        node = step.task_node.get(running[0], "?")
        lines.append(f"slurmstepd-{node}: error: *** STEP {step.job['job_id']}.{step.step['step_id']} ON {node} "
                     f"CANCELLED AT {time.strftime('%Y-%m-%dT%H:%M:%S')} ***")
        lines.append("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.")
        print("\n".join(lines), file=sys.stderr, flush=True)
        for node_id in range(len(step.step["nodes"])):  # each node's plurmstepd kills its tasks
            step._to_node(node_id, "kill_tasks", {})

    def _kill_bad(self, bad: list[int]) -> None:
        """-K, as 22.05.8 (captured: options_rest/srun_kill_on_bad_exit.txt): the bad task's line
        at once, the step terminated (SIGTERM: its other tasks end "Terminated"), and after the
        task lines "Force Terminated", exit 143."""
        import signal

        step = self.step
        name = f"StepId={step.job['job_id']}.{step.step['step_id']}"
        done = {**step.ended, **step.exits}
        lines = [task_line(step.task_node.get(t, "?"), t, *done[t]) for t in bad]
        step.reported.update(bad)
        running = [t for t in range(step.ntasks) if t not in done] or [0]
        node = step.task_node.get(running[0], "?")
        lines.append(f"srun: launch/slurm: _step_signal: Terminating {name}")
        lines.append(f"slurmstepd-{node}: error: *** STEP {step.job['job_id']}.{step.step['step_id']} ON {node} "
                     f"CANCELLED AT {time.strftime('%Y-%m-%dT%H:%M:%S')} ***")
        print("\n".join(lines), file=sys.stderr, flush=True)
        self.forced = True
        step.signal(signal.SIGTERM)

    def finish(self, code: int, sig: int) -> tuple[int, int]:
        """After srun's task lines: the step's result as srun reports it."""
        if not self.forced:
            return code, sig
        import signal

        print(f"srun: Force Terminated StepId={self.step.job['job_id']}.{self.step.step['step_id']}",
              file=sys.stderr)
        return 0, signal.SIGTERM


def task_line(node: str, task: int, code: int, sig: int) -> str:
    """srun's line for a task that ended badly (22.05 names a signal as strsignal does)."""
    import signal

    if sig:
        return f"srun: error: {node}: task {task}: {signal.strsignal(sig) or signal.Signals(sig).name}"
    return f"srun: error: {node}: task {task}: Exited with exit code {code}"
