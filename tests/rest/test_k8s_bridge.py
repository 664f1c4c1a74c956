"""The REST calls Slinky's Kubernetes operators make, replayed against a real plurmctld and
plurmrestd (docs/kubernetes.md lists them, read from SlinkyProject/slurm-bridge and
slurm-operator; both use slurm-client's v0.0.44 API).

slurm-bridge: registers each Kubernetes node as an External node (``POST new/node/`` with a
``node_conf`` line ending in ``State=External``), submits a pod group as a job with
``flags: ["EXTERNAL_JOB"]`` and no script (``POST job/submit``), polls ``GET job/{id}`` until
it is RUNNING and reads its ``nodes`` (and ``GET resources/{id}`` for the layout), finds its
pods again in ``admin_comment`` (``GET jobs/``), and ends the job with ``DELETE job/{id}``
once the pods are gone.  slurm-operator: drains a node with a reason (``POST node/{name}``,
``state: ["DRAIN"]``), undrains it (``["UNDRAIN"]``), and deletes a node whose pod is gone
(``DELETE node/{name}``).  Every answer is validated against slurmrestd's schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from plurmtest import wait_for
from resttest import (
    ME,
    VERSIONS,
    Rest,
    call,
    get_job,
    rest_cluster,
    validate,
    wait_job_state,
)

V = "v0.0.44"  # (slurm-client's api/v0044: the version both operators speak)
PODS = {"pods": ["default/trainer-0", "default/trainer-1"]}


@pytest.fixture(scope="module")
def k8s(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rest]:
    """Two plurmd nodes of 2 CPUs, room for dynamic (Kubernetes) nodes."""
    with rest_cluster(tmp_path_factory.mktemp("k8s"), 2, 2, 2000, "MaxNodeCount=6\n") as r:
        yield r


def bridge_job(name: str, nodes: int, **extra: object) -> dict:
    """The job_submit_req slurm-bridge's slurmcontrol.submitJob builds for a pod group (the
    fields it always sends; unset numbers as slurm-client sends them)."""
    job = {"admin_comment": json.dumps(PODS, separators=(",", ":")), "current_working_directory": "/tmp",
           "flags": ["EXTERNAL_JOB"], "mcs_label": "", "memory_per_node": {"set": False},
           "name": name, "nodes": str(nodes), "required_nodes": [], "priority": {"set": False},
           "partition": "debug", "shared": ["none"], "time_limit": {"set": False}}
    job.update(extra)
    return {"job": job}


def launched(rest: Rest, job_id: int) -> list[str]:
    """The plurmd nodes whose log says the job was started there."""
    logs = sorted((rest.cluster.dir / "log").glob("plurmd-*.log"))
    assert logs, "no plurmd log"
    return [p.stem for p in logs if f"job {job_id} started" in p.read_text(errors="replace")]


def submit(rest: Rest, token: str, body: dict, user: str = ME) -> int:
    status, reply = call(rest.url, "POST", f"/slurm/{V}/job/submit", token, user, body=body)
    assert status == 200, reply
    validate(reply, V, "POST", "job/submit")
    assert not [w for w in reply.get("warnings", []) if "flag" in w["description"]], reply["warnings"]
    return reply["job_id"]


def db_job(rest: Rest, token: str, job_id: int, state: str) -> dict:
    seen: dict = {}

    def recorded() -> bool:
        status, body = call(rest.url, "GET", f"/slurmdb/{V}/job/{job_id}", token, ME)
        if status == 200 and body.get("jobs"):
            validate(body, V, "GET", "/slurmdb/{version}/job/{job_id}")
            seen.update(body["jobs"][0])
        return seen.get("state", {}).get("current") == [state]

    wait_for(recorded, 30, f"accounting of job {job_id} {state} (last: {seen.get('state')})")
    return seen


def test_bridge_external_job_is_placed_not_launched_and_ends_when_deleted(k8s: Rest) -> None:
    token = k8s.token()
    job_id = submit(k8s, token, bridge_job("trainer", 2))
    job = wait_job_state(k8s, token, job_id, "RUNNING")
    # What the bridge reads: the nodes to bind the pods to, the flag, its pods in admin_comment.
    assert job["nodes"] == "n[1-2]" and job["node_count"]["number"] == 2
    assert job["flags"] == ["EXTERNAL_JOB"] and job["batch_flag"] is False and job["batch_host"] == ""
    assert json.loads(job["admin_comment"]) == PODS
    status, body = call(k8s.url, "GET", f"/slurm/{V}/jobs/", token, ME)
    assert status == 200, body
    assert [j["admin_comment"] for j in body["jobs"] if j["job_id"] == job_id] == [job["admin_comment"]]
    status, body = call(k8s.url, "GET", f"/slurm/{V}/resources/{job_id}", token, ME)
    assert status == 200, body
    validate(body, V, "GET", "resources/{job_id}")
    assert [(n["node"], n["core_bitmap"]) for n in body["nodes"]] == [("n1", "0-1"), ("n2", "0-1")]  # exclusive
    shown = k8s.cluster.run("scontrol", "show", "job", str(job_id), check=True).stdout
    assert "BatchFlag=0" in shown and "JobState=RUNNING" in shown, shown
    # As 22.05.8 shows an AdminComment (captured on the anchor): its own line, before Comment=.
    assert f"   WorkDir=/tmp\n   AdminComment={job['admin_comment']} \n" in shown, shown
    # A batch job behind it waits for the nodes the external job holds, then runs: plurmd's log
    # says so for it (the check below can see a launch) and never for the external job.
    script = "#!/bin/sh\ntrue\n"
    status, reply = call(k8s.url, "POST", f"/slurm/{V}/job/submit", token, ME,
                         body={"job": {"name": "after", "current_working_directory": "/tmp", "nodes": "2",
                                       "environment": ["PATH=/usr/bin:/bin"]}, "script": script})
    assert status == 200, reply
    after = reply["job_id"]
    assert get_job(k8s, token, after)["job_state"] == ["PENDING"]
    # A pod group that waits (the nodes are held) grows: the bridge's UpdateJob sends the whole
    # job_desc_msg again to POST job/{id}, with the new pods in admin_comment.
    waiting = submit(k8s, token, bridge_job("trainer-b", 1))
    assert get_job(k8s, token, waiting)["job_state"] == ["PENDING"]
    grown = bridge_job("trainer-b", 1, admin_comment=json.dumps({"pods": PODS["pods"] + ["default/trainer-2"]}))
    status, body = call(k8s.url, "POST", f"/slurm/{V}/job/{waiting}", token, ME, body=grown["job"])
    assert status == 200, body
    validate(body, V, "POST", "job/{job_id}")
    assert json.loads(get_job(k8s, token, waiting)["admin_comment"])["pods"][-1] == "default/trainer-2"
    status, body = call(k8s.url, "DELETE", f"/slurm/{V}/job/{waiting}", token, ME)
    assert status == 200, body
    wait_job_state(k8s, token, waiting, "CANCELLED")
    # The pods are gone: the bridge's TerminateJob, a DELETE with no signal.
    status, body = call(k8s.url, "DELETE", f"/slurm/{V}/job/{job_id}", token, ME)
    assert status == 200, body
    validate(body, V, "DELETE", "job/{job_id}")
    ended = wait_job_state(k8s, token, job_id, "CANCELLED")
    assert ended["exit_code"]["return_code"]["number"] == 0 and ended["exit_code"]["signal"]["id"]["number"] == 0
    wait_job_state(k8s, token, after, "COMPLETED")
    assert launched(k8s, after) == ["plurmd-n1"] and launched(k8s, job_id) == []
    # Accounting, as Slurm records an allocation that ran nothing (salloc --no-shell: CANCELLED, 0:0).
    record = db_job(k8s, token, job_id, "CANCELLED")
    assert record["nodes"] == "n[1-2]" and record["exit_code"]["return_code"]["number"] == 0
    assert record["name"] == "trainer" and json.loads(record["comment"]["administrator"]) == PODS
    sacct = k8s.cluster.run("sacct", "-n", "-X", "-P", "-j", str(job_id), "-o", "JobID,State,ExitCode,AdminComment",
                            check=True).stdout
    assert sacct.splitlines() == [f"{job_id}|CANCELLED by 0|0:0|{job['admin_comment']}"], sacct  # (the anchor's: 1327)


def test_admin_comment_is_refused_to_a_user_who_is_not_an_operator(k8s: Rest) -> None:
    """The bridge runs with SlurmUser's token; another user's submission cannot set AdminComment."""
    import pwd

    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody' on this machine")
    token = k8s.token("username=nobody")
    status, body = call(k8s.url, "POST", f"/slurm/{V}/job/submit", token, "nobody", body=bridge_job("theirs", 1))
    assert status in (400, 403, 500), body
    assert "Access/permission denied" in body["errors"][0]["description"], body["errors"]
    unmarked = bridge_job("theirs", 1)
    del unmarked["job"]["admin_comment"]
    job_id = submit(k8s, token, unmarked, "nobody")  # (the same job without it is theirs to submit)
    job = wait_job_state(k8s, token, job_id, "RUNNING")
    assert (job["user_id"], job["admin_comment"], job["flags"]) == (nobody.pw_uid, "", ["EXTERNAL_JOB"])
    status, body = call(k8s.url, "POST", f"/slurm/{V}/job/{job_id}", token, "nobody", body={"admin_comment": "mine"})
    assert status != 200 or "Access/permission denied" in json.dumps(body["results"]), body
    assert get_job(k8s, token, job_id)["admin_comment"] == ""
    status, body = call(k8s.url, "DELETE", f"/slurm/{V}/job/{job_id}", token, "nobody")
    assert status == 200, body
    wait_job_state(k8s, token, job_id, "CANCELLED")


def test_operator_drains_with_a_reason_and_undrains(k8s: Rest) -> None:
    """slurm-operator's MakeNodeDrain / IsNodeDrained / MakeNodeUndrain on a plurmd node."""
    token = k8s.token()

    def node() -> dict:
        status, body = call(k8s.url, "GET", f"/slurm/{V}/node/n2", token, ME)
        assert status == 200, body
        validate(body, V, "GET", "node/{node_name}")
        return body["nodes"][0]

    reason = "slurm-operator: Pod (default/slurm-worker-n2) is being deleted"
    busy = submit(k8s, token, bridge_job("on-n2", 1, required_nodes=["n2"]))
    wait_job_state(k8s, token, busy, "RUNNING")
    status, body = call(k8s.url, "POST", f"/slurm/{V}/node/n2", token, ME,
                        body={"state": ["DRAIN"], "reason": reason})
    assert status == 200, body
    draining = node()  # (a job still there: not drained yet, the operator waits)
    assert {"ALLOCATED", "DRAIN"} <= set(draining["state"]), draining["state"]
    call(k8s.url, "DELETE", f"/slurm/{V}/job/{busy}", token, ME)
    wait_job_state(k8s, token, busy, "CANCELLED")
    drained = node()
    assert "DRAIN" in drained["state"] and drained["reason"] == reason
    # IsNodeDrained: DRAIN and none of ALLOCATED, MIXED, COMPLETING.
    assert not {"ALLOCATED", "MIXED", "COMPLETING", "UNDRAIN"} & set(drained["state"]), drained["state"]
    status, body = call(k8s.url, "POST", f"/slurm/{V}/node/n2", token, ME, body={"state": ["UNDRAIN"], "reason": ""})
    assert status == 200, body
    assert "DRAIN" not in node()["state"]
    # UpdateNodeWithPodInfo: the pod behind the node, in its comment; read back from nodes/ to
    # find a defunct pod's node (GetDefunctNodesForNodeSet); scontrol's Comment= clears it.
    info = json.dumps({"namespace": "slurm", "podName": "slurm-worker-n2", "node": "kube-1",
                       "nodeSetName": "slurm-worker", "nodeSetUID": "5f0c"})
    status, body = call(k8s.url, "POST", f"/slurm/{V}/node/n2", token, ME, body={"comment": info})
    assert status == 200 and not body.get("warnings"), body
    assert node()["comment"] == info
    shown = k8s.cluster.run("scontrol", "update", "NodeName=n2", "Comment=", check=True)
    assert shown.returncode == 0 and node()["comment"] == ""


