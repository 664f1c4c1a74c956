"""`plurm why JOBID`: the job's state, what its pending reason means, and how it got there."""

from __future__ import annotations

import sys
import time

# What each of Slurm's reasons means for the person waiting.
EXPLAIN = {
    "Resources": "the nodes it may use do not have enough free CPUs, memory or GRES right now",
    "Priority": "a higher-priority job of the same partition is waiting first",
    "JobHeldUser": "held by its user (sbatch -H or scontrol uhold); `scontrol release` lets it go",
    "JobHeldAdmin": "held by an administrator (scontrol hold); `scontrol release` by an administrator",
    "BeginTime": "its --begin time has not come yet",
    "Dependency": "it waits for the jobs named in --dependency",
    "DependencyNeverSatisfied": "its --dependency can never be satisfied; cancel it or change the dependency",
    "PartitionConfig": "it asks for more than the partition's nodes could ever give (nodes, CPUs per node)",
    "PartitionTimeLimit": "its time limit is longer than the partition's MaxTime",
    "PartitionNodeLimit": "it asks for more nodes than the partition's MaxNodes",
    "PartitionDown": "its partition is DOWN or DRAIN",
    "PartitionInactive": "its partition is INACTIVE",
    "JobArrayTaskLimit": "its array already runs as many tasks as its %N throttle allows",
    "QOSMaxJobsPerUserLimit": "its user already runs as many jobs as its QOS's MaxJobsPerUser allows",
    "NonZeroExitCode": "its batch script exited with a non-zero code (or was killed by a signal)",
    "TimeLimit": "it ran past its time limit and was stopped (SIGTERM, then SIGKILL after KillWait)",
    "NodeDown": "a node it ran on failed",
    "OutOfMemory": "it used more memory than it was given",
    "None": "",
}


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def _records(job_id: str) -> tuple[list[dict], bool]:
    """The job's records and whether they come from accounting.  The controller forgets an
    ended job MinJobAge seconds after its end (Slurm's default 300 s); accounting (what
    sacct reads) keeps it, with the same state, times, exit code and transitions."""
    from plurm.wire.client import ClientError, request

    try:
        jobs = request("job_info", {"job_ids": [job_id], "all_states": True})["jobs"]
    except ClientError as exc:
        if "Invalid job id" not in str(exc) or not job_id.split("_")[0].isdigit():
            raise
        jobs = []
    if jobs:
        return jobs, False
    body = {"job_ids": [job_id], "users": [], "states": [], "start_time": None, "end_time": None}
    found = request("acct_query", body).get("jobs", [])
    if not found:
        raise ClientError("Invalid job id specified")
    return found, True


def main(job_id: str) -> int:
    from plurm.tools.showfmt import job_exit, job_reason
    from plurm.wire.model import FINISHED_STATES
    from plurm.wire.client import ClientError

    try:
        jobs, from_accounting = _records(job_id)
    except ClientError as exc:
        print(f"plurm why: {exc}", file=sys.stderr)
        return 1
    for job in jobs:
        state = job.get("state", "PENDING")
        reason = job_reason(job)
        label = str(job["job_id"])
        if job.get("array_job_id") is not None and job.get("array_task_id") is not None:
            label = f"{job['array_job_id']}_{job['array_task_id']} (job {job['job_id']})"
        line = f"Job {label} ({job['spec'].get('name', '')}) is {state}"
        if reason != "None":
            line += f": {reason}"
            if EXPLAIN.get(reason):
                line += f" - {EXPLAIN[reason]}"
        print(line)
        if from_accounting:
            print("  (from accounting: the controller forgot it MinJobAge after its end)")
        if state in FINISHED_STATES:
            print(f"  exit code: {job_exit(job)}")
        if job.get("nodes"):
            print(f"  nodes: {','.join(job['nodes'])}")
        for when, event_state, event_reason in job.get("events", []):
            extra = f" ({event_reason})" if event_reason != "None" else ""
            print(f"  {_when(when)}  {event_state}{extra}")
    return 0
