"""srun's own --prolog and --epilog (slurm.conf SrunProlog/SrunEpilog by default), run by srun
on its own host as 22.05.8's srun does (tests/integration/reference/srun-client/capture2.txt):

- the prolog just before the step is launched, the epilog once it has ended; each gets the
  step's command as its arguments, srun's stdout and stderr, and srun's environment with the
  step's variables (SLURM_JOB_ID, SLURM_STEP_ID, SLURM_NODELIST, SLURM_NTASKS, ...) and
  SLURM_SCRIPT_CONTEXT=prolog_srun / epilog_srun;
- ``none`` runs nothing; a program srun cannot run: "srun: Access denied for P: <why>", and
  the step goes on;
- a prolog that exits non-zero aborts the step ("srun prolog failed rc = N. Aborting
  step.", the epilog still runs); an epilog that does: "srun epilog failed status=N", and
  srun's exit code stays the tasks'.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

# srun's own wiring with its stepds, which 22.05's srun does not give its prolog
_NOT_FOR_SCRIPTS = ("SLURM_LAUNCH_NODE_IPADDR", "SLURM_SRUN_COMM_HOST", "SLURM_SRUN_COMM_PORT",
                    "SLURM_STEP_LAUNCHER_PORT", "SRUN_DEBUG", "SLURMD_NODENAME", "SLURM_TOPOLOGY_ADDR",
                    "SLURM_CPUS_ON_NODE", "SLURM_NODEID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_GTIDS")


def chosen(options: dict[str, Any], conf: str, which: str) -> str | None:
    """The program of ``which`` ("prolog" or "epilog"): the option, else SrunProlog /
    SrunEpilog; None for none."""
    value = options.get(which)
    if not isinstance(value, str) or not value:
        from plurm.wire.client import conf_value

        value = conf_value(conf, "SrunProlog" if which == "prolog" else "SrunEpilog") or ""
    value = value.strip()
    return None if not value or value.lower() == "none" else value


def environment(base: dict[str, str], job: dict[str, Any], step: dict[str, Any], context: str) -> dict[str, str]:
    """srun's environment (``base``: what step_environment made of it for the step's first
    node) with the step's variables, as 22.05.8's srun gives its prolog and epilog."""
    from plurm.common.environment import compress_counts
    from plurm.grammar.hostlist import compress

    env = {k: v for k, v in base.items() if k not in _NOT_FOR_SCRIPTS}
    ntasks = str(sum(step["tasks"]))
    env.update({
        "SLURM_JOB_ID": str(job["job_id"]), "SLURM_JOBID": str(job["job_id"]),
        "SLURM_STEP_ID": str(step["step_id"]), "SLURM_STEPID": str(step["step_id"]),
        "SLURM_NODELIST": compress(step["nodes"]), "SLURM_NNODES": str(len(step["nodes"])),
        "SLURM_NTASKS": ntasks, "SLURM_NPROCS": ntasks,
        "SLURM_TASKS_PER_NODE": compress_counts(step["tasks"]),
        "SLURM_SCRIPT_CONTEXT": context,
    })
    return env


def run(program: str, argv: list[str], env: dict[str, str]) -> int | None:
    """Run ``program`` with the step's command as arguments: its exit status, or None when it
    could not be run (said on stderr as 22.05.8 says it)."""
    import sys

    if not os.access(program, os.X_OK):
        why = os.strerror(2) if not os.path.exists(program) else os.strerror(13)
        print(f"srun: Access denied for {program}: {why}", file=sys.stderr, flush=True)
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        done = subprocess.run([program, *argv], env=env, stdin=subprocess.DEVNULL)
    except OSError as exc:
        print(f"srun: Access denied for {program}: {exc.strerror}", file=sys.stderr, flush=True)
        return None
    # (a script killed by a signal: its status as a shell would show it)
    return done.returncode if done.returncode >= 0 else 128 - done.returncode


def _script_env(step: Any, context: str) -> dict[str, str]:
    return environment(step.node_environment(step.step["nodes"][0]), step.job, step.step, context)


def prolog(step: Any, options: dict[str, Any], conf: str) -> int | None:
    """Run the srun prolog of ``step`` (a tools/srun.py Step, before its launch): None to go
    on; srun's exit code when the prolog failed and the step is not launched (22.05.8: 137,
    its tasks killed by the abort)."""
    import sys

    program = chosen(options, conf, "prolog")
    if program is None:
        return None
    rc = run(program, step.argv, _script_env(step, "prolog_srun"))
    if not rc:
        return None
    print(f"srun: error: srun prolog failed rc = {rc}. Aborting step.", file=sys.stderr)
    print("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.", file=sys.stderr, flush=True)
    return ABORTED_EXIT


def epilog(step: Any, options: dict[str, Any], conf: str) -> None:
    """Run the srun epilog of ``step`` once it ended; its failure is said, and changes nothing."""
    import sys

    program = chosen(options, conf, "epilog")
    if program is None:
        return
    rc = run(program, step.argv, _script_env(step, "epilog_srun"))
    if rc:
        print(f"srun: error: srun epilog failed status={rc}", file=sys.stderr, flush=True)


ABORTED_EXIT = 137  # 22.05.8's srun after a failed prolog: the step cancelled, its task Killed (128 + 9)
