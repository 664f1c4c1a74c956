"""scontrol: show and change the controller's jobs, nodes, partitions and configuration.

Supported: ``show job|node|partition|config|hostnames|hostlist|hostlistsorted|step``,
``update JobId=...|NodeName=...``, ``hold``, ``uhold``/``holdu``, ``release``, ``ping``,
``version``, ``help``, the options ``-a -d -o -Q -v -V -h``, and an interactive mode
reading commands from standard input.  Not supported (an error, exit 1): ``requeue``,
``suspend``/``resume``, ``reconfigure``, reservations and the rest of Slurm's commands.

Start-up budget: stdlib (json) only on the way to the request; msgspec, zmq and lark are
never imported here.
"""

from __future__ import annotations

import os
import sys
import time

from plurm.common.cli import OptionError, Table, iter_getopt, try_help

PROG = "scontrol"

# How Slurm's parser names the entities of "show"; unique prefixes are accepted.
_ENTITIES = ("aliases", "assoc_mgr", "bbstat", "burstbuffer", "config", "daemons", "dwstat", "federation",
             "frontend", "hostlist", "hostlistsorted", "hostnames", "job", "jobs", "licenses", "node", "nodes",
             "partition", "partitions", "reservation", "reservations", "slurmd", "step", "steps", "topology")

# scontrol update JobId=... keys that the controller applies, by their lower-case name.
_JOB_KEYS = {"timelimit": "TimeLimit", "partition": "Partition", "priority": "Priority", "nice": "Nice",
             "jobname": "JobName", "name": "JobName", "comment": "Comment", "numnodes": "NumNodes",
             "minnodes": "NumNodes", "reqnodes": "NumNodes", "numtasks": "NumTasks", "reqprocs": "NumTasks"}
