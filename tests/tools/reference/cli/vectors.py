"""The argument vectors of the command-line differential (issue 13, point 4 and 9).

Each vector is one command run: ``id`` (unique, stable: the captures are keyed by it),
``cmd``, ``argv``, ``env`` (added to a bare environment: PATH, HOME, LANG=C, TZ=UTC) and
``needs``: ``""`` (parsing only: the command answers before it talks to a controller),
``"cluster"`` (it needs a reply: an empty answer, a header, a controller's error) or
``"job"`` (``{JOB}`` in argv is a held job submitted first: ``sbatch -H -J heldjob
--begin=2030-01-02T03:04:05 -t 10 --wrap true``; both sides cancel it afterwards).

Chosen so that the output is deterministic on both clusters (4 nodes n[1-4] in partition
debug; other users' jobs may be running on the real one): queues filtered to user
``daemon`` (who has none), ``--help``/``--usage`` texts, errors, ``sbatch -v --test-only``
(the "defined options" block), a held job's own fields.  Run by capture.py on the real
Slurm and by tests/tools/test_cli_differential.py on plurm.
"""

from __future__ import annotations

VECTORS: list[dict] = []
_seen: set[str] = set()


def v(vid: str, cmd: str, argv: list[str], env: dict[str, str] | None = None,
      needs: str = "") -> None:
    if vid in _seen:
        raise ValueError(f"duplicate vector id {vid}")
    _seen.add(vid)
    VECTORS.append({"id": vid, "cmd": cmd, "argv": argv, "env": env or {}, "needs": needs})


ALL = ("sbatch", "srun", "salloc", "squeue", "scancel", "sinfo", "sacct", "scontrol",
       "sacctmgr", "sprio", "sshare")

# ---------------------------------------------------------------- every command: getopt's words
for c in ALL:
    v(f"{c}-help", c, ["--help"])
    v(f"{c}-unknown-long", c, ["--bogus"])
    v(f"{c}-unknown-long-value", c, ["--bogus=1"])
    v(f"{c}-unknown-short", c, ["-y"] if c not in ("sacct",) else ["-y"])
    v(f"{c}-unknown-in-cluster", c, ["-vy"] if c not in ("sacct", "sacctmgr") else ["-vy"])
    v(f"{c}-version", c, ["-V"])
    v(f"{c}-version-long", c, ["--version"])
    v(f"{c}-version-prefix", c, ["--vers"])
    v(f"{c}-flag-with-value", c, ["--version=1"])
for c in ("sbatch", "srun", "salloc", "squeue", "sinfo", "sacct", "sprio", "sshare", "scancel"):
    v(f"{c}-usage", c, ["--usage"])

