"""slurm.conf to core: nodes, partitions, policies and settings, read once.

The controller and the simulator build their ``ClusterCore`` here, so both run the
policies a slurm.conf selects (PriorityType, PreemptType, SchedulerType and
SchedulerParameters, ...) in the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from plurm.corescheduler.accounts import AccountBook
from plurm.corescheduler import topology
from plurm.corescheduler.backfill import BackfillParams
from plurm.corescheduler.core import ClusterCore, CoreSettings
from plurm.wire.model import Job, Node, Partition, StepRecord


def nodes_from_conf(conf) -> dict[str, Node]:
    nodes: dict[str, Node] = {}
    for nc in conf.nodes.values():
        nodes[nc.name] = Node(
            name=nc.name, addr=nc.addr, hostname=nc.hostname, port=nc.port or conf.slurmd_port,
            cpus=nc.cpus, sockets=nc.sockets, cores_per_socket=nc.cores_per_socket,
            threads_per_core=nc.threads_per_core, boards=nc.boards, real_memory=nc.real_memory,
            tmp_disk=nc.tmp_disk, weight=nc.weight, features=list(nc.features), gres=list(nc.gres),
            cpu_spec_list=topology.spec_cpus(nc.raw, nc.sockets, nc.cores_per_socket, nc.threads_per_core),
        )
        state = (nc.state or "").upper()
        if state.startswith("DRAIN"):
            nodes[nc.name].drain = True
            nodes[nc.name].reason = nc.raw.get("Reason") or "configured DRAIN"
        elif state.startswith("DOWN"):
            nodes[nc.name].down = True
            nodes[nc.name].reason = nc.raw.get("Reason") or "configured DOWN"
    return nodes


def partitions_from_conf(conf) -> dict[str, Partition]:
    return {
        pc.name: Partition(
            name=pc.name, nodes=list(pc.nodes), default=pc.default, max_time=pc.max_time,
            default_time=pc.default_time, state=pc.state, max_nodes=pc.max_nodes, min_nodes=pc.min_nodes,
            priority_tier=pc.priority_tier, priority_job_factor=pc.priority_job_factor,
            oversubscribe=pc.oversubscribe, def_mem_per_cpu=pc.def_mem_per_cpu,
            max_mem_per_cpu=pc.max_mem_per_cpu, hidden=pc.hidden, allow_accounts=pc.allow_accounts,
            allow_groups=pc.allow_groups, allow_qos=pc.allow_qos,
            preempt_mode=pc.raw.get("PreemptMode"), grace_time=int(pc.raw.get("GraceTime") or 0),
        )
        for pc in conf.partitions.values()
    }


def priority_policy(conf: Any) -> Any:
    """The policy object of the priority plugin slurm.conf's PriorityType names."""
    from plurm.plugins.manager import get_plugin_manager
    from plurm.plugins.types import resolve

    kind = (conf.get("PriorityType") or "priority/basic").split("/", 1)[-1]
    return resolve(get_plugin_manager().get_priority_plugin(kind).factory)(conf)


def preempt_policy(conf: Any) -> Any:
    """The policy object of the preemption plugin slurm.conf's PreemptType names."""
    from plurm.plugins.manager import get_plugin_manager
    from plurm.plugins.types import resolve

    kind = (conf.get("PreemptType") or "preempt/none").split("/", 1)[-1]
    return resolve(get_plugin_manager().get_preempt_plugin(kind).factory)(conf)


def _seconds(value: str | None, default: float) -> float:
    """A slurm.conf duration given in minutes (or [D-]HH:MM:SS), as seconds."""
    if not value:
        return default
    from plurm.grammar.timefmt import parse_time_limit

    minutes = parse_time_limit(value)
    return minutes * 60.0 if minutes else default


def settings_from_conf(conf: Any, slurm_user: str = "root") -> CoreSettings:
    def_mem = conf.get("DefMemPerCPU")
    sched_params = conf.get("SchedulerParameters") or ""
    return CoreSettings(
        cluster_name=conf.cluster_name or "cluster",
        kill_wait=float(conf.get("KillWait") or 30),
        default_mem_per_cpu=int(def_mem) if def_mem else None,
        slurmd_timeout=float(conf.get("SlurmdTimeout") or 300),
        min_job_age=float(conf.get("MinJobAge") or 300),
        max_array_size=int(conf.get("MaxArraySize") or 1001),
        first_job_id=int(conf.get("FirstJobId") or 1),
        priority_calc_period=_seconds(conf.get("PriorityCalcPeriod"), 300.0),
        preempt_mode=(conf.get("PreemptMode") or "OFF"),
        preempt_exempt_s=_seconds(conf.get("PreemptExemptTime"), 0.0),
        preempt_send_user_signal="send_user_signal" in (conf.get("PreemptParameters") or "").lower(),
        kill_invalid_depend="kill_invalid_depend" in sched_params,
        enforce_associations="assoc" in (conf.get("AccountingStorageEnforce") or "").lower(),
        scheduler_type=(conf.get("SchedulerType") or "sched/backfill").lower(),
        backfill=BackfillParams.from_scheduler_parameters(sched_params),
        slurm_user=slurm_user,
        private_data=private_data(conf.get("PrivateData")),
        max_script_size=max_script_size(sched_params),
        cred_expire=cred_expire(conf.get("AuthInfo")),
        job_requeue=(conf.get("JobRequeue") or "1").strip() != "0",
        return_to_service=_int_in(conf.get("ReturnToService"), (0, 1, 2), 0),
        resume_timeout=float(conf.get("ResumeTimeout") or 60),
        reboot_program=(conf.get("RebootProgram") or "").strip(),
        mpi_params=(conf.get("MpiParams") or "").strip(),
    )


