"""``scontrol show job|node|partition`` with ``--json``/``--yaml``: the replies scontrol
already loads, as the job info, nodes and partitions responses.

A name or id the controller does not know gives the response with no objects and Slurm's
error in ``errors`` (its number and text), and exit status 1, as Slurm's newer scontrol.
"""

from __future__ import annotations

from plurm.tools.dataparser import emit, jobs, nodes
from plurm.tools.dataparser.emit import Output


def show_jobs(out: Output, argv: list[str], reply: dict, job_list: list[dict], now: float,
              missing: bool, def_mem_per_cpu: int | None = None) -> tuple[str, int]:
    """The text and exit status for ``scontrol show job [id] --json``."""
    cluster = reply.get("cluster", "")
    errors = emit.load_errors("Invalid job id specified", "slurm_load_job") if missing else None
    obj = jobs.job_info_resp(job_list, now, emit.meta("scontrol", argv, out, cluster), cluster,
                             def_mem_per_cpu, errors)
    return emit.text(obj, out), 1 if missing else 0


def show_nodes(out: Output, argv: list[str], reply: dict, node_list: list[dict], now: float,
               missing: bool) -> tuple[str, int]:
    cluster = reply.get("cluster", "")
    errors = emit.load_errors("Invalid node name specified", "slurm_load_node") if missing else None
    obj = nodes.nodes_resp(node_list, now, emit.meta("scontrol", argv, out, cluster), cluster, errors)
    return emit.text(obj, out), 1 if missing else 0


def show_partitions(out: Output, argv: list[str], reply: dict, parts: list[dict], now: float,
                    missing: bool) -> tuple[str, int]:
    cluster = reply.get("cluster", "")
    by_name = {n["name"]: n for n in reply.get("nodes", [])}
    errors = emit.load_errors("Invalid partition name specified", "slurm_load_partitions") if missing else None
    obj = nodes.partition_resp(parts, by_name, now, emit.meta("scontrol", argv, out, cluster), cluster, errors)
    return emit.text(obj, out), 1 if missing else 0


def failed(out: Output, argv: list[str], what: str, message: str, source: str) -> str:
    """The response for a load that failed (the controller unreachable ...)."""
    build = {"jobs": lambda m, e: jobs.job_info_resp([], 0, m, errors=e),
             "nodes": lambda m, e: nodes.nodes_resp([], 0, m, errors=e),
             "partitions": lambda m, e: nodes.partition_resp([], {}, 0, m, errors=e)}[what]
    return emit.text(build(emit.meta("scontrol", argv, out, ""), emit.load_errors(message, source)), out)