_NODE_STATES = ("NoResp", "DRAIN", "FAIL", "FUTURE", "RESUME", "POWER_DOWN", "POWER_DOWN_ASAP",
                "POWER_DOWN_FORCE", "POWER_UP", "UNDRAIN")


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Scontrol:
    def __init__(self) -> None:
        self.oneliner = False
        self.details = 0
        self.quiet = False
        self.verbose = 0
        self.all = False
        self.rc = 0

    # ------------------------------------------------------------------ plumbing
    def request(self, msg_type: str, body: dict) -> dict:
        from plurm.wire.client import request

        return request(msg_type, body)

    def error(self, text: str) -> None:
        sys.stderr.write(_slurm_message(text) + "\n")
        self.rc = 1

    # ------------------------------------------------------------------ commands
    def run_words(self, words: list[str]) -> int:
        """Run one command line (already split); returns the exit status it sets."""
        if not words:
            return 0
        cmd = words[0].lower()
        args = words[1:]
        table = {
            "show": self.cmd_show, "update": self.cmd_update, "hold": self.cmd_hold,
            "uhold": self.cmd_uhold, "holdu": self.cmd_uhold, "release": self.cmd_release,
            "version": self.cmd_version, "help": self.cmd_help, "ping": self.cmd_ping,
            "oneliner": self.cmd_oneliner, "details": self.cmd_details, "quiet": self.cmd_quiet,
            "verbose": self.cmd_verbose, "all": self.cmd_all, "hide": self.cmd_hide,
        }
        func = table.get(cmd)
        if func is None:
            matches = [name for name in table if name.startswith(cmd)] if len(cmd) >= 2 else []
            if len(matches) == 1:
                func = table[matches[0]]
        if func is None:
            if cmd in ("exit", "quit"):
                raise _Exit(self.rc)
            self.error(f"invalid keyword: {words[0]}")
            return 1
        func(args)
        return self.rc

    def cmd_oneliner(self, args: list[str]) -> None:
        self.oneliner = True

    def cmd_details(self, args: list[str]) -> None:
        self.details = max(self.details, 1)

    def cmd_quiet(self, args: list[str]) -> None:
        self.quiet = True

    def cmd_verbose(self, args: list[str]) -> None:
        self.verbose += 1

    def cmd_all(self, args: list[str]) -> None:
        self.all = True

    def cmd_hide(self, args: list[str]) -> None:
        self.all = False

    def cmd_version(self, args: list[str]) -> None:
        from plurm import SLURM_COMPAT_VERSION

        sys.stdout.write(f"slurm-wlm {SLURM_COMPAT_VERSION}\n")

    def cmd_help(self, args: list[str]) -> None:
        sys.stdout.write(HELP)

    def cmd_ping(self, args: list[str]) -> None:
        from plurm.wire.client import ClientError, read_settings

        try:
            settings = read_settings()
        except ClientError as exc:
            self.error(f"scontrol: error: {exc}")
            return
        host = settings.host
        try:
            options = self.request("config", {}).get("options", {})
            state = "UP"
            for key, value in options.items():
                if key.lower() in ("slurmctldhost", "controlmachine"):
                    host = str(value).split("(", 1)[0]
                    break
        except ClientError:
            state = "DOWN"
            self.rc = 1
        sys.stdout.write(f"Slurmctld(primary) at {host} is {state}\n")

    # ------------------------------------------------------------------ show
    def cmd_show(self, args: list[str]) -> None:
        if not args:
            self.error("scontrol: error: too few arguments for keyword:show")
            return
        word = args[0].lower()
        entity = word if word in _ENTITIES else None
        if entity is None:
            matches = [e for e in _ENTITIES if e.startswith(word)]
            entity = matches[0] if matches and len({m.rstrip("s") for m in matches}) == 1 else None
        if entity is None:
            self.error(f"scontrol: error: invalid entity: {args[0]} for keyword:show")
            return
        rest = args[1:]
        if entity in ("job", "jobs"):
            self.show_jobs(rest)
        elif entity in ("node", "nodes"):
            self.show_nodes(rest)
        elif entity in ("partition", "partitions"):
            self.show_partitions(rest)
        elif entity == "config":
            self.show_config(rest)
        elif entity == "hostnames":
            self.show_hostnames(rest)
        elif entity in ("hostlist", "hostlistsorted"):
            self.show_hostlist(rest, entity == "hostlistsorted")
        elif entity in ("step", "steps"):
            self.show_steps(rest)
        else:
            self.error(f"scontrol: error: show {entity} is not supported by plurm")

    def _def_mem_per_cpu(self, jobs: list[dict]) -> int | None:
        """DefMemPerCPU, asked for only when a job's memory is neither given nor allocated."""
        need = any(not j.get("mem") and (j.get("spec") or {}).get("mem_per_node") is None
                   and (j.get("spec") or {}).get("mem_per_cpu") is None for j in jobs)
        if not need:
            return None
        from plurm.wire.client import ClientError

        try:
            options = self.request("config", {}).get("options", {})
        except ClientError:
            return None
        for key, value in options.items():
            if key.lower() == "defmempercpu":
                try:
                    return int(str(value).rstrip("Mm"))
                except ValueError:
                    return None
        return None

    def show_jobs(self, rest: list[str]) -> None:
        from plurm.wire.client import ClientError
        from plurm.tools.showfmt import format_job

        body: dict = {"all_states": True}
        if rest:
            body["job_ids"] = [rest[0]]
        try:
            reply = self.request("job_info", body)
        except ClientError as exc:
            self.error(f"slurm_load_jobs error: {exc}")
            return
        jobs = reply.get("jobs", [])
        now = reply.get("now") or time.time()
        if not jobs:
            if rest:
                self.error("slurm_load_jobs error: Invalid job id specified")
            else:
                sys.stdout.write("No jobs in the system\n")
            return
        if rest and "_" not in rest[0]:
            # An array: its pending remainder first, then the tasks newest first (as Slurm).
            try:
                base = int(rest[0].split(".")[0])
            except ValueError:
                base = -1
            jobs.sort(key=lambda j: (j["job_id"] != base, -j["job_id"]))
        else:
            jobs.sort(key=lambda j: j["job_id"])
        def_mem = self._def_mem_per_cpu(jobs)
        out = [format_job(job, now, self.oneliner, self.details > 0, def_mem) for job in jobs]
        sys.stdout.write("".join(out))

    def show_nodes(self, rest: list[str]) -> None:
        from plurm.wire.client import ClientError
        from plurm.grammar.hostlist import HostlistError, expand
        from plurm.tools.showfmt import format_node

        body: dict = {}
        wanted: list[str] = []
        if rest:
            try:
                wanted = expand(rest[0])
            except HostlistError:
                wanted = [rest[0]]
            body["nodes"] = wanted
        try:
            reply = self.request("node_info", body)
        except ClientError as exc:
            self.error(f"slurm_load_node error: {exc}")
            return
        nodes = {n["name"]: n for n in reply.get("nodes", [])}
        if wanted:
            missing = [n for n in wanted if n not in nodes]
            if missing and not nodes:
                self.error(f"Node {rest[0]} not found")
                return
            order = [nodes[n] for n in wanted if n in nodes]
        else:
            order = list(nodes.values())
        sys.stdout.write("".join(format_node(n, self.oneliner) for n in order))

    def show_partitions(self, rest: list[str]) -> None:
        from plurm.wire.client import ClientError
        from plurm.tools.showfmt import format_partition

        body: dict = {}
        if rest:
            body["partitions"] = [rest[0]]
        try:
            reply = self.request("node_info", body)
        except ClientError as exc:
            self.error(f"slurm_load_partitions error: {exc}")
            return
        nodes = {n["name"]: n for n in reply.get("nodes", [])}
        parts = reply.get("partitions", [])
        if rest:
            parts = [p for p in parts if p["name"] == rest[0]]
            if not parts:
                self.error(f"Partition {rest[0]} not found")
                return
        elif not self.all:
            parts = [p for p in parts if not p.get("hidden", False)]
        if not parts:
            sys.stdout.write("No partitions in the system\n")
            return
        sys.stdout.write("".join(format_partition(p, nodes, self.oneliner) for p in parts))

    def show_config(self, rest: list[str]) -> None:
        from plurm.wire.client import ClientError, read_settings

        try:
            reply = self.request("config", {})
        except ClientError as exc:
            self.error(f"slurm_load_ctl_conf error: {exc}")
            return
        options = reply.get("options", {})
        host = "localhost"
        try:
            host = read_settings().host
        except ClientError:
            pass
        text = format_config(options, reply.get("path") or "", reply.get("cluster") or "", time.time(), host)
        if rest:
            wanted = rest[0].lower()
            lines = [line for line in text.splitlines()[1:] if line.split(" ", 1)[0].lower() == wanted]
            sys.stdout.write("".join(line + "\n" for line in lines))
            return
        sys.stdout.write(text)

    def show_hostnames(self, rest: list[str]) -> None:
        from plurm.grammar.hostlist import HostlistError, expand

        text = rest[0] if rest else os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
        if not text:
            self.error("scontrol: error: host list is empty")
            return
        text = _read_hostfile(text)
        try:
            names = expand(text)
        except HostlistError:
            self.error(f"scontrol: error: Invalid hostlist: {text}")
            return
        sys.stdout.write("".join(name + "\n" for name in names))

    def show_hostlist(self, rest: list[str], sort: bool) -> None:
        from plurm.grammar.hostlist import HostlistError, compress, expand

        if not rest:
            self.error("scontrol: error: host list is empty")
            return
        text = _read_hostfile(rest[0])
        try:
            names = expand(text)
            result = compress(names, sort=True) if sort else compress(names)
        except HostlistError:
            self.error(f"scontrol: error: Invalid hostlist: {text}")
            return
        sys.stdout.write(result + "\n")

    def show_steps(self, rest: list[str]) -> None:
        # plurm does not serve step records to scontrol yet: answer as Slurm does for a
        # step it does not know.
        if not rest:
            sys.stdout.write("No job steps in the system\n")
            return
        job, _, step = rest[0].partition(".")
        step = step if step.isdigit() else "0"
        sys.stdout.write(f"Job step {job}.{step} not found\n")
        self.rc = 1

    # ------------------------------------------------------------------ update / hold
    def _job_update(self, job_ids: list[str], fields: dict[str, str], what: str) -> None:
        from plurm.wire.client import ClientError

        try:
            reply = self.request("update_job", {"job_ids": job_ids, "fields": fields})
        except ClientError as exc:
            self.error(f"{what} error: {exc}")
            return
        for result in reply.get("results", []):
            if "error" in result:
                if self.quiet:
                    self.rc = 1
                else:
                    self.error(f"{result['error']} for job {result.get('job')}")

    def cmd_hold(self, args: list[str]) -> None:
        self._hold(args, "admin" if os.getuid() == 0 else "user")

    def cmd_uhold(self, args: list[str]) -> None:
        self._hold(args, "user")

    def _resolve_names(self, words: list[str]) -> list[str]:
        """hold/release accept job names as well as ids: a name means its pending jobs."""
        import re

        ids: list[str] = []
        names = [w for w in words if not re.fullmatch(r"\d+(_(\d+|\[[\d,\-]+\]))?", w)]
        ids = [w for w in words if w not in names]
        if names:
            from plurm.wire.client import ClientError

            try:
                reply = self.request("job_info", {"names": names, "states": ["PENDING"]})
            except ClientError as exc:
                self.error(f"slurm_load_jobs error: {exc}")
                return ids
            found = [str(j["job_id"]) for j in reply.get("jobs", [])]
            if not found:
                for name in names:
                    self.error(f"Invalid job id specified for job {name}")
            ids.extend(found)
        return ids

    def _hold(self, args: list[str], kind: str) -> None:
        words = _job_list(args)
        if not words:
            self.error("scontrol: error: too few arguments for keyword:hold")
            return
        ids = self._resolve_names(words)
        if ids:
            self._job_update(ids, {"hold": kind}, "slurm_update")

    def cmd_release(self, args: list[str]) -> None:
        words = _job_list(args)
        if not words:
            self.error("scontrol: error: too few arguments for keyword:release")
            return
        ids = self._resolve_names(words)
        if ids:
            self._job_update(ids, {"release": "1"}, "slurm_update")

    def cmd_update(self, args: list[str]) -> None:
        pairs: list[tuple[str, str]] = []
        for arg in args:
            key, sep, value = arg.partition("=")
            if not sep:
                self.error(f"scontrol: error: Invalid input: {arg}")
                self.error("Request aborted")
                return
            pairs.append((key, value))
        if not pairs:
            self.error("scontrol: error: too few arguments for keyword:update")
            return
        first = pairs[0][0].lower()
        if first in ("jobid", "job"):
            self._update_job(pairs)
        elif first in ("nodename", "node"):
            self._update_node(pairs)
        else:
            keys = {k.lower() for k, _ in pairs}
            if "jobid" in keys:
                self._update_job(pairs)
            elif "nodename" in keys:
                self._update_node(pairs)
            else:
                self.error("No valid entity in update command")
                self.error('Input line must include "NodeName", "PartitionName", "Reservation=<name>", '
                           '"JobId", "StepId", "FrontendName", "SuspendExcNodes", "SuspendExcParts", or '
                           '"SuspendExcStates"')

    def _update_job(self, pairs: list[tuple[str, str]]) -> None:
        ids: list[str] = []
        fields: dict[str, str] = {}
        for key, value in pairs:
            lowered = key.lower()
            if lowered in ("jobid", "job"):
                ids.extend(v for v in value.split(",") if v)
            elif lowered in _JOB_KEYS:
                fields[_JOB_KEYS[lowered]] = value
            else:
                self.error(f"Update of this parameter is not supported: {key}={value}")
                self.error("Request aborted")
                return
        if not fields:
            self.error("No changes specified")
            return
        self._job_update(ids, fields, "slurm_update")

    def _update_node(self, pairs: list[tuple[str, str]]) -> None:
        from plurm.wire.client import ClientError
        from plurm.grammar.hostlist import HostlistError, expand

        nodes: list[str] = []
        state: str | None = None
        reason: str | None = None
        for key, value in pairs:
            lowered = key.lower()
            if lowered in ("nodename", "node"):
                try:
                    nodes.extend(expand(value))
                except HostlistError:
                    self.error(f"scontrol: error: Invalid node name specified: {value}")
                    return
            elif lowered == "state":
                upper = value.upper()
                valid = {s.upper(): s for s in _NODE_STATES} | {"DOWN": "DOWN", "IDLE": "IDLE"}
                if upper not in valid:
                    self.error(f"Invalid input: {key}={value}")
                    self.error("Request aborted")
                    self.error("Valid states are: " + " ".join(_NODE_STATES))
                    return
                state = upper
            elif lowered == "reason":
                reason = value
            else:
                self.error(f"Update of this parameter is not supported: {key}={value}")
                self.error("Request aborted")
                return
        if state in ("DRAIN", "DOWN", "FAIL") and not reason:
            self.error("You must specify a reason when DOWNING or DRAINING a node. Request denied")
            return
        body: dict = {"nodes": nodes, "state": state, "reason": reason}
        try:
            self.request("update_node", body)
        except ClientError as exc:
            self.error(f"slurm_update error: {exc}")


