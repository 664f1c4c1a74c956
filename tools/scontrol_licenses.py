"""``scontrol show licenses [name]``: slurm.conf's Licenses= and what jobs hold of them.

As 22.05 prints it (tests/tools/reference/licenses): one record per configured license,
``LicenseName=fluent`` then ``    Total=4 Used=2 Free=2 Reserved=0 Remote=no`` (one line with
-o); a name matches one license exactly, and a name that matches none prints nothing, exit 0.
"""

from __future__ import annotations

import sys
from typing import Any


def format_licenses(records: list[dict[str, Any]], oneliner: bool = False) -> str:
    sep = " " if oneliner else "\n    "
    return "".join(f"LicenseName={r['name']}{sep}Total={r['total']} Used={r['used']} Free={r['free']} "
                   f"Reserved={r['reserved']} Remote={'yes' if r.get('remote') else 'no'}\n" for r in records)


def jobs_with_licenses(jobs: list[dict[str, Any]], names: str) -> list[dict[str, Any]]:
    """``squeue -L fluent,matlab``: the jobs whose -L names one of them (none: no job, exit 0)."""
    wanted = {n.strip() for n in names.split(",") if n.strip()}

    def named(job: dict[str, Any]) -> set[str]:
        text = (job.get("spec") or {}).get("licenses") or ""
        return {item.split(":", 1)[0].strip() for item in text.split(",")}

    return [job for job in jobs if wanted & named(job)]


def show_licenses(cmd: Any, rest: list[str]) -> None:
    """``cmd``: the scontrol session (its request, error and oneliner)."""
    from plurm.wire.client import ClientError

    try:
        reply = cmd.request("node_info", {"nodes": ["\0"], "partitions": ["\0"]})  # (the licenses only)
    except ClientError as exc:
        cmd.error(f"slurm_load_licenses error: {exc}")
        return
    records = reply.get("licenses") or []
    if rest:
        records = [r for r in records if r.get("name") == rest[0]]
    sys.stdout.write(format_licenses(records, cmd.oneliner))
