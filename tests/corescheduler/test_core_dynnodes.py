"""Dynamic nodes in the core, sans-IO (core_dynnodes.py, dynnodes_conf.py): node lines, MaxNodeCount,
the partitions a node joins, delete's refusals, the store's view of the changes, and External
nodes in the scheduling pass (EXTERNAL_JOB jobs only).  The daemons' side:
tests/integration/test_dynamic_nodes.py; REST: tests/rest/test_rest_dynnodes.py."""

from __future__ import annotations

import pytest
from plurm.corescheduler import dynnodes_conf
from plurm.corescheduler.configure import core_from_conf
from plurm.corescheduler.core import ClusterCore
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.grammar.slurmconf import parse_slurm_conf_text
from plurm.wire import model, protocol
from plurm.wire.model import JobSpec

ROOT = Identity(0, 0, "root", operator=True)
T0 = 1_000_000.0
CONF = """ClusterName=t
MaxNodeCount=5
NodeName=n[1-2] CPUs=4 RealMemory=4000
NodeSet=gpuset Feature=gpu
PartitionName=all Nodes=ALL Default=YES
PartitionName=gpus Nodes=gpuset
PartitionName=static Nodes=n1
"""


def _core(text: str = CONF) -> ClusterCore:
    conf = parse_slurm_conf_text(text)
    core = core_from_conf(conf, now=T0)
    core.set_dynamic_limits(dynnodes_conf.limits(conf))
    for node in core.nodes.values():
        node.responding, node.boot_time = True, 1.0
    return core


def _create(core: ClusterCore, line: str) -> list[str]:
    return core.create_nodes(dynnodes_conf.parse_node_line(line, 6818), T0)


def _refusal(call) -> tuple[str, str | None]:
    with pytest.raises(RequestError) as refused:
        call()
    return str(refused.value), refused.value.detail


def test_node_line_becomes_nodes_in_their_partitions() -> None:
    core = _core()
    assert _create(core, "NodeName=d[1-2] CPUs=8 RealMemory=2000 Features=gpu Gres=gpu:1 State=CLOUD") == ["d1", "d2"]
    d1 = core.nodes["d1"]
    assert (d1.cpus, d1.real_memory, d1.features, d1.gres, d1.dynamic) == (8, 2000, ["gpu"], ["gpu:1"], "cloud")
    assert d1.partitions == ["all", "gpus"] and core.partitions["gpus"].nodes == ["d1", "d2"]
    assert core.partitions["static"].nodes == ["n1"]  # (a partition of named nodes takes none)
    assert d1.state == "IDLE+CLOUD+POWERED_DOWN"
    assert core.shape.total_nodes == 4 and core.shape.total_cpus == 24
    _create(core, "NodeName=f1 CPUs=1")
    assert (core.nodes["f1"].dynamic, core.nodes["f1"].state, core.nodes["f1"].partitions) == (
        "norm", "UNKNOWN+DYNAMIC_NORM", ["all"])


@pytest.mark.parametrize("line, message, detail", [
    ("NodeName=x State=IDLE", "Invalid node state specified", dynnodes_conf.STATE_REFUSAL),
    ("NodeName=x Bogus=1", "Unspecified error", "Failed to parse nodeline 'NodeName=x Bogus=1'"),
    ("CPUs=4", "Unspecified error", "Failed to parse nodeline 'CPUs=4'"),
    ("NodeName=x CPUs=many", "Unspecified error", "Failed to parse nodeline 'NodeName=x CPUs=many'"),
])
def test_bad_node_lines(line: str, message: str, detail: str) -> None:
    assert _refusal(lambda: dynnodes_conf.parse_node_line(line, 6818)) == (message, detail)


def test_max_node_count_and_duplicates_all_or_none() -> None:
    core = _core()
    assert _refusal(lambda: _create(core, "NodeName=d[1-4] CPUs=1 State=FUTURE")) == (
        "Unspecified error", "Unable to add node 'd4', node table is full (MaxNodeCount=5)")
    assert "d1" not in core.nodes
    assert _refusal(lambda: _create(core, "NodeName=n2 CPUs=1")) == ("Duplicate node name", "Node 'n2' already exists")
    unset = _core(CONF.replace("MaxNodeCount=5\n", ""))
    assert _refusal(lambda: _create(unset, "NodeName=d1 CPUs=1 State=CLOUD"))[1] == (
        "Unable to add node 'd1', node table is full (MaxNodeCount=2)")


