"""A job's standard input, output and error paths as scontrol show job prints them (StdIn=,
StdOut=, StdErr=) and the JSON's ``*_expanded`` fields: the file patterns expanded against the
job's record, relative paths made absolute against its working directory."""

from __future__ import annotations


def _expand_io(pattern: str, job: dict) -> str:
    """%j %J %x %u %A %a %N %n %t %s %% in an output path, as scontrol shows it."""
    spec = job.get("spec") or {}
    array_job = job.get("array_job_id")
    task = job.get("array_task_id")
    nodes = job.get("nodes") or []
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch != "%" or i + 1 >= len(pattern):
            out.append(ch)
            i += 1
            continue
        j = i + 1
        while j < len(pattern) and pattern[j].isdigit():
            j += 1
        width = int(pattern[i + 1:j]) if j > i + 1 else 0
        if j >= len(pattern):
            out.append(pattern[i:])
            break
        code = pattern[j]
        value: str | None
        if code in "jJ":
            value = str(job["job_id"])
        elif code == "x":
            value = spec.get("name", "sbatch")
        elif code == "u":
            value = spec.get("user", "root")
        elif code == "A":
            value = str(array_job if array_job is not None else job["job_id"])
        elif code == "a":
            value = str(task) if task is not None else "4294967294"
        elif code == "N":
            value = nodes[0] if nodes else "%N"
        elif code in "nts":
            value = "0"
        elif code == "%":
            value = "%"
        else:
            value = None
        if value is None:
            out.append(pattern[i:j + 1])
        else:
            out.append(value.zfill(width) if width and value.isdigit() else value)
        i = j + 1
    return "".join(out)


def io_path(job: dict, which: str) -> str:
    spec = job.get("spec") or {}
    work = spec.get("work_dir", "/")
    if which == "stdin":
        path = spec.get("stdin") or "/dev/null"
    else:
        path = spec.get(which) if which == "stdout" else (spec.get("stderr") or spec.get("stdout"))
        if not path:
            path = "slurm-%A_%a.out" if job.get("array_job_id") is not None else "slurm-%j.out"
    path = _expand_io(path, job)
    if not path.startswith("/"):
        path = work.rstrip("/") + "/" + path
    return path
