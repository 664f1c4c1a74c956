"""The controller's records: jobs, nodes, partitions, accounting rows.

They are msgspec Structs so that one definition serves three purposes: the
controller's in-memory state, the rows of the state store (JSON blobs) and
what the commands receive over the wire (squeue, scontrol and sacct read
the same field names as plain dicts, without importing msgspec).

New fields always get defaults, so that a store written by an older plurm
still loads (msgspec fills the defaults of missing fields).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

# Job states as Slurm names them (squeue -l / scontrol show job / sacct).
PENDING = "PENDING"
RUNNING = "RUNNING"
SUSPENDED = "SUSPENDED"
COMPLETED = "COMPLETED"
CANCELLED = "CANCELLED"
FAILED = "FAILED"
TIMEOUT = "TIMEOUT"
NODE_FAIL = "NODE_FAIL"
PREEMPTED = "PREEMPTED"
OUT_OF_MEMORY = "OUT_OF_MEMORY"
BOOT_FAIL = "BOOT_FAIL"
DEADLINE = "DEADLINE"

FINISHED_STATES = frozenset(
    {COMPLETED, CANCELLED, FAILED, TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, BOOT_FAIL, DEADLINE}
)
ACTIVE_STATES = frozenset({PENDING, RUNNING, SUSPENDED})

# squeue's compact state codes (%t).
STATE_CODES = {
    PENDING: "PD",
    RUNNING: "R",
    SUSPENDED: "S",
    COMPLETED: "CD",
    CANCELLED: "CA",
    FAILED: "F",
    TIMEOUT: "TO",
    NODE_FAIL: "NF",
    PREEMPTED: "PR",
    OUT_OF_MEMORY: "OOM",
    BOOT_FAIL: "BF",
    DEADLINE: "DL",
    "COMPLETING": "CG",
}


class WarnSignal(msgspec.Struct, kw_only=True, omit_defaults=True):
    """--signal=[{R|B}:]SIG[@secs]: send ``number`` ``seconds`` before the time limit, to the
    job's steps, or to the batch shell only (``batch``, B:); ``reservation`` (R:) is kept
    for display: plurm has no reservations (core_signals.py)."""

    # As sbatch takes them: a signal number 1..65535, a warning time 0..65535 s (a hostile
    # value is a schema error at the controller; a number with no signal fails kill(2) on the node, logged).
    number: Annotated[int, msgspec.Meta(ge=1, le=0xFFFF)]
    seconds: Annotated[int, msgspec.Meta(ge=0, le=0xFFFF)] = 60
    batch: bool = False
    reservation: bool = False


class JobSpec(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a submission asks for: sbatch/srun/salloc options, resolved.

    Sizes are in Slurm's units: memory in MB, time limits in minutes
    (None = not given: the partition's DefaultTime/MaxTime applies).
    """

    name: str = "sbatch"
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    nodes_min: int = 1
    nodes_max: int | None = None
    ntasks: int | None = None
    ntasks_per_node: int | None = None
    cpus_per_task: int | None = None  # None: not given (1 CPU per task)
    mem_per_node: int | None = None  # --mem
    mem_per_cpu: int | None = None  # --mem-per-cpu
    time_limit: int | None = None  # minutes; None = partition default
    time_unlimited: bool = False  # --time=UNLIMITED / INFINITE / 0
    exclusive: bool = False
    oversubscribe: bool = False  # --oversubscribe / -s: share CPUs where the partition allows it
    req_nodes: list[str] = []  # -w, expanded
    exc_nodes: list[str] = []  # -x, expanded
    hold: bool = False
    nice: int = 0
    begin_time: float | None = None
    dependency: str | None = None
    requeue: bool = True
    requeue_given: bool = False  # --requeue or --no-requeue given; else slurm.conf's JobRequeue decides
    work_dir: str = "/"
    command: str | None = None  # the script path, or None (--wrap, stdin)
    script: str | None = None  # batch script text; None for srun/salloc allocations
    script_args: list[str] = []
    stdout: str | None = None  # pattern (%j, %x, ...); None = slurm-%j.out
    stderr: str | None = None
    stdin: str | None = None
    open_mode: str | None = None  # "append" | "truncate"
    environment: dict[str, str] = {}
    array_spec: str | None = None  # the --array value as given
    array_indices: list[int] = []
    array_max_running: int | None = None
    gres: str | None = None  # raw --gres / --gpus form, kept for display
    # Structured GRES request (common/gres.py): {"name", "type", "count", "per": node|task|job}
    gres_req: list[dict[str, str | int | None]] = []
    constraint: str | None = None  # --constraint over node Features
    contiguous: bool = False
    cpus_per_gpu: int | None = None
    mem_per_gpu: int | None = None  # MB
    comment: str | None = None
    signal: WarnSignal | None = None  # --signal
    batch: bool = True  # False: an allocation for srun/salloc
    submit_host: str = "localhost"
    user_id: int = 0
    group_id: int = 0
    user: str = "root"
    group: str = "root"
    # area: reservations (issue 14: its fields below this line)
    reservation: str | None = None  # --reservation: runs only inside it (core_resv.py)
    # area: licenses (issue 14: its fields below this line)
    licenses: str | None = None  # -L as written ("name[:count],..."), checked at submission (core_licenses.py)
    # area: mail (issue 14: its fields below this line)
    mail_type: list[str] = []  # --mail-type's events (BEGIN, END, ..., ARRAY_TASKS); [] = NONE (core_mail.py)
    mail_user: str | None = None  # --mail-user; None: the submitting user
    # area: topology (issue 14: its fields below this line)
    # Where tasks fit (corescheduler/topology.py); None/0: not given.  -B S[:C[:T]] sets the first three.
    sockets_per_node: Annotated[int, msgspec.Meta(ge=1, le=0xFFFF)] | None = None  # --sockets-per-node
    cores_per_socket: Annotated[int, msgspec.Meta(ge=1, le=0xFFFF)] | None = None  # --cores-per-socket
    threads_per_core: Annotated[int, msgspec.Meta(ge=1, le=0xFFFF)] | None = None  # --threads-per-core
    ntasks_per_core: Annotated[int, msgspec.Meta(ge=1, le=0xFFFF)] | None = None
    ntasks_per_socket: Annotated[int, msgspec.Meta(ge=1, le=0xFFFF)] | None = None
    ntasks_per_gpu: Annotated[int, msgspec.Meta(ge=1, le=0xFFFF)] | None = None  # ntasks from the GPUs (sbatch)
    hint: list[str] = []  # --hint words (compute_bound, memory_bound, multithread, nomultithread)
    min_cpus: Annotated[int, msgspec.Meta(ge=1, le=0xFFFFFF)] | None = None  # --mincpus, per node
    # area: binding (issue 14: its fields below this line)
    gres_flags: list[str] = []  # --gres-flags: enforce-binding | disable-binding (GPU-local CPUs)
    # area: timeprio (issue 14: its fields below this line)
    time_min: int | None = None  # --time-min, minutes: backfill may cut the limit down to it (core_timeprio.py)
    deadline: float | None = None  # --deadline (epoch s): a job that cannot end by then ends DEADLINE
    priority: int | None = None  # --priority (operators only): fixed, not recomputed; TOP is resolved at submit
    priority_top: bool = False  # --priority=TOP
    prefer: str | None = None  # --prefer: a soft --constraint, tried first
    tmp_disk: int = 0  # --tmp, MB: only nodes whose TmpDisk is at least this
    overcommit: bool = False  # -O: CPUs as for one task per node (more tasks than CPUs)
    spread_job: bool = False  # --spread-job: as many nodes as the tasks allow
    use_min_nodes: bool = False  # --use-min-nodes: of -N min-max, the fewest that fit
    no_kill: bool = False  # -k: a failed node is taken out of the job, which runs on
    wait_all_nodes: int | None = None  # --wait-all-nodes=0|1 (shown; plurm's nodes are ready when allocated)
    delay_boot: int | None = None  # --delay-boot, minutes (shown; no reboot is delayed without RebootProgram)
    # area: mpi (issue 14: its fields below this line)
    # area: hetjob (issue 14: its fields below this line)
    # A heterogeneous job's component (corescheduler/core_hetjob.py): the leader's id (the first
    # component's; None: not a hetjob), this component's offset (shown as N+offset) and the count.
    het_job_id: int | None = None
    het_job_offset: int = 0
    het_size: int = 0
    # area: rest (issue 14: its fields below this line)
    # Kept and shown as Slurm 22.05 keeps them where the plugin or hardware is missing (tools/options_rest.py)
    cpu_freq: str | None = None  # --cpu-freq as given (no cpufreq control here: shown, SLURM_CPU_FREQ_REQ)
    gpu_freq: str | None = None  # --gpu-freq (TresFreq=gpu:...)
    switches: int | None = None  # --switches count (no switch topology: shown only)
    switch_wait_s: int | None = None
    burst_buffer: str | None = None  # --bb (no burst buffer plugin: shown only)
    container: str | None = None  # --container (SLURM_CONTAINER; with oci.conf: nodeagent/container.py)
    cluster_features: str | None = None  # --cluster-constraint (no federation: shown only)
    network: str | None = None  # --network (no switch plugin: shown only)
    power: str | None = None  # --power=level (no power plugin: shown only)
    selinux_context: str | None = None  # --context (no SELinux: kept, not shown)
    batch_features: str | None = None  # --batch: refused at submission (no node_features plugin)
    reboot: bool = False  # --reboot (Reboot=1): its nodes reboot before it runs (core_reboot.py)
    # area: k8s (issue 16: its fields below this line)
    external: bool = False  # job flag EXTERNAL_JOB: allocated, never launched, ends when told (core_external.py)
    admin_comment: str | None = None  # operators only: slurm-bridge keeps the job's pods there
    other_options: dict[str, str] = {}  # accepted, not acted on: shown by scontrol


