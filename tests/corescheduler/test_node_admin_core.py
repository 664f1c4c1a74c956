"""Node administration in the core, sans-IO: drain, down, resume, reboot, reconfigure.

Events in, decisions out (core_nodeadmin.py, core_reconfig.py); the daemons' side is
tests/integration/test_node_admin.py.
"""

from __future__ import annotations

import json

import msgspec
import pytest

from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec, Node, Partition

ROOT = Identity(0, 0, "root", operator=True)
ALICE = Identity(1001, 1001, "alice", frozenset({"alice"}))
T0 = 1_000_000.0


def _nodes() -> dict[str, Node]:
    return {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True, boot_time=1.0,
                          slurmd_start_time=2.0) for i in range(1, 4)}


def _core(**settings) -> tuple[ClusterCore, Service]:
    nodes = _nodes()
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="t", **settings), now=T0)
    return core, Service(core)


def _run(core: ClusterCore, service: Service, now: float, **spec) -> model.Job:
    spec.setdefault("script", "#!/bin/sh\nsleep 100\n")
    job_id = service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), ALICE, now)["job_id"]
    core.schedule(now)
    return core.jobs[job_id]


def _update(service: Service, nodes: list[str], state: str | None, reason: str | None = None,
            who: Identity = ROOT, now: float = T0) -> None:
    service.update_node(protocol.UpdateNode(nodes=nodes, state=state, reason=reason), who, now)


def test_drain_lets_jobs_finish_and_takes_no_new_ones() -> None:
    core, service = _core()
    job = _run(core, service, T0, req_nodes=["n1"], ntasks=2)
    assert job.state == model.RUNNING and job.nodes == ["n1"]
    _update(service, ["n1"], "DRAIN", "maintenance", now=T0 + 1)
    n1 = core.nodes["n1"]
    assert n1.state == "MIXED+DRAIN" and job.state == model.RUNNING
    assert (n1.reason, n1.reason_user, n1.reason_time) == ("maintenance", "root", T0 + 1)
    other = _run(core, service, T0 + 2, req_nodes=["n1"])
    assert other.state == model.PENDING
    core.job_ended(job.job_id, 0, 0, T0 + 3, T0 + 3)
    assert n1.state == "IDLE+DRAIN" and job.state == model.COMPLETED
    core.schedule(T0 + 4)
    assert other.state == model.PENDING  # still drained
    _update(service, ["n1"], "UNDRAIN", now=T0 + 5)
    assert n1.state == "IDLE" and n1.reason is None
    core.schedule(T0 + 6)
    assert other.state == model.RUNNING


def test_reason_and_state_are_checked() -> None:
    core, service = _core()
    with pytest.raises(RequestError, match="You must specify a reason"):
        _update(service, ["n1"], "DRAIN")
    with pytest.raises(RequestError, match="Invalid node state specified"):
        _update(service, ["n1"], "ALLOCATED")
    with pytest.raises(RequestError, match="Invalid node name specified"):
        _update(service, ["n1", "nosuch", "n2"], "DRAIN", "x")
    assert not core.nodes["n1"].drain and not core.nodes["n2"].drain  # nothing half done
    _update(service, ["n1"], "DRAIN", "x")
    with pytest.raises(RequestError, match="Invalid node state specified"):
        _update(service, ["n3"], "RESUME")  # neither down nor drained
    _update(service, ["n2"], "DOWN", "y")
    with pytest.raises(RequestError, match="Invalid node state specified"):
        _update(service, ["n2", "n3"], "RESUME")  # n2 resumed all the same
    assert core.nodes["n2"].state == "IDLE"
    _update(service, ["n3"], "IDLE")  # IDLE asks nothing of the node's state
    with pytest.raises(RequestError, match="Invalid user id"):
        _update(service, ["n1"], "RESUME", who=ALICE)
    assert core.nodes["n1"].drain


def test_down_ends_the_nodes_jobs_as_node_fail_or_requeues_them() -> None:
    core, service = _core()
    job = _run(core, service, T0, nodes_min=2, nodes_max=2, ntasks=2, requeue=False, requeue_given=True)
    assert job.state == model.RUNNING and len(job.nodes) == 2
    service.take_messages()
    _update(service, [job.nodes[1]], "DOWN", "bad disk", now=T0 + 1)
    assert job.state == model.NODE_FAIL and job.end_time == T0 + 1
    kills = sorted(m.node for m in service.take_messages() if m.msg_type == "terminate_job")
    assert kills == sorted(job.nodes)  # the DOWN node too: it may be alive
    down = core.nodes[job.nodes[1]]
    assert down.state == "DOWN" and down.reason == "bad disk"
    assert core.nodes[job.nodes[0]].state == "IDLE"
    _update(service, [down.name], "RESUME", now=T0 + 2)
    assert down.state == "IDLE" and down.reason is None
    # A batch job that may be requeued goes back to the queue, one restart more.
    again = _run(core, service, T0 + 3, req_nodes=["n3"], requeue=True, requeue_given=True)
    assert again.state == model.RUNNING
    _update(service, ["n3"], "DOWN", "psu", now=T0 + 4)
    assert again.state == model.PENDING and again.restarts == 1


