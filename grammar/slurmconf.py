"""slurm.conf: the loader for daemons (``load_slurm_conf``): key tables, records, building.

Syntax lives in ``slurm_conf.lark`` and grammar/confsyntax.py (comments, continuation
lines, ``Include``, the cached lark parser, ``ConfError``: what gres.conf shares);
meaning lives in the key tables below.  Keys are
case-insensitive and stored under Slurm's spelling (``slurmctldport`` -> ``SlurmctldPort``).
An unknown key is a warning (Slurm would refuse to start); an invalid value is a
``ConfError`` whose message is ``FILE:LINE: what is wrong``.

Node CPU layout (slurm.conf(5)): Boards, CoresPerSocket and ThreadsPerCore default to 1;
CPUs defaults to Boards*Sockets*CoresPerSocket*ThreadsPerCore; when Sockets (and
SocketsPerBoard) are omitted they are inferred from CPUs as CPUs/(Boards*Cores*Threads), so
``CPUs=4`` alone is 4 sockets of 1 core.  ``NodeConf.sockets`` is the node's total socket
count (Boards * SocketsPerBoard); with Boards given, ``Sockets`` means sockets per board.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from plurm.grammar.confsyntax import (
    UNLIMITED_WORDS,
    ConfError,
    Loc,
    Statement,
    expand_hosts,
    parse_bool,
    parse_int,
    parse_minutes,
    parse_statements,
    read_statements,
    splice_includes,
    split_list,
)
from plurm.grammar.timefmt import format_time_limit, parse_time_limit

__all__ = [
    "ConfError",
    "NodeConf",
    "PartitionConf",
    "SlurmConf",
    "canonical_key",
    "format_time_limit",
    "load_slurm_conf",
    "parse_slurm_conf_text",
    "parse_time_limit",
]


# ============================================================== key tables

# Every key that `scontrol show config` of Slurm 22.05 prints, in Slurm's spelling.
_SCONTROL_KEYS = """
AccountingStorageBackupHost AccountingStorageEnforce AccountingStorageHost
AccountingStorageExternalHost AccountingStorageParameters AccountingStoragePort
AccountingStorageTRES AccountingStorageType AccountingStorageUser AccountingStoreFlags
AcctGatherEnergyType AcctGatherFilesystemType AcctGatherInterconnectType AcctGatherNodeFreq
AcctGatherProfileType AllowSpecResourcesUsage AuthAltTypes AuthAltParameters AuthInfo AuthType
BatchStartTimeout BcastExclude BcastParameters BurstBufferType CliFilterPlugins ClusterName
CommunicationParameters CompleteWait CoreSpecPlugin CpuFreqDef CpuFreqGovernors CredType
DebugFlags DefMemPerCPU DependencyParameters DisableRootJobs EioTimeout EnforcePartLimits
Epilog EpilogMsgTime EpilogSlurmctld ExtSensorsType ExtSensorsFreq FairShareDampeningFactor
FederationParameters FirstJobId GetEnvTimeout GresTypes GpuFreqDef GroupUpdateForce
GroupUpdateTime HealthCheckInterval HealthCheckNodeState HealthCheckProgram InactiveLimit
InteractiveStepOptions JobAcctGatherFrequency JobAcctGatherType JobAcctGatherParams
JobCompHost JobCompLoc JobCompPort JobCompType JobCompUser JobContainerType
JobCredentialPrivateKey JobCredentialPublicCertificate JobDefaults JobFileAppend JobRequeue
JobSubmitPlugins KillOnBadExit KillWait LaunchParameters LaunchType Licenses LogTimeFormat
MailDomain MailProg MaxArraySize MaxDBDMsgs MaxJobCount MaxJobId MaxMemPerNode MaxNodeCount
MaxStepCount MaxTasksPerNode MCSPlugin MCSParameters MessageTimeout MinJobAge MpiDefault
MpiParams NodeFeaturesPlugins OverTimeLimit PluginDir PlugStackConfig PowerParameters
PowerPlugin PreemptMode PreemptType PreemptExemptTime PrEpParameters PrEpPlugins
PriorityParameters PrioritySiteFactorParameters PrioritySiteFactorPlugin
PriorityDecayHalfLife PriorityCalcPeriod PriorityFavorSmall PriorityFlags PriorityMaxAge
PriorityUsageResetPeriod PriorityType PriorityWeightAge PriorityWeightAssoc
PriorityWeightFairShare PriorityWeightJobSize PriorityWeightPartition PriorityWeightQOS
PriorityWeightTRES PrivateData ProctrackType Prolog PrologEpilogTimeout PrologSlurmctld
PrologFlags PropagatePrioProcess PropagateResourceLimits PropagateResourceLimitsExcept
RebootProgram ReconfigFlags RequeueExit RequeueExitHold ResumeFailProgram ResumeProgram
ResumeRate ResumeTimeout ResvEpilog ResvOverRun ResvProlog ReturnToService RoutePlugin
SchedulerParameters SchedulerTimeSlice SchedulerType ScronParameters SelectType
SelectTypeParameters SlurmUser SlurmctldAddr SlurmctldDebug SlurmctldHost SlurmctldLogFile
SlurmctldPort SlurmctldSyslogDebug SlurmctldPrimaryOffProg SlurmctldPrimaryOnProg
SlurmctldTimeout SlurmctldParameters SlurmdDebug SlurmdLogFile SlurmdParameters SlurmdPidFile
SlurmdPort SlurmdSpoolDir SlurmdSyslogDebug SlurmdTimeout SlurmdUser SlurmSchedLogFile
SlurmSchedLogLevel SlurmctldPidFile SlurmctldPlugstack SrunEpilog SrunPortRange SrunProlog
StateSaveLocation SuspendExcNodes SuspendExcParts SuspendProgram SuspendRate SuspendTime
SuspendTimeout SwitchParameters SwitchType TaskEpilog TaskPlugin TaskPluginParam TaskProlog
TCPTimeout TmpFS TopologyParam TopologyPlugin TrackWCKey TreeWidth UsePam
UnkillableStepProgram UnkillableStepTimeout VSizeFactor WaitTime X11Parameters
""".split()

# slurm.conf(5) keys that scontrol does not print (or prints under another name), and the
# keys that start a line of their own kind.
_OTHER_KEYS = """
AccountingStoragePass BackupAddr BackupController ControlAddr ControlMachine DefCpuPerGPU
DefMemPerGPU DefMemPerNode JobCompParams JobCompPass MaxMemPerCPU PreemptParameters SuspendExcStates
NodeName PartitionName NodeSet DownNodes FrontendName Include
""".split()

GLOBAL_KEYS: dict[str, str] = {k.lower(): k for k in _SCONTROL_KEYS + _OTHER_KEYS}

NODE_KEYS: dict[str, str] = {k.lower(): k for k in """
NodeName NodeHostname NodeAddr BcastAddr Boards CoreSpecCount CoresPerSocket CpuBind CPUs
CPUSpecList Features Gres MemSpecLimit Port Procs RealMemory Reason Sockets SocketsPerBoard
State ThreadsPerCore TmpDisk TRESWeights Weight
""".split()}
NODE_KEYS["feature"] = "Features"  # accepted alias

PARTITION_KEYS: dict[str, str] = {k.lower(): k for k in """
PartitionName AllocNodes AllowAccounts AllowGroups AllowQos Alternate CpuBind Default
DefaultTime DefCpuPerGPU DefMemPerCPU DefMemPerGPU DefMemPerNode DenyAccounts DenyQos
DisableRootJobs ExclusiveUser GraceTime Hidden LLN MaxCPUsPerNode MaxCPUsPerSocket
MaxMemPerCPU MaxMemPerNode MaxNodes MaxTime MinNodes Nodes OverSubscribe OverTimeLimit
PowerDownOnIdle PreemptMode Priority PriorityJobFactor PriorityTier QOS ReqResv
ResumeTimeout RootOnly SelectTypeParameters Shared State SuspendTime SuspendTimeout
TRESBillingWeights
""".split()}

NODESET_KEYS: dict[str, str] = {k.lower(): k for k in ["NodeSet", "Nodes", "Feature"]}
NODESET_KEYS["features"] = "Feature"
DOWNNODES_KEYS: dict[str, str] = {k.lower(): k for k in ["DownNodes", "Reason", "State"]}
FRONTEND_KEYS: dict[str, str] = {k.lower(): k for k in """
FrontendName FrontendAddr AllowGroups AllowUsers DenyGroups DenyUsers Port Reason State
""".split()}

# Keys whose line is a record of its own; the rest of the line belongs to the record.
_LINE_KINDS: dict[str, dict[str, str]] = {
    "NodeName": NODE_KEYS,
    "PartitionName": PARTITION_KEYS,
    "NodeSet": NODESET_KEYS,
    "DownNodes": DOWNNODES_KEYS,
    "FrontendName": FRONTEND_KEYS,
}

# Global keys checked to be integers (UNLIMITED/INFINITE allowed) when read.
_INT_KEYS = frozenset("""
AccountingStoragePort BatchStartTimeout CompleteWait DefCpuPerGPU DefMemPerCPU DefMemPerGPU
DefMemPerNode EioTimeout EpilogMsgTime FirstJobId GetEnvTimeout GroupUpdateTime
HealthCheckInterval InactiveLimit JobCompPort KillWait MaxArraySize MaxDBDMsgs MaxJobCount
MaxJobId MaxMemPerCPU MaxMemPerNode MaxNodeCount MaxStepCount MaxTasksPerNode MessageTimeout
MinJobAge OverTimeLimit PriorityWeightAge PriorityWeightAssoc PriorityWeightFairShare
PriorityWeightJobSize PriorityWeightPartition PriorityWeightQOS PrologEpilogTimeout
ResumeRate ResumeTimeout ResvOverRun ReturnToService SchedulerTimeSlice SlurmctldTimeout
SlurmdPort SlurmdTimeout SuspendRate SuspendTimeout TCPTimeout TreeWidth UnkillableStepTimeout
VSizeFactor WaitTime
""".split())

def canonical_key(key: str, table: dict[str, str] | None = None) -> str | None:
    """Slurm's spelling of ``key`` (any case), or None when ``table`` does not know it."""
    return (GLOBAL_KEYS if table is None else table).get(key.lower())