# ---------------------------------------------------------------- squeue
Q = ["-u", "daemon"]
v("squeue-empty-noheader", "squeue", ["-h", *Q], needs="cluster")
v("squeue-empty-header", "squeue", Q, needs="cluster")
v("squeue-bundle-hu", "squeue", ["-hu", "daemon"], needs="cluster")
v("squeue-bundle-u-attached", "squeue", ["-udaemon"], needs="cluster")
v("squeue-user-eq", "squeue", ["--user=daemon"], needs="cluster")
v("squeue-user-space", "squeue", ["--user", "daemon"], needs="cluster")
v("squeue-user-prefix", "squeue", ["--use=daemon"], needs="cluster")
v("squeue-user-prefix-us", "squeue", ["--us=daemon"], needs="cluster")
v("squeue-o-attached", "squeue", [*Q, "-o%i|%j|%u"], needs="cluster")
v("squeue-o-space", "squeue", [*Q, "-o", "%.10i %20j %u"], needs="cluster")
v("squeue-format-eq", "squeue", [*Q, "--format=%i %P %T"], needs="cluster")
v("squeue-format-prefix", "squeue", [*Q, "--form", "%i %P %T"], needs="cluster")
v("squeue-Format", "squeue", [*Q, "-O", "jobid,name,username"], needs="cluster")
v("squeue-Format-width", "squeue", [*Q, "--Format=jobid:5,name:12,state:.8"], needs="cluster")
v("squeue-Format-prefix", "squeue", [*Q, "--Form=jobid,partition"], needs="cluster")
v("squeue-Format-bad", "squeue", [*Q, "-O", "jobid,nosuchfield"], needs="cluster")
v("squeue-o-then-O", "squeue", [*Q, "-o", "%i", "-O", "name"], needs="cluster")
v("squeue-O-then-o", "squeue", [*Q, "-O", "name", "-o", "%i"], needs="cluster")
v("squeue-long", "squeue", [*Q, "-h", "-l"], needs="cluster")
v("squeue-steps", "squeue", [*Q, "-s"], needs="cluster")
v("squeue-steps-noheader", "squeue", [*Q, "-hs"], needs="cluster")
v("squeue-array", "squeue", [*Q, "-r"], needs="cluster")
v("squeue-all", "squeue", [*Q, "-a", "-h"], needs="cluster")
v("squeue-states-pd-r", "squeue", [*Q, "-t", "pd,r"], needs="cluster")
v("squeue-states-eq", "squeue", [*Q, "--states=PENDING,RUNNING"], needs="cluster")
v("squeue-states-all", "squeue", [*Q, "-t", "all"], needs="cluster")
v("squeue-states-bad", "squeue", [*Q, "-t", "FOO"], needs="cluster")
v("squeue-states-bad-second", "squeue", [*Q, "-t", "PD,FOO"], needs="cluster")
v("squeue-sort", "squeue", [*Q, "-S", "-i,P"], needs="cluster")
v("squeue-partition-debug", "squeue", [*Q, "-p", "debug"], needs="cluster")
v("squeue-jobs-missing", "squeue", ["-j", "99999999"], needs="cluster")
v("squeue-jobs-bad", "squeue", ["-j", "abc"], needs="cluster")
v("squeue-jobs-bundled", "squeue", ["-hj", "99999999"], needs="cluster")
v("squeue-jobs-long-eq", "squeue", ["--jobs=99999999"], needs="cluster")
v("squeue-after-operand", "squeue", ["foo", "-h"], needs="cluster")
v("squeue-operand", "squeue", ["foo"], needs="cluster")
v("squeue-dashdash", "squeue", ["--", "-h"], needs="cluster")
v("squeue-missing-o", "squeue", ["-o"])
v("squeue-missing-u", "squeue", ["-u"])
v("squeue-missing-format", "squeue", ["--format"])
v("squeue-missing-Format", "squeue", ["--Format"])
v("squeue-missing-partition", "squeue", ["--partition"])
v("squeue-ambiguous-no", "squeue", ["--no"])
v("squeue-ambiguous-s", "squeue", ["--s"])
v("squeue-ambiguous-st", "squeue", ["--st"])
v("squeue-ambiguous-a", "squeue", ["--a"])
v("squeue-iterate-bad", "squeue", [*Q, "-i", "abc"], needs="cluster")
v("squeue-iterate-zero", "squeue", [*Q, "-i", "0"], needs="cluster")
v("squeue-user-unknown", "squeue", ["-u", "nosuchuser_b13"], needs="cluster")
v("squeue-me", "squeue", ["--me", "-u", "daemon", "-h"], needs="cluster")
v("squeue-noconvert", "squeue", [*Q, "--noconvert", "-h"], needs="cluster")
v("squeue-verbose", "squeue", [*Q, "-h", "-v"], needs="cluster")
v("squeue-env-format", "squeue", Q, {"SQUEUE_FORMAT": "%i %j %T"}, needs="cluster")
v("squeue-env-format-o-wins", "squeue", [*Q, "-o", "%u"], {"SQUEUE_FORMAT": "%i %j"}, needs="cluster")
v("squeue-env-format2", "squeue", Q, {"SQUEUE_FORMAT2": "jobid:8,name:10,state"}, needs="cluster")
v("squeue-env-format2-over-format", "squeue", Q, {"SQUEUE_FORMAT": "%i", "SQUEUE_FORMAT2": "name"},
  needs="cluster")
v("squeue-env-format2-bad", "squeue", Q, {"SQUEUE_FORMAT2": "nosuchfield"}, needs="cluster")
v("squeue-env-sort", "squeue", Q, {"SQUEUE_SORT": "-t,i"}, needs="cluster")
v("squeue-env-states-bad", "squeue", Q, {"SQUEUE_STATES": "FOO"}, needs="cluster")
v("squeue-env-states-all", "squeue", Q, {"SQUEUE_STATES": "all"}, needs="cluster")
v("squeue-env-partition", "squeue", Q, {"SQUEUE_PARTITION": "debug"}, needs="cluster")
v("squeue-env-users", "squeue", [], {"SQUEUE_USERS": "daemon"}, needs="cluster")
v("squeue-env-posixly", "squeue", ["foo", "-h"], {"POSIXLY_CORRECT": "1"}, needs="cluster")
v("squeue-held-fields", "squeue", ["-h", "-j", "{JOB}", "-o", "%j|%u|%T|%r|%P|%D|%l"], needs="job")
v("squeue-held-Format", "squeue", ["-h", "-j", "{JOB}", "-O", "name,state,reason,timelimit,numnodes"],
  needs="job")
v("squeue-held-bundled", "squeue", ["-hj{JOB}", "-o%T"], needs="job")
v("squeue-held-states-filter", "squeue", ["-h", "-j", "{JOB}", "-t", "R", "-o%T"], needs="job")
v("squeue-held-name", "squeue", ["-h", "-n", "heldjob", "-o%j", "-j", "{JOB}"], needs="job")
v("squeue-held-env-format", "squeue", ["-h", "-j", "{JOB}"], {"SQUEUE_FORMAT": "%j %T"}, needs="job")
v("squeue-held-env-format2", "squeue", ["-h", "-j", "{JOB}"], {"SQUEUE_FORMAT2": "name:10,state"},
  needs="job")
for tf in ("standard", "relative", "%d.%m.%Y %H:%M", "%s"):
    v(f"squeue-held-timefmt-{tf.replace(' ', '_').replace('%', 'p')}", "squeue",
      ["-h", "-j", "{JOB}", "-O", "eligibletime"], {"SLURM_TIME_FORMAT": tf}, needs="job")