def _slurm_message(text: str) -> str:
    """Slurm says "Unable to contact slurm controller (connect failure)" without the OS detail."""
    marker = "(connect failure)"
    if marker in text:
        return text[:text.index(marker) + len(marker)]
    return text


def _read_hostfile(text: str) -> str:
    """scontrol accepts an absolute path to a file of host names."""
    if text.startswith("/"):
        try:
            with open(text, encoding="utf-8") as handle:
                return ",".join(handle.read().split())
        except OSError:
            return text
    return text


def _job_list(args: list[str]) -> list[str]:
    ids: list[str] = []
    for arg in args:
        ids.extend(part for part in arg.replace(",", " ").split() if part)
    return ids


# ------------------------------------------------------------------ show config
# (key, Slurm's default) in the order scontrol prints them; values from slurm.conf override.
_CONFIG_DEFAULTS = (
    ("AccountingStorageBackupHost", "(null)"), ("AccountingStorageEnforce", "none"),
    ("AccountingStorageHost", "localhost"), ("AccountingStorageExternalHost", "(null)"),
    ("AccountingStorageParameters", "(null)"), ("AccountingStoragePort", "0"),
    ("AccountingStorageTRES", "cpu,mem,energy,node,billing,fs/disk,vmem,pages"),
    ("AccountingStorageType", "accounting_storage/none"), ("AccountingStorageUser", "root"),
    ("AccountingStoreFlags", "(null)"), ("AcctGatherEnergyType", "acct_gather_energy/none"),
    ("AcctGatherFilesystemType", "acct_gather_filesystem/none"),
    ("AcctGatherInterconnectType", "acct_gather_interconnect/none"), ("AcctGatherNodeFreq", "0 sec"),
    ("AcctGatherProfileType", "acct_gather_profile/none"), ("AllowSpecResourcesUsage", "No"),
    ("AuthAltTypes", "(null)"), ("AuthAltParameters", "(null)"), ("AuthInfo", "(null)"),
    ("AuthType", "auth/munge"), ("BatchStartTimeout", "10 sec"),
    ("BcastExclude", "/lib,/usr/lib,/lib64,/usr/lib64"), ("BcastParameters", "(null)"),
    ("BOOT_TIME", None), ("BurstBufferType", "(null)"), ("CliFilterPlugins", "(null)"),
    ("ClusterName", None), ("CommunicationParameters", "(null)"), ("CompleteWait", "0 sec"),
    ("CoreSpecPlugin", "core_spec/none"), ("CpuFreqDef", "Unknown"),
    ("CpuFreqGovernors", "OnDemand,Performance,UserSpace"), ("CredType", "cred/munge"),
    ("DebugFlags", "(null)"), ("DefMemPerNode", "UNLIMITED"), ("DependencyParameters", "(null)"),
    ("DisableRootJobs", "No"), ("EioTimeout", "60"), ("EnforcePartLimits", "NO"), ("Epilog", "(null)"),
    ("EpilogMsgTime", "2000 usec"), ("EpilogSlurmctld", "(null)"), ("ExtSensorsType", "ext_sensors/none"),
    ("ExtSensorsFreq", "0 sec"), ("FairShareDampeningFactor", "1"), ("FederationParameters", "(null)"),
    ("FirstJobId", "1"), ("GetEnvTimeout", "2 sec"), ("GresTypes", "(null)"),
    ("GpuFreqDef", "high,memory=high"), ("GroupUpdateForce", "1"), ("GroupUpdateTime", "600 sec"),
    ("HASH_VAL", "Match"), ("HealthCheckInterval", "0 sec"), ("HealthCheckNodeState", "ANY"),
    ("HealthCheckProgram", "(null)"), ("InactiveLimit", "0 sec"),
    ("InteractiveStepOptions", "--interactive --preserve-env --pty $SHELL"),
    ("JobAcctGatherFrequency", "30"), ("JobAcctGatherType", "jobacct_gather/none"),
    ("JobAcctGatherParams", "(null)"), ("JobCompHost", "localhost"), ("JobCompLoc", "(null)"),
    ("JobCompPort", "0"), ("JobCompType", "jobcomp/none"), ("JobCompUser", "root"),
    ("JobContainerType", "job_container/none"), ("JobCredentialPrivateKey", "(null)"),
    ("JobCredentialPublicCertificate", "(null)"), ("JobDefaults", "(null)"), ("JobFileAppend", "0"),
    ("JobRequeue", "1"), ("JobSubmitPlugins", "(null)"), ("KillOnBadExit", "0"), ("KillWait", "30 sec"),
    ("LaunchParameters", "(null)"), ("LaunchType", "launch/slurm"), ("Licenses", "(null)"),
    ("LogTimeFormat", "iso8601_ms"), ("MailDomain", "(null)"), ("MailProg", "/bin/mail"),
    ("MaxArraySize", "1001"), ("MaxDBDMsgs", "0"), ("MaxJobCount", "10000"), ("MaxJobId", "67043328"),
    ("MaxMemPerNode", "UNLIMITED"), ("MaxNodeCount", None), ("MaxStepCount", "40000"),
    ("MaxTasksPerNode", "512"), ("MCSPlugin", "mcs/none"), ("MCSParameters", "(null)"),
    ("MessageTimeout", "10 sec"), ("MinJobAge", "300 sec"), ("MpiDefault", "none"), ("MpiParams", "(null)"),
    ("MULTIPLE_SLURMD", "Yes"), ("NEXT_JOB_ID", "1"), ("NodeFeaturesPlugins", "(null)"),
    ("OverTimeLimit", "0 min"), ("PluginDir", "/usr/lib/x86_64-linux-gnu/slurm-wlm"),
    ("PlugStackConfig", "(null)"), ("PowerParameters", "(null)"), ("PowerPlugin", ""),
    ("PreemptMode", "OFF"), ("PreemptType", "preempt/none"), ("PreemptExemptTime", "00:00:00"),
    ("PrEpParameters", "(null)"), ("PrEpPlugins", "prep/script"), ("PriorityParameters", "(null)"),
    ("PrioritySiteFactorParameters", "(null)"), ("PrioritySiteFactorPlugin", "(null)"),
    ("PriorityDecayHalfLife", "7-00:00:00"), ("PriorityCalcPeriod", "00:05:00"),
    ("PriorityFavorSmall", "No"), ("PriorityFlags", ""), ("PriorityMaxAge", "7-00:00:00"),
    ("PriorityUsageResetPeriod", "NONE"), ("PriorityType", "priority/basic"), ("PriorityWeightAge", "0"),
    ("PriorityWeightAssoc", "0"), ("PriorityWeightFairShare", "0"), ("PriorityWeightJobSize", "0"),
    ("PriorityWeightPartition", "0"), ("PriorityWeightQOS", "0"), ("PriorityWeightTRES", "(null)"),
    ("PrivateData", "none"), ("ProctrackType", "proctrack/cgroup"), ("Prolog", "(null)"),
    ("PrologEpilogTimeout", "65534"), ("PrologSlurmctld", "(null)"), ("PrologFlags", "(null)"),
    ("PropagatePrioProcess", "0"), ("PropagateResourceLimits", "ALL"),
    ("PropagateResourceLimitsExcept", "(null)"), ("RebootProgram", "(null)"), ("ReconfigFlags", "(null)"),
    ("RequeueExit", "(null)"), ("RequeueExitHold", "(null)"), ("ResumeFailProgram", "(null)"),
    ("ResumeProgram", "(null)"), ("ResumeRate", "300 nodes/min"), ("ResumeTimeout", "60 sec"),
    ("ResvEpilog", "(null)"), ("ResvOverRun", "0 min"), ("ResvProlog", "(null)"), ("ReturnToService", "1"),
    ("RoutePlugin", "route/default"), ("SchedulerParameters", "(null)"), ("SchedulerTimeSlice", "30 sec"),
    ("SchedulerType", "sched/backfill"), ("ScronParameters", "(null)"), ("SelectType", "select/cons_tres"),
    ("SelectTypeParameters", "CR_CORE_MEMORY"), ("SlurmUser", "root(0)"), ("SlurmctldAddr", "(null)"),
    ("SlurmctldDebug", "info"), ("SlurmctldHost[0]", None), ("SlurmctldLogFile", "(null)"),
    ("SlurmctldPort", "6817"), ("SlurmctldSyslogDebug", "(null)"), ("SlurmctldPrimaryOffProg", "(null)"),
    ("SlurmctldPrimaryOnProg", "(null)"), ("SlurmctldTimeout", "120 sec"), ("SlurmctldParameters", "(null)"),
    ("SlurmdDebug", "info"), ("SlurmdLogFile", "(null)"), ("SlurmdParameters", "(null)"),
    ("SlurmdPidFile", "/var/run/slurmd.pid"), ("SlurmdPort", "6818"), ("SlurmdSpoolDir", "/var/spool/slurmd"),
    ("SlurmdSyslogDebug", "(null)"), ("SlurmdTimeout", "300 sec"), ("SlurmdUser", "root(0)"),
    ("SlurmSchedLogFile", "(null)"), ("SlurmSchedLogLevel", "0"),
    ("SlurmctldPidFile", "/var/run/slurmctld.pid"), ("SlurmctldPlugstack", "(null)"), ("SLURM_CONF", None),
    ("SLURM_VERSION", None), ("SrunEpilog", "(null)"), ("SrunPortRange", "0-0"), ("SrunProlog", "(null)"),
    ("StateSaveLocation", "/var/spool/slurmctld"), ("SuspendExcNodes", "(null)"),
    ("SuspendExcParts", "(null)"), ("SuspendProgram", "(null)"), ("SuspendRate", "60 nodes/min"),
    ("SuspendTime", "INFINITE"), ("SuspendTimeout", "30 sec"), ("SwitchParameters", "(null)"),
    ("SwitchType", "switch/none"), ("TaskEpilog", "(null)"), ("TaskPlugin", "task/none"),
    ("TaskPluginParam", "(null type)"), ("TaskProlog", "(null)"), ("TCPTimeout", "2 sec"), ("TmpFS", "/tmp"),
    ("TopologyParam", "(null)"), ("TopologyPlugin", "topology/none"), ("TrackWCKey", "No"),
    ("TreeWidth", "50"), ("UsePam", "No"), ("UnkillableStepProgram", "(null)"),
    ("UnkillableStepTimeout", "60 sec"), ("VSizeFactor", "0 percent"), ("WaitTime", "0 sec"),
    ("X11Parameters", "(null)"),
)
# Keys whose slurm.conf number scontrol prints with a unit.
_CONFIG_UNITS = {
    "acctgathernodefreq": " sec", "batchstarttimeout": " sec", "completewait": " sec",
    "epilogmsgtime": " usec", "extsensorsfreq": " sec", "getenvtimeout": " sec", "groupupdatetime": " sec",
    "healthcheckinterval": " sec", "inactivelimit": " sec", "killwait": " sec", "messagetimeout": " sec",
    "minjobage": " sec", "overtimelimit": " min", "resumerate": " nodes/min", "resumetimeout": " sec",
    "resvoverrun": " min", "schedulertimeslice": " sec", "slurmctldtimeout": " sec", "slurmdtimeout": " sec",
    "suspendrate": " nodes/min", "suspendtimeout": " sec", "tcptimeout": " sec",
    "unkillablesteptimeout": " sec", "vsizefactor": " percent", "waittime": " sec",
}
_CONFIG_UPPER = {"selecttypeparameters", "enforcepartlimits", "preemptmode"}


