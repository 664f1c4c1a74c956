"""What differs between data_parser v0.0.42, v0.0.43, v0.0.44 and v0.0.45 in the objects plurm
prints: the builders write every field of any version, and ``for_version`` removes the ones
the chosen version does not have (read off the four OpenAPI specs; the tests check each
output against its version's schema).
"""

from __future__ import annotations

_V42, _V43, _V44, _V45 = "v0.0.42", "v0.0.43", "v0.0.44", "v0.0.45"
_BEFORE_45 = (_V42, _V43, _V44)

# object kind -> version -> fields (dotted paths) that version lacks
_ABSENT: dict[str, dict[str, tuple[str, ...]]] = {
    "job_info": {
        _V42: ("segment_size", "stdin_expanded", "stdout_expanded", "stderr_expanded", "licenses_allocated",
               "step_id", "submit_line", "container_type", "memory_update_delay", "memory_update_margin"),
        _V43: ("step_id", "submit_line", "container_type", "memory_update_delay", "memory_update_margin"),
        _V44: ("container_type", "memory_update_delay", "memory_update_margin"),
        _V45: ("power",),
    },
    "node": {
        _V42: ("tls_cert_last_renewal", "cert_flags", "topology", "suspend_time"),
        _V43: ("suspend_time",),
        _V44: ("suspend_time",),
        _V45: ("external_sensors", "power", "tres_weighted"),
    },
    "partition": {
        _V42: ("topology", "preempt_mode", "flags"),
        _V43: ("preempt_mode", "flags"),
        _V44: ("preempt_mode", "flags"),
    },
    "dbd_job": {
        _V42: ("segment_size", "reservation.requested", "sluid", "original_sluid", "oversubscribe", "exclusive"),
        _V43: ("sluid", "original_sluid", "oversubscribe", "exclusive"),
        _V44: ("sluid", "original_sluid", "oversubscribe", "exclusive"),
    },
    "step": {
        _V42: ("step.stderr", "step.stdin", "step.stdout", "step.stderr_expanded", "step.stdin_expanded",
               "step.stdout_expanded", "time.limit", "submit_line"),
        _V43: ("submit_line",),
        _V44: ("submit_line",),
        _V45: ("pid",),
    },
}


def _drop(obj: dict, paths: tuple[str, ...]) -> None:
    for path in paths:
        *parents, last = path.split(".")
        here = obj
        for key in parents:
            here = here.get(key) if isinstance(here, dict) else None
        if isinstance(here, dict):
            here.pop(last, None)


def _partition(part: dict, version: str) -> None:
    _drop(part, _ABSENT["partition"].get(version, ()))
    _select_type(part, version)
    if version == _V45:
        # v0.0.45 names the task binding flags instead of giving their bit mask.
        cpus = part.get("cpus")
        if isinstance(cpus, dict) and isinstance(cpus.get("task_binding"), int):
            cpus["task_binding"] = []


# v0.0.45 names the select type parameters as slurm.conf spells them.
_SELECT_45 = {("CORE", "MEMORY"): ["CR_CORE_MEMORY"], ("CPU", "MEMORY"): ["CR_CPU_MEMORY"],
              ("CORE",): ["CR_CORE"], ("CPU",): ["CR_CPU"], ("MEMORY",): ["CR_MEMORY"]}


def _select_type(obj: dict, version: str) -> None:
    if version == _V45 and isinstance(obj.get("select_type"), list) and obj["select_type"]:
        obj["select_type"] = _SELECT_45.get(tuple(obj["select_type"]), ["NONE"])


def for_version(resp: dict, version: str) -> dict:
    """The response with what ``version`` lacks removed (in place; returned for chaining)."""
    jobs = resp.get("jobs")
    if isinstance(jobs, list):
        for job in jobs:
            if "steps" in job:  # slurmdbd's job (sacct)
                _drop(job, _ABSENT["dbd_job"].get(version, ()))
                for step in job["steps"]:
                    _drop(step, _ABSENT["step"].get(version, ()))
            else:
                _drop(job, _ABSENT["job_info"].get(version, ()))
                if version == _V42 and "EXTERNAL_JOB" in (job.get("flags") or []):  # (a flag of v0.0.43 on)
                    job["flags"] = [f for f in job["flags"] if f != "EXTERNAL_JOB"]
                if isinstance(job.get("job_resources"), dict):
                    _select_type(job["job_resources"], version)
    for node in resp.get("nodes", []) if isinstance(resp.get("nodes"), list) else []:
        _drop(node, _ABSENT["node"].get(version, ()))
        if version in (_V42, _V43) and "EXTERNAL" in (node.get("state") or []):  # (a word of v0.0.44 on)
            node["state"] = [s for s in node["state"] if s != "EXTERNAL"]
    for part in resp.get("partitions", []) if isinstance(resp.get("partitions"), list) else []:
        _partition(part, version)
    for line in resp.get("sinfo", []) if isinstance(resp.get("sinfo"), list) else []:
        if line.get("partition"):
            _partition(line["partition"], version)
    return resp