# ---------------------------------------------------------------- sinfo
v("sinfo-part", "sinfo", ["-h", "-o", "%P %a %D %N"], needs="cluster")
v("sinfo-part-attached", "sinfo", ["-ho%P %D"], needs="cluster")
v("sinfo-format-eq", "sinfo", ["--format=%P|%N", "-h"], needs="cluster")
v("sinfo-format-prefix", "sinfo", ["--form", "%P|%N"], needs="cluster")
v("sinfo-Format", "sinfo", ["-O", "partition,nodes,nodelist"], needs="cluster")
v("sinfo-Format-width", "sinfo", ["--Format=partition:8,nodes:.5"], needs="cluster")
v("sinfo-Format-bad", "sinfo", ["-O", "nosuchfield"], needs="cluster")
v("sinfo-nodes-filter", "sinfo", ["-h", "-n", "n[1-2]", "-o", "%N %D"], needs="cluster")
v("sinfo-N-format", "sinfo", ["-N", "-h", "-o", "%N %P"], needs="cluster")
v("sinfo-N-bundled", "sinfo", ["-Nho", "%N"], needs="cluster")
v("sinfo-partition-missing", "sinfo", ["-p", "nosuch", "-o", "%P"], needs="cluster")
v("sinfo-states-bad", "sinfo", ["-t", "FOO"], needs="cluster")
v("sinfo-states-down", "sinfo", ["-t", "down", "-o", "%P %N"], needs="cluster")
v("sinfo-states-down-h", "sinfo", ["-h", "-t", "down,drain", "-o", "%N"], needs="cluster")
v("sinfo-summarize", "sinfo", ["-s", "-o", "%P %D"], needs="cluster")
v("sinfo-noheader-summ", "sinfo", ["-hs", "-o", "%P"], needs="cluster")
v("sinfo-reservation", "sinfo", ["-T"], needs="cluster")
v("sinfo-after-operand", "sinfo", ["foo", "-h", "-o", "%P %a"], needs="cluster")
v("sinfo-dashdash", "sinfo", ["--", "-h", "-o", "%P"], needs="cluster")
v("sinfo-missing-o", "sinfo", ["-o"])
v("sinfo-missing-p", "sinfo", ["-p"])
v("sinfo-missing-format", "sinfo", ["--format"])
v("sinfo-ambiguous-no", "sinfo", ["--no"])
v("sinfo-ambiguous-s", "sinfo", ["--s"])
v("sinfo-iterate-bad", "sinfo", ["-i", "abc", "-o", "%P"], needs="cluster")
v("sinfo-sort", "sinfo", ["-h", "-S", "-P", "-o", "%P"], needs="cluster")
v("sinfo-env-format", "sinfo", ["-h"], {"SINFO_FORMAT": "%P %D %N"}, needs="cluster")
v("sinfo-env-format-o-wins", "sinfo", ["-h", "-o", "%N"], {"SINFO_FORMAT": "%P"}, needs="cluster")
v("sinfo-env-sort", "sinfo", ["-h", "-o", "%P"], {"SINFO_SORT": "-P"}, needs="cluster")
v("sinfo-env-partition", "sinfo", ["-h", "-o", "%P %D"], {"SINFO_PARTITION": "debug"}, needs="cluster")
v("sinfo-env-partition-missing", "sinfo", ["-o", "%P"], {"SINFO_PARTITION": "nosuch"}, needs="cluster")
v("sinfo-env-posixly", "sinfo", ["-o", "%P", "foo", "-h"], {"POSIXLY_CORRECT": "1"}, needs="cluster")
v("sinfo-hide-bundle", "sinfo", ["-ah", "-o", "%P"], needs="cluster")
v("sinfo-nodes-bad", "sinfo", ["-n", "n[1-", "-o", "%N"], needs="cluster")