def _reboot(service: Service, nodes: list[str], asap: bool = False, next_state: str = "",
            reason: str | None = None, now: float = T0) -> None:
    service.reboot_nodes(protocol.RebootNodes(nodes=nodes, asap=asap, next_state=next_state, reason=reason),
                         ROOT, now)


def test_reboot_asap_drains_until_idle_then_reboots_and_resumes() -> None:
    core, service = _core()
    job = _run(core, service, T0, req_nodes=["n1"])
    service.take_messages()
    _reboot(service, ["n1"], asap=True, now=T0 + 1)
    n1 = core.nodes["n1"]
    assert n1.state == "MIXED+DRAIN+REBOOT_REQUESTED" and n1.reason == "Reboot ASAP"
    assert not [m for m in service.take_messages() if m.msg_type == "reboot_node"]  # busy: not yet
    assert _run(core, service, T0 + 2, req_nodes=["n1"]).state == model.PENDING
    core.job_ended(job.job_id, 0, 0, T0 + 3, T0 + 3)
    out = core.tick(T0 + 4)
    assert [(m.node, m.msg_type) for m in out] == [("n1", "reboot_node")]
    assert n1.state == "IDLE+DRAIN+REBOOT_ISSUED"
    # The same daemon registering again (not rebooted) leaves it rebooting, and is told again.
    service.take_messages()
    service.node_register("n1", protocol.NodeRegister(node="n1", cpus=4, real_memory=4000, boot_time=1.0,
                                                      slurmd_start_time=2.0), T0 + 5)
    assert n1.reboot == "issued"
    assert [(m.node, m.msg_type) for m in service.take_messages()] == [("n1", "reboot_node")]
    # While its plurmd answers without rebooting, it is asked again every 5 s.
    assert core.tick(T0 + 5.5) == []
    assert [(m.node, m.msg_type) for m in core.tick(T0 + 10)] == [("n1", "reboot_node")]
    service.node_register("n1", protocol.NodeRegister(node="n1", cpus=4, real_memory=4000, boot_time=1.0,
                                                      slurmd_start_time=T0 + 5.5), T0 + 6)
    assert n1.state == "IDLE" and n1.reason is None and not core.reboot_pending
    assert not [m for m in core.tick(T0 + 20) if m.msg_type == "reboot_node"]
    core.schedule(T0 + 7)
    assert [j.state for j in core.jobs.values() if j.job_id != job.job_id] == [model.RUNNING]


def test_reboot_next_state_down_cancel_and_timeout() -> None:
    core, service = _core(resume_timeout=30.0)
    _reboot(service, ["n2"], next_state="DOWN", reason="firmware", now=T0)
    n2 = core.nodes["n2"]
    assert n2.reboot == "issued" and n2.reason == "firmware"  # idle: issued at once
    assert [m.msg_type for m in service.take_messages()] == ["reboot_node"]
    with pytest.raises(RequestError, match="Reboot already in progress"):
        _update(service, ["n2"], "CANCEL_REBOOT")
    service.node_register("n2", protocol.NodeRegister(node="n2", cpus=4, real_memory=4000, boot_time=T0 + 1,
                                                      slurmd_start_time=T0 + 1), T0 + 2)
    assert n2.state == "DOWN" and n2.reason == "firmware"
    # cancel_reboot of a request not issued yet (the node is busy) withdraws it and its drain
    job = _run(core, service, T0 + 3, req_nodes=["n1"])
    _reboot(service, ["n1"], asap=True, now=T0 + 4)
    _update(service, ["n1"], "CANCEL_REBOOT", now=T0 + 5)
    n1 = core.nodes["n1"]
    assert n1.state == "MIXED" and n1.reason is None and job.state == model.RUNNING
    with pytest.raises(RequestError, match="Invalid node state specified"):
        _update(service, ["n1"], "CANCEL_REBOOT")
    # a reboot that never comes back: DOWN after ResumeTimeout
    _reboot(service, ["n3"], now=T0 + 10)
    assert core.nodes["n3"].reboot == "issued"
    core.tick(T0 + 39)
    assert core.nodes["n3"].reboot == "issued"
    core.tick(T0 + 41)
    assert core.nodes["n3"].state == "DOWN" and core.nodes["n3"].reason == "reboot timed out"


