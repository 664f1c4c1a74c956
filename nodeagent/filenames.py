"""Slurm's filename patterns for --output/--error/--input.

%% a percent sign; %A array master id; %a array task id; %J jobid.stepid
(the job id alone for a batch script); %j job id; %N short host name; %n
node id relative to the job; %s step id ("batch" steps print "sbatch"
like Slurm's); %t task id; %u user name; %x job name.  A number between %
and the letter zero-pads (%4j).  A "\\" in the pattern turns expansion off.
"""

from __future__ import annotations

import os
import re
import socket

_PATTERN = re.compile(r"%(\d*)([%AaJjNnstux])")


def expand(pattern: str, *, job_id: int, job_name: str, user: str, array_job_id: int | None = None,
           array_task_id: int | None = None, step: str = "sbatch", node_id: int = 0, task_id: int = 0,
           host: str | None = None) -> str:
    if "\\" in pattern:
        return pattern.replace("\\", "")
    values = {
        "A": str(array_job_id if array_job_id is not None else job_id),
        "a": str(array_task_id) if array_task_id is not None else "4294967294",
        "J": str(job_id) if step in ("sbatch", "batch") else f"{job_id}.{step}",
        "j": str(job_id),
        "N": host or socket.gethostname().split(".", 1)[0],
        "n": str(node_id),
        "s": step,
        "t": str(task_id),
        "u": user,
        "x": job_name,
    }

    def replace(match: re.Match[str]) -> str:
        width, letter = match.groups()
        if letter == "%":
            return "%"
        value = values[letter]
        if width and value.isdigit():
            return value.zfill(int(width))
        return value

    return _PATTERN.sub(replace, pattern)


def default_output(array: bool) -> str:
    return "slurm-%A_%a.out" if array else "slurm-%j.out"


def resolve(path: str, work_dir: str) -> str:
    return path if os.path.isabs(path) else os.path.join(work_dir, path)