# ---------------------------------------------------------------- sacct
A = ["-u", "daemon", "-S", "2026-01-01", "-E", "2026-01-02"]
v("sacct-empty", "sacct", A, needs="cluster")
v("sacct-empty-noheader", "sacct", ["-n", *A], needs="cluster")
v("sacct-bundle-nu", "sacct", ["-nXu", "daemon", "-S", "2026-01-01", "-E", "2026-01-02"], needs="cluster")
v("sacct-format", "sacct", [*A, "-o", "jobid,jobname%20,state"], needs="cluster")
v("sacct-format-attached", "sacct", [*A, "-ojobid,elapsed"], needs="cluster")
v("sacct-format-eq", "sacct", [*A, "--format=JobID,User,Account%-12"], needs="cluster")
v("sacct-format-prefix", "sacct", [*A, "--form", "jobid,state"], needs="cluster")
v("sacct-format-bad", "sacct", [*A, "-o", "jobid,nosuchfield"], needs="cluster")
v("sacct-parsable", "sacct", [*A, "-p", "-o", "jobid,state"], needs="cluster")
v("sacct-parsable2", "sacct", [*A, "-P", "-o", "jobid,state"], needs="cluster")
v("sacct-long", "sacct", [*A, "-l", "-n"], needs="cluster")
v("sacct-brief", "sacct", [*A, "-b"], needs="cluster")
v("sacct-allocations", "sacct", [*A, "-X"], needs="cluster")
v("sacct-states", "sacct", [*A, "-s", "CD,F"], needs="cluster")
v("sacct-states-bad", "sacct", [*A, "-s", "FOO"], needs="cluster")
v("sacct-starttime-bad", "sacct", ["-u", "daemon", "-S", "notatime"], needs="cluster")
v("sacct-endtime-bad", "sacct", ["-u", "daemon", "-E", "notatime"], needs="cluster")
v("sacct-jobs-bad", "sacct", ["-j", "abc", "-S", "2026-01-01", "-E", "2026-01-02"], needs="cluster")
v("sacct-helpformat", "sacct", ["--helpformat"])
v("sacct-helpformat-short", "sacct", ["-e"])
v("sacct-missing-o", "sacct", ["-o"])
v("sacct-missing-S", "sacct", ["-S"])
v("sacct-ambiguous-us", "sacct", ["--us=a"])
v("sacct-ambiguous-s", "sacct", ["--s"])
v("sacct-ambiguous-n", "sacct", ["--n"])
v("sacct-after-operand", "sacct", ["foo", *A], needs="cluster")
v("sacct-env-format", "sacct", A, {"SACCT_FORMAT": "jobid,state,exitcode"}, needs="cluster")
v("sacct-env-format-o-wins", "sacct", [*A, "-o", "user"], {"SACCT_FORMAT": "jobid"}, needs="cluster")
v("sacct-env-format-bad", "sacct", A, {"SACCT_FORMAT": "nosuchfield"}, needs="cluster")
v("sacct-env-format-width", "sacct", A, {"SACCT_FORMAT": "jobid%5,jobname%-30"}, needs="cluster")
v("sacct-delimiter", "sacct", [*A, "-P", "--delimiter=,", "-o", "jobid,state"], needs="cluster")
v("sacct-noconvert", "sacct", [*A, "--noconvert", "-o", "maxrss"], needs="cluster")
v("sacct-units-bad", "sacct", [*A, "--units=Q"], needs="cluster")
v("sacct-name-filter", "sacct", [*A, "--name=x", "-n"], needs="cluster")
v("sacct-timefmt", "sacct", [*A, "-o", "start,end"], {"SLURM_TIME_FORMAT": "relative"}, needs="cluster")

# ---------------------------------------------------------------- sprio
v("sprio-empty", "sprio", ["-u", "daemon"], needs="cluster")
v("sprio-empty-noheader", "sprio", ["-hu", "daemon"], needs="cluster")
v("sprio-long", "sprio", ["-l", "-u", "daemon"], needs="cluster")
v("sprio-norm", "sprio", ["-n", "-u", "daemon"], needs="cluster")
v("sprio-weights", "sprio", ["-w"], needs="cluster")
v("sprio-weights-noheader", "sprio", ["-hw"], needs="cluster")
v("sprio-weights-format", "sprio", ["-w", "-o", "%.15i %10A %10F"], needs="cluster")
v("sprio-format", "sprio", ["-u", "daemon", "-o", "%i %u %Y"], needs="cluster")
v("sprio-format-attached", "sprio", ["-udaemon", "-o%i|%Y"], needs="cluster")
v("sprio-Format", "sprio", ["-u", "daemon", "--sort=-y"], needs="cluster")
v("sprio-jobs-missing", "sprio", ["-j", "99999999"], needs="cluster")
v("sprio-jobs-bad", "sprio", ["-j", "abc"], needs="cluster")
v("sprio-missing-S", "sprio", ["-S"])
v("sprio-missing-o", "sprio", ["-o"])
v("sprio-missing-u", "sprio", ["--user"])
v("sprio-ambiguous-no", "sprio", ["--no"])
v("sprio-after-operand", "sprio", ["foo", "-u", "daemon"], needs="cluster")
v("sprio-env-format", "sprio", ["-u", "daemon"], {"SPRIO_FORMAT": "%i %Y"}, needs="cluster")
v("sprio-partition", "sprio", ["-u", "daemon", "-p", "debug"], needs="cluster")
v("sprio-user-unknown", "sprio", ["-u", "nosuchuser_b13"], needs="cluster")

# ---------------------------------------------------------------- sshare
v("sshare-user-daemon", "sshare", ["-u", "daemon", "-n", "-P", "-o", "Account,User"], needs="cluster")
v("sshare-missing-o", "sshare", ["-o"])
v("sshare-missing-u", "sshare", ["-u"])
v("sshare-missing-A", "sshare", ["--accounts"])
v("sshare-ambiguous-p", "sshare", ["--p"])
v("sshare-ambiguous-a", "sshare", ["--a"])
v("sshare-helpformat", "sshare", ["--helpformat"])
v("sshare-format-bad", "sshare", ["-o", "nosuchfield"], needs="cluster")
v("sshare-after-operand", "sshare", ["foo", "-n", "-P", "-u", "daemon", "-o", "User"], needs="cluster")

