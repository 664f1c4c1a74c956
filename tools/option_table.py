"""docs/compatibility.md's table of every sbatch, srun and salloc option and what plurm does with it.

``python -m plurm.tools.option_table`` rewrites the section "## Every sbatch, srun and salloc
option" of docs/compatibility.md from the option table (grammar/options.py) and from what the
commands act on (tools/jobspec.py's ``_HANDLED`` and ``_KEPT_QUIETLY``); ``--print`` only prints it.
tests/tools/test_option_table.py fails when an option is missing from the page, or when the page
says "acts" for an option sbatch still warns about.

Issue 14's areas land one by one: an option of an area whose ``_HANDLED`` line does not name it
yet is "(issue 14: in progress)" here, so regenerating after each landing keeps the page true.
"""

from __future__ import annotations

import sys
from pathlib import Path

from plurm.grammar.options import ALL_OPTIONS, Option
from plurm.tools import jobspec

HEADING = "## Every sbatch, srun and salloc option"
DOC = Path(__file__).resolve().parents[1] / "docs" / "compatibility.md"

# The other areas of issue 14 and their options (their status comes from jobspec._HANDLED).
AREAS = {
    "reservations": {"reservation"}, "licenses": {"licenses"}, "mail": {"mail-type", "mail-user"},
    "topology": {"sockets-per-node", "cores-per-socket", "threads-per-core", "ntasks-per-core", "ntasks-per-socket",
                 "ntasks-per-gpu", "hint", "mincpus", "core-spec", "thread-spec", "extra-node-info"},
    "binding": {"cpu-bind", "distribution", "mem-bind", "gpu-bind", "gres-flags", "gpus-per-socket"},
    "timeprio": {"time-min", "deadline", "priority", "prefer", "tmp", "overcommit", "spread-job", "use-min-nodes",
                 "no-kill", "nodefile", "wait-all-nodes", "delay-boot"},
    "mpi": {"mpi"}, "hetjob": {"het-group"},
}