def format_config(options: dict, path: str, cluster: str, now: float, host: str) -> str:
    """``scontrol show config``: Slurm's keys in Slurm's order, slurm.conf values over defaults."""
    from plurm import SLURM_COMPAT_VERSION
    from plurm.tools.showfmt import iso

    given = {str(k).lower(): str(v) for k, v in options.items()}
    out = [f"Configuration data as of {iso(now)}\n"]
    for key, default in _CONFIG_DEFAULTS:
        lowered = key.lower()
        value = given.get(lowered)
        if key == "BOOT_TIME":
            value = iso(now)
        elif key == "ClusterName":
            value = value or cluster or "(null)"
        elif key == "SlurmctldHost[0]":
            value = given.get("slurmctldhost") or given.get("controlmachine") or host
        elif key == "SLURM_CONF":
            value = path or "(null)"
        elif key == "SLURM_VERSION":
            value = SLURM_COMPAT_VERSION
        elif key == "MaxNodeCount":
            value = value or "0"
        elif key in ("SlurmUser", "SlurmdUser") and value is not None:
            value = f"{value}({_uid_of(value)})"
        elif value is not None:
            if lowered in _CONFIG_UNITS and value.lstrip("-").isdigit():
                value += _CONFIG_UNITS[lowered]
            if lowered in _CONFIG_UPPER:
                value = value.upper()
        if value is None:
            value = default or ""
        if key == "DefMemPerNode" and "defmempercpu" in given:
            key, value = "DefMemPerCPU", given["defmempercpu"]
        if key == "MaxMemPerNode" and "maxmempercpu" in given:
            key, value = "MaxMemPerCPU", given["maxmempercpu"]
        out.append(f"{key:<23} = {value}\n")
    out.append("\n")
    primary = (given.get("slurmctldhost") or given.get("controlmachine") or host).split("(", 1)[0]
    out.append(f"Slurmctld(primary) at {primary} is UP\n")
    return "".join(out)