# ---------------------------------------------------------------- scancel
v("scancel-none", "scancel", [])
v("scancel-bad-id", "scancel", ["abc"])
v("scancel-bad-id-dot", "scancel", ["12.x"])
v("scancel-bad-id-array", "scancel", ["12_abc"])
v("scancel-missing-s", "scancel", ["-s"])
v("scancel-missing-u", "scancel", ["--user"])
v("scancel-bad-signal", "scancel", ["-s", "NOSUCH", "99999999"])
v("scancel-bad-signal-number", "scancel", ["--signal=999", "99999999"])
v("scancel-bad-state", "scancel", ["-t", "FOO", "-u", "daemon"])
v("scancel-ambiguous-s", "scancel", ["--s=1"])
v("scancel-ambiguous-n", "scancel", ["--n"])
v("scancel-missing-job", "scancel", ["99999999"], needs="cluster")
v("scancel-missing-job-step", "scancel", ["99999999.0"], needs="cluster")
v("scancel-missing-job-verbose", "scancel", ["-v", "99999999"], needs="cluster")
v("scancel-user-nothing", "scancel", ["-u", "daemon"], needs="cluster")
v("scancel-user-unknown", "scancel", ["-u", "nosuchuser_b13"])
v("scancel-name-nothing", "scancel", ["-n", "nosuchname_b13", "-u", "daemon"], needs="cluster")
v("scancel-bundle", "scancel", ["-vu", "daemon", "-n", "nosuchname_b13"], needs="cluster")
v("scancel-signal-prefix", "scancel", ["--sig", "USR1", "-u", "daemon"], needs="cluster")
v("scancel-dashdash", "scancel", ["--", "abc"])
v("scancel-option-after", "scancel", ["99999999", "--bogus"])
v("scancel-env-user", "scancel", [], {"SCANCEL_USER": "daemon"}, needs="cluster")
v("scancel-env-state-bad", "scancel", ["-u", "daemon"], {"SCANCEL_STATE": "FOO"})
v("scancel-held", "scancel", ["-t", "R", "{JOB}"], needs="job")
v("scancel-held-name-mismatch", "scancel", ["-n", "othername", "{JOB}"], needs="job")

# ---------------------------------------------------------------- scontrol
v("scontrol-no-command-help", "scontrol", ["help"])
v("scontrol-hostnames", "scontrol", ["show", "hostnames", "n[1-3],x"])
v("scontrol-hostnames-bundled-opts", "scontrol", ["-Fo", "show", "hostnames", "n[1-2]"])
v("scontrol-hostlist", "scontrol", ["show", "hostlist", "n1,n2,n3,m5"])
v("scontrol-hostlistsorted", "scontrol", ["show", "hostlistsorted", "n3,n1,n2"])
v("scontrol-hostnames-bad", "scontrol", ["show", "hostnames", "n[1-"])
v("scontrol-unknown-cmd", "scontrol", ["frobnicate"])
v("scontrol-show-unknown", "scontrol", ["show", "frobs"])
v("scontrol-show-job-missing", "scontrol", ["show", "job", "99999999"], needs="cluster")
v("scontrol-show-job-bad", "scontrol", ["show", "job", "abc"], needs="cluster")
v("scontrol-show-node", "scontrol", ["-o", "show", "node", "nosuchnode"], needs="cluster")
v("scontrol-show-part-missing", "scontrol", ["show", "partition", "nosuch"], needs="cluster")
v("scontrol-missing-M", "scontrol", ["-M"])
v("scontrol-ambiguous-h", "scontrol", ["--h"])
v("scontrol-option-after-command", "scontrol", ["show", "hostnames", "n1", "-v"])
v("scontrol-dashdash", "scontrol", ["--", "show", "hostnames", "n1"])
v("scontrol-hold-missing", "scontrol", ["hold", "99999999"], needs="cluster")
v("scontrol-update-missing", "scontrol", ["update", "jobid=99999999", "timelimit=10"], needs="cluster")
v("scontrol-update-bad-key", "scontrol", ["update", "jobid={JOB}", "nosuchkey=1"], needs="job")
v("scontrol-update-bad-time", "scontrol", ["update", "jobid={JOB}", "timelimit=xyz"], needs="job")
v("scontrol-show-job-held-field", "scontrol", ["-o", "show", "job", "{JOB}"], needs="job")
v("scontrol-abbrev-show", "scontrol", ["sho", "hostnames", "n[1-2]"])
v("scontrol-abbrev-ambiguous", "scontrol", ["s", "hostnames", "n1"])
v("scontrol-env-nodelist", "scontrol", ["show", "hostnames"], {"SLURM_JOB_NODELIST": "n[3-4]"})
v("scontrol-details-bundle", "scontrol", ["-dF", "show", "hostnames", "n1"])
v("scontrol-ping-bad", "scontrol", ["ping", "extra"], needs="cluster")
v("scontrol-quiet-bundle", "scontrol", ["-Qo", "show", "job", "99999999"], needs="cluster")