def test_delete_refuses_static_and_busy_nodes_and_reports_the_store_changes() -> None:
    core = _core()
    service = Service(core)
    _create(core, "NodeName=d[1-2] CPUs=4 RealMemory=4000")
    for name in ("d1", "d2"):
        core.nodes[name].responding, core.nodes[name].boot_time = True, 1.0
    put, gone = core.take_dynamic_changes()
    assert [n.name for n in put] == ["d1", "d2"] and gone == []
    assert core.take_dynamic_changes() is None
    job_id = service.submit(protocol.SubmitJob(spec=JobSpec(req_nodes=["d1"], script="#!/bin/sh\n")), ROOT,
                            T0)["job_id"]
    core.schedule(T0)
    assert core.jobs[job_id].state == model.RUNNING and core.jobs[job_id].nodes == ["d1"]
    assert _refusal(lambda: core.delete_nodes(["d1"], T0)) == ("Node has active jobs", f"Node 'd1' has jobs ({job_id})")
    assert _refusal(lambda: core.delete_nodes(["n1"], T0)) == ("Invalid node state specified",
                                                                "Can't delete non-dynamic node 'n1'.")
    assert _refusal(lambda: core.delete_nodes(["d2", "zz"], T0))[0] == "Invalid node name specified"
    assert "d2" in core.nodes  # (all or none)
    core.delete_nodes(["d2"], T0)
    assert "d2" not in core.nodes and core.partitions["all"].nodes == ["n1", "n2", "d1"]
    assert core.take_dynamic_changes() == ([], ["d2"])
    # The running job still holds d1 in the rebuilt scheduler: a second whole-node job waits.
    assert core.nodes["d1"].alloc_cpus == 1


def test_stored_nodes_come_back_before_their_jobs() -> None:
    core = _core()
    _create(core, "NodeName=d1 CPUs=4 Features=gpu")
    kept = [dynnodes_conf.stored(n) for n in core.take_dynamic_changes()[0]]
    assert kept[0].partitions == [] and not kept[0].responding
    conf = parse_slurm_conf_text(CONF)
    job = model.Job(job_id=7, spec=JobSpec(script="#!/bin/sh\n"), state=model.RUNNING, nodes=["d1"], cpus=[2],
                    mem=[0], partition="all")
    again = core_from_conf(conf, jobs=[job], dynamic_nodes=kept, now=T0)
    assert again.nodes["d1"].alloc_cpus == 2 and again.nodes["d1"].partitions == ["all", "gpus"]


def test_external_nodes_take_external_jobs_only() -> None:
    core = _core()
    service = Service(core)
    _create(core, "NodeName=k1 CPUs=4 RealMemory=4000 State=EXTERNAL")
    assert core.nodes["k1"].state == "IDLE+EXTERNAL"
    # A plain job could never run there: refused at submission, as a job asking for more than
    # its partition's nodes have (External nodes do not count as capacity for it either).
    assert _refusal(lambda: service.submit(protocol.SubmitJob(spec=JobSpec(req_nodes=["k1"], script="#!/bin/sh\n")),
                                           ROOT, T0))[0] == "Requested node configuration is not available"
    big = JobSpec(nodes_min=3, script="#!/bin/sh\n")  # n1, n2 and k1 would be three nodes
    assert _refusal(lambda: service.submit(protocol.SubmitJob(spec=big), ROOT, T0))[0] == \
        "Requested node configuration is not available"
    external = service.submit(protocol.SubmitJob(spec=JobSpec(req_nodes=["k1"], external=True)), ROOT, T0)["job_id"]
    out = core.schedule(T0)
    assert core.jobs[external].state == model.RUNNING and core.jobs[external].nodes == ["k1"]
    assert not [o for o in out if o.node == "k1"]  # nothing is sent to an External node
    assert core.nodes["k1"].state == "MIXED+EXTERNAL"  # (one CPU of four)
    # Drained, it takes no new external job.
    core.nodes["k1"].drain = True
    again = service.submit(protocol.SubmitJob(spec=JobSpec(req_nodes=["k1"], external=True)), ROOT, T0)["job_id"]
    core.schedule(T0)
    assert core.jobs[again].state == model.PENDING
    with pytest.raises(RequestError, match="External"):
        core.node_heard(core.nodes["k1"])


