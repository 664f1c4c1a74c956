"""Typed schemas of every plurm message body (see docs/protocol.md).

The envelope (tag, header, signature) is envelope.py's; this module gives each
message type one Struct and one strict decoder.  A body that does not match
its schema is rejected with a typed error reply; a type that is not in
MESSAGE_TYPES gets an "unknown message type" error.  New fields always get
defaults so that older peers keep working within one protocol version.
"""

from __future__ import annotations

from typing import Any

import msgspec

from plurm.wire.model import JobSpec


class Msg(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """Base of every message body."""


# ----------------------------------------------------------------- commands -> controller

class SubmitJob(Msg):
    spec: JobSpec
    test_only: bool = False
    # A heterogeneous job: its components after the first (``spec``), in order (core_hetjob.py).
    components: list[JobSpec] = []
    key: str | None = None  # idempotency key: a retry returns the job it made (corescheduler/idempotency.py)


class SubmitJobs(Msg):
    """Many submissions in one request, one commit (plurm.api.submit_many)."""
    jobs: list[SubmitJob] = []


class JobInfoRequest(Msg):
    job_ids: list[str] = []  # "12", "12_3", "12_[1-3]"
    states: list[str] = []  # empty: the active ones (squeue's default)
    users: list[str] = []
    partitions: list[str] = []
    names: list[str] = []
    all_states: bool = False  # squeue -t all / scontrol show job (recently finished jobs too)
    expand_arrays: bool = False


class NodeInfoRequest(Msg):
    nodes: list[str] = []
    partitions: list[str] = []
    future: bool = False  # scontrol -F: FUTURE nodes too (hidden otherwise, as Slurm's SHOW_FUTURE)


class CancelJob(Msg):
    job_ids: list[str] = []
    user: str | None = None
    names: list[str] = []
    states: list[str] = []
    partitions: list[str] = []
    signal: int | None = None  # None: cancel; else deliver this signal
    batch_only: bool = False
    full: bool = False


class UpdateJob(Msg):
    job_ids: list[str]
    fields: dict[str, str] = {}  # scontrol update Key=Value, plus hold/release as HOLD=user|admin|release


class RequeueJob(Msg):
    """scontrol requeue / requeuehold: running, suspended or finished batch jobs back to PENDING."""

    job_ids: list[str]  # "12", "12_3", "12_1-3" (one scontrol token each)
    hold: bool = False  # requeuehold: held (JobHeldUser) once back in the queue
    incomplete: bool = False  # the Incomplete option: only jobs that have not finished


class SuspendJob(Msg):
    """scontrol suspend / resume (Operators and Administrators only)."""

    job_ids: list[str]
    resume: bool = False


class StepInfoRequest(Msg):
    """squeue -s, scontrol show step(s), sstat: the running steps (of these jobs; empty: all)."""

    job_ids: list[str] = []  # "12", "12_3": the steps of these jobs


class UpdateNode(Msg):
    nodes: list[str]
    state: str | None = None  # DRAIN, RESUME, DOWN, IDLE, UNDRAIN, CANCEL_REBOOT
    reason: str | None = None
    comment: str | None = None  # Comment= ("" clears it)


class RebootNodes(Msg):
    """scontrol reboot: reboot ``nodes`` (empty: ALL) once idle; ``asap`` drains them first."""

    nodes: list[str] = []
    asap: bool = False
    next_state: str = ""  # "" (back in service), RESUME, DOWN, UNDRAIN
    reason: str | None = None


class ReservationRequest(Msg):
    """scontrol create|update|delete|show reservation (issue 14: corescheduler/core_resv.py):
    ``fields`` are scontrol's Key=Value words as given (keys in any case)."""

    action: str  # create | update | delete | show
    name: str | None = None  # delete, show (None: all)
    fields: dict[str, str] = {}


class Reconfigure(Msg):
    """scontrol reconfigure: the controller and every plurmd read slurm.conf again."""


class CreateNode(Msg):
    """scontrol create NodeName=..., POST .../new/node/: one node line (slurm.conf's syntax)
    adds dynamic nodes (corescheduler/core_dynnodes.py)."""

    node_conf: str


class DeleteNode(Msg):
    """scontrol delete NodeName=..., DELETE .../node/{name}: removes dynamic nodes."""

    nodes: list[str]


class StepCreate(Msg):
    job_id: int
    name: str = ""
    ntasks: int | None = None
    nodes_min: int | None = None
    cpus_per_task: int | None = None
    nodelist: list[str] = []
    overcommit: bool = False  # srun -O: more tasks than the allocation's CPUs (issue 14, timeprio)
    # srun's own step options (issue 14, srun-client; corescheduler/core_nodes.py step_create)
    relative: int | None = None  # -r: the step starts at this node of the job
    exact: bool = False  # --exact: only the tasks' CPUs, steps share nodes
    whole: bool = False  # --whole: whole nodes of the job, waiting for them
    overlap: bool = False  # --overlap: holds nothing, waits for nothing
    resv_ports: int | None = None  # --resv-ports=N (None: MpiParams=ports' default count)
    interactive: bool = False  # --interactive: salloc's interactive step
    no_allocate: bool = False  # -Z: an operator's step on ``nodelist``, no job (job_id unused)


class StepComplete(Msg):
    job_id: int
    step_id: int
    exit_code: int = 0
    exit_signal: int = 0
    # What plurmstepd reported in its task_exit messages, gathered by srun over the step's
    # nodes: kernel OOM kills summed; usage as STEP_USAGE_KEYS, the maxima with the node and
    # the task that had them (sacct MaxRSSNode/MaxRSSTask), the averages over all tasks.
    oom_kills: int = 0
    usage: dict[str, Any] = {}


class JobComplete(Msg):
    """srun/salloc: the allocation they hold has ended with this status."""

    job_id: int
    exit_code: int = 0
    exit_signal: int = 0
    oom_kills: int = 0  # srun: its step was OOM-killed (the job ends OUT_OF_MEMORY)


class AcctQuery(Msg):
    job_ids: list[str] = []
    users: list[str] = []  # empty: every user (sacct -a) or the caller, decided by the command
    states: list[str] = []
    start_time: float | None = None
    end_time: float | None = None


class ConfigRequest(Msg):
    pass


class PriorityFactorsRequest(Msg):
    """sprio: eligible pending jobs' priorities and their factors (reply: PriorityFactorsReply).

    Empty lists select every job; ``users`` holds names or uids (sprio -u)."""

    job_ids: list[int] = []  # a job, or every record of the array it names
    users: list[str] = []


class PriorityFactorsRow(msgspec.Struct, kw_only=True):
    """One job (one row of sprio): its priority and the factors it is made of."""

    job_id: int
    partition: str
    user: str
    user_id: int = 0
    priority: int
    factors: dict[str, float] = {}  # normalized, 0..1: age assoc fairshare jobsize partition qos
    site: int = 0  # the site factor, added as is
    nice: int = 0  # subtracted


class PriorityFactorsReply(msgspec.Struct, kw_only=True):
    """What plurmctld answers to priority_factors; ``type`` is slurm.conf's PriorityType."""

    type: str
    cluster: str = ""  # ClusterName (sprio's %c)
    weights: dict[str, int] = {}  # PriorityWeightX by factor name
    jobs: list[PriorityFactorsRow] = []


class AcctMgr(Msg):
    """sacctmgr: add, modify, delete or show accounts, users (associations) and QOS."""

    action: str  # add | modify | delete | show
    entity: str  # account | user | qos | assoc
    names: list[str] = []
    fields: dict[str, str] = {}  # lower-case keys: parent, description, organization, fairshare, account, ...
    where: dict[str, str] = {}


class ShareInfoRequest(Msg):
    """sshare: the association tree with shares, usage and fair share factors."""


class Ping(Msg):
    pass


class StatsRequest(Msg):
    """sdiag, REST diag, /metrics: the controller's counters (corescheduler/stats_shell.py)."""

    reset: bool = False  # sdiag -r (operators only)
    metrics: bool = False  # a /metrics scrape: Slurm 25.11's MetricsAuthUsers/PrivateData rules
    counters_only: bool = False  # without the job/node aggregates


class AuthTokenRequest(Msg):
    """scontrol token: a JWT for the sender (root and SlurmUser: for ``username``)."""

    lifespan: int | None = None  # seconds; None: the controller's default
    username: str | None = None


class Takeover(Msg):
    """scontrol takeover, to a backup controller: ask the active one for control."""


# ----------------------------------------------------------------- plurmd <-> controller

class NodeRegister(Msg):
    node: str
    cpus: int
    real_memory: int
    boot_time: float
    slurmd_start_time: float
    running_jobs: list[int] = []
    # job id -> the run (the job's restart count) this node runs of it: a copy of an older
    # run than the controller's (the job was requeued while the node was away) is killed.
    runs: dict[int, int] = {}
    os: str = ""
    arch: str = ""
    version: str = ""
    cpu_load: float | None = None
    free_mem: int | None = None
    devices: list[dict[str, Any]] = []  # detected accelerators (plurm.accel.model.Device)
    gres_problems: list[str] = []  # why detection falls short of the configuration: drain
    # Per gpu unit: the node CPU indices local to it (gres.conf Cores=, else the device's NUMA
    # node), None where unknown; the controller places --gres-flags=enforce-binding jobs by it.
    gpu_cpus: list[list[int] | None] = []
    # plurmd -Z: the node line of a node that slurm.conf does not have (NodeName=... CPUs=...
    # NodeAddr=... Port=...): the controller creates it (corescheduler/dynnodes_shell.py).
    dynamic_conf: str = ""


class GpuReading(Msg):
    """One accelerator's last usage reading on a node (nodeagent/gpu_report.py), for /metrics."""

    gpu: int  # the node's gpu unit index (its GRES index)
    uuid: str = ""
    type: str = ""  # the unit's GRES type (gpu:TYPE), else the model's
    model: str = ""
    util: float | None = None  # percent busy, as the vendor library says; None: it cannot tell
    mem_used_mb: int | None = None
    age_s: float = 0.0  # how old the reading was when the ping left (no clocks compared)


class NodePing(Msg):
    node: str
    running_jobs: list[int] = []
    runs: dict[int, int] = {}  # as NodeRegister.runs
    cpu_load: float | None = None
    free_mem: int | None = None
    unhealthy: dict[str, str] = {}  # accelerator uuid -> reason (XID, ECC, temperature, vanished)
    # A new reading of the node's accelerators (once per usage interval); None: no new one since
    # the last ping, []: none could be read (the controller drops the node's last readings).
    gpu_usage: list[GpuReading] | None = None


class JobEnded(Msg):
    """plurmd: the batch script of a job has ended (resent until acknowledged)."""

    node: str
    job_id: int
    exit_code: int = 0
    exit_signal: int = 0
    end_time: float = 0.0
    # The run that ended (the job's restart count when it was launched; -1: not said).  The
    # end of an older run than the job's current one is acknowledged and otherwise ignored.
    restarts: int = -1
    timed_out: bool = False
    launch_failed: bool = False  # it never started: its files, its user or the Prolog failed
    requeue_held: bool = False  # the node's Prolog failed: back to the queue, held (as Slurm does)
    tres_usage_max: dict[str, str] = {}  # accelerator usage sampled while it ran (sacct TRESUsageIn*)
    tres_usage_ave: dict[str, str] = {}
    oom_kills: int = 0  # kernel OOM kills in the batch step's cgroup: the job ends OUT_OF_MEMORY
    usage: dict[str, Any] = {}  # the batch step on this node, keys as STEP_USAGE_KEYS (node: this one)


class JobFrozen(Msg, kw_only=True):
    """plurmd: its freeze policy froze this job (the run ``restarts``); the controller marks it
    suspended with the cause as its reason until scontrol resume or scancel."""

    node: str
    job_id: int
    restarts: int = -1
    cause: str


# The keys of JobEnded.usage and StepComplete.usage (a step's usage, sacct's MaxRSS and the
# rest): sizes in KiB, times in seconds (floats allowed), *_task a global task rank, *_node a
# node name (StepComplete only: JobEnded names its node).  Unknown keys are kept and ignored.
STEP_USAGE_KEYS = ("max_rss_kb", "max_rss_node", "max_rss_task", "ave_rss_kb",
                   "max_vmsize_kb", "max_vmsize_node", "max_vmsize_task", "ave_vmsize_kb",
                   "user_cpu_s", "system_cpu_s")


class LaunchJob(Msg):
    """Controller -> plurmd: run a batch job's script."""

    job_id: int
    job: dict[str, Any]  # the Job record as plain data (names, allocation, limits)
    script: str
    args: list[str] = []
    environment: dict[str, str] = {}
    work_dir: str = "/"
    stdout: str = ""
    stderr: str = ""
    stdin: str = "/dev/null"
    open_mode: str = "truncate"
    uid: int = 0
    gid: int = 0


class TerminateJob(Msg):
    """Controller -> plurmd: end a job (cancel, time limit): SIGTERM, then SIGKILL after kill_wait."""

    job_id: int
    kill_wait: float = 30.0
    signal: int = 15
    batch_host: str = ""  # the node that must report the batch script's end
    restarts: int = -1  # only this run of the job (its restart count); -1: whatever runs of it


class SignalJob(Msg):
    job_id: int
    signal: int
    scope: str = "steps"  # "steps" (scancel -s), "batch" (-b), "all" (-f)


class RebootNode(Msg):
    """Controller -> plurmd: reboot (RebootProgram; without one plurmd restarts itself)."""

    reason: str = ""


class ReconfigureNode(Msg):
    """Controller -> plurmd: read slurm.conf again."""


class JobEndedAck(Msg):
    job_id: int
    restarts: int = -1  # the run whose end report this acknowledges (JobEnded.restarts); -1: every run


class PleaseRegister(Msg):
    pass


# ----------------------------------------------------------------- srun <-> plurmd

class LaunchTasks(Msg):
    job_id: int
    step_id: int
    node_id: int
    task_ids: list[int]  # global ranks placed on this node
    ntasks: int
    nodelist: list[str]
    tasks_per_node: list[int]
    argv: list[str]
    environment: dict[str, str] = {}
    work_dir: str = "/"
    io_host: str = "127.0.0.1"
    io_port: int = 0
    job_gres: dict[str, list[int]] = {}  # the job's GRES units on this node (the node binds its devices)
    uid: int = 0  # what srun claims; plurmd runs the tasks as the step credential's uid and gid
    gid: int = 0
    credential: dict[str, str] = {}  # the controller's step credential (wire/stepcred.py)
    io_key: str = ""  # srun's key for this step's output and exit messages (plurmstepd signs with it)
    # srun's I/O plan (tools/srun_io.py IoPlan.node_io): stdin/stdout/stderr as ("pipe"|"null"|"file"|
    # "same", detail), "pty", "winsize", "names" for the file patterns; {}: pipes for all, as before.
    io: dict[str, Any] = {}
    mpi: str = "none"  # srun's MPI plugin type (tools/srun_mpi.py): "pmi2" serves PMI on PMI_FD
    pmi_mapping: str = ""  # --mpi=pmi2: PMI_process_mapping of the step's layout (nodeagent/pmi_wire.py)
    # srun's --cpu-bind, --mem-bind, --gpu-bind, --distribution and -c (issue 14, binding): plurmd
    # places each task (nodeagent/stepbind.py); {}: no binding asked for, TaskPluginParam decides.
    binding: dict[str, Any] = {}
    # srun's node-side launch options (tools/srun_launch.py): --task-prolog, --task-epilog,
    # --slurmd-debug, --bcast and the like, for plurmd to act on; {}: none given.
    launch: dict[str, Any] = {}


class StepStat(Msg):
    """sstat, scontrol listpids -> plurmd: what the steps' processes on this node use now."""

    job_id: int = 0  # 0: every step on this node (scontrol listpids without a job)
    step_id: str = ""  # "": every step of the job; "batch", "0", ...


class SignalTasks(Msg):
    job_id: int
    step_id: int
    signal: int


class AttachStep(Msg):
    """sattach: plurmstepd sends this step's output also to this listener, signed with its
    key, as it does to srun's."""
    job_id: int
    step_id: int
    io_host: str
    io_port: int
    io_key: str


# ----------------------------------------------------------------- plurmstepd <-> srun: PMI (--mpi=pmi2)
# On the step's I/O channel (signed with the step's key, beside task_output): the fence that
# joins every node's KVS puts (nodeagent/pmi2.py, tools/srun_pmi.py) and MPI_Abort.

class PmiFence(Msg):
    """plurmstepd -> srun: every task of node ``node_id`` is in fence ``seq``; their puts."""
    node_id: int
    seq: int
    kvs: dict[str, str] = {}


class PmiFenceDone(Msg):
    """srun -> every plurmstepd: all nodes are in fence ``seq``; every node's puts."""
    seq: int
    kvs: dict[str, str] = {}


class PmiAbort(Msg):
    """plurmstepd -> srun: a task called PMI abort; srun ends the step on every node."""
    node_id: int
    rank: int
    exit_code: int = 1
    message: str = ""


class PmiKill(Msg):
    """srun -> every plurmstepd: the step was aborted; kill its tasks (they end Killed)."""
    clock: str = ""  # the wall-clock time of the abort, for slurmstepd's CANCELLED line


PMI_TYPES: dict[str, type[Msg]] = {"pmi_fence": PmiFence, "pmi_fence_done": PmiFenceDone, "pmi_abort": PmiAbort,
                                   "pmi_kill": PmiKill}


def pmi_message(kind: str, body: dict[str, Any]) -> Msg:
    """A PMI message of the step's channel, checked against its schema (SchemaError if not)."""
    cls = PMI_TYPES.get(kind)
    if cls is None:
        raise SchemaError(f"unknown message type {kind!r}")
    try:
        return msgspec.convert(body, cls)
    except msgspec.ValidationError as exc:
        raise SchemaError(f"malformed {kind} message: {exc}") from None


class JournalSubscribe(Msg):
    """The event stream (issue 16, docs/events.md; corescheduler/journal_shell.py): subscribe with
    filters (empty: any) and the backlog after ``since`` (None: all the journal holds; -1: none);
    or, on the same connection, ``renew`` with ``ack`` (live events read), or ``cancel``."""

    job_ids: list[int] = []
    users: list[str] = []
    partitions: list[str] = []
    events: list[str] = []
    since: int | None = None
    window: int = 0  # events sent and not acknowledged before the controller drops us (0: its default)
    renew: bool = False
    ack: int = 0
    cancel: bool = False


# Every request type a daemon accepts, by wire name.
MESSAGE_TYPES: dict[str, type[Msg]] = {
    "submit_job": SubmitJob,
    "submit_jobs": SubmitJobs,
    "journal_subscribe": JournalSubscribe,  # the event stream (issue 16)
    "job_info": JobInfoRequest,
    "node_info": NodeInfoRequest,
    "cancel_job": CancelJob,
    "update_job": UpdateJob,
    "requeue_job": RequeueJob,
    "suspend_job": SuspendJob,
    "step_info": StepInfoRequest,
    "update_node": UpdateNode,
    "reboot_nodes": RebootNodes,
    "reservation": ReservationRequest,
    "reconfigure": Reconfigure,
    "create_node": CreateNode,
    "delete_node": DeleteNode,
    "step_create": StepCreate,
    "step_complete": StepComplete,
    "job_complete": JobComplete,
    "acct_query": AcctQuery,
    "config": ConfigRequest,
    "priority_factors": PriorityFactorsRequest,
    "acctmgr": AcctMgr,
    "share_info": ShareInfoRequest,
    "ping": Ping,
    "auth_token": AuthTokenRequest,
    "stats": StatsRequest,
    "takeover": Takeover,
    "node_register": NodeRegister,
    "node_ping": NodePing,
    "job_ended": JobEnded,
    "job_frozen": JobFrozen,
    "launch_job": LaunchJob,
    "terminate_job": TerminateJob,
    "signal_job": SignalJob,
    "job_ended_ack": JobEndedAck,
    "please_register": PleaseRegister,
    "reboot_node": RebootNode,
    "reconfigure_node": ReconfigureNode,
    "launch_tasks": LaunchTasks,
    "signal_tasks": SignalTasks,
    "attach_step": AttachStep,
    "step_stat": StepStat,
}

_DECODERS = {name: msgspec.json.Decoder(cls) for name, cls in MESSAGE_TYPES.items()}
_ENCODER = msgspec.json.Encoder()


class SchemaError(ValueError):
    pass


def decode_body(msg_type: str, body: bytes) -> Msg:
    decoder = _DECODERS.get(msg_type)
    if decoder is None:
        raise SchemaError(f"unknown message type {msg_type!r}")
    try:
        return decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise SchemaError(f"malformed {msg_type} message: {exc}") from None
    except RecursionError:  # msgspec's own depth limit
        raise SchemaError(f"malformed {msg_type} message: nested too deeply") from None


def encode(obj: Any) -> bytes:
    return _ENCODER.encode(obj)


def to_builtins(obj: Any) -> Any:
    return msgspec.to_builtins(obj)