# ============================================================== records

@dataclass
class NodeConf:
    name: str
    addr: str
    hostname: str
    port: int | None = None
    cpus: int = 1
    boards: int = 1
    sockets: int = 1
    cores_per_socket: int = 1
    threads_per_core: int = 1
    real_memory: int = 1
    tmp_disk: int = 0
    gres: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    weight: int = 1
    state: str | None = None
    raw: dict[str, str] = field(default_factory=dict)
    line: int = 0


@dataclass
class PartitionConf:
    name: str
    nodes: list[str] = field(default_factory=list)
    default: bool = False
    max_time: int | None = None
    default_time: int | None = None
    state: str = "UP"
    max_nodes: int | None = None
    min_nodes: int = 0
    priority_tier: int = 1
    priority_job_factor: int = 1
    oversubscribe: str = "NO"
    allow_accounts: list[str] | None = None
    allow_groups: list[str] | None = None
    allow_qos: list[str] | None = None
    def_mem_per_cpu: int | None = None
    max_mem_per_cpu: int | None = None
    hidden: bool = False
    raw: dict[str, str] = field(default_factory=dict)
    line: int = 0


@dataclass
class SlurmConf:
    path: str
    options: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, NodeConf] = field(default_factory=dict)
    partitions: dict[str, PartitionConf] = field(default_factory=dict)
    nodesets: dict[str, list[str]] = field(default_factory=dict)
    nodeset_features: dict[str, str] = field(default_factory=dict)  # NodeSet=x Feature=f (dynamic nodes join x)
    warnings: list[str] = field(default_factory=list)
    slurmctld_hosts: list[str] = field(default_factory=list)  # every SlurmctldHost, in order
    down_nodes: list[dict[str, str]] = field(default_factory=list)
    frontends: list[dict[str, str]] = field(default_factory=list)

    # -------------------------------------------------------------- generic access
    def get(self, key: str, default: str | None = None) -> str | None:
        """The raw value of a global option, any case of ``key``."""
        canon = canonical_key(key) or key
        if canon in self.options:
            return self.options[canon]
        low = key.lower()
        for name, value in self.options.items():  # unknown keys keep their own spelling
            if name.lower() == low:
                return value
        return default

    def get_int(self, key: str, default: int | None = None) -> int | None:
        """An integer option; UNLIMITED/INFINITE give None; ``default`` when unset."""
        value = self.get(key)
        if value is None or value == "":
            return default
        return parse_int(value, Loc(self.path, 0), canonical_key(key) or key, minimum=-(1 << 63),
                         unlimited=True)

    def get_list(self, key: str) -> list[str]:
        value = self.get(key)
        return split_list(value) if value else []

    # -------------------------------------------------------------- common options
    @property
    def cluster_name(self) -> str | None:
        return self.get("ClusterName")

    def _controller(self) -> tuple[str, str]:
        return self.slurmctld_endpoints[0]

    @property
    def slurmctld_endpoints(self) -> list[tuple[str, str]]:
        """Every controller as (host, address), primary first: ``SlurmctldHost=name(addr)``
        lines in order (``addr`` defaults to ``name``), else ControlMachine/ControlAddr and
        BackupController/BackupAddr."""
        found: list[tuple[str, str]] = []
        for spec in self.slurmctld_hosts:
            m = re.fullmatch(r"([^()]*)\(([^()]*)\)", spec.strip())
            found.append((m.group(1), m.group(2)) if m else (spec.strip(), spec.strip()))
        if not found:
            for host_key, addr_key in (("ControlMachine", "ControlAddr"), ("BackupController", "BackupAddr")):
                machine = self.get(host_key)
                if machine:
                    found.append((machine, self.get(addr_key) or machine))
        if not found:
            raise ConfError(f"{self.path}:0: SlurmctldHost is not set")
        return found

    @property
    def slurmctld_host(self) -> str:
        """The primary controller's host name (``localhost`` of ``localhost(127.0.0.1)``)."""
        return self._controller()[0]

    @property
    def slurmctld_addr(self) -> str:
        """The primary controller's address: the part in parentheses, else the host."""
        return self._controller()[1]

    @property
    def slurmctld_port(self) -> int:
        value = self.get("SlurmctldPort")
        if not value:
            return 6817
        m = re.fullmatch(r"\s*([0-9]+)(?:-[0-9]+)?\s*", value)
        if not m:
            raise ConfError(f"{self.path}:0: invalid SlurmctldPort {value!r}")
        return int(m.group(1))

    @property
    def slurmd_port(self) -> int:
        return self.get_int("SlurmdPort", 6818) or 6818

    # The two directories are None when unset (Slurm's defaults are /var/spool/slurmctld
    # and /var/spool/slurmd; a local cluster picks its own).
    @property
    def state_save_location(self) -> str | None:
        return self.get("StateSaveLocation") or None

    @property
    def slurmd_spool_dir(self) -> str | None:
        return self.get("SlurmdSpoolDir") or None

    @property
    def kill_wait(self) -> int:
        value = self.get_int("KillWait", 30)
        return 30 if value is None else value

    @property
    def def_mem_per_cpu(self) -> int | None:
        return self.get_int("DefMemPerCPU")

    @property
    def gres_types(self) -> list[str]:
        return self.get_list("GresTypes")


