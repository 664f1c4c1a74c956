"""srun in a heterogeneous job: ``--het-group=K`` picks the component whose allocation a step uses.

Inside a hetjob's batch script the job's components are SLURM_JOB_ID_HET_GROUP_K (set by the
node daemon from the controller's records: common/environment.het_variables); a step runs in
component 0 unless --het-group names another.  A step over several components (``srun A :
B``, inside an allocation or making its own hetjob, or ``--het-group=0,1``) runs as one srun
per component, at once: unlike Slurm's one step across the components, each component's
tasks are ranked from 0 and each is a step of its own component.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only (start-up cost)
    from collections.abc import Mapping
    from typing import Any

# srun's own children (one per component of `srun A : B`): "JOBID:GROUP" of the component a
# child runs in.  Taken out of the environment before any task could see it.
CHILD = "PLURM_SRUN_COMPONENT"


def _groups(value: str) -> list[int] | None:
    """--het-group's list: "1", "0,2", "0-1"; None when it is not one."""
    out: list[int] = []
    for part in value.split(","):
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            return None
        first, last = int(lo), int(hi if dash else lo)
        out.extend(range(first, last + 1) if last - first <= 1024 else (first, last))  # (its ends: too big)
    return sorted(set(out)) or None


def _too_big(group: int, size: int) -> str:
    # (22.05.8's words: tests/integration/reference/hetjob/step_env.txt, nonhet.txt)
    return f"srun: error: Requested het-group offset exceeds highest hetjob index ({group} > {size - 1})"


def component_job(options: Mapping[str, Any], environ: dict[str, str]
                  ) -> tuple[str | None, int, str | None]:
    """(the job id a one-component step runs in, or None for srun's usual choice; its group;
    an error line, or None)."""
    child = environ.pop(CHILD, None)
    if child is not None:
        job, _, group = child.partition(":")
        return job, int(group or 0), None
    value = options.get("het-group")
    if value is None or value is True:
        return None, 0, None
    groups = _groups(str(value))
    if groups is None:
        return None, 0, (f"srun: error: _parse_single_range: Invalid range: `{value}'\n"
                         f"srun: error: Invalid --het-group value: {value}")
    size = int(environ.get("SLURM_HET_SIZE") or 1)
    if groups[-1] >= size:
        return None, 0, _too_big(groups[-1], size)
    return environ.get(f"SLURM_JOB_ID_HET_GROUP_{groups[0]}"), groups[0], None


def several(options: Mapping[str, Any], environ: Mapping[str, str], components: int) -> bool:
    """A step over several components: `srun A : B`, or --het-group=0,1 (not srun's children)."""
    if CHILD in environ:
        return False
    groups = _groups(str(options.get("het-group") or "")) or []
    return components > 1 or len(groups) > 1


def split_argv(argv: list[str]) -> list[list[str]]:
    """srun's words per component, split at ":" as parse_srun splits them."""
    parts: list[list[str]] = [[]]
    for word in argv:
        if word == ":":
            parts.append([])
        else:
            parts[-1].append(word)
    return parts


def run_components(argv: list[str], req: Any, environ: dict[str, str]) -> int:
    """One srun per component, all at once, each in its component's allocation; outside an
    allocation the hetjob is allocated first (all components together) and released after.
    Each component's tasks are ranked from 0 (Slurm ranks them across the components)."""
    import os
    import subprocess
    import sys

    inside = environ.get("SLURM_JOB_ID") is not None or bool(req.options.get("jobid"))
    groups = _groups(str(req.options.get("het-group") or "")) or []
    if len(groups) > 1:  # --het-group=0,1 cmd: the same srun in each
        targets = [(g, argv) for g in groups]
    else:
        targets = list(enumerate(split_argv(argv)))
    conn = None
    if len(groups) > 1 and not inside:  # (no hetjob to name groups of: as in a job that is none)
        print(_too_big(groups[-1], 1), file=sys.stderr)
        return 1
    if inside:
        size = int(environ.get("SLURM_HET_SIZE") or 1)
        if targets[-1][0] >= size:
            print(_too_big(targets[-1][0], size), file=sys.stderr)
            return 1
        jobs = [environ.get(f"SLURM_JOB_ID_HET_GROUP_{g}", environ.get("SLURM_JOB_ID", "")) for g, _ in targets]
    else:
        from plurm.tools.allocation import AllocationError, allocate
        from plurm.tools.jobspec import build_spec
        from plurm.wire.client import ClientError, Connection

        specs = [build_spec(opts, default_name=os.path.basename(cmd[0]) if cmd else "srun", environ=environ,
                            batch=False) for opts, cmd in zip(req.components, req.commands)]
        try:
            conn = Connection()
            leader = allocate(conn, specs[0], "srun", quiet=bool(req.options.get("quiet")), components=specs[1:])
        except (ClientError, AllocationError) as exc:
            print(exc if isinstance(exc, AllocationError) else f"srun: error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 1
        jobs = [str(leader["job_id"] + g) for g, _ in targets]
        # the children's steps are the hetjob's (common/environment.het_job_id): name its components
        environ = dict(environ, SLURM_HET_SIZE=str(len(jobs)), SLURM_PACK_SIZE=str(len(jobs)))
        for g, job in enumerate(jobs):
            environ[f"SLURM_JOB_ID_HET_GROUP_{g}"] = environ[f"SLURM_JOB_ID_PACK_GROUP_{g}"] = job
    children = [subprocess.Popen([sys.executable, "-m", "plurm.tools.srun", *words],
                                 env=dict(environ, **{CHILD: f"{job}:{g}"}))
                for job, (g, words) in zip(jobs, targets)]
    code = 0
    for child in children:
        while True:
            try:
                status = child.wait()
                break
            except KeyboardInterrupt:  # the children got the terminal's Ctrl-C too
                continue
        code = max(code, status if status >= 0 else 128 - status)
    if conn is not None:
        from plurm.tools.allocation import release

        release(conn, int(jobs[0]), code)
        conn.close()
    return code


# srun's options that it reads from the allocation's variables when the command line does not
# give them: in a component, that component's (…_HET_GROUP_K), not component 0's.
_FROM_COMPONENT = (("ntasks", "SLURM_NTASKS"), ("cpus-per-task", "SLURM_CPUS_PER_TASK"),
                   ("nodes", "SLURM_JOB_NUM_NODES"))


def component_options(options: dict[str, Any], given: set[str], environ: Mapping[str, str], group: int) -> None:
    """A step in component ``group``: its defaults from that component's variables (in place)."""
    if f"SLURM_JOB_ID_HET_GROUP_{group}" not in environ:
        return  # (not inside a hetjob's allocation: the command line says it all)
    for key, name in _FROM_COMPONENT:
        if key in given:
            continue
        value = environ.get(f"{name}_HET_GROUP_{group}")
        if value is None or not value.isdigit():
            options.pop(key, None)
        else:
            options[key] = [int(value), int(value)] if key == "nodes" else int(value)