# Issue 14 item 8 (tools/options_rest.py, corescheduler/core_rest.py): as the real 22.05 does
# without the plugin or hardware, compared in tests/tools/test_options_rest.py.
_AS_SLURM = "acts (as Slurm without the plugin: "
REST = {
    "cpu-freq": _AS_SLURM + "no cpufreq here)", "gpu-freq": _AS_SLURM + "no GPU clock control)",
    "switches": _AS_SLURM + "topology/none)", "bb": _AS_SLURM + "no burst buffer)",
    "bbf": _AS_SLURM + "no burst buffer)", "container": "acts (oci.conf RunTimeRun; without oci.conf as Slurm)",
    "clusters": "acts (one cluster)", "cluster-constraint": _AS_SLURM + "no federation)",
    "network": _AS_SLURM + "no switch plugin)", "power": _AS_SLURM + "no power plugin)",
    "context": _AS_SLURM + "no SELinux)", "batch": _AS_SLURM + "no node_features)",
    "reboot": "acts (operators only)", "x11": "refused (as Slurm without a display; plurm forwards no X11)",
}
NOTES = {
    "cpu-freq": "SLURM_CPU_FREQ_REQ in the job, `CPU_min_freq`/`CPU_max_freq`/`Governor` in scontrol show job; "
                "22.05's refusals (`high-low`, unknown words); no frequency is set (no cpufreq in sysfs)",
    "gpu-freq": "SLURM_GPU_FREQ (sbatch, salloc), `TresFreq=gpu:...`; 22.05's refusal of a bad value",
    "switches": "`Switches=N@HH:MM:SS` (MaxSwitchWait 5 min by default); placement unchanged",
    "bb": "`BurstBuffer=` shown, the job runs", "bbf": "accepted, nothing shown, the job runs",
    "container": "with oci.conf's `RunTimeRun=` (crun, runc) srun's tasks run in the bundle "
                 "(nodeagent/container.py; the batch script itself does not); without oci.conf the job runs "
                 "uncontained with SLURM_CONTAINER and `Container=`, as 22.05; salloc refuses it without "
                 "LaunchParameters=use_interactive_step",
    "clusters": "this cluster's name (or `all`): `Submitted batch job N on cluster NAME`; any other: 22.05's "
                "\"No cluster 'X' known by database.\" (exit 1 when none is known)",
    "cluster-constraint": "`ClusterFeatures=` shown", "network": "`Network=` shown; salloc sets SLURM_NETWORK",
    "power": "`Power=LEVEL`; another word: \"Ignoring unrecognized power option\" (sbatch twice, as 22.05)",
    "context": "kept, no effect", "batch": "refused at submission: \"Job --batch option is invalid or not a subset "
                                          "of --constraints\"",
    "reboot": "the job is CONFIGURING until its nodes registered again (RebootProgram; on a local cluster plurmd "
              "restarts), nodes ALLOCATED+NOT_RESPONDING+POWERING_UP (sinfo `alloc#`); past ResumeTimeout DOWN "
              "\"reboot timed out\" and the job requeued or NODE_FAIL; srun waits, salloc does not; others than "
              "operators refused as 22.05; ignored where no node can reboot (tests/integration/test_reboot_job.py)",
    "mpi": "`pmi2` (PMI-1 and PMI-2 on PMI_FD: MPICH) and `pmix`/`pmix_v4` through the host's libpmix (Open MPI; "
           "no direct modex, spawn or partial fences); `list`; others refused with 22.05's words",
    "x11": "22.05's refusals: no DISPLAY, no local socket, no xauth cookie (exit 255); past them plurm refuses too",
    "wait": "sbatch waits for the job and exits with its code",
    # area: binding (tests/integration/test_binding.py against reference/binding/)
    "cpu-bind": "with TaskPlugin=task/affinity each task's mask (sched_setaffinity): none, rank, map_cpu, mask_cpu, "
                "rank_ldom, map_ldom, mask_ldom, sockets, cores, threads, ldoms (a socket is a NUMA domain), "
                "verbose lines and SLURM_CPU_BIND* as 22.05.8; without task/affinity 22.05.8's \"lacks support\" "
                "line; no auto binding (TaskPluginParam=Sockets, Cores or Threads sets a default)",
    "distribution": "-m block, cyclic, plane=N: the ranks each node runs (node counts are the allocation's, as "
                    "22.05.8); the second level orders CPUs for sockets/cores/threads binding; Pack/NoPack "
                    "ignored; arbitrary needs -w (then block order); sbatch/salloc set SLURM_DISTRIBUTION",
    "mem-bind": "with task/affinity: local, rank, map_mem, mask_mem as set_mempolicy(MPOL_BIND) over the NUMA "
                "nodes in /sys (one here), prefer as MPOL_PREFERRED; verbose line, SLURM_MEM_BIND*, help",
    "gpu-bind": "per task: single:N, map_gpu, mask_gpu (the job's GPUs on the node in order), per_task:N, closest "
                "(the backends' NUMA nodes), none; the vendor's variables per task, verbose line; sbatch/salloc "
                "set SLURM_GPU_BIND",
    "gpus-per-socket": "N x --sockets-per-node GPUs per node (GPU locality to sockets not enforced)",
    "gres-flags": "enforce-binding: `GresEnforceBind=Yes`, and the job starts only where the CPUs local to its GPUs "
                  "(gres.conf Cores=, else their NUMA nodes) can hold its CPUs, else Resources (free local CPUs "
                  "estimated as local minus allocated); plurmd gives GPU-local CPUs first; disable-binding: no "
                  "preference",
    "get-user-env": "sbatch: the node fills the job's environment in with the user's login environment (`su -`), "
                    "sbatch's values first, for any user as 22.05.8; its timeout and S/L mode are not applied (8 s); "
                    "the value checked as 22.05.8 (`[timeout][L|S]`, else \"Invalid --get-user-env specification\", "
                    "exit 255; grammar/getuserenv.py); salloc: the same check, then no effect: 22.05.8's salloc "
                    "accepts it (its --help: \"used by Moab. See srun man page.\"; salloc(1) and srun(1) do not "
                    "list it) and the command runs in salloc's own environment",
    "propagate": "the submitting process's soft limits (the names given, else PropagateResourceLimits less "
                 "PropagateResourceLimitsExcept; ALL by default) as SLURM_RLIMIT_* to the node, set in the batch "
                 "shell and each task, never above the node's hard limit",
    "export-file": "the job's environment from NUL-separated NAME=value entries of the file or descriptor (3 and "
                   "up) instead of sbatch's, --export's assignments over it, not read with --export=NONE (as "
                   "22.05.8); at most 4 MiB",
}
# Options of srun and salloc only, that the commands act on themselves or not yet.
OWN = {
    "jobid": ("acts", "a step in an existing allocation"),
    "disable-status": ("acts", "one Ctrl-C goes to the tasks at once (`srun: sending Ctrl-C to StepId=...`)"),
    "unbuffered": ("acts", "output as it arrives; without -u srun holds each task's lines whole, as 22.05 "
                           "(an unfinished line at most 64 KiB, then written as it is)"),
    "quit-on-interrupt": ("acts", "the first Ctrl-C ends the step, with 22.05's lines; its tasks are reported"),
    "bell": ("acts", "the terminal bell when granted (stdout a terminal only)"),
    "no-bell": ("acts", "no bell, even after a wait of more than 10 s"),
    "no-shell": ("acts", "salloc leaves the allocation RUNNING and runs no command, as 22.05"),
    "kill-on-bad-exit": ("acts", "the step ends when a task ends badly, with 22.05's lines and exit 143 "
                                 "(tools/srun_wait.py); slurm.conf's KillOnBadExit is not read"),
    # area: srun-client (tools/srun_step.py, srun_scripts.py, srun_noalloc.py; corescheduler/step_resources.py)
    "preserve-env": ("acts", "the tasks keep SLURM_NNODES/SLURM_JOB_NUM_NODES/SLURM_NTASKS/SLURM_NPROCS from srun's "
                             "environment"),
    "relative": ("acts", "the step starts at node N of the job; 22.05's refusals (with -w/-x, outside an allocation, "
                         "out of range)"),
    "no-allocate": ("acts", "root and SlurmUser: the tasks on the -w nodes with no job; others 22.05's refusal"),
    "prolog": ("acts", "run by srun before the step (SrunProlog by default, `none`); a failure aborts the step"),
    "epilog": ("acts", "run by srun after the step (SrunEpilog by default, `none`)"),
    "msg-timeout": ("acts", "the timeout of each launch request (MessageTimeout by default)"),
    "threads": ("acts", "at most N launch requests in flight (up to 60 by default; over 60 22.05's warning)"),
    "exact": ("acts", "the step holds only its tasks' CPUs, steps share nodes and wait with 22.05's lines"),
    "whole": ("acts", "the step waits for whole nodes of the job"),
    "interactive": ("acts", "salloc's interactive step: step id 4294967290, one task, holds nothing"),
    "resv-ports": ("acts", "with MpiParams=ports=P1-P2: SLURM_STEP_RESV_PORTS, no port shared by two running steps "
                           "(the first port dealt differs from 22.05's)"),
    "debugger-test": ("acts", "the tasks stop before their program runs; srun prints each one's pid and executable "
                              "as 22.05, then cancels the step (Killed, exit 137; 22.05's srun hangs there)"),
    # area: srun-node (tools/srun_launch.py, srun_bcast.py, common/multiprog.py, nodeagent/stepd_launch.py, bcast.py)
    "task-prolog": ("acts", "in each task's shell as its owner after TaskProlog; `export`/`unset`/`print` act"),
    "task-epilog": ("acts", "after each task as its owner, then TaskEpilog; killed after 10 s"),
    "multi-prog": ("acts", "ranks, `*`, `%t`/`%o`, single quotes; 22.05's errors; the file at most 1 MiB"),
    "bcast": ("acts", "the executable copied to each node (`slurm_bcast_<job>.<step>_<node>`, BcastParameters "
                      "DestDir=), written as its owner; at most 8 MiB with libraries"),
    "bcast-exclude": ("acts", "BcastExclude, then 22.05's default library directories; `NONE`"),
    "compress": ("acts", "`lz4`/`none` accepted, others 22.05's refusal (the wire always uses zlib)"),
    "send-libs": ("acts", "the executable's libraries in `<copy>_libs`, first on LD_LIBRARY_PATH"),
    "slurmd-debug": ("acts", "plurmstepd's lines for the step at level N+2 on srun's stderr"),
    "accel-bind": ("acts (as Slurm without gres/nic: GresTypes has no nic)",
                   "`g` as --gpu-bind=closest; `n` binds nothing, as 22.05 with no NIC GRES to bind to (srun(1): "
                   "tasks are bound to generic resources of type gpu and nic); `v` prints nothing, as 22.05"),
    # area: immediate (corescheduler/core_immediate.py, tools/allocation.py, salloc_watch.py)
    "immediate": ("acts", "-I: the controller fails a job its next pass did not start (22.05's causes); -I<secs>: "
                          "the command waits, then cancels; salloc exits SLURM_EXIT_IMMEDIATE"),
    "kill-command": ("acts", "on scancel or time limit, 22.05's revoke lines and the signal (SIGTERM by default, "
                             "as 22.05.8 sends) to the command's process group"),
}
NOT_YET = "no effect yet"
# Of jobspec._KEPT_QUIETLY, those that do act (elsewhere than a JobSpec field).
KEPT = {
    "quiet": ("acts", ""), "verbose": ("acts", ""), "job-name": ("acts", ""),
    "kill-on-invalid-dep": ("acts", "read by the controller from the kept options (corescheduler/core.py)"),
    "uid": ("acts", "root and SlurmUser only, from the verified sender (corescheduler/controller.py _submitter); "
                    "sbatch's 22.05 refusal for others (tests/security/test_identity.py)"),
    "gid": ("acts", "root and SlurmUser only, from the verified sender (corescheduler/controller.py _submitter); "
                    "sbatch's 22.05 refusal for others (tests/security/test_identity.py)"),
    "ignore-pbs": ("acts", "sbatch's parser skips the script's #PBS lines (tools/sbatch_cli.py)"),
    "profile": ("acts (as Slurm without the plugin: AcctGatherProfileType=acct_gather_profile/none)",
                "kept with the job; no profile is gathered, as 22.05 with no profile plugin"),
    "mcs-label": ("acts (as Slurm without the plugin: MCSPlugin=mcs/none)",
                  "kept with the job; no MCS label is applied, as 22.05 with mcs/none"),
    "acctg-freq": ("acts", "task=N: the sampling interval over JobAcctGatherFrequency (0: no sample while it runs, "
                           "usage at the end only) of srun's step, and of sbatch's batch step (nodeagent/"
                           "batch_freq.py); sbatch/salloc put it in the job's SLURM_ACCTG_FREQ, srun's input "
                           "variable: the default of the job's steps (an srun's own wins); energy/network/"
                           "filesystem: no plugin, as Slurm without one; no OverMemoryKill cap (plurm's memory "
                           "limits are cgroups')"),
    "wckey": ("acts", "kept with the job, shown by squeue %w and -O WCKey as 22.05.8 with TrackWCKey=No (tasks get "
                      "no SLURM_WCKEY, scontrol names none); TrackWCKey and sacct's WCKey not implemented"),
}


