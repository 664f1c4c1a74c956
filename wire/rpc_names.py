"""Slurm's names and numbers for plurm's wire messages, where a message has a Slurm counterpart
(sdiag and REST diag print RPC statistics by Slurm's names, so tools that read them keep
working).  A message with no counterpart is printed by its own name, upper-cased, number 0."""

from __future__ import annotations

# plurm wire name -> (Slurm's message type, its number), as Slurm 22.05's sdiag prints them.
SLURM_RPC: dict[str, tuple[str, int]] = {
    "node_register": ("MESSAGE_NODE_REGISTRATION_STATUS", 1002),
    "reconfigure": ("REQUEST_RECONFIGURE", 1003),
    "ping": ("REQUEST_PING", 1008),
    "reboot_nodes": ("REQUEST_REBOOT_NODES", 1015),
    "config": ("REQUEST_BUILD_INFO", 2001),
    "job_info": ("REQUEST_JOB_INFO", 2003),
    "step_info": ("REQUEST_JOB_STEP_INFO", 2005),
    "node_info": ("REQUEST_NODE_INFO", 2007),
    "share_info": ("REQUEST_SHARE_INFO", 2022),
    "priority_factors": ("REQUEST_PRIORITY_FACTORS", 2026),
    "stats": ("REQUEST_STATS_INFO", 2035),
    "update_job": ("REQUEST_UPDATE_JOB", 3001),
    "update_node": ("REQUEST_UPDATE_NODE", 3002),
    "submit_job": ("REQUEST_SUBMIT_BATCH_JOB", 4003),
    "step_create": ("REQUEST_JOB_STEP_CREATE", 5001),
    "suspend_job": ("REQUEST_SUSPEND", 5014),
    "step_complete": ("REQUEST_STEP_COMPLETE", 5016),
    "job_complete": ("REQUEST_COMPLETE_JOB_ALLOCATION", 5017),
    "job_ended": ("REQUEST_COMPLETE_BATCH_SCRIPT", 5018),
    "requeue_job": ("REQUEST_JOB_REQUEUE", 5023),
    "cancel_job": ("REQUEST_KILL_JOB", 5032),
}


def slurm_name(msg_type: str) -> tuple[str, int]:
    """(Slurm's name, number) of a plurm message type; (its name upper-cased, 0) without one."""
    return SLURM_RPC.get(msg_type, (msg_type.upper(), 0))
