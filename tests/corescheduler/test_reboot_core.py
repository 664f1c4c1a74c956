"""``--reboot`` in the core, sans-IO (core_reboot.py): who may ask, CONFIGURING until the
nodes are back, ResumeTimeout, and where the option is ignored; the daemons' side is
tests/integration/test_reboot_job.py."""

from __future__ import annotations

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


def _core(own_hosts: bool = False, **settings) -> tuple[ClusterCore, Service]:
    """Two nodes on one host (a local cluster), or each on its own (``own_hosts``)."""
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=4, real_memory=4000, responding=True, boot_time=1.0,
                           slurmd_start_time=2.0, addr=f"10.0.0.{i}" if own_hosts else "127.0.0.1",
                           hostname=f"n{i}" if own_hosts else "localhost") for i in (1, 2)}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    core = ClusterCore(nodes, partitions, CoreSettings(cluster_name="t", **settings), now=T0)
    return core, Service(core)


def _submit(service: Service, who: Identity = ROOT, **spec) -> int:
    spec.setdefault("script", "#!/bin/sh\ntrue\n")
    spec.setdefault("reboot", True)
    spec.setdefault("exclusive", True)
    return service.submit(protocol.SubmitJob(spec=JobSpec(**spec)), who, T0)["job_id"]


def _kinds(out: list) -> list[tuple[str, str]]:
    return [(o.node, o.msg_type) for o in out]


def test_only_operators_may_reboot() -> None:
    core, service = _core()
    with pytest.raises(RequestError) as refused:
        _submit(service, ALICE)
    assert (str(refused.value), refused.value.detail) == ("Access/permission denied",
                                                         "rebooting of nodes is only allowed for admins")
    assert not core.jobs
    _submit(service, ALICE, reboot=False)  # (the same job without it is fine)


def test_configuring_until_every_node_registered_again() -> None:
    core, service = _core()
    job_id = _submit(service, nodes_min=2)
    out = core.schedule(T0)
    job = core.jobs[job_id]
    assert sorted(_kinds(out)) == [("n1", "reboot_node"), ("n2", "reboot_node")]  # no launch_job yet
    assert (job.state, job.configuring, job.start_time) == (model.RUNNING, True, T0)
    assert core.nodes["n1"].state == "ALLOCATED+NOT_RESPONDING+POWERING_UP"
    assert (job_id, "batch") not in core.steps
    # n1 registers without having restarted (the same daemon): told again, still configuring.
    core.now = T0 + 1
    assert _kinds(core.reboot_registered("n1", 1.0, 2.0)) == [("n1", "reboot_node")]
    assert core.reboot_registered("n1", 1.0, T0 + 2) == [] and job.configuring  # n2 still boots
    assert core.nodes["n1"].state == "ALLOCATED"
    core.now = T0 + 3
    out = core.reboot_registered("n2", 1.0, T0 + 3)
    assert _kinds(out) == [("n1", "launch_job")]
    assert (job.configuring, job.start_time, job.state) == (False, T0 + 3, model.RUNNING)
    assert (job_id, "batch") in core.steps
    assert not core.reboot_pending


def test_a_node_not_back_within_resume_timeout_is_down_and_the_job_requeued() -> None:
    core, service = _core(resume_timeout=10.0)
    requeued = _submit(service, req_nodes=["n1"])
    failed = _submit(service, req_nodes=["n2"], requeue=False, requeue_given=True)
    core.schedule(T0)
    assert core.jobs[requeued].configuring and core.jobs[failed].configuring
    # The daemons still answer (the word lost, or a report to deliver first): told again every 5 s.
    assert sorted(_kinds(core.tick(T0 + 6))) == [("n1", "reboot_node"), ("n2", "reboot_node")]
    core.tick(T0 + 11)
    for name in ("n1", "n2"):
        node = core.nodes[name]
        assert (node.down, node.responding, node.reason, node.reboot) == (True, False, "reboot timed out", "")
        assert node.state == "DOWN*"
    job = core.jobs[requeued]
    assert (job.state, job.restarts, job.configuring) == (model.PENDING, 1, False)
    assert job.earlier_runs and job.earlier_runs[-1].state == model.NODE_FAIL
    assert (core.jobs[failed].state, core.jobs[failed].configuring) == (model.NODE_FAIL, False)


def test_ignored_where_nodes_cannot_reboot_and_done_with_a_reboot_program() -> None:
    core, service = _core(own_hosts=True)  # real nodes, no RebootProgram: 22.05 runs it at once
    job_id = _submit(service, req_nodes=["n1"])
    assert _kinds(core.schedule(T0)) == [("n1", "launch_job")] and not core.jobs[job_id].configuring
    core, service = _core(own_hosts=True, reboot_program="/sbin/reboot")
    job_id = _submit(service, req_nodes=["n1"])
    assert _kinds(core.schedule(T0)) == [("n1", "reboot_node")] and core.jobs[job_id].configuring


