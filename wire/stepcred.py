"""Step credentials: the controller's word that a user may start a step's tasks on nodes.

srun asks the controller for a step (``step_create``) and then asks each node's plurmd
to launch the step's tasks.  plurmd cannot ask the controller about every launch, so
the controller's reply carries a credential it made itself, over what it allowed: the
job and step, the uid and gid the tasks run as, the nodes, and an expiry.  plurmd
launches only when the credential comes from a daemon's uid, names this node, has not
expired, and the uid that srun's own message proves is the one the credential names.

The same credential goes to every node of the step, so a munge credential is decoded
more than once: munge's replay check is waived for it (as for Slurm's job
credentials); the expiry and the request's own fresh credential stand in for it.
"""

from __future__ import annotations

import time
from typing import Any

from plurm.wire import lightjson as json
from plurm.wire.auth import AuthError, AuthPlugin, message_digest

TTL_S = 300.0
_TAG = b"plurm-step-credential"


def issue(auth: AuthPlugin, job_id: int, step_id: int, uid: int, gid: int, nodes: list[str],
          now: float | None = None, job: dict[str, Any] | None = None) -> dict[str, str]:
    """``job``: the job's allocation (``nodes``, ``cpus``, ``mem``, ``gres_alloc``, per node),
    so that a node where the job has no batch run confines the step's job cgroup to it, on
    the controller's word rather than srun's (as Slurm's job credential carries its limits)."""
    terms: dict[str, Any] = {"job_id": job_id, "step_id": step_id, "uid": uid, "gid": gid, "nodes": nodes,
                             "expires": (time.time() if now is None else now) + TTL_S}
    if job is not None:
        terms["job"] = job
    payload = json.dumps(terms)
    credential = auth.credential(message_digest(_TAG, payload.encode()))
    return {"payload": payload, "credential": credential.decode("ascii")}


def check(auth: AuthPlugin, cred: dict[str, Any] | None, daemon_uids: frozenset[int], node: str,
          job_id: int, step_id: int, requester: int) -> dict[str, Any]:
    """The step's terms if ``cred`` lets ``requester`` launch job_id.step_id on ``node``."""
    if not isinstance(cred, dict) or not isinstance(cred.get("payload"), str) \
            or not isinstance(cred.get("credential"), str):
        raise AuthError("no step credential")
    payload = cred["payload"].encode()
    signer = auth.verify(cred["credential"].encode("ascii", "replace"), message_digest(_TAG, payload),
                         allow_replay=True)
    if signer.uid not in daemon_uids:
        raise AuthError(f"step credential made by uid {signer.uid}, not by the controller")
    terms = json.loads(payload)
    if terms.get("job_id") != job_id or terms.get("step_id") != step_id:
        raise AuthError("step credential for another step")
    if node not in terms.get("nodes", []):
        raise AuthError(f"step credential does not name node {node}")
    if terms.get("uid") != requester:
        raise AuthError(f"step credential for uid {terms.get('uid')}, requested by uid {requester}")
    if not isinstance(terms.get("expires"), (int, float)) or terms["expires"] < time.time():
        raise AuthError("step credential expired")
    return terms