def test_reconfigure_keeps_jobs_and_node_state_and_refuses_what_does_not_fit() -> None:
    core, service = _core()
    job = _run(core, service, T0, req_nodes=["n1"], ntasks=3)
    _update(service, ["n2"], "DRAIN", "kept", now=T0 + 1)
    nodes = _nodes()
    for node in nodes.values():
        node.responding, node.weight, node.features = False, 5, ["fast"]
    nodes["n3"] = msgspec.structs.replace(nodes["n3"], cpus=8)
    parts = {"debug": Partition(name="debug", nodes=list(nodes), default=True, max_time=60),
             "big": Partition(name="big", nodes=["n3"])}
    settings = CoreSettings(cluster_name="other", kill_wait=5.0, slurmd_timeout=42.0)
    changed = service.reconfigure({"nodes": nodes, "partitions": parts, "settings": settings,
                                   "priority_policy": None, "preempt_policy": None}, ROOT, T0 + 2)
    assert "partition big" in changed and "setting kill_wait" in changed and "node n3" in changed
    assert job.state == model.RUNNING and core.nodes["n1"].alloc_cpus == 3
    assert core.nodes["n1"].responding and core.nodes["n2"].state == "IDLE+DRAIN"  # run-time state stays
    assert core.nodes["n3"].cpus == 8 and core.nodes["n3"].features == ["fast"]
    assert core.nodes["n3"].partitions == ["debug", "big"]
    assert (core.settings.kill_wait, core.settings.slurmd_timeout, core.cluster_name) == (5.0, 42.0, "t")
    assert [m.msg_type for m in service.take_messages()].count("reconfigure_node") == 3
    assert _run(core, service, T0 + 3, partition="big", ntasks=8).state == model.RUNNING
    # Refused, nothing changed: a node smaller than its jobs, nodes added, a partition with jobs removed.
    small = _nodes()
    small["n1"] = msgspec.structs.replace(small["n1"], cpus=2)
    for bad_nodes, bad_parts, words in [
            (small, parts, "job 1 would not fit the new configuration"),
            ({**_nodes(), "n9": Node(name="n9")}, parts, "cannot be added or removed"),
            (_nodes(), {"debug": parts["debug"]}, "Partition big still has jobs")]:
        with pytest.raises(RequestError, match=words):
            service.reconfigure({"nodes": bad_nodes, "partitions": bad_parts, "settings": settings,
                                 "priority_policy": None, "preempt_policy": None}, ROOT, T0 + 4)
    assert core.nodes["n1"].cpus == 4 and "big" in core.partitions
    with pytest.raises(RequestError, match="Invalid user id"):
        service.reconfigure({"nodes": nodes, "partitions": parts, "settings": settings,
                             "priority_policy": None, "preempt_policy": None}, ALICE, T0 + 5)


def test_node_admin_state_survives_a_new_core_and_bad_records_are_left_out() -> None:
    core, service = _core()
    _update(service, ["n1"], "DRAIN", "bad dimm", now=T0 + 1)
    _reboot(service, ["n2"], asap=True, now=T0 + 2)  # idle: issued at once
    saved = core.take_node_admin()
    assert saved is not None and core.take_node_admin() is None  # nothing new since
    core.tick(T0 + 3)
    assert core.take_node_admin() is None  # (looked again: still the same)
    fresh, fresh_service = _core()
    fresh.restore_node_admin(saved, T0 + 100)
    assert fresh.nodes["n1"].state == "IDLE+DRAIN" and fresh.nodes["n1"].reason_user == "root"
    assert fresh.nodes["n2"].reboot == "issued" and fresh.nodes["n2"].reason == "Reboot ASAP"
    fresh.tick(T0 + 150)  # past ResumeTimeout since the reboot, not since the restore
    assert fresh.nodes["n2"].reboot == "issued"
    # the reboot goes on in the new core: done when the node registers with a later start
    fresh_service.node_register("n2", protocol.NodeRegister(node="n2", cpus=4, real_memory=4000, boot_time=1.0,
                                                            slurmd_start_time=T0 + 4), T0 + 5)
    assert fresh.nodes["n2"].state == "IDLE" and not fresh.reboot_pending
    # Hostile or stale saved state: a typed refusal in the log, the rest restored.
    other, _ = _core()
    bad = json.loads(saved)
    bad["n1"]["drain"] = "yes"
    bad["n9"] = bad["n2"]
    other.restore_node_admin(json.dumps(bad), T0)
    assert not other.nodes["n1"].drain and other.nodes["n2"].reboot == "issued"
    for text in ("{", "[1, 2]", json.dumps({"n1": {"drain": True}}), None, ""):
        other.restore_node_admin(text, T0)
    assert not other.nodes["n1"].drain