def _uid_of(user: str) -> int:
    if user.isdigit():
        return int(user)
    try:
        import pwd

        return pwd.getpwnam(user).pw_uid
    except (ImportError, KeyError):
        return 0


# ------------------------------------------------------------------ entry point
def _split_line(line: str) -> list[str]:
    import shlex

    try:
        return shlex.split(line)
    except ValueError:
        return line.split()


# scontrol's getopt table: long name -> (key, has_arg); --usage is --help
_SHORT = "+adFhM:oQu:vV"
_LONG = {
    "all": ("a", 0), "details": ("d", 0), "federation": ("federation", 0), "future": ("F", 0),
    "help": ("h", 0), "hide": ("hide", 0), "local": ("local", 0), "cluster": ("M", 1),
    "clusters": ("M", 1), "oneliner": ("o", 0), "quiet": ("Q", 0), "sibling": ("sibling", 0),
    "uid": ("u", 1), "verbose": ("v", 0), "version": ("V", 0), "usage": ("h", 0),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    sc = Scontrol()
    # getopt_long with '+': the first word that is not an option starts the command
    it = iter_getopt(PROG, argv, Table(_SHORT, _LONG))
    while True:
        try:
            key = next(it).key
        except StopIteration as stop:
            words: list[str] = stop.value
            break
        except OptionError as exc:
            sys.stderr.write(f"{exc.message}\n{try_help(PROG)}\n")
            return 1
        if key == "a":
            sc.all = True
        elif key == "d":
            sc.details += 1
        elif key == "o":
            sc.oneliner = True
        elif key == "Q":
            sc.quiet = True
        elif key == "v":
            sc.verbose += 1
        elif key == "V":
            sc.cmd_version([])
            return 0
        elif key == "h":
            sys.stdout.write(HELP)
            return 0
        # -F, -M, -u, --federation, --hide, --local, --sibling: one cluster, no federation,
        # requests run as the caller: accepted, nothing to do
    try:
        if words:
            return sc.run_words(words)
        # Interactive mode: one command per line from standard input.
        interactive = sys.stdin.isatty()
        while True:
            if interactive:
                sys.stdout.write(f"{PROG}: ")
                sys.stdout.flush()
            line = sys.stdin.readline()
            if not line:
                break
            sc.run_words(_split_line(line))
        return sc.rc
    except _Exit as exc:
        return exc.code
    except KeyboardInterrupt:
        return 130


# Slurm 22.05's text, byte for byte (trailing blanks and tabs included).
HELP = (
    'scontrol [<OPTION>] [<COMMAND>]                                            \n'
    '    Valid <OPTION> values are:                                             \n'
    '     -a, --all      Equivalent to "all" command                          \n'
    '     -d, --details  Equivalent to "details" command                      \n'
    '     --federation   Report federated job information if a member of a  one \n'
    '     -F, --future   Report information about nodes in "FUTURE" state.    \n'
    '     -h, --help     Equivalent to "help" command                         \n'
    '     --hide         Equivalent to "hide" command                         \n'
    '     --local        Report information only about jobs on the local cluster.\n'
    '\t            Overrides --federation.                                \n'
    '     -M, --cluster  Equivalent to "cluster" command. Implies --local.    \n'
    '                    NOTE: SlurmDBD must be up.                             \n'
    '     -o, --oneliner Equivalent to "oneliner" command                     \n'
    '     -Q, --quiet    Equivalent to "quiet" command                        \n'
    '     --sibling      Report information about all sibling jobs on a         \n'
    '\t            federated cluster. Implies --federation option.        \n'
    '     -u,--uid       Update job as user "uid" instead of the invoking user.\n'
    '     -v, --verbose  Equivalent to "verbose" command                      \n'
    '     -V, --version  Equivalent to "version" command                      \n'
    '\t\t\t\t\t\t\t\t\t   \n'
    '  <keyword> may be omitted from the execute line and scontrol will execute \n'
    '  in interactive mode. It will process commands as entered until explicitly\n'
    '  terminated.                                                              \n'
    '\t\t\t\t\t\t\t\t\t   \n'
    '    Valid <COMMAND> values are:                                            \n'
    '     abort                    shutdown slurm controller immediately        \n'
    '\t\t\t      generating a core file.                      \n'
    '     all                      display information about all partitions,    \n'
    '\t\t\t      including hidden partitions.                 \n'
    '     cancel_reboot <nodelist> Cancel pending reboot on nodes.              \n'
    '     cluster                  cluster to issue commands to.  Default is    \n'
    '\t\t\t      current cluster.  cluster with no name will  \n'
    '\t\t\t      reset to default.                            \n'
    '                              NOTE: SlurmDBD must be up.                   \n'
    '     completing               display jobs in completing state along with  \n'
    '\t\t\t      their completing or down nodes               \n'
    '     create <SPECIFICATIONS>  create a new partition or reservation        \n'
    '     details                  evokes additional details from the "show"  \n'
    '\t\t\t      command                                      \n'
    '     delete <SPECIFICATIONS>  delete the specified partition or reservation\n'
    '     errnumstr <ERRNO>        Given a Slurm error number, return a         \n'
    '                              descriptive string.                          \n'
    '     exit                     terminate scontrol                           \n'
    '     fsdampeningfactor <factor> Set the FairShareDampeningFactor in slurmctld\n'
    '     help                     print this description of use.               \n'
    '     hold <job_list>          prevent specified job from starting. <job_list>\n'
    '\t\t\t      is either a space separate list of job IDs or\n'
    '\t\t\t      job names \n'
    '     holdu <job_list>         place user hold on specified job (see hold)  \n'
    '     hide                     do not display information about hidden      \n'
    '\t\t\t      partitions                                   \n'
    '     listpids <job_id<.step>> List pids associated with the given jobid, or\n'
    '\t\t\t      all jobs if no id is given (This will only   \n'
    '\t\t\t      display the processes on the node which the  \n'
    '\t\t\t      scontrol is ran on, and only for those       \n'
    '\t\t\t      processes spawned by Slurm and their         \n'
    '\t\t\t      descendants)                                 \n'
    '     notify <job_id> msg      send message to specified job                \n'
    '     oneliner                 report output one record per line.           \n'
    '     pidinfo <pid>            return slurm job information for given pid.  \n'
    '     ping                     print status of slurmctld daemons.           \n'
    '     quiet                    print no messages other than error messages. \n'
    '     quit                     terminate this command.                      \n'
    '     reboot [ASAP] [nextstate=] [reason=] <ALL|nodelist>\t\t   \n'
    '\t\t\t      reboot the nodes when they become idle.      \n'
    '     reconfigure              re-read configuration files.                 \n'
    '     release <job_list>       permit specified job to start (see hold)     \n'
    '     requeue <job_id>         re-queue a batch job                         \n'
    '     requeuehold <job_id>     re-queue and hold a batch                    \n'
    '     resume <jobid_list>      resume previously suspended job (see suspend)\n'
    '     setdebug <level>         set slurmctld debug level                    \n'
    '     setdebugflags [+|-]<flag>  add or remove slurmctld DebugFlags         \n'
    '     schedloglevel <level>    set scheduler log level                      \n'
    '     show <ENTITY> [<ID>]     display state of identified entity, default  \n'
    '\t\t\t      is all records.                              \n'
    '     shutdown <OPTS>          shutdown slurm daemons                       \n'
    '\t\t\t      (the primary controller will be stopped)     \n'
    '     suspend <job_list>       susend specified job (see resume)            \n'
    '     top <job_list>           Put specified job first in queue for user    \n'
    '     token [lifespan=] [username=] fetch an auth token                     \n'
    '     takeover                 ask slurm backup controller to take over     \n'
    '     uhold <jobid_list>       place user hold on specified job (see hold)  \n'
    '     update <SPECIFICATIONS>  update job, node, partition, reservation, or \n'
    '\t\t\t      step                                         \n'
    '     verbose                  enable detailed logging.                     \n'
    '     version                  display tool version number.                 \n'
    '     wait_job <job_id>        wait until the nodes allocated to the job    \n'
    '\t\t\t      are booted and usable                        \n'
    '     write batch_script <job_id> <optional filename>                       \n'
    '                              Write the batch script for a given job to a  \n'
    '                              local file. Default is slurm-<job_id>.sh if  \n'
    '                              the (optional) filename is not given.        \n'
    '     write config <optional filename>                                      \n'
    '                              Write the current configuration to a file    \n'
    '                              with the naming convention of                \n'
    '                              slurm.conf.<datetime> in the same directory  \n'
    '                              as the original slurm.conf.                  \n'
    '                              If a filename is given that file location    \n'
    '                              with a .<datetime> suffix is created.        \n'
    '     !!                       Repeat the last command entered.             \n'
    '\t\t\t\t\t\t\t\t\t   \n'
    '  <ENTITY> may be "aliases", "assoc_mgr", "bbstat", "burstBuffer", \n'
    '       "config", "daemons", "dwstat", "federation", "frontend",  \n'
    '       "hostlist", "hostlistsorted", "hostnames", "job",           \n'
    '       "licenses", "node", "partition", "reservation", "slurmd", \n'
    '       "step", or "topology"                                           \n'
    '\t\t\t\t\t\t\t\t\t   \n'
    '  <ID> may be a configuration parameter name, job id, node name, partition \n'
    '       name, reservation name, job step id, license name or hostlist or    \n'
    '       pathname to a list of host names.                                   \n'
    '\t\t\t\t\t\t\t\t\t   \n'
    '  <HOSTLIST> may either be a comma separated list of host names or the     \n'
    "       absolute pathname of a file (with leading '/' containing host names \n"
    '       either separated by commas or new-lines                             \n'
    '\t\t\t\t\t\t\t\t\t   \n'
    '  <LEVEL> may be an integer value like SlurmctldDebug in the slurm.conf    \n'
    '       file or the name of the most detailed errors to report (e.g. "info",\n'
    '       "verbose", "debug", "debug2", etc.).                          \n'
    '\t\t\t\t\t\t\t\t\t   \n'
    '  <SLEVEL> may be an integer value like SlurmSchedLogLevel in the          \n'
    '       slurm.conf file or "enable" or "disable".                       \n'
    '\t\t\t\t\t\t\t\t\t   \n'
    '  <OPTS> may be "slurmctld" to shutdown just the slurmctld daemon,       \n'
    '       otherwise all slurm daemons are shutdown                            \n'
    '\t\t\t\t\t\t\t\t\t   \n'
    '  Node names may be specified using simple range expressions,              \n'
    '  (e.g. "lx[10-20]" corresponds to lx10, lx11, lx12, ...)                \n'
    '  The job step id is the job id followed by a period and the step id.      \n'
    '\t\t\t\t\t\t\t\t\t   \n'
    '  <SPECIFICATIONS> are specified in the same format as the configuration   \n'
    '  file. You may wish to use the "show" keyword then use its output as    \n'
    '  input for the update keyword, editing as needed.                         \n'
    '\t\t\t\t\t\t\t\t\t   \n'
    '  All commands and options are case-insensitive, although node names and   \n'
    '  partition names tests are case-sensitive (node names "LX" and "lx"   \n'
    '  are distinct).                                                       \n'
    '\n'
)

if __name__ == "__main__":
    sys.exit(main())
