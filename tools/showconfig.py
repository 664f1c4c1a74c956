"""What ``scontrol show config`` prints: Slurm's keys in Slurm's order, slurm.conf over defaults.

A pure formatter: the caller passes the controller's ``config`` reply, the clock and the
controller's host.  The defaults are Slurm 22.05's, so a key plurm does not use still prints
the value a stock slurmctld shows.  Imported by scontrol only when ``show config`` runs.
"""

from __future__ import annotations


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
    ("ResvEpilog", "(null)"), ("ResvOverRun", "0 min"), ("ResvProlog", "(null)"), ("ReturnToService", "0"),
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