# ---------------------------------------------------------------- sacctmgr
v("sacctmgr-no-command", "sacctmgr", ["-n"])
v("sacctmgr-missing-M", "sacctmgr", ["-M"])
v("sacctmgr-ambiguous-p", "sacctmgr", ["--p"])
v("sacctmgr-unknown-cmd", "sacctmgr", ["frobnicate"])
v("sacctmgr-show-unknown", "sacctmgr", ["show", "frobs"])
v("sacctmgr-help-command", "sacctmgr", ["help"])
v("sacctmgr-show-qos", "sacctmgr", ["-nP", "show", "qos", "format=name"], needs="cluster")
v("sacctmgr-show-qos-bundled", "sacctmgr", ["-n", "-p", "show", "qos", "format=name,priority"], needs="cluster")
v("sacctmgr-show-user-missing", "sacctmgr", ["-nP", "show", "user", "nosuchuser_b13"], needs="cluster")
v("sacctmgr-show-account-missing", "sacctmgr", ["-nP", "list", "account", "nosuchacct_b13"], needs="cluster")
v("sacctmgr-format-bad", "sacctmgr", ["show", "qos", "format=nosuchfield"], needs="cluster")
v("sacctmgr-option-after-command", "sacctmgr", ["show", "qos", "-n", "format=name"], needs="cluster")

# ---------------------------------------------------------------- sbatch (parsing; -v --test-only)
def sb(vid: str, argv: list[str], env: dict[str, str] | None = None, needs: str = "cluster") -> None:
    v(f"sbatch-{vid}", "sbatch", argv, env, needs)


T = ["-v", "--test-only"]
W = ["--wrap", "true"]
sb("v-plain", [*T, *W])
sb("bundle-vN", ["-vN1", "--test-only", *W])
sb("bundle-Hv", ["-Hv", "--test-only", *W])
sb("n-attached", [*T, "-n2", *W])
sb("J-space", [*T, "-J", "name x", *W])
sb("job-name-eq", [*T, "--job-name=abc", *W])
sb("job-name-prefix", [*T, "--job-n", "abc", *W])
sb("time-forms", [*T, "-t", "1-02:03:04", *W])
sb("time-minutes", [*T, "--time=90", *W])
sb("time-mmss", [*T, "--time=5:30", *W])
sb("time-unlimited", [*T, "--time=UNLIMITED", *W])
sb("time-bad", [*T, "--time=xyz", *W])
sb("time-negative", [*T, "-t", "-1", *W])
sb("time-min", [*T, "--time-min=10", "-t", "20", *W])
sb("nodes-bad", [*T, "-N", "abc", *W])
sb("nodes-range", [*T, "-N", "1-2", *W])
sb("nodes-zero", [*T, "-N", "0", *W])
sb("ntasks-bad", [*T, "-n", "abc", *W])
sb("ntasks-zero", [*T, "-n", "0", *W])
sb("cpus-bad", [*T, "-c", "x", *W])
sb("mem-units", [*T, "--mem=2G", *W])
sb("mem-bad", [*T, "--mem=lots", *W])
sb("mem-per-cpu", [*T, "--mem-per-cpu=100M", *W])
sb("partition", [*T, "-p", "debug", *W])
sb("partition-bad", ["--test-only", "-p", "nosuch", *W])
sb("output", [*T, "-o", "/tmp/out-%j.txt", "-e", "/tmp/err-%j.txt", *W])
sb("chdir", [*T, "-D", "/tmp", *W])
sb("array", [*T, "--array=1-3%2", *W])
sb("array-bad", [*T, "--array=x", *W])
sb("dependency-bad", [*T, "-d", "nonsense:1", *W])
sb("begin", [*T, "--begin=2030-01-02T03:04:05", *W])
sb("begin-bad", [*T, "--begin=notatime", *W])
sb("signal", [*T, "--signal=B:USR1@60", *W])
sb("signal-bad", [*T, "--signal=NOSUCH", *W])
sb("export-none", [*T, "--export=NONE", *W])
sb("export-vars", [*T, "--export=ALL,A=1", *W])
sb("gres", [*T, "--gres=gpu:1", *W])
sb("exclusive", [*T, "--exclusive", *W])
sb("nice", [*T, "--nice=10", *W])
sb("nice-bad", [*T, "--nice=abc", *W])
sb("open-mode", [*T, "--open-mode=append", *W])
sb("open-mode-bad", [*T, "--open-mode=x", *W])
sb("requeue", [*T, "--requeue", *W])
sb("no-requeue", [*T, "--no-requeue", *W])
sb("hold-H", [*T, "-H", *W])
sb("comment", [*T, "--comment=hello world", *W])
sb("ambiguous-m", ["--m=1", *W], needs="")
sb("ambiguous-mem", ["--mem-p=1", *W], needs="")
sb("ambiguous-no", ["--no", *W], needs="")
sb("missing-J", ["-J"], needs="")
sb("missing-time", ["--time"], needs="")
sb("missing-p-before-script", ["-p"], needs="")
sb("wrap-and-script", [*T, "--wrap", "true", "script.sh"])
sb("script-operand", [*T, "script.sh"])
sb("script-args", [*T, "script.sh", "-N", "3"])
sb("script-dashdash", [*T, "--", "script.sh", "-x"])
sb("script-missing", ["nosuchscript.sh"], needs="")
sb("script-directives", [*T, "directives.sh"])
sb("script-directives-override", [*T, "-J", "cmdline", "directives.sh"])
sb("parsable-H", ["--parsable", "-H", "-J", "b13-parsable", *W])
sb("held-submit", ["-H", "-J", "b13-held", *W])
sb("quiet-bad-time", ["-Q", "--time=xyz", *W], needs="")
for var, val in (("SBATCH_PARTITION", "debug"), ("SBATCH_TIMELIMIT", "10"),
                 ("SBATCH_JOB_NAME", "envname"), ("SBATCH_ACCOUNT", "anchor"),
                 ("SBATCH_EXPORT", "NONE"), ("SBATCH_EXPORT", "ALL,X=1"),
                 ("SBATCH_NO_REQUEUE", "1"), ("SBATCH_REQUEUE", "1"), ("SBATCH_HOLD", "1"),
                 ("SBATCH_OPEN_MODE", "append"), ("SBATCH_SIGNAL", "USR1@30"),
                 ("SBATCH_EXCLUSIVE", "1"), ("SBATCH_GRES", "gpu:1"),
                 ("SBATCH_MEM_PER_CPU", "100"), ("SBATCH_NO_KILL", "1"),
                 ("SBATCH_ARRAY_INX", "1-2"), ("SBATCH_QOS", "normal"),
                 ("SBATCH_REQUEUE", "0"), ("SBATCH_DEBUG", "1"),
                 ("SBATCH_TIMELIMIT", "xyz"), ("SBATCH_WAIT", "1"),
                 ("SBATCH_CLUSTERS", "anchor"), ("SBATCH_DISTRIBUTION", "cyclic"),
                 ("SBATCH_GPUS", "1"), ("SBATCH_NICE", "5")):
    suffix = f"{var}-{val}".replace(",", "_").replace("=", "_").replace("@", "_").replace(":", "_")
    sb(f"env-{suffix}", [*T, *W], {var: val})