def status(opt: Option) -> tuple[str, str]:
    """(status, note) of one row of the option table."""
    key = opt.key
    if key == "wait" and "sbatch" not in opt.commands:
        return "acts", "srun: the step ends N s after its first task, with 22.05's lines (tools/srun_wait.py)"
    if key in REST:
        return REST[key], NOTES.get(key, "")
    if key in KEPT:
        return KEPT[key]
    if key in jobspec._KEPT_QUIETLY:
        return "no effect (kept, no warning)", "listed in tools/jobspec.py's _KEPT_QUIETLY"
    for area, keys in AREAS.items():
        if key in keys:
            if key in jobspec._HANDLED:
                return f"acts (issue 14: {area})", NOTES.get(key, "")
            return "(issue 14: in progress)", f"area {area}"
    if key in jobspec._HANDLED:
        return "acts", NOTES.get(key, "")
    if key in OWN:
        return OWN[key]
    return NOT_YET, "accepted; plurm's command does not act on it yet"


def rows() -> list[tuple[str, str, str, str]]:
    out = []
    for opt in ALL_OPTIONS:
        name = f"`--{opt.name}`" + (f", `-{opt.short}`" if opt.short else "")
        if opt.key != opt.name:
            name += f" (= `--{opt.key}`)"
        commands = ", ".join(p for p in ("sbatch", "srun", "salloc") if p in opt.commands)
        out.append((name, commands, *status(opt)))
    return out


def markdown() -> str:
    lines = [HEADING, "<!-- generated by `python -m plurm.tools.option_table`; checked by "
             "tests/tools/test_option_table.py -->", "",
             "Every option the three commands accept (grammar/options.py), with what plurm does with it. "
             "`acts (as Slurm without the plugin: ...)`: plurm does what the real 22.05 does on a cluster "
             "without that plugin or hardware, compared on the anchor (tests/tools/test_options_rest.py). "
             "sbatch warns \"accepts but does not act on\" for what it does not act on.", "",
             "| option | commands | status | note |", "|---|---|---|---|"]
    lines += [f"| {' | '.join(row)} |" for row in rows()]
    return "\n".join(lines) + "\n"


def update(path: Path = DOC) -> None:
    """Replace the section (up to the next ``## `` heading), or append it."""
    text = path.read_text()
    start = text.find(HEADING + "\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + markdown()
    else:
        end = text.find("\n## ", start + len(HEADING))
        text = text[:start] + markdown() + (text[end + 1:] if end >= 0 else "")
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--print" in argv:
        sys.stdout.write(markdown())
    else:
        update()
    return 0


if __name__ == "__main__":
    sys.exit(main())