# ============================================================== building

_NODE_STATES = re.compile(r"[A-Za-z_]+(\+[A-Za-z_]+)*")
_PART_STATES = frozenset({"UP", "DOWN", "DRAIN", "INACTIVE"})
_OVERSUBSCRIBE = re.compile(r"(NO|YES|EXCLUSIVE|FORCE)(:[0-9]+)?", re.I)


@dataclass
class _Record:
    kind: str
    name: str
    raw: dict[str, str]
    loc: Loc


def _canon_pairs(pairs: list[tuple[str, str]], table: dict[str, str], loc: Loc,
                 warnings: list[str]) -> dict[str, str]:
    raw: dict[str, str] = {}
    for key, value in pairs:
        canon = table.get(key.lower())
        if canon is None:
            warnings.append(f"{loc}: unknown key '{key}'")
            canon = key
        raw[canon] = value
    return raw


class _Builder:
    def __init__(self, path: str) -> None:
        self.conf = SlurmConf(path=path)
        self.records: list[_Record] = []
        self.defaults: dict[str, dict[str, str]] = {"NodeName": {}, "PartitionName": {}}

    def statement(self, stmt: Statement) -> None:
        pairs = stmt.pairs
        for i, (key, value) in enumerate(pairs):
            canon = GLOBAL_KEYS.get(key.lower())
            if canon in _LINE_KINDS:
                self.record(canon, pairs[i:], stmt.loc)
                return
            self.option(canon, key, value, stmt.loc)

    def option(self, canon: str | None, key: str, value: str, loc: Loc) -> None:
        if canon is None:
            self.conf.warnings.append(f"{loc}: unknown key '{key}'")
            self.conf.options[key] = value
            return
        if canon in _INT_KEYS and value != "":
            parse_int(value, loc, canon, minimum=-(1 << 63), unlimited=True)
        if canon == "SlurmctldPort" and not re.fullmatch(r"[0-9]+(-[0-9]+)?", value):
            raise loc.error(f"invalid value {value!r} for SlurmctldPort")
        if canon == "SlurmctldHost":
            self.conf.slurmctld_hosts.append(value)
        self.conf.options[canon] = value

    def record(self, kind: str, pairs: list[tuple[str, str]], loc: Loc) -> None:
        raw = _canon_pairs(pairs, _LINE_KINDS[kind], loc, self.conf.warnings)
        name = raw[kind]
        if not name:
            raise loc.error(f"{kind} without a value")
        if kind in self.defaults and name.upper() == "DEFAULT":
            self.defaults[kind].update({k: v for k, v in raw.items() if k != kind})
            return
        if kind in self.defaults:
            raw = {kind: name, **self.defaults[kind], **raw}
        self.records.append(_Record(kind, name, raw, loc))

    # -------------------------------------------------------------- after all lines
    def finish(self) -> SlurmConf:
        for rec in self.records:
            if rec.kind == "NodeName":
                for node in _build_nodes(rec):
                    if node.name in self.conf.nodes:
                        raise rec.loc.error(f"duplicate NodeName {node.name!r}")
                    self.conf.nodes[node.name] = node
        for rec in self.records:
            if rec.kind == "NodeSet":
                self.conf.nodesets[rec.name] = self._nodeset(rec)
                if "Feature" in rec.raw and "Nodes" not in rec.raw:
                    self.conf.nodeset_features[rec.name] = rec.raw["Feature"]
            elif rec.kind == "DownNodes":
                expand_hosts(rec.name, rec.loc, "DownNodes")
                self.conf.down_nodes.append(rec.raw)
            elif rec.kind == "FrontendName":
                self.conf.frontends.append(rec.raw)
        for rec in self.records:
            if rec.kind == "PartitionName":
                if rec.name in self.conf.partitions:
                    raise rec.loc.error(f"duplicate PartitionName {rec.name!r}")
                self.conf.partitions[rec.name] = self._partition(rec)
        return self.conf

    def _resolve_nodes(self, value: str, loc: Loc, key: str) -> list[str]:
        wanted: set[str] = set()
        for name in expand_hosts(value, loc, key):
            if name.upper() == "ALL":
                wanted.update(self.conf.nodes)
            elif name in self.conf.nodesets:
                wanted.update(self.conf.nodesets[name])
            elif name in self.conf.nodes:
                wanted.add(name)
            else:
                raise loc.error(f"{key}: unknown node {name!r}")
        # Like Slurm's node bitmaps: slurm.conf order, each node once.
        return [name for name in self.conf.nodes if name in wanted]

    def _nodeset(self, rec: _Record) -> list[str]:
        raw, loc = rec.raw, rec.loc
        if "Nodes" in raw:
            return self._resolve_nodes(raw["Nodes"], loc, "Nodes")
        if "Feature" in raw:
            feature = raw["Feature"]
            return [n.name for n in self.conf.nodes.values() if feature in n.features]
        raise loc.error(f"NodeSet {rec.name!r} needs Nodes= or Feature=")

    def _partition(self, rec: _Record) -> PartitionConf:
        raw, loc = rec.raw, rec.loc
        part = PartitionConf(name=rec.name, raw=raw, line=loc.line)
        if raw.get("Nodes"):
            part.nodes = self._resolve_nodes(raw["Nodes"], loc, "Nodes")
        if "Default" in raw:
            part.default = parse_bool(raw["Default"], loc, "Default")
        if "Hidden" in raw:
            part.hidden = parse_bool(raw["Hidden"], loc, "Hidden")
        if "MaxTime" in raw:
            part.max_time = parse_minutes(raw["MaxTime"], loc, "MaxTime")
        if "DefaultTime" in raw and raw["DefaultTime"].upper() != "NONE":
            part.default_time = parse_minutes(raw["DefaultTime"], loc, "DefaultTime")
        if "State" in raw:
            state = raw["State"].upper()
            if state not in _PART_STATES:
                raise loc.error(f"invalid value {raw['State']!r} for State "
                                "(expected UP, DOWN, DRAIN or INACTIVE)")
            part.state = state
        if "MaxNodes" in raw:
            part.max_nodes = parse_int(raw["MaxNodes"], loc, "MaxNodes", unlimited=True)
        if "MinNodes" in raw:
            part.min_nodes = parse_int(raw["MinNodes"], loc, "MinNodes") or 0
        if "Priority" in raw:  # the old key sets both
            part.priority_tier = part.priority_job_factor = parse_int(
                raw["Priority"], loc, "Priority") or 0
        if "PriorityTier" in raw:
            part.priority_tier = parse_int(raw["PriorityTier"], loc, "PriorityTier") or 0
        if "PriorityJobFactor" in raw:
            part.priority_job_factor = parse_int(
                raw["PriorityJobFactor"], loc, "PriorityJobFactor") or 0
        over = raw.get("OverSubscribe", raw.get("Shared"))
        if over is not None:
            m = _OVERSUBSCRIBE.fullmatch(over.strip())
            if not m:
                raise loc.error(f"invalid value {over!r} for OverSubscribe "
                                "(expected NO, YES, EXCLUSIVE or FORCE, with optional :N)")
            part.oversubscribe = m.group(1).upper() + (m.group(2) or "")
        for key, attr in (("AllowAccounts", "allow_accounts"), ("AllowGroups", "allow_groups"),
                          ("AllowQos", "allow_qos")):
            if key in raw:
                items = split_list(raw[key])
                setattr(part, attr, None if [i.upper() for i in items] == ["ALL"] else items)
        if "DefMemPerCPU" in raw:
            part.def_mem_per_cpu = parse_int(raw["DefMemPerCPU"], loc, "DefMemPerCPU",
                                             unlimited=True)
        if "MaxMemPerCPU" in raw:
            part.max_mem_per_cpu = parse_int(raw["MaxMemPerCPU"], loc, "MaxMemPerCPU",
                                             unlimited=True)
        for key in ("GraceTime", "MaxCPUsPerNode", "DefMemPerNode", "MaxMemPerNode"):
            if key in raw:
                parse_int(raw[key], loc, key, unlimited=True)
        return part