sb("env-cmdline-wins", [*T, "-p", "debug", "-t", "5", *W], {"SBATCH_TIMELIMIT": "10"})
sb("env-partition-bad", ["--test-only", *W], {"SBATCH_PARTITION": "nosuch"})
sb("exit-error-env", ["--time=xyz", *W], {"SLURM_EXIT_ERROR": "7"}, needs="")
sb("exit-error-env-nodes", ["-N", "abc", *W], {"SLURM_EXIT_ERROR": "9"}, needs="")

# ------------------------------------------------------- sbatch -v --mail-type (point 9)
MAIL = ("ALL", "NONE", "BEGIN", "END", "FAIL", "BEGIN,END", "END,BEGIN", "ARRAY_TASKS",
        "ARRAY_TASKS,END", "TIME_LIMIT", "TIME_LIMIT_50", "TIME_LIMIT_80", "TIME_LIMIT_90",
        "TIME_LIMIT_50,TIME_LIMIT_90", "INVALID_DEPEND", "STAGE_OUT", "REQUEUE", "begin",
        "all", "Begin,eNd", "ALL,NONE", "NONE,BEGIN", "BEGIN,NONE", "ALL,ARRAY_TASKS",
        "FOO", "BEGIN,FOO", "", "BEGIN,", ",END", "BEGIN,,END", "BEGIN END")
for m in MAIL:
    tag = (m or "empty").replace(",", "_").replace(" ", "-")
    sb(f"mail-{tag}", [*T, f"--mail-type={m}", *W])
sb("mail-twice", [*T, "--mail-type=BEGIN", "--mail-type=END", *W])
sb("mail-twice-then-none", [*T, "--mail-type=BEGIN", "--mail-type=NONE", *W])
sb("mail-none-then-end", [*T, "--mail-type=NONE", "--mail-type=END", *W])
sb("mail-twice-second-bad", [*T, "--mail-type=BEGIN", "--mail-type=FOO", *W])
sb("mail-twice-first-bad", [*T, "--mail-type=FOO", "--mail-type=END", *W])
sb("mail-all-then-array", [*T, "--mail-type=ALL", "--mail-type=ARRAY_TASKS", *W])
sb("mail-every-time-limit", [*T, "--mail-type=TIME_LIMIT_90,TIME_LIMIT,TIME_LIMIT_80,BEGIN,TIME_LIMIT_50", *W])
sb("mail-every-kind", [*T, "--mail-type=STAGE_OUT,REQUEUE,FAIL,END,BEGIN,INVALID_DEPEND,ARRAY_TASKS,"
   "TIME_LIMIT,TIME_LIMIT_50,TIME_LIMIT_80,TIME_LIMIT_90", *W])