def test_a_reboot_in_progress_survives_a_controller_restart() -> None:
    core, service = _core()
    job_id = _submit(service, req_nodes=["n1"])
    core.schedule(T0)
    saved, job = core.take_node_admin(), core.jobs[job_id]
    fresh, _ = _core()
    again = ClusterCore(fresh.nodes, fresh.partitions, fresh.settings, jobs=[job], now=T0 + 5)
    again.restore_node_admin(saved, T0 + 5)
    assert (again.nodes["n1"].reboot, again.nodes["n1"].reboot_job, again.jobs[job_id].configuring) == \
        ("issued", True, True)
    again.now = T0 + 6
    assert _kinds(again.reboot_registered("n1", 1.0, T0 + 6)) == [("n1", "launch_job")]


def test_saved_node_state_of_an_older_plurm_still_restores() -> None:
    core, _ = _core()
    core.restore_node_admin('{"n1": {"down": false, "drain": true, "reason": "old", "reason_time": 5, '
                            '"reason_user": "root", "reboot": "", "reboot_next": "", "reboot_time": null, '
                            '"reboot_drained": false}}', T0)
    assert core.nodes["n1"].drain and core.nodes["n1"].reason == "old"


def test_cancelled_while_its_nodes_boot_ends_at_once_and_they_finish_rebooting() -> None:
    core, service = _core()
    job_id = _submit(service, req_nodes=["n1"])
    core.schedule(T0)
    service.cancel(protocol.CancelJob(job_ids=[str(job_id)]), ROOT, T0 + 1)
    job = core.jobs[job_id]
    assert (job.state, job.completing) == (model.CANCELLED, False)
    core.tick(T0 + 2)  # (it boots on, as 22.05's idle#: no job starts there until it is back)
    assert core.nodes["n1"].state == "IDLE+NOT_RESPONDING+POWERING_UP"
    other = _submit(service, req_nodes=["n1"], reboot=False)
    core.schedule(T0 + 3)
    assert core.jobs[other].state == model.PENDING
    core.now = T0 + 4
    core.reboot_registered("n1", 1.0, T0 + 4)
    assert _kinds(core.schedule(T0 + 5)) == [("n1", "launch_job")]


def test_a_node_of_an_ended_job_that_never_comes_back_is_down_all_the_same() -> None:
    core, service = _core(resume_timeout=10.0)
    job_id = _submit(service, req_nodes=["n1"])
    core.schedule(T0)
    service.cancel(protocol.CancelJob(job_ids=[str(job_id)]), ROOT, T0 + 1)
    core.tick(T0 + 11)
    assert (core.nodes["n1"].state, core.nodes["n1"].reason) == ("DOWN*", "reboot timed out")
    assert core.jobs[job_id].state == model.CANCELLED


def test_scontrol_reboot_refused_where_nodes_cannot_reboot() -> None:
    from plurm.tools import scontrol_node
    from plurm.wire.client import ClientError

    core, service = _core(own_hosts=True)
    with pytest.raises(RequestError) as refused:
        service.reboot_nodes(protocol.RebootNodes(nodes=["n1"]), ROOT, T0)
    assert (str(refused.value), refused.value.detail) == ("Unspecified error", "RebootProgram isn't defined")
    assert core.nodes["n1"].reboot == ""

    class Sc:  # scontrol's side: the lines 22.05 prints (reference/reboot/anchor_no_reboot_program.txt)
        lines: list[str] = []

        def request(self, kind: str, body: dict) -> None:
            raise ClientError(str(refused.value), refused.value.code, refused.value.detail)

        def error(self, text: str) -> None:
            self.lines.append(text)

    sc = Sc()
    scontrol_node.reboot(sc, ["n1"])
    assert sc.lines == ["scontrol: error: RebootProgram isn't defined", "scontrol_reboot_nodes error: Unspecified error"]


def test_a_daemon_that_pings_before_it_reboots_does_not_fail_the_job() -> None:
    core, service = _core(resume_timeout=60.0)
    job_id = _submit(service, req_nodes=["n1"])
    core.schedule(T0)
    core.node_register("n1", {"boot_time": 1.0, "slurmd_start_time": 2.0}, T0 + 0.5)  # (not rebooted yet)
    for second in range(1, 40):  # (a RebootProgram slow to take the host down: its plurmd still pings)
        core.node_ping("n1", [], None, None, T0 + second)
        core.tick(T0 + second + 0.5)
    job = core.jobs[job_id]
    assert (job.state, job.configuring) == (model.RUNNING, True)