class EarlierRun(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A run of a job that was requeued after it (sacct -D shows it as a REQUEUED record)."""

    submit_time: float = 0.0
    start_time: float | None = None
    end_time: float | None = None
    nodes: list[str] = []
    cpus: list[int] = []
    state: str = "REQUEUED"  # NODE_FAIL: its node failed (core_nodes._requeue_failed_run)


class Job(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A job (or one task of an array) as the controller keeps it."""

    job_id: int
    spec: JobSpec
    state: str = PENDING
    reason: str = "None"
    priority: int = 0
    partition: str = ""
    array_job_id: int | None = None  # set for every task of an array, including the first
    array_task_id: int | None = None
    # For the not-yet-split remainder of an array (one record, like Slurm's
    # meta record): the task ids still pending.
    array_pending: list[int] = []
    time_limit: int | None = None  # effective, minutes; None = UNLIMITED
    submit_time: float = 0.0
    eligible_time: float | None = None
    start_time: float | None = None
    end_time: float | None = None
    nodes: list[str] = []
    cpus: list[int] = []  # per allocated node, aligned with nodes
    mem: list[int] = []  # MB per allocated node
    tasks: list[int] = []  # tasks per allocated node
    gres_alloc: list[dict[str, list[int]]] = []  # per allocated node: GRES name -> unit indices
    # OverSubscribe: per allocated node, the row its CPUs are in (scheduler.py); a tuple, so that
    # the many jobs that do not share hold no list of their own (fewer objects for the GC).
    share_rows: tuple[int, ...] = ()
    completing: bool = False  # finished, resources not yet released by plurmd
    configuring: bool = False  # --reboot: RUNNING while its nodes reboot, not launched yet (core_reboot.py; squeue CF)
    exit_code: int = 0
    exit_signal: int = 0
    derived_exit_code: int = 0  # the worst srun step's status (Slurm's derived exit code)
    derived_exit_signal: int = 0
    restarts: int = 0
    warned_run: int = -1  # the run (restarts) that got its --signal warning; -1: none yet
    earlier_runs: list[EarlierRun] = []  # the latest runs before a requeue (core_preempt._requeue), oldest first
    next_step_id: int = 0
    held_by: str | None = None  # "user" | "admin"
    last_sched_eval: float | None = None
    cancel_state: str | None = None  # the state to record when plurmd reports the end
    cancel_uid: int | None = None  # who cancelled it (sacct: "CANCELLED by UID")
    submit_key: str | None = None  # the submitter's idempotency key (corescheduler/idempotency.py)
    suspend_time: float | None = None  # when it was suspended (preempt SUSPEND); None: not suspended
    preempted_by: int | None = None  # the job it was suspended for
    planned_start: float | None = None  # backfill's reservation for a pending job (squeue --start)
    priority_set: bool = False  # set by an administrator (scontrol update Priority=): kept as is
    frozen: str = ""  # why a node's freeze policy froze it (suspended until resumed); "": not frozen
    # Transition log: (time, state, reason) whenever either changed ("why is my job in this state?").
    events: list[tuple[float, str, str]] = []


class StepRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A job step for accounting (batch step and srun steps)."""

    job_id: int
    step_id: str  # "batch", "0", "1", ...
    name: str
    nodes: list[str] = []
    ntasks: int = 1
    cpus: int = 1
    state: str = RUNNING
    start_time: float = 0.0
    end_time: float | None = None
    exit_code: int = 0
    exit_signal: int = 0
    # Sampled usage as sacct's TRESUsageInMax/TRESUsageInAve: {"gres/gpuutil": "37", "gres/gpumem": "1024M"}
    tres_usage_max: dict[str, str] = {}
    tres_usage_ave: dict[str, str] = {}
    # Measured usage (sacct MaxRSS, AveRSS, MaxVMSize, TotalCPU, ...): protocol.STEP_USAGE_KEYS,
    # sizes in KiB, CPU times in seconds, the maxima with the node and task that had them.
    usage: dict[str, Any] = {}


class Node(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A compute node: configured size, allocation, and liveness."""

    name: str
    addr: str = "127.0.0.1"
    hostname: str = "localhost"
    port: int = 0
    cpus: int = 1
    sockets: int = 1
    cores_per_socket: int = 1
    threads_per_core: int = 1
    boards: int = 1
    real_memory: int = 1
    tmp_disk: int = 0
    weight: int = 1
    features: list[str] = []
    gres: list[str] = []
    devices: list[dict[str, Any]] = []  # accelerators the node daemon detected (plurm.accel.model.Device)
    gpu_cpus: list[list[int] | None] = []  # per gpu unit, its local CPUs (NodeRegister.gpu_cpus)
    partitions: list[str] = []
    # Liveness: UNKNOWN until plurmd registers, then IDLE/MIXED/ALLOCATED
    # derived from allocations; DOWN when it stops answering.
    responding: bool = False
    down: bool = False
    drain: bool = False
    reason: str | None = None
    reason_time: float | None = None
    reason_user: str | None = None
    alloc_cpus: int = 0
    alloc_mem: int = 0
    boot_time: float | None = None
    slurmd_start_time: float | None = None
    last_busy_time: float | None = None
    cpu_load: float | None = None
    free_mem: int | None = None
    os: str = ""
    arch: str = ""
    version: str = ""
    # scontrol reboot (corescheduler/core_nodeadmin.py): "" none, "requested" (waiting for
    # the node to be idle), "issued" (plurmd told; until it registers again)
    reboot: str = ""
    reboot_next: str = ""  # the state after the reboot: "" (back in service), RESUME, DOWN, UNDRAIN
    reboot_time: float | None = None  # when the reboot was issued
    reboot_drained: bool = False  # ASAP drained it (the drain ends with the reboot)
    reboot_job: bool = False  # the issued reboot is a --reboot job's, which runs once it is done (core_reboot.py)
    # CoreSpecCount/CPUSpecList (corescheduler/topology.py, area topology): CPUs kept for the
    # system, never given to jobs (scontrol: CPUEfctv = CPUTot minus these).
    cpu_spec_list: list[int] = []
    # A node not in slurm.conf (corescheduler/core_dynnodes.py): "" static; "norm" (plurmd -Z,
    # scontrol create without State), "future", "cloud", "external" (no plurmd: never launched on).
    dynamic: str = ""
    comment: str | None = None  # scontrol update NodeName= Comment= (slurm-operator keeps its pod there)

    @property
    def cpus_effective(self) -> int:
        """The CPUs jobs may have: all but the specialized ones (Slurm's CPUEfctv)."""
        return self.cpus - len(self.cpu_spec_list)

    @property
    def state(self) -> str:
        """Slurm's base state word, with the flags scontrol appends."""
        if self.dynamic == "external" or self.dynamic and not self.responding and self.boot_time is None:
            return self._dynamic_state()  # (created at run time, never heard from: core_dynnodes.py)
        if not self.responding and self.boot_time is None:
            base = "UNKNOWN"
        elif self.down:  # (silent, not yet DOWN: its allocation's state with "*", as Slurm's idle*)
            base = "DOWN"
        elif self.alloc_cpus == 0:
            base = "IDLE"
        elif self.alloc_cpus >= self.cpus_effective:
            base = "ALLOCATED"
        else:
            base = "MIXED"
        if self.drain:
            base += "+DRAIN"
        if self.reboot == "issued" and self.reboot_job:  # for a --reboot job, as 22.05 shows it (core_reboot.py)
            return base + "+NOT_RESPONDING+POWERING_UP"
        if self.reboot == "issued":  # (Slurm lists its flags alphabetically)
            base += "+REBOOT_ISSUED"
        elif self.reboot:
            base += "+REBOOT_REQUESTED"
        base += _DYNAMIC_FLAG.get(self.dynamic, "")
        if not self.responding and self.boot_time is not None:
            base += "*"
        return base

    def _dynamic_state(self) -> str:
        """An External node (allocated to EXTERNAL_JOB jobs only, no plurmd), or a created node
        whose plurmd has not registered yet: FUTURE, a CLOUD node powered down, DYNAMIC_NORM."""
        if self.dynamic == "external":
            base = "DOWN" if self.down else "IDLE" if self.alloc_cpus == 0 else (
                "ALLOCATED" if self.alloc_cpus >= self.cpus_effective else "MIXED")
            return base + ("+DRAIN" if self.drain else "") + "+EXTERNAL"
        drain = "+DRAIN" if self.drain else ""
        if self.dynamic == "future":
            return "FUTURE" + drain
        if self.dynamic == "cloud":
            return ("DOWN" if self.down else "IDLE") + "+CLOUD" + drain + "+POWERED_DOWN"
        return ("DOWN" if self.down else "UNKNOWN") + drain + "+DYNAMIC_NORM"


# The flag a dynamic node's state carries once its plurmd registered (Slurm's words).
_DYNAMIC_FLAG = {"norm": "+DYNAMIC_NORM", "cloud": "+CLOUD"}


class Partition(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    nodes: list[str] = []
    default: bool = False
    max_time: int | None = None  # minutes; None = UNLIMITED
    default_time: int | None = None
    state: str = "UP"
    max_nodes: int | None = None
    min_nodes: int = 0
    priority_tier: int = 1
    priority_job_factor: int = 1
    oversubscribe: str = "NO"
    def_mem_per_cpu: int | None = None
    max_mem_per_cpu: int | None = None
    hidden: bool = False
    allow_accounts: list[str] | None = None
    allow_groups: list[str] | None = None
    allow_qos: list[str] | None = None
    preempt_mode: str | None = None  # None: the cluster's PreemptMode
    grace_time: int = 0  # seconds between SIGTERM and SIGKILL for a preempted job