def test_deleting_a_node_a_pending_job_names_stops_no_pass() -> None:
    core = _core()
    service = Service(core)
    _create(core, "NodeName=d1 CPUs=4 RealMemory=4000")
    core.nodes["d1"].drain = True  # (so the job naming it waits)
    named = service.submit(protocol.SubmitJob(spec=JobSpec(req_nodes=["d1"], script="#!/bin/sh\n")), ROOT,
                           T0)["job_id"]
    core.schedule(T0)
    core.delete_nodes(["d1"], T0)
    other = service.submit(protocol.SubmitJob(spec=JobSpec(script="#!/bin/sh\n")), ROOT, T0)["job_id"]
    core.schedule(T0)  # (raised KeyError 'd1' in every pass, so no job anywhere started)
    assert core.jobs[other].state == model.RUNNING
    assert core.jobs[named].state == model.PENDING and "UnavailableNodes:d1" in core.jobs[named].reason


def test_cloud_and_future_nodes_stay_up_across_a_restart_until_a_plurmd_registers() -> None:
    core = _core()
    _create(core, "NodeName=c1 CPUs=4 RealMemory=4000 State=CLOUD")
    _create(core, "NodeName=f1 CPUs=4 RealMemory=4000 State=FUTURE")
    kept = [dynnodes_conf.stored(n) for n in core.take_dynamic_changes()[0]]
    again = core_from_conf(parse_slurm_conf_text(CONF), dynamic_nodes=kept, now=T0)
    again.settle_restored()
    again.tick(T0 + 3600)  # far past SlurmdTimeout
    assert (again.nodes["c1"].state, again.nodes["f1"].state) == ("IDLE+CLOUD+POWERED_DOWN", "FUTURE")
    assert not again.nodes["c1"].down and not again.nodes["f1"].down


def test_a_node_created_again_under_a_deleted_name_starts_clean() -> None:
    core = _core()
    _create(core, "NodeName=d1 CPUs=4 RealMemory=4000 State=CLOUD")
    core.update_nodes(["d1"], "DRAIN", "bad disk", ROOT, T0)
    assert "bad disk" in (core.take_node_admin() or "")
    core.delete_nodes(["d1"], T0)
    saved = core.take_node_admin()  # what the store keeps from now on
    assert saved is not None and "d1" not in saved
    _create(core, "NodeName=d1 CPUs=4 RealMemory=4000 State=CLOUD")
    kept = [dynnodes_conf.stored(n) for n in core.take_dynamic_changes()[0]]
    again = core_from_conf(parse_slurm_conf_text(CONF), dynamic_nodes=kept, now=T0)
    again.restore_node_admin(saved, T0)
    assert not again.nodes["d1"].drain and not again.nodes["d1"].reason


def test_a_refused_reconfigure_leaves_dynamic_nodes_in_their_partitions() -> None:
    from plurm.corescheduler.configure import reconfig_parts

    core = _core()
    service = Service(core)
    _create(core, "NodeName=d1 CPUs=4 RealMemory=4000")
    core.nodes["d1"].responding, core.nodes["d1"].boot_time = True, 1.0
    job_id = service.submit(protocol.SubmitJob(spec=JobSpec(partition="static", script="#!/bin/sh\n")), ROOT,
                            T0)["job_id"]
    core.schedule(T0)
    assert core.jobs[job_id].state == model.RUNNING
    conf = parse_slurm_conf_text(CONF.replace("PartitionName=static Nodes=n1\n", ""))
    parts = reconfig_parts(conf)
    dynnodes_conf.keep_on_reconfigure(core, parts, conf)
    with pytest.raises(RequestError):
        core.reconfigure(parts["nodes"], parts["partitions"], parts["settings"], parts["priority_policy"],
                         parts["preempt_policy"], T0)
    assert core.nodes["d1"].partitions == ["all"]