def _int_in(value: str | None, allowed: tuple[int, ...], default: int) -> int:
    try:
        number = int(value or default)
    except ValueError:
        return default
    return number if number in allowed else default


def cred_expire(auth_info: str | None) -> float:
    """AuthInfo=cred_expire=N (seconds, at least 5; 120 when not given or invalid, as Slurm):
    how long a requeued job waits before it may start again (N + 1 seconds)."""
    for item in (auth_info or "").split(","):
        key, _, value = item.strip().partition("=")
        if key.lower() == "cred_expire":
            try:
                seconds = int(value)
            except ValueError:
                return 120.0
            return float(seconds) if seconds >= 5 else 120.0
    return 120.0


def private_data(value: str | None) -> frozenset[str]:
    """PrivateData=jobs,usage,...: the kinds of records only their owners and operators see
    (``all`` is every kind)."""
    kinds = {part.strip().lower() for part in (value or "").split(",") if part.strip()}
    if "all" in kinds:
        kinds |= {"accounts", "events", "jobs", "nodes", "partitions", "reservations", "usage", "users"}
    return frozenset(kinds)


def sched_param_int(sched_params: str, name: str, default: int) -> int:
    """One SchedulerParameters=...,NAME=N,... number (``default`` when absent or not a number)."""
    for item in sched_params.split(","):
        key, _, value = item.strip().partition("=")
        if key.lower() == name and value.isdigit():
            return int(value)
    return default


def max_script_size(sched_params: str) -> int:
    """SchedulerParameters=max_script_size=N (bytes; 4 MiB when not given)."""
    from plurm.corescheduler.authz import DEFAULT_MAX_SCRIPT_SIZE

    return sched_param_int(sched_params, "max_script_size", DEFAULT_MAX_SCRIPT_SIZE)


def decay_half_life(conf: Any) -> float:
    """PriorityDecayHalfLife, in seconds (the account book decays usage by it)."""
    return _seconds(conf.get("PriorityDecayHalfLife"), 7 * 86400.0)


def core_from_conf(conf: Any, *, accounts: AccountBook | None = None, jobs: Iterable[Job] = (),
                   open_steps: Iterable[StepRecord] = (), next_job_id: int | None = None, now: float = 0.0,
                   slurm_user: str = "root", dynamic_nodes: Iterable[Node] = ()) -> ClusterCore:
    """The core for a loaded slurm.conf (plurm.grammar.slurmconf): empty, or with the
    jobs, open steps, associations and dynamic nodes a controller restores from its store."""
    nodes, partitions = nodes_from_conf(conf), partitions_from_conf(conf)
    if dynamic_nodes:  # (before the jobs: theirs hold them; dynnodes_conf.py)
        from plurm.corescheduler.dynnodes_conf import merge

        merge(conf, nodes, partitions, dynamic_nodes)
    core = ClusterCore(nodes, partitions, settings_from_conf(conf, slurm_user),
                       priority_policy=priority_policy(conf), preempt_policy=preempt_policy(conf),
                       accounts=accounts or AccountBook(half_life_s=decay_half_life(conf)), jobs=jobs,
                       open_steps=open_steps, next_job_id=next_job_id, now=now)
    core.set_license_totals(license_totals(conf))  # (core_licenses.py)
    return core


def license_totals(conf: Any) -> dict[str, int]:
    """Licenses=fluent:4,matlab:2 (a name alone is one); slurmctld refuses to start on a bad one."""
    from plurm.corescheduler.licenses import LicenseSpecError, parse_configured

    try:
        return parse_configured(conf.get("Licenses"))
    except LicenseSpecError as exc:
        raise ValueError(f"Invalid configured licenses: {exc}") from None


def reconfig_parts(conf: Any, slurm_user: str = "root") -> dict[str, Any]:
    """What ``ClusterCore.reconfigure`` takes from a re-read slurm.conf (scontrol reconfigure)."""
    return {"nodes": nodes_from_conf(conf), "partitions": partitions_from_conf(conf),
            "settings": settings_from_conf(conf, slurm_user), "priority_policy": priority_policy(conf),
            "preempt_policy": preempt_policy(conf), "licenses": license_totals(conf)}