def new_node(k8s: Rest, token: str, conf: str) -> tuple[int, dict]:
    return call(k8s.url, "POST", f"/slurm/{V}/new/node/", token, ME, body={"node_conf": conf})


# The line slurm-bridge's node controller (AddNode) sends for a 4-CPU Kubernetes node, no GPU (the
# memory is room for DefMemPerCPU=1000 of this cluster times 4 CPUs).
BRIDGE_NODE = 'NodeName={} Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 CPUs=4 RealMemory=8000 State=External ' \
              'Gres="" GresConf=""'


def test_bridge_node_conf_line_is_taken_as_sent(k8s: Rest) -> None:
    token = k8s.token()
    status, body = new_node(k8s, token, BRIDGE_NODE.format("kube-z"))
    assert status == 200, body
    call(k8s.url, "DELETE", f"/slurm/{V}/node/kube-z", token, ME)


def test_bridge_registers_kubernetes_nodes_external_and_places_pods_there(k8s: Rest) -> None:
    token = k8s.token()
    status, body = new_node(k8s, token, BRIDGE_NODE.format("kube-a"))
    assert status == 200, body
    validate(body, V, "POST", "new/node/")
    try:
        status, body = call(k8s.url, "GET", f"/slurm/{V}/node/kube-a", token, ME)  # the bridge's NodeExists
        assert status == 200, body
        assert "EXTERNAL" in body["nodes"][0]["state"], body["nodes"][0]["state"]
        status, body = call(k8s.url, "GET", f"/slurm/{V}/nodes/", token, ME)  # GetNodeNames
        assert "kube-a" in [n["name"] for n in body["nodes"]]
        # A batch job never lands there (no plurmd); an external job of 4 CPUs can only.
        job_id = submit(k8s, token, bridge_job("pods", 1, shared=[], cpus_per_task=4, tasks=1))
        job = wait_job_state(k8s, token, job_id, "RUNNING")
        assert job["nodes"] == "kube-a", job["nodes"]
        # A node with a job cannot go: the bridge deletes the job first, then the node.
        status, body = call(k8s.url, "DELETE", f"/slurm/{V}/node/kube-a", token, ME)
        assert status != 200, body
        call(k8s.url, "DELETE", f"/slurm/{V}/job/{job_id}", token, ME)
        wait_job_state(k8s, token, job_id, "CANCELLED")
        assert launched(k8s, job_id) == []
        # kube-a is idle now, and the only node of 4 CPUs: a batch job of 4 CPUs still never goes there.
        status, reply = call(k8s.url, "POST", f"/slurm/{V}/job/submit", token, ME,
                             body={"job": {"name": "big", "current_working_directory": "/tmp", "cpus_per_task": 4,
                                           "environment": ["PATH=/usr/bin:/bin"]}, "script": "#!/bin/sh\ntrue\n"})
        if status == 200:  # (accepted: it waits; the pass its submission ran did not place it there)
            big = reply["job_id"]
            squeue = k8s.cluster.run("squeue", "-h", "-j", str(big), "-o", "%T %r %N", check=True).stdout.split()
            assert squeue == ["PENDING", "Resources"], squeue
            call(k8s.url, "DELETE", f"/slurm/{V}/job/{big}", token, ME)
            wait_job_state(k8s, token, big, "CANCELLED")
        else:
            assert status in (400, 500), reply
    finally:
        status, body = call(k8s.url, "DELETE", f"/slurm/{V}/node/kube-a", token, ME)
    assert status == 200, body
    status, body = call(k8s.url, "GET", f"/slurm/{V}/node/kube-a", token, ME)
    assert status != 200 or not body.get("nodes"), body
    assert Path(k8s.cluster.dir).exists()


@pytest.mark.parametrize("version", VERSIONS)
def test_external_job_in_every_served_version(k8s: Rest, version: str) -> None:
    """The flag is in job_desc_msg.flags and job_info.flags of v0.0.43 on: each version's
    answers validate with it (get_job checks the schema)."""
    token = k8s.token()
    status, reply = call(k8s.url, "POST", f"/slurm/{version}/job/submit", token, ME, body=bridge_job("v", 1))
    assert status == 200, reply
    validate(reply, version, "POST", "job/submit")
    job = wait_job_state(k8s, token, reply["job_id"], "RUNNING")
    assert get_job(k8s, token, reply["job_id"], version)["flags"] == ["EXTERNAL_JOB"] == job["flags"]
    status, body = call(k8s.url, "DELETE", f"/slurm/{version}/job/{reply['job_id']}", token, ME)
    assert status == 200, body
    wait_job_state(k8s, token, reply["job_id"], "CANCELLED")