def _per_node(values: list[str], count: int, loc: Loc, key: str) -> list[str]:
    """Match a hostlist-valued key to the node names: one value for all, or one each."""
    if len(values) == 1:
        return values * count
    if len(values) != count:
        raise loc.error(f"{key} has {len(values)} values for {count} NodeName entries")
    return values


def _build_nodes(rec: _Record) -> list[NodeConf]:
    raw, loc = rec.raw, rec.loc
    names = expand_hosts(rec.name, loc, "NodeName")
    if not names:
        raise loc.error("NodeName without node names")
    n = len(names)
    hostnames = _per_node(expand_hosts(raw["NodeHostname"], loc, "NodeHostname"), n, loc,
                          "NodeHostname") if raw.get("NodeHostname") else names
    addrs = _per_node(expand_hosts(raw["NodeAddr"], loc, "NodeAddr"), n, loc,
                      "NodeAddr") if raw.get("NodeAddr") else hostnames
    ports: list[int | None] = [None] * n
    if raw.get("Port"):
        spec = raw["Port"].strip()
        if re.fullmatch(r"[0-9]+-[0-9]+", spec):  # a bare range, like [lo-hi]
            spec = f"[{spec}]"
        port_values = [parse_int(p, loc, "Port") for p in expand_hosts(spec, loc, "Port")]
        ports = list(_per_node(port_values, n, loc, "Port"))  # type: ignore[arg-type]

    def num(key: str, default: int, minimum: int = 0) -> int:
        if key not in raw or raw[key] == "":
            return default
        value = parse_int(raw[key], loc, key, minimum=minimum)
        assert value is not None
        return value

    boards = num("Boards", 1, 1)
    cores = num("CoresPerSocket", 1, 1)
    threads = num("ThreadsPerCore", 1, 1)
    per_board = None
    if raw.get("SocketsPerBoard"):
        per_board = num("SocketsPerBoard", 1, 1)
    elif raw.get("Sockets"):
        total = num("Sockets", 1, 1)
        # With Boards given, Sockets means sockets per board (slurm.conf(5)).
        per_board = total
    cpus_key = "CPUs" if raw.get("CPUs") else ("Procs" if raw.get("Procs") else None)
    if cpus_key is not None:
        cpus = num(cpus_key, 1, 1)
        if per_board is None:
            per_board = max(cpus // (boards * cores * threads), 1)
    else:
        per_board = per_board or 1
        cpus = boards * per_board * cores * threads
    state = raw.get("State") or None
    if state is not None:
        if not _NODE_STATES.fullmatch(state):
            raise loc.error(f"invalid value {state!r} for State")
        state = state.upper()
    weight = raw.get("Weight")
    common: dict[str, Any] = dict(
        cpus=cpus, boards=boards, sockets=boards * per_board, cores_per_socket=cores,
        threads_per_core=threads, real_memory=num("RealMemory", 1),
        tmp_disk=num("TmpDisk", 0),
        weight=(2**32 - 2 if weight and weight.upper() in UNLIMITED_WORDS
                else num("Weight", 1)),
        state=state, line=loc.line,
    )
    for key in ("CoreSpecCount", "MemSpecLimit"):
        num(key, 0)
    gres = split_list(raw.get("Gres", ""))
    features = split_list(raw.get("Features", ""))
    # Each node gets its own lists and dict, so that changing one node changes no other.
    return [NodeConf(name=name, hostname=host, addr=addr, port=port, gres=list(gres),
                     features=list(features), raw=dict(raw), **common)
            for name, host, addr, port in zip(names, hostnames, addrs, ports)]


# ============================================================== entry points

def _build(statements: list[Statement], path: str, warnings: list[str]) -> SlurmConf:
    builder = _Builder(path)
    builder.conf.warnings.extend(warnings)
    for stmt in statements:
        builder.statement(stmt)
    return builder.finish()


def load_slurm_conf(path: str | os.PathLike[str]) -> SlurmConf:
    """Read a slurm.conf and its Include files."""
    name = os.fspath(path)
    warnings: list[str] = []
    return _build(read_statements(name, "slurm_conf.lark", warnings), name, warnings)


def parse_slurm_conf_text(text: str, path: str = "<string>") -> SlurmConf:
    """Parse slurm.conf text; an Include is resolved relative to ``path``'s directory."""
    warnings: list[str] = []
    statements = splice_includes(parse_statements(text, path), path, "slurm_conf.lark",
                                 warnings)
    return _build(statements, path, warnings)
