"""EXTERNAL_JOB in the core, sans-IO (core_external.py): allocated and RUNNING with nothing sent
to a node daemon, ended when told (CANCELLED 0:0) or at its time limit (TIMEOUT 0:0), as Slurm
22.05 records an allocation that runs nothing (``salloc --no-shell``, observed on the anchor);
admin_comment is the operators'; External nodes take external jobs only; a node's Comment (the
Kubernetes operator's pod) is kept.  The daemons' and
REST side: tests/integration/test_external_job.py, tests/rest/test_k8s_bridge.py."""

from __future__ import annotations

import pytest
from plurm.corescheduler import effects as fx
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.core_external import job_flags, may_use_node
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

ROOT = Identity(0, 0, "root", operator=True)
ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
T0 = 1_000_000.0


def _core() -> tuple[ClusterCore, Service]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True, boot_time=1.0,
                           slurmd_start_time=2.0, addr="127.0.0.1", hostname="localhost") for i in (1, 2)}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="t"), now=T0)
    return core, Service(core)


def _submit(service: Service, who: Identity = ROOT, **spec) -> int:
    spec.setdefault("external", True)
    return service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), who, T0)["job_id"]


def _acct(core: ClusterCore) -> list[model.Job]:
    return [e.job for e in core.take_effects() if isinstance(e, fx.SaveAcctJob)]


def test_allocated_running_and_nothing_launched() -> None:
    core, service = _core()
    # Whoever built the spec (a client that left batch and a script in): nothing to launch.
    job_id = _submit(service, batch=True, script="#!/bin/sh\ntrue\n", nodes_min=2, exclusive=True)
    job = core.jobs[job_id]
    assert (job.spec.batch, job.spec.script) == (False, None)
    out = core.schedule(T0)
    assert out == []  # no launch_job, nor anything else, to any plurmd
    assert (job.state, job.nodes, job.cpus) == (model.RUNNING, ["n1", "n2"], [4, 4])
    assert (job_id, "batch") not in core.steps
    assert job_flags(job.spec) == ["EXTERNAL_JOB"]
    assert job_flags(JobSpec()) == []


def test_ended_when_told_is_cancelled_0_0_and_accounted() -> None:
    core, service = _core()
    job_id = _submit(service)
    core.schedule(T0)
    core.take_effects()
    core.now = T0 + 5
    service.cancel(protocol.CancelJob(job_ids=[str(job_id)]), ROOT, T0 + 5)
    job = core.jobs[job_id]
    assert (job.state, job.completing, job.exit_code, job.exit_signal) == (model.CANCELLED, False, 0, 0)
    assert job.end_time == T0 + 5 and job.cancel_uid == 0
    assert [j.job_id for j in _acct(core)] == [job_id]
    assert core.nodes["n1"].alloc_cpus == 0  # its CPUs are free again at once (no batch step to end)


def test_time_limit_still_applies_timeout_0_0() -> None:
    core, service = _core()
    job_id = _submit(service, time_limit=1)
    core.schedule(T0)
    core.take_effects()
    core.tick(T0 + 59)
    assert core.jobs[job_id].state == model.RUNNING
    core.tick(T0 + 61)
    job = core.jobs[job_id]
    assert (job.state, job.exit_code, job.exit_signal, job.end_time) == (model.TIMEOUT, 0, 0, T0 + 61)
    assert [j.state for j in _acct(core)] == [model.TIMEOUT]


def test_admin_comment_is_the_operators() -> None:
    core, service = _core()
    with pytest.raises(RequestError) as refused:
        _submit(service, ALICE, admin_comment='{"pods":["default/p"]}')
    assert str(refused.value) == "Access/permission denied" and not core.jobs
    job_id = _submit(service, ALICE)  # (an external job without it is anyone's)
    assert core.jobs[job_id].spec.user == "alice"
    job_id = _submit(service, ROOT, admin_comment='{"pods":["default/p"]}')
    assert core.jobs[job_id].spec.admin_comment == '{"pods":["default/p"]}'


def test_external_nodes_take_external_jobs_only() -> None:
    kube = Node(name="k1", cpus=4, real_memory=4000)
    kube.dynamic = "external"
    plain = Node(name="n1", cpus=4, real_memory=4000)
    assert may_use_node(JobSpec(external=True), kube) and may_use_node(JobSpec(external=True), plain)
    assert not may_use_node(JobSpec(), kube) and may_use_node(JobSpec(), plain)


def test_admin_comment_update_is_the_operators() -> None:
    """scontrol update JobId= AdminComment= (and POST job/{id} admin_comment): slurm-bridge's
    UpdateJob puts a grown pod group's pods there."""
    core, service = _core()
    job_id = _submit(service, ALICE)
    reply = service.update_job(protocol.UpdateJob(job_ids=[str(job_id)], fields={"AdminComment": "x"}), ALICE, T0)
    assert [(r.get("error"), r.get("code")) for r in reply["results"]] == [("Access/permission denied", "AccessDenied")]
    assert core.jobs[job_id].spec.admin_comment is None
    service.update_job(protocol.UpdateJob(job_ids=[str(job_id)], fields={"AdminComment": '{"pods":[]}'}), ROOT, T0)
    assert core.jobs[job_id].spec.admin_comment == '{"pods":[]}'


def test_node_comment_is_set_cleared_and_kept_across_a_restart() -> None:
    """slurm-operator keeps the pod behind a node in its Comment (POST node/{name} comment)."""
    core, _ = _core()
    core.update_nodes(["n1"], None, None, ROOT, T0, comment='{"podName":"w-0"}')
    assert core.nodes["n1"].comment == '{"podName":"w-0"}' and core.nodes["n1"].state == "IDLE"
    saved = core.take_node_admin()
    assert saved is not None
    again, _ = _core()
    again.restore_node_admin(saved, T0 + 1)
    assert again.nodes["n1"].comment == '{"podName":"w-0"}' and again.nodes["n2"].comment is None
    older = '{"n2": {"down": false, "drain": true, "reason": "r", "reason_time": 1.0, "reason_user": "root", ' \
            '"reboot": "", "reboot_next": "", "reboot_time": null, "reboot_drained": false}}'
    again.restore_node_admin(older, T0 + 2)  # (a state saved before comments were kept)
    assert again.nodes["n2"].drain and again.nodes["n2"].comment is None
    core.update_nodes(["n1"], None, None, ROOT, T0 + 3, comment="")
    assert core.nodes["n1"].comment is None