sb("mail-only-bad-then-good", [*T, "--mail-type=FOO,BEGIN", *W])
sb("mail-array-job", [*T, "--array=1-3", "--mail-type=ARRAY_TASKS,END", *W])
sb("mail-directive-and-cmdline-none", [*T, "--mail-type=NONE", "mail_one.sh"])
sb("mail-space", [*T, "--mail-type", "FAIL", *W])
sb("mail-prefix", [*T, "--mail-t=END", *W])
sb("mail-user", [*T, "--mail-user=someone@example.org", "--mail-type=END", *W])
sb("mail-directives-twice", [*T, "mail_twice.sh"])
sb("mail-cmdline-and-directive", [*T, "--mail-type=FAIL", "mail_one.sh"])
sb("mail-directive-all", [*T, "mail_all.sh"])
sb("mail-directive-bad", [*T, "mail_bad.sh"])
sb("mail-directive-bad-only", [*T, "mail_bad_only.sh"])
sb("mail-env", [*T, *W], {"SBATCH_MAIL_TYPE": "BEGIN"})
sb("mail-env-and-cmdline", [*T, "--mail-type=END", *W], {"SBATCH_MAIL_TYPE": "BEGIN"})
sb("mail-missing", ["--mail-type"], needs="")
sb("debug-env-3-v", [*T, *W], {"SBATCH_DEBUG": "3"})
sb("debug-env-1-vv", ["-vv", "--test-only", *W], {"SBATCH_DEBUG": "1"})
sb("debug-env-x", [*T, *W], {"SBATCH_DEBUG": "x"})
sb("signal-env-plain", [*T, *W], {"SBATCH_SIGNAL": "B:USR2"})
sb("signal-at", [*T, "--signal=USR1@90", *W])
sb("signal-R", [*T, "--signal=R:10@30", *W])

# ---------------------------------------------------------------- srun / salloc (parsing only)
for c in ("srun", "salloc"):
    tail = ["true"]
    v(f"{c}-nodes-bad", c, ["-N", "abc", *tail])
    v(f"{c}-time-bad", c, ["--time=xyz", *tail])
    v(f"{c}-ntasks-bad", c, ["-n", "abc", *tail])
    v(f"{c}-mem-bad", c, ["--mem=lots", *tail])
    v(f"{c}-missing-J", c, ["-J"])
    v(f"{c}-missing-time", c, ["--time"])
    v(f"{c}-ambiguous-m", c, ["--m=1", *tail])
    v(f"{c}-ambiguous-no", c, ["--no", *tail])
    v(f"{c}-mail-bad", c, ["--mail-type=FOO", *tail])
    v(f"{c}-signal-bad", c, ["--signal=NOSUCH", *tail])
    v(f"{c}-begin-bad", c, ["--begin=notatime", *tail])
    v(f"{c}-exit-error", c, ["--time=xyz", *tail], {"SLURM_EXIT_ERROR": "7"})
    v(f"{c}-bundle-bad", c, ["-vN", "abc", *tail])
    # srun does not read SRUN_TIMELIMIT (it runs the step), salloc reads SALLOC_TIMELIMIT
    v(f"{c}-env-time-bad", c, tail, {f"{c.upper()}_TIMELIMIT": "xyz"},
      needs="cluster" if c == "srun" else "")
    v(f"{c}-after-command", c, ["--time=xyz", "true", "--bogus"])
v("srun-label-bundle-bad", "srun", ["-lN", "abc", "true"])
v("srun-no-command", "srun", ["-N", "1"], needs="")
v("srun-cpu-bind-bad", "srun", ["--cpu-bind=frob", "true"])
v("srun-distribution-bad", "srun", ["-m", "frob", "true"])
v("srun-jobid-bad", "srun", ["--jobid=abc", "true"])
v("srun-env-nodes-bad", "srun", ["true"], {"SLURM_NNODES": "abc"}, needs="cluster")
v("salloc-exit-error-nodes", "salloc", ["-N", "abc"], {"SLURM_EXIT_ERROR": "9"})
v("salloc-bell-bundle", "salloc", ["--bell", "-N", "abc", "true"])

# ---------------------------------------------------------------- files in the vectors' directory
FILES = {
    "script.sh": "#!/bin/sh\ntrue\n",
    "directives.sh": "#!/bin/sh\n#SBATCH -J fromscript\n#SBATCH --time=15\n#SBATCH -N 1 --ntasks=2\ntrue\n",
    "mail_twice.sh": "#!/bin/sh\n#SBATCH --mail-type=BEGIN\n#SBATCH --mail-type=END\ntrue\n",
    "mail_one.sh": "#!/bin/sh\n#SBATCH --mail-type=BEGIN\ntrue\n",
    "mail_all.sh": "#!/bin/sh\n#SBATCH --mail-type=ALL,ARRAY_TASKS\n#SBATCH --array=1-2\ntrue\n",
    "mail_bad.sh": "#!/bin/sh\n#SBATCH --mail-type=BEGIN,NOPE\ntrue\n",
    "mail_bad_only.sh": "#!/bin/sh\n#SBATCH --mail-type=NOPE\ntrue\n",
}

# the held job that the "job" vectors look at (submitted with these words, then cancelled)
HELD_JOB = ["--parsable", "-H", "-J", "heldjob", "--begin=2030-01-02T03:04:05", "-t", "10",
            "--wrap", "true"]

# the environment every vector starts from (the vector's env is added to it)
BASE_ENV = {"HOME": "/root", "LANG": "C", "LC_ALL": "C", "TZ": "UTC", "USER": "root",
            "LOGNAME": "root", "SHELL": "/bin/sh"}
