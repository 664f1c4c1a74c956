"""The controller's side of srun's step options through Service(core), no I/O (issue 14,
srun-client): --exact steps share a job's CPUs and a third waits (StepBusy), -r starts at node
N, the interactive step is J.interactive, --resv-ports deals out MpiParams=ports, and -Z is
root's and SlurmUser's only."""

from __future__ import annotations

import pytest

from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.corescheduler.errors import RequestError
from plurm.corescheduler.identity import Identity
from plurm.corescheduler.service import Service
from plurm.wire import protocol
from plurm.wire.model import JobSpec, Node, Partition

ROOT = Identity(0, 0, "root", frozenset({"root"}), operator=True)
USER = Identity(1001, 1001, "plurmta", frozenset({"plurmta"}))
T0 = 1_000_000.0


def _running_job(ports: str = "", **spec) -> tuple[ClusterCore, Service, int]:
    nodes = {f"n{i}": Node(name=f"n{i}", cpus=2, real_memory=4000, responding=True, boot_time=1.0) for i in (1, 2, 3)}
    partitions = {"debug": Partition(name="debug", nodes=list(nodes), default=True)}
    settings = CoreSettings(cluster_name="c", kill_wait=5.0, slurmd_timeout=1e9)
    settings.mpi_params = ports  # MpiParams (corescheduler/configure.py reads it into CoreSettings)
    core = ClusterCore(nodes, partitions, settings, now=T0)
    service = Service(core)
    spec.setdefault("script", "#!/bin/sh\nsleep 600\n")
    job_id = service.submit(protocol.SubmitJob(spec=JobSpec(mem_per_node=100, **spec)), USER, T0)["job_id"]
    core.schedule(T0)
    service.take_messages()
    return core, service, job_id


def _step(service: Service, who: Identity = USER, **fields) -> dict:
    return service.step_create(protocol.StepCreate(**fields), who, T0 + 1)


def test_exact_steps_share_and_wait_whole_waits_overlap_never() -> None:
    core, service, job = _running_job(nodes_min=1, nodes_max=1, ntasks=2)
    first = _step(service, job_id=job, ntasks=1, exact=True)
    second = _step(service, job_id=job, ntasks=1, exact=True)
    assert (first["tasks"], second["tasks"]) == ([1], [1])
    for fields in ({"exact": True}, {"whole": True}, {}):
        if fields:
            with pytest.raises(RequestError) as busy:
                _step(service, job_id=job, ntasks=1, **fields)
            assert (busy.value.code, str(busy.value)) == ("StepBusy", "Requested nodes are busy")
        else:  # (plurm's plain step does not wait: as --overlap would)
            service.step_complete(protocol.StepComplete(job_id=job, step_id=_step(service, job_id=job,
                                                                                 ntasks=1)["step_id"]), USER, T0)
    assert _step(service, job_id=job, ntasks=2, exact=True, overlap=True)["tasks"] == [2]
    with pytest.raises(RequestError, match="More processors requested than permitted"):
        _step(service, job_id=job, ntasks=3, exact=True)  # never fits the job: refused, not busy
    service.step_complete(protocol.StepComplete(job_id=job, step_id=first["step_id"]), USER, T0)
    assert _step(service, job_id=job, ntasks=1, exact=True)["tasks"] == [1]  # its CPU is free again


def test_relative_and_interactive() -> None:
    core, service, job = _running_job(nodes_min=3, nodes_max=3)
    assert _step(service, job_id=job, relative=1, nodes_min=1, ntasks=1)["nodes"] == [core.jobs[job].nodes[1]]
    with pytest.raises(RequestError, match="Requested node configuration is not available"):
        _step(service, job_id=job, relative=3, nodes_min=1)
    inter = _step(service, job_id=job, interactive=True)
    assert (inter["step_id"], inter["nodes"], (job, "interactive") in core.steps) == \
        (0xFFFFFFFA, core.jobs[job].nodes[:1], True)
    service.step_complete(protocol.StepComplete(job_id=job, step_id=inter["step_id"]), USER, T0)
    assert (job, "interactive") not in core.steps


def test_reserved_ports() -> None:
    core, service, job = _running_job("ports=100-104", nodes_min=1, nodes_max=1)
    a = _step(service, job_id=job, nodes_min=1, ntasks=1, resv_ports=3, overlap=True)
    assert a["resv_ports"] == "100-102"
    with pytest.raises(RequestError, match="Required ports are in use"):
        _step(service, job_id=job, nodes_min=1, ntasks=1, resv_ports=3, overlap=True)
    with pytest.raises(RequestError, match="Requires more ports than can be reserved"):
        _step(service, job_id=job, nodes_min=1, ntasks=1, resv_ports=6, overlap=True)
    b = _step(service, job_id=job, nodes_min=1, ntasks=1, overlap=True)  # default: tasks on a node + 1
    assert b["resv_ports"] == "103-104"


def test_no_allocate_is_the_operators() -> None:
    core, service, _ = _running_job()
    with pytest.raises(RequestError, match="Access/permission denied"):
        _step(service, USER, job_id=0, no_allocate=True, nodelist=["n1"])
    step = _step(service, ROOT, job_id=0, no_allocate=True, nodelist=["n2", "n3"], ntasks=3)
    assert (step["nodes"], step["tasks"], step["job_id"] in core.jobs) == (["n2", "n3"], [2, 1], False)
    with pytest.raises(RequestError, match="Invalid node name"):
        _step(service, ROOT, job_id=0, no_allocate=True, nodelist=["n9"])
