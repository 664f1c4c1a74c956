"""srun's step request: -r/--relative, --exact/--whole/--overlap, --resv-ports, --interactive,
-T/--threads and --msg-timeout, checked and worded as 22.05.8's srun does
(tests/integration/reference/srun-client/capture*.txt), and the step_create call that waits
while the job's running steps hold what the new one needs ("step creation temporarily
disabled, retrying"), as 22.05's srun retries.

Stdlib only on the way in (srun's start-up budget); the connection is the caller's.
"""

from __future__ import annotations

import sys
import time
from typing import Any

MAX_THREADS = 60  # srun(1): one launch thread per node, at most 60
RETRY_S = 0.5  # between step_create attempts while the step waits for its resources


class StepOptionError(Exception):
    """A refused combination: ``lines`` for stderr, srun's exit code 1."""

    def __init__(self, *lines: str) -> None:
        super().__init__(lines[0] if lines else "")
        self.lines = list(lines)


def check_options(options: dict[str, Any]) -> list[str]:
    """The refusals and warnings 22.05.8 gives as it reads the options, before any
    allocation: (raised) --exact with --whole, -r with -w/-x; (returned) -T above 60."""
    if options.get("exact") and options.get("whole"):
        raise StepOptionError("srun: error: --exact and --whole are mutually exclusive.")
    if options.get("relative") is not None and (options.get("nodelist") or options.get("exclude")):
        raise StepOptionError("srun: error: -r,--relative not allowed with -w,--nodelist or -x,--exclude.")
    threads = options.get("threads")
    if isinstance(threads, int) and threads > MAX_THREADS:  # (22.05.8 warns, and runs the step)
        return [f"srun: error: Thread value --threads={threads} exceeds recommended limit of {MAX_THREADS}"]
    return []


def check_relative(options: dict[str, Any], cmdline_keys: set[str], environ: dict[str, str],
                   own_allocation: bool, job: dict[str, Any] | None) -> None:
    """-r N: only inside an allocation, and N plus the step's node count (-N, else
    SLURM_JOB_NUM_NODES) within the job's nodes (22.05.8's words)."""
    relative = options.get("relative")
    if relative is None:
        return
    if own_allocation:
        raise StepOptionError("srun: fatal: --relative option invalid for job allocation request")
    allocated = len((job or {}).get("nodes") or [])
    nodes = options.get("nodes")
    if "nodes" in cmdline_keys and nodes is not None:
        count, where = (nodes[0] if isinstance(nodes, (list, tuple)) else int(nodes)), "--nodes"
    else:
        try:
            count = int(environ.get("SLURM_JOB_NUM_NODES") or allocated)
        except ValueError:
            count = allocated
        where = "SLURM_JOB_NUM_NODES"
    if relative + count > allocated:
        raise StepOptionError(f"srun: error: --relative and {where} option incompatible with count of allocated "
                              f"nodes ({relative}+{count}>{allocated})")


def resv_ports(options: dict[str, Any]) -> int | None:
    """--resv-ports[=count]: the count (a bare --resv-ports reserves none, as 22.05.8);
    None without the option (the controller's default under MpiParams=ports)."""
    value = options.get("resv-ports")
    if value is None or value is False:
        return None
    if value is True or str(value).strip() == "":
        return 0
    try:
        return max(int(str(value).strip()), 0)
    except ValueError:
        raise StepOptionError(f'srun: error: Invalid numeric value "{value}" for --resv-ports.') from None


def request_fields(options: dict[str, Any], own_allocation: bool) -> dict[str, Any]:
    """The step_create fields of this module's options."""
    fields: dict[str, Any] = {
        "exact": bool(options.get("exact")) and not options.get("whole"),
        "whole": bool(options.get("whole")),
        "overlap": bool(options.get("overlap")),
        "interactive": bool(options.get("interactive")),
        "resv_ports": resv_ports(options),
    }
    if not own_allocation and options.get("relative"):
        fields["relative"] = int(options["relative"])
    return fields


def create(conn: Any, body: dict[str, Any], job_id: int, sleep: Any = time.sleep) -> dict[str, Any]:
    """step_create, again every RETRY_S while the controller answers StepBusy (the job's
    running steps hold the CPUs or ports this one needs), with 22.05.8's two lines."""
    from plurm.wire.client import ClientError

    waited = False
    while True:
        try:
            step = conn.request("step_create", body)
        except ClientError as exc:
            if getattr(exc, "code", None) != "StepBusy":
                raise
            if not waited:
                print(f"srun: Job {job_id} step creation temporarily disabled, retrying ({exc})", file=sys.stderr,
                      flush=True)
                waited = True
            sleep(RETRY_S)
            continue
        if waited:
            print(f"srun: Step created for job {job_id}", file=sys.stderr, flush=True)
        return step


def fanout(options: dict[str, Any], nodes: int) -> int:
    """-T/--threads: how many nodes srun launches on at once (one thread per node, at most 60)."""
    threads = options.get("threads")
    limit = threads if isinstance(threads, int) and threads > 0 else MAX_THREADS
    return max(1, min(limit, nodes))


def msg_timeout(options: dict[str, Any], conf: str) -> float:
    """--msg-timeout, else slurm.conf's MessageTimeout (10 s): how long srun waits for a
    node's answer to the launch request."""
    value = options.get("msg-timeout")
    if isinstance(value, int) and value > 0:
        return float(value)
    from plurm.wire.client import conf_value

    try:
        return float(int(conf_value(conf, "MessageTimeout") or 10))
    except ValueError:
        return 10.0


def make(conn: Any, options: dict[str, Any], job: dict[str, Any], own_allocation: bool,
         name: str) -> dict[str, Any] | None:
    """The step of ``job`` that srun's options ask for (None: refused, said on stderr, and an
    allocation of srun's own released)."""
    from plurm.tools.allocation import release
    from plurm.wire.client import ClientError

    job_id = job["job_id"]
    ntasks = options.get("ntasks")
    nodes = options.get("nodes")
    nodes_min = nodes[0] if isinstance(nodes, (list, tuple)) else nodes if isinstance(nodes, int) else None
    nodelist = options.get("nodelist") or []
    if isinstance(ntasks, int) and nodes_min and ntasks < nodes_min:
        print(f"srun: Warning: can't run {ntasks} processes on {nodes_min} nodes, setting nnodes to {ntasks}",
              file=sys.stderr)
        nodes_min = ntasks
    try:  # (while the job's running steps hold what this one needs: retried)
        return create(conn, {
            "job_id": job_id, "name": name, "ntasks": ntasks,
            "nodes_min": nodes_min if not own_allocation else None,
            "cpus_per_task": options.get("cpus-per-task"), "nodelist": list(nodelist) if not own_allocation else [],
            "overcommit": options.get("overcommit") is True,  # -O (or SLURM_OVERCOMMIT=1 from a -O job)
            **request_fields(options, own_allocation),  # -r, --exact, --whole, --resv-ports, ...
        }, job_id)
    except (ClientError, StepOptionError, KeyboardInterrupt) as exc:
        if isinstance(exc, StepOptionError):
            print("\n".join(exc.lines), file=sys.stderr)
        elif isinstance(exc, ClientError):
            print(f"srun: error: Unable to create step for job {job_id}: {exc}", file=sys.stderr)
        if own_allocation:
            release(conn, job_id, 1)
        return None
