"""scontrol show job, node and partition: the records asked of the controller, printed by
tools/showfmt.py (text) or tools/dataparser (--json/--yaml); ``sc`` is the running Scontrol."""

from __future__ import annotations

import sys
import time
from typing import Any

from plurm.grammar.lazyre import lazy

_JOB_ID_WORD = lazy(r"[0-9]+(\+[0-9]+|_([0-9]+|\[[0-9,\-%]+\]))?(\.[A-Za-z0-9_+]+)?\Z")


def _json(sc: Any, text_rc: tuple[str, int]) -> None:
    sys.stdout.write(text_rc[0])
    sc.rc = max(sc.rc, text_rc[1])

def _def_mem_per_cpu(sc: Any, jobs: list[dict]) -> int | None:
    """DefMemPerCPU, asked for only when a job's memory is neither given nor allocated."""
    need = any(not j.get("mem") and (j.get("spec") or {}).get("mem_per_node") is None
               and (j.get("spec") or {}).get("mem_per_cpu") is None for j in jobs)
    if not need:
        return None
    from plurm.wire.client import ClientError

    try:
        options = sc.request("config", {}).get("options", {})
    except ClientError:
        return None
    for key, value in options.items():
        if key.lower() == "defmempercpu":
            try:
                return int(str(value).rstrip("Mm"))
            except ValueError:
                return None
    return None

def show_jobs(sc: Any, rest: list[str]) -> None:
    from plurm.wire.client import ClientError
    from plurm.tools.showfmt import format_job

    body: dict = {"all_states": True}
    if rest:
        body["job_ids"] = [rest[0]]
    if rest and sc.output is None and not _JOB_ID_WORD.match(rest[0]):
        # not a job id at all: Slurm's scontrol refuses it before it asks
        sc.error("scontrol_print_job error: Invalid job id specified")
        return
    try:
        reply = sc.request("job_info", body)
    except ClientError as exc:
        if sc.output is not None:
            from plurm.tools.dataparser import show

            sys.stdout.write(show.failed(sc.output, sc.argv, "jobs", str(exc), "slurm_load_jobs"))
        if sc.quiet and rest:
            sc.rc = 1  # -Q: no message, the exit status only
            return
        sc.error(f"slurm_load_jobs error: {exc}")
        return
    jobs = reply.get("jobs", [])
    now = reply.get("now") or time.time()
    if sc.output is not None:
        from plurm.tools.dataparser import show

        jobs.sort(key=lambda j: j["job_id"])
        _json(sc, show.show_jobs(sc.output, sc.argv, reply, jobs, now, bool(rest) and not jobs,
                                  _def_mem_per_cpu(sc, jobs)))
        return
    if not jobs:
        if rest and sc.quiet:
            sc.rc = 1  # -Q: no message, the exit status only
        elif rest:
            sc.error("slurm_load_jobs error: Invalid job id specified")
        else:
            sys.stdout.write("No jobs in the system\n")
        return
    if rest and "_" not in rest[0]:
        # An array: its pending remainder first, then the tasks newest first (as Slurm).
        try:
            base = int(rest[0].split(".")[0])
        except ValueError:
            base = -1
        het = all((j.get("spec") or {}).get("het_job_id") == base for j in jobs)  # a hetjob: N, N+1, ...
        jobs.sort(key=lambda j: (j["job_id"] != base, j["job_id"] if het else -j["job_id"]))
    else:
        jobs.sort(key=lambda j: j["job_id"])
    def_mem = _def_mem_per_cpu(sc, jobs)
    out = [format_job(job, now, sc.oneliner, sc.details > 0, def_mem) for job in jobs]
    sys.stdout.write("".join(out))

def show_nodes(sc: Any, rest: list[str]) -> None:
    from plurm.wire.client import ClientError
    from plurm.grammar.hostlist import HostlistError, expand
    from plurm.tools.showfmt import format_node

    body: dict = {}
    wanted: list[str] = []
    if rest:
        try:
            wanted = expand(rest[0])
        except HostlistError:
            wanted = [rest[0]]
        body["nodes"] = wanted
    if getattr(sc, "future", False):
        body["future"] = True  # (-F: FUTURE nodes too)
    try:
        reply = sc.request("node_info", body)
    except ClientError as exc:
        if sc.output is not None:
            from plurm.tools.dataparser import show

            sys.stdout.write(show.failed(sc.output, sc.argv, "nodes", str(exc), "slurm_load_node"))
        sc.error(f"slurm_load_node error: {exc}")
        return
    nodes = {n["name"]: n for n in reply.get("nodes", [])}
    if sc.output is not None:
        from plurm.tools.dataparser import show

        found = [nodes[n] for n in wanted if n in nodes] if wanted else list(nodes.values())
        _json(sc, show.show_nodes(sc.output, sc.argv, reply, found, reply.get("now") or time.time(),
                                   bool(wanted) and not found))
        return
    if wanted:
        missing = [n for n in wanted if n not in nodes]
        if missing and not nodes:
            sys.stdout.write(f"Node {rest[0]} not found\n")  # on stdout, as Slurm's
            sc.rc = 1
            return
        order = [nodes[n] for n in wanted if n in nodes]
    else:
        order = list(nodes.values())
    sys.stdout.write("".join(format_node(n, sc.oneliner) for n in order))

def show_partitions(sc: Any, rest: list[str]) -> None:
    from plurm.wire.client import ClientError
    from plurm.tools.showfmt import format_partition

    body: dict = {}
    if rest:
        body["partitions"] = [rest[0]]
    try:
        reply = sc.request("node_info", body)
    except ClientError as exc:
        if sc.output is not None:
            from plurm.tools.dataparser import show

            sys.stdout.write(show.failed(sc.output, sc.argv, "partitions", str(exc),
                                         "slurm_load_partitions"))
        sc.error(f"slurm_load_partitions error: {exc}")
        return
    nodes = {n["name"]: n for n in reply.get("nodes", [])}
    parts = reply.get("partitions", [])
    if sc.output is not None:
        from plurm.tools.dataparser import show

        found = [p for p in parts if p["name"] == rest[0]] if rest else parts
        _json(sc, show.show_partitions(sc.output, sc.argv, reply, found, reply.get("now") or time.time(),
                                        bool(rest) and not found))
        return
    if rest:
        parts = [p for p in parts if p["name"] == rest[0]]
        if not parts:
            sys.stdout.write(f"Partition {rest[0]} not found\n")  # on stdout, as Slurm's
            sc.rc = 1
            return
    elif not sc.all:
        parts = [p for p in parts if not p.get("hidden", False)]
    if not parts:
        sys.stdout.write("No partitions in the system\n")
        return
    sys.stdout.write("".join(format_partition(p, nodes, sc.oneliner) for p in parts))
