#!/usr/bin/env bash
# Regenerates the captures in this folder from the REAL Slurm 22.05.8 (the anchor) with
# proctrack/cgroup, task/cgroup,task/affinity and cgroup/v1.
#
# Before:  cd /work/shared/slurm-anchor && PATH=/usr/sbin:/usr/bin:/sbin:/bin ACCOUNTING=dbd NNODES=2 FRESH=1 bash setup.sh
# Run:     PATH=/usr/sbin:/usr/bin:/sbin:/bin bash regenerate.sh [PHASE...]    (as root; default: all phases)
#          (`regenerate.sh index` only rebuilds INDEX.md = INDEX.head.md + the table from captures.tsv)
# After:   cd /work/shared/slurm-anchor && PATH=/usr/sbin:/usr/bin:/sbin:/bin bash teardown.sh
#
# Only this anchor's node directories slurm_n1, slurm_n2 are looked at (plurm's own tests make
# slurm, slurm_<node> directories of theirs on the same host at the same time).
# Phases (each rewrites /etc/slurm/{slurm,cgroup,gres}.conf and restarts slurmctld + slurmd n1,n2
# the way setup.sh starts them; slurmdbd, mariadb and munged keep running):
#   stockdev  jobacct_gather/cgroup, the anchor's own fake GPUs (all four are `mknod c 1 3`, the
#             major:minor of /dev/null): ConstrainDevices then denies /dev/null itself.
#   cg        jobacct_gather/cgroup, distinct fake GPUs: char 195:0..3 (the NVIDIA major; no driver
#             here, so an allowed open fails ENXIO and a denied one EPERM). Everything else.
#   linux     jobacct_gather/linux, distinct fake GPUs: OOM and usage again.
#   variants  cgroup.conf variants (AllowedRAMSpace=150 + AllowedSwapSpace=50, RAM only, swap only):
#             the limits written for --mem=100M and --mem=10M (MinRAMSpace).
#   contain   the cg phase's config plus PrologFlags=Contain: the extern step's cgroup.
# At the end setup.sh's slurm.conf/gres.conf come back, cgroup.conf is removed and the daemons
# are restarted on them.  Every capture NAME: NAME.txt (stdout), NAME.stderr.txt (stderr, if any);
# captures.tsv (name, phase, rc, seconds since start, command, note) -> INDEX.md's table.
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
[ "$(id -u)" = 0 ] || { echo "regenerate: must run as root" >&2; exit 1; }
HERE=$(cd "$(dirname "$0")" && pwd)
OUTDIR=${OUTDIR:-$HERE}
BASE=/tmp/slurm-anchor
RUN=$BASE/run
WORK=$BASE/cgwork           # job output files, job scripts
DEVS=$BASE/dev-distinct     # distinct fake GPUs
ETC=/etc/slurm
T0=$SECONDS
PHASE=none
mkdir -p "$OUTDIR" "$WORK" "$DEVS"
# setup.sh's own config, kept to derive each phase's and to restore it at the end
if [ "${1:-}" != index ]; then
  if grep -q '^ProctrackType=proctrack/linuxproc' "$ETC/slurm.conf"; then
    cp "$ETC/slurm.conf" "$BASE/orig.slurm.conf"; cp "$ETC/gres.conf" "$BASE/orig.gres.conf"
  fi
  [ -s "$BASE/orig.slurm.conf" ] || { echo "regenerate: $ETC/slurm.conf is not setup.sh's and no saved copy" >&2; exit 1; }
fi
cd "$WORK"   # the jobs' working directory
TSV=$OUTDIR/captures.tsv
[ $# -eq 0 ] && : > "$TSV"

# cap NAME NOTE CMD...: run CMD, keep stdout/stderr/rc
cap() {
  local name=$1 note=$2; shift 2
  local out=$OUTDIR/$name.txt err=$OUTDIR/$name.stderr.txt rc
  "$@" >"$out" 2>"$err" </dev/null; rc=$?
  [ -s "$err" ] || rm -f "$err"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$PHASE" "$rc" "$((SECONDS - T0))" "$(printf '%q ' "$@" | sed 's/ $//')" "$note" >>"$TSV"
  echo "  $name rc=$rc"
}
# capsh NAME NOTE 'shell text': the same for a shell line (the command column shows the text)
capsh() {
  local name=$1 note=$2 text=$3
  local out=$OUTDIR/$name.txt err=$OUTDIR/$name.stderr.txt rc
  bash -c "$text" >"$out" 2>"$err" </dev/null; rc=$?
  [ -s "$err" ] || rm -f "$err"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$PHASE" "$rc" "$((SECONDS - T0))" "$text" "$note" >>"$TSV"
  echo "  $name rc=$rc"
}

stop_pidfile() {
  local f pid i
  for f in "$@"; do
    [ -s "$f" ] || continue
    pid=$(tr -dc 0-9 <"$f")
    if [ -n "$pid" ] && [ "$(cat /proc/$pid/comm 2>/dev/null)" = "$(basename "$f" | sed 's/-.*//; s/\.pid$//')" ]; then
      kill -TERM "$pid"
      for i in $(seq 1 200); do [ -d /proc/$pid ] || break; sleep 0.1; done
    fi
    rm -f "$f"
  done
}
restart_daemons() {
  stop_pidfile "$RUN"/slurmd-*.pid
  stop_pidfile "$RUN/slurmctld.pid"
  (cd "$BASE" && /usr/sbin/slurmctld) || { echo "slurmctld did not start" >&2; exit 1; }
  for i in $(seq 1 100); do grep -q UP <<<"$(scontrol ping 2>/dev/null)" && break; sleep 0.2; done
  for n in n1 n2; do (cd "$BASE" && /usr/sbin/slurmd -N "$n") || echo "slurmd -N $n failed" >&2; done
  for i in $(seq 1 120); do
    [ "$(sinfo -h -N -o '%N %T' | awk '$2 !~ /^(idle|mixed|allocated)$/' | wc -l)" = 0 ] && break
    sleep 0.5
  done
}

# configure GATHER DEVICES(stock|distinct)
configure() {
  local gather=$1 devs=$2
  sed -e 's|^# no usable cgroup setup.*|# tests/integration/reference/cgroup/regenerate.sh: cgroup plugins, cgroup/v1|' \
      -e 's|^ProctrackType=.*|ProctrackType=proctrack/cgroup|' \
      -e 's|^TaskPlugin=.*|TaskPlugin=task/cgroup,task/affinity|' \
      -e "s|^JobAcctGatherType=.*|JobAcctGatherType=jobacct_gather/$gather|" \
      -e 's|^JobAcctGatherFrequency=.*|JobAcctGatherFrequency=1|' \
      "$BASE/orig.slurm.conf" >"$ETC/slurm.conf"
  cat >"$ETC/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
ConstrainCores=yes
ConstrainRAMSpace=yes
ConstrainSwapSpace=yes
ConstrainDevices=yes
EOF
  if [ "$devs" = distinct ]; then
    local i
    for i in 0 1 2 3; do
      rm -f "$DEVS/nvidia$i"; mknod -m 666 "$DEVS/nvidia$i" c 195 "$i"
    done
    sed -e "s|File=$BASE/dev/nvidia|File=$DEVS/nvidia|" -e 's|^# Generated.*|# fake GPUs: distinct char devices 195:0..3 (regenerate.sh)|' \
      "$BASE/orig.gres.conf" >"$ETC/gres.conf"
  else
    cp "$BASE/orig.gres.conf" "$ETC/gres.conf"
  fi
  restart_daemons
  cap "$PHASE.00_slurm_conf" "the slurm.conf of this phase" cat "$ETC/slurm.conf"
  cap "$PHASE.00_cgroup_conf" "the cgroup.conf of this phase" cat "$ETC/cgroup.conf"
  cap "$PHASE.00_gres_conf" "the gres.conf of this phase" cat "$ETC/gres.conf"
  capsh "$PHASE.00_gpu_devices" "the fake GPU device nodes (major, minor)" "stat -c '%n %F %Hr:%Lr' $( [ "$devs" = distinct ] && echo "$DEVS" || echo "$BASE/dev")/nvidia* /dev/null /dev/zero"
  cap "$PHASE.00_sinfo" "nodes after the restart" sinfo -N -o '%N %T %c %m %G %E'
}

# jobid_of: sbatch --parsable output -> id
submit() { sbatch --parsable "$@"; }
state_of() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
wait_end() {   # wait_end J: until the job has left RUNNING/PENDING/SUSPENDED/COMPLETING, then 3 s for slurmdbd
  local i s
  for i in $(seq 1 600); do
    s=$(state_of "$1")
    case "$s" in PENDING|RUNNING|SUSPENDED|COMPLETING|CONFIGURING|"") sleep 0.2 ;; *) break ;; esac
  done
  sleep 3
}
wait_running() {   # wait_running J [STEP]: until RUNNING (and the step exists)
  local i
  for i in $(seq 1 300); do
    if [ "$(state_of "$1")" = RUNNING ]; then
      [ -z "${2:-}" ] && { sleep 1; return 0; }
      squeue -h -s -j "$1" -o %i | grep -qx "$1.$2" && { sleep 1; return 0; }
    fi
    sleep 0.2
  done
  return 1
}
# dumpcg J: every cgroup directory of job J (all v1 controllers) and the values Slurm wrote there
dumpcg() {
  local d f
  for d in $(find /sys/fs/cgroup/{memory,cpuset,devices,freezer,cpuacct}/slurm_n[12]/uid_*/job_"$1" -type d 2>/dev/null | sort); do
    echo "== $d"
    for f in memory.limit_in_bytes memory.memsw.limit_in_bytes memory.soft_limit_in_bytes memory.swappiness \
             memory.use_hierarchy memory.oom_control cpuset.cpus cpuset.mems devices.list freezer.state \
             notify_on_release cgroup.procs; do
      [ -f "$d/$f" ] && echo "$f: $(tr '\n' ' ' <"$d/$f" | sed 's/ $//')"
    done
  done
}
# procs J: slurmstepd and task processes of job J with their /proc/PID/cgroup
procs() {
  local pid
  echo "== scontrol listpids $1"; scontrol listpids "$1"
  for pid in $(ps -eo pid=,args= | awk -v j="$1" 'index($0, "slurmstepd: [" j ".") {print $1}'); do
    echo "== slurmstepd pid $pid: $(tr '\0' ' ' </proc/$pid/cmdline)"; cat /proc/$pid/cgroup
  done
  for pid in $(scontrol listpids "$1" | awk 'NR > 1 {print $1}'); do
    [ -d /proc/$pid ] || continue
    echo "== task pid $pid: $(tr '\0' ' ' </proc/$pid/cmdline)"; cat /proc/$pid/cgroup
  done
}
export -f dumpcg procs
SACCT_OOM=JobID,State,ExitCode,DerivedExitCode,MaxRSS,AveRSS,MaxVMSize,TotalCPU,UserCPU,SystemCPU
SACCT_USE=JobID,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MaxVMSize,AveVMSize,TotalCPU,UserCPU,SystemCPU,TRESUsageInMax,TRESUsageInAve
HOG='python3 -c "x = b\"x\" * (400 << 20); print(\"survived\", len(x))"'
# 200 MB touched and held 3 s, then about 2 s of CPU in user space
cat >"$WORK/usage.py" <<'EOF'
import time
x = b"x" * (200 << 20)
time.sleep(3)
t = time.process_time()
n = 0
while time.process_time() - t < 2.0:
    n += 1
print("held", len(x), "burned", round(time.process_time() - t, 2))
EOF
cat >"$WORK/opendev.py" <<'EOF'
import os, sys
print("CUDA_VISIBLE_DEVICES=%s" % os.environ.get("CUDA_VISIBLE_DEVICES"))
for path in sys.argv[1:]:
    try:
        os.close(os.open(path, os.O_RDWR))
        print(path, "open ok")
    except OSError as e:
        print(path, "errno=%d %s: %s" % (e.errno, __import__("errno").errorcode[e.errno], e.strerror))
EOF
cat >"$WORK/affinity.py" <<'EOF'
import os
print("sched_getaffinity", sorted(os.sched_getaffinity(0)))
for k in sorted(os.environ):
    if k.startswith(("SLURM_CPU", "SLURM_CPUS", "SLURM_JOB_CPUS")):
        print("%s=%s" % (k, os.environ[k]))
print(open("/proc/self/cgroup").read().strip())
EOF
cat >"$WORK/burn2.py" <<'EOF'
# two busy processes for 4 s of wall time: in a 1-CPU cpuset they share one CPU
import os, time, resource
def burn():
    end = time.time() + 4
    while time.time() < end:
        pass
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        burn(); os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("wall 4 s, children cpu %.1f s" % (r.ru_utime + r.ru_stime))
EOF

phase_stockdev() {
  PHASE=stockdev; echo "phase $PHASE"
  configure cgroup stock
  cap stockdev.srun_true "a step without GPUs: all 4 fake GPUs (1:3) denied = /dev/null denied" srun -w n1 true
  local j
  j=$(submit -w n1 --gres=gpu:1 -o "$WORK/stockdev_gpu.out" --wrap "python3 $WORK/opendev.py $BASE/dev/nvidia0 $BASE/dev/nvidia1 /dev/null")
  wait_end "$j"
  capsh stockdev.gpu1_job_out "a --gres=gpu:1 batch job: fails to launch (its 1:3 allowed, the three others' 1:3 denied)" "ls -l $WORK/stockdev_gpu.out"
  cap stockdev.gpu1_sacct "its sacct" sacct -j "$j" -o JobID,State,ExitCode,Reason -P
  cap stockdev.gpu1_scontrol "its scontrol show job" scontrol show job "$j"
  cap stockdev.gpu4_srun "srun --gres=gpu:4 (all four allowed: /dev/null usable)" srun -w n1 --gres=gpu:4 python3 "$WORK/opendev.py" "$BASE/dev/nvidia0" /dev/null /dev/zero
  j=$(submit -w n1 -o "$WORK/stockdev_nogpu.out" --wrap "echo hello")
  wait_end "$j"
  cap stockdev.nogpu_sacct "a batch job without GPUs: fails to launch too" sacct -j "$j" -o JobID,State,ExitCode,Reason -P
  cap stockdev.sinfo_after "node state after those launch failures" sinfo -N -o '%N %T %E'
  capsh stockdev.slurmd_log "slurmd n1 log lines of this phase (devices)" "grep -E 'devices|/dev/null|error' $BASE/log/slurmd-n1.log | grep -v pmix | tail -n 30"
}

phase_cg() {
  PHASE=cg; echo "phase $PHASE"
  configure cgroup distinct
  local j k
  # --- layout: a batch job with a step, -c1 --mem=100M --gres=gpu:1
  j=$(submit -w n1 -c1 --mem=100M --gres=gpu:1 -o "$WORK/layout.out" --wrap "srun sleep 20")
  wait_running "$j" 0
  capsh cg.layout_find "the cgroup directories while batch job $j runs step 0 (-c1 --mem=100M --gres=gpu:1)" \
    "find /sys/fs/cgroup/{memory,cpuset,devices,freezer,cpuacct} -path '*/slurm_n[12]*' -type d | sort"
  capsh cg.layout_values_c1_mem100M_gpu1 "values Slurm wrote in each directory of that job" "dumpcg $j"
  capsh cg.layout_procs "where slurmstepd sits versus the tasks (/proc/PID/cgroup)" "procs $j"
  capsh cg.layout_node_level "the node-level and uid-level directories (slurm_n1, uid_0) values" \
    "for d in /sys/fs/cgroup/{memory,cpuset,devices,freezer}/slurm_n1 /sys/fs/cgroup/{memory,cpuset,devices,freezer}/slurm_n1/uid_0; do echo \"== \$d\"; for f in memory.limit_in_bytes memory.memsw.limit_in_bytes memory.soft_limit_in_bytes cpuset.cpus cpuset.mems devices.list freezer.state cgroup.procs; do [ -f \$d/\$f ] && echo \"\$f: \$(tr '\n' ' ' < \$d/\$f)\"; done; done"
  scancel "$j"; wait_end "$j"
  capsh cg.layout_after_end "cgroup directories after the job ended" "find /sys/fs/cgroup/{memory,cpuset,devices,freezer,cpuacct} -path '*/slurm_n[12]*' -type d | sort"
  # --mem-per-cpu
  j=$(submit -w n1 -c2 --mem-per-cpu=150M -o /dev/null --wrap "srun sleep 15")
  wait_running "$j" 0
  capsh cg.layout_values_c2_mempercpu150M "a -c2 --mem-per-cpu=150M job (no GPU): values" "dumpcg $j"
  scancel "$j"; wait_end "$j"
  j=$(submit -w n1 -n1 -c1 --mem=0 -o /dev/null --wrap "sleep 15")
  wait_running "$j"
  capsh cg.layout_values_mem0 "a --mem=0 job (all the node's memory): values" "dumpcg $j"
  scancel "$j"; wait_end "$j"

  # --- OOM in a batch job, separate -o and -e
  j=$(submit -w n1 --mem=100M -o "$WORK/oom_batch.out" -e "$WORK/oom_batch.err" --wrap "echo before; $HOG; echo after rc=\$?")
  wait_end "$j"
  cap cg.oom_batch_stdout "OOM batch job (--mem=100M, 400 MB): its -o file" cat "$WORK/oom_batch.out"
  cap cg.oom_batch_stderr "its -e file: the Detected oom_kill line" cat "$WORK/oom_batch.err"
  cap cg.oom_batch_sacct_P "sacct -P of the OOM job" sacct -j "$j" -o "$SACCT_OOM" -P
  cap cg.oom_batch_sacct_default "default sacct of the OOM job" sacct -j "$j"
  cap cg.oom_batch_scontrol "scontrol show job right after the end" scontrol show job "$j"
  cap cg.oom_batch_squeue_t_all "squeue -t all of it" squeue -t all -j "$j" -o '%i %T %r'
  # one output file, and sbatch --wait's exit code
  cap cg.oom_batch_wait "sbatch --wait of an OOM job: its exit code and words" sbatch -w n1 --wait --mem=100M -o "$WORK/oom_wait.out" --wrap "$HOG"
  cap cg.oom_batch_wait_out "its single output file (stdout+stderr)" cat "$WORK/oom_wait.out"
  k=$(squeue -h -t all -o %i --sort=-i | head -n 1)
  cap cg.oom_batch_wait_sacct_P "its sacct -P (the script's last command was the killed one: exit 137)" sacct -j "$k" -o "$SACCT_OOM" -P
  # an OOM after the job lived long enough to be sampled: MaxRSS near the limit?
  j=$(submit -w n1 --mem=100M -o "$WORK/oom_slow.out" --wrap "python3 -c 'import time; a = b\"x\" * (60 << 20); time.sleep(3); b = b\"y\" * (400 << 20)'")
  wait_end "$j"
  cap cg.oom_slow_out "OOM after 3 s holding 60 MB: output" cat "$WORK/oom_slow.out"
  cap cg.oom_slow_sacct_P "its sacct -P: MaxRSS sampled before the kill" sacct -j "$j" -o "$SACCT_OOM" -P
  # the same hog as the last command only, exit code of python not echoed
  # --- OOM in an interactive srun
  cap cg.oom_srun "srun --mem=100M of the hog: stdout, stderr, exit code" srun -w n1 --mem=100M bash -c "$HOG"
  k=$(squeue -h -t all -o %i --sort=-i | head -n 1); sleep 3
  cap cg.oom_srun_sacct_P "sacct -P of that srun's job" sacct -j "$k" -o "$SACCT_OOM" -P
  cap cg.oom_srun_scontrol "scontrol show job of that srun's job" scontrol show job "$k"
  # --- OOM in an srun step inside sbatch, the batch script going on afterwards
  j=$(submit -w n1 --mem=100M -o "$WORK/oom_step.out" --wrap "echo before; srun bash -c '$HOG'; echo srun rc=\$?; echo after")
  wait_end "$j"
  cap cg.oom_step_out "sbatch whose srun step is OOM-killed: the job's output" cat "$WORK/oom_step.out"
  cap cg.oom_step_sacct_P "its sacct -P (batch step COMPLETED, step 0 OUT_OF_MEMORY?)" sacct -j "$j" -o "$SACCT_OOM" -P
  cap cg.oom_step_sacct_default "its default sacct" sacct -j "$j"
  cap cg.oom_step_scontrol "its scontrol show job" scontrol show job "$j"
  # --- a step OOM and the batch script exiting 0 afterwards vs the script's last command the hog
  capsh cg.oom_slurmd_log "slurmd n1 log lines about oom" "grep -iE 'oom|memory' $BASE/log/slurmd-n1.log | tail -n 40"
  capsh cg.oom_slurmctld_log "slurmctld log lines about those jobs" "grep -iE 'OUT_OF_MEMORY|oom|WEXITSTATUS|done' $BASE/log/slurmctld.log | tail -n 40"
  capsh cg.oom_node_after "the node is healthy afterwards" "sinfo -N -o '%N %T %E'; srun -w n1 --mem=100M echo still-ok"

  # --- usage: 200 MB held 3 s, then 2 s of CPU; batch step and an srun step
  j=$(submit -w n1 --mem=400M -o "$WORK/usage.out" --wrap "python3 $WORK/usage.py; srun python3 $WORK/usage.py")
  wait_end "$j"
  cap cg.usage_out "usage job's output" cat "$WORK/usage.out"
  cap cg.usage_sacct_P "usage: sacct -P" sacct -j "$j" -o "$SACCT_USE" -P
  cap cg.usage_sacct_wide "usage: sacct without -P (widths, K/M suffixes)" sacct -j "$j" -o "$SACCT_USE"
  cap cg.usage_sacct_units_M "usage: sacct --units=M -P" sacct -j "$j" --units=M -o JobID,MaxRSS,AveRSS,MaxVMSize -P
  cap cg.usage_sacct_default "usage: default sacct" sacct -j "$j"
  cap cg.usage_sacct_long "usage: sacct -l -P" sacct -j "$j" -l -P
  # sstat while the batch step holds its 200 MB
  j=$(submit -w n1 --mem=400M -o /dev/null --wrap "python3 $WORK/usage.py")
  wait_running "$j"; sleep 2
  cap cg.usage_sstat_batch "sstat of a running batch step holding 200 MB" sstat -j "$j.batch" -o JobID,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MaxVMSize,AveCPU,NTasks -P
  cap cg.usage_sstat_job "sstat -j J (no step given)" sstat -j "$j" -o JobID,MaxRSS,AveRSS -P
  wait_end "$j"

  # --- CPUs: affinity in -c1 and -c2, batch and srun; two busy processes in -c1
  j=$(submit -w n1 -c1 -o "$WORK/aff_c1.out" --wrap "python3 $WORK/affinity.py; echo ---; srun python3 $WORK/affinity.py")
  wait_end "$j"; cap cg.affinity_c1_batch "-c1 batch job: affinity and SLURM_CPU* env (batch then srun)" cat "$WORK/aff_c1.out"
  j=$(submit -w n1 -c2 -o "$WORK/aff_c2.out" --wrap "python3 $WORK/affinity.py; echo ---; srun python3 $WORK/affinity.py")
  wait_end "$j"; cap cg.affinity_c2_batch "-c2 batch job: the same" cat "$WORK/aff_c2.out"
  cap cg.affinity_c1_srun "srun -c1" srun -w n1 -c1 python3 "$WORK/affinity.py"
  cap cg.affinity_c2_srun "srun -c2" srun -w n1 -c2 python3 "$WORK/affinity.py"
  cap cg.affinity_n2_srun "srun -n2 (two tasks, one CPU each)" srun -w n1 -n2 -l python3 -c "import os; print(sorted(os.sched_getaffinity(0)))"
  # 4 configured CPUs on a 2-CPU host: what do concurrent 1-CPU jobs get?
  for k in 1 2 3 4; do submit -w n1 -c1 -o "$WORK/aff_conc$k.out" --wrap "python3 -c 'import os; print(sorted(os.sched_getaffinity(0)))'; cat /sys/fs/cgroup/cpuset\$(grep cpuset /proc/self/cgroup | cut -d: -f3)/cpuset.cpus; sleep 6" >/dev/null; done
  sleep 12
  capsh cg.affinity_concurrent4 "four concurrent -c1 jobs on n1 (4 CPUs configured, 2 in the host)" "for k in 1 2 3 4; do echo job\$k: \$(cat $WORK/aff_conc\$k.out); done"
  cap cg.cpu_c1_two_burners "-c1 step running two busy processes for 4 s: children CPU time" srun -w n1 -c1 python3 "$WORK/burn2.py"
  cap cg.cpu_c2_two_burners "-c2: the same" srun -w n1 -c2 python3 "$WORK/burn2.py"

  # --- orphans: setsid sleep 300 & left behind by the batch script, and by a step
  j=$(submit -w n1 -o "$WORK/orphan.out" --wrap "setsid sleep 300 & echo orphan=\$!; srun bash -c 'setsid sleep 301 & echo steporphan=\$!'; sleep 1")
  wait_end "$j"
  cap cg.orphan_out "a job leaving setsid sleep 300 (batch) and setsid sleep 301 (step): pids" cat "$WORK/orphan.out"
  capsh cg.orphan_ps_after "ps of those pids after the job ended" "for p in \$(grep -o '[0-9]*\$' $WORK/orphan.out); do ps -o pid,stat,args -p \$p || echo \"pid \$p gone\"; done"
  cap cg.orphan_sacct "the orphan job's sacct" sacct -j "$j" -o JobID,State,ExitCode -P

  # --- suspend / resume through the freezer
  j=$(submit -w n1 -o "$WORK/susp.out" --wrap "srun bash -c 'for i in \$(seq 60); do date +%s; sleep 1; done'")
  wait_running "$j" 0; sleep 1
  cap cg.suspend_scontrol_suspend "scontrol suspend" scontrol suspend "$j"
  sleep 2
  capsh cg.suspend_freezer_state "freezer.state of the job's cgroups while suspended" "for f in \$(find /sys/fs/cgroup/freezer/slurm_n1/uid_0/job_$j -name freezer.state | sort); do echo \"\$f: \$(cat \$f)\"; done"
  cap cg.suspend_squeue "squeue while suspended" squeue -j "$j" -o '%i %T %r'
  cap cg.suspend_scontrol_show "scontrol show job while suspended" scontrol show job "$j"
  cap cg.suspend_sacct "sacct while suspended" sacct -j "$j" -o JobID,State,ExitCode -P
  capsh cg.suspend_proc_state "the tasks' /proc state while suspended" "for p in \$(scontrol listpids $j | awk 'NR>1 {print \$1}'); do ps -o pid,stat,args -p \$p | tail -n +2; done"
  sleep 3
  cap cg.suspend_scontrol_resume "scontrol resume" scontrol resume "$j"
  sleep 3
  capsh cg.suspend_freezer_after_resume "freezer.state after resume" "for f in \$(find /sys/fs/cgroup/freezer/slurm_n1/uid_0/job_$j -name freezer.state | sort); do echo \"\$f: \$(cat \$f)\"; done"
  cap cg.suspend_squeue_after_resume "squeue after resume" squeue -j "$j" -o '%i %T %r'
  scancel "$j"; wait_end "$j"
  capsh cg.suspend_out_gap "the job's output: the seconds printed (a gap while frozen)" "tail -n 12 $WORK/susp.out | tr '\n' ' '; echo"
  # an interactive srun whose job is suspended and resumed: what srun prints
  srun -w n1 bash -c 'for i in $(seq 8); do date +%s; sleep 1; done' >"$WORK/srun_susp.out" 2>"$WORK/srun_susp.err" &
  local srunpid=$!
  sleep 3; k=$(squeue -h -o %i --sort=-i | head -n 1)
  scontrol suspend "$k"; sleep 3; scontrol resume "$k"
  wait "$srunpid"; echo "rc=$?" >>"$WORK/srun_susp.out"
  cap cg.suspend_srun_stdout "srun of an 8 s loop suspended 3 s: its stdout (and rc)" cat "$WORK/srun_susp.out"
  cap cg.suspend_srun_stderr "its stderr" cat "$WORK/srun_susp.err"
  # scancel of a suspended job
  j=$(submit -w n1 -o "$WORK/susp_cancel.out" --wrap "srun sleep 60")
  wait_running "$j" 0
  scontrol suspend "$j"; sleep 2
  cap cg.suspend_scancel "scancel of a suspended job" scancel "$j"
  wait_end "$j"
  cap cg.suspend_scancel_sacct "its sacct" sacct -j "$j" -o JobID,State,ExitCode -P
  cap cg.suspend_scancel_out "its output" cat "$WORK/susp_cancel.out"
  capsh cg.suspend_scancel_cgroups "its cgroups afterwards (none)" "find /sys/fs/cgroup/{memory,cpuset,devices,freezer,cpuacct} -regex '.*/slurm_n[12]/uid_[0-9]*/job_$j\\(/.*\\)?' -type d"

  # --- devices: a --gres=gpu:1 job opening its own fake GPU and the others
  local devs="$DEVS/nvidia0 $DEVS/nvidia1 $DEVS/nvidia2 $DEVS/nvidia3 /dev/null /dev/zero"
  j=$(submit -w n1 --gres=gpu:1 -o "$WORK/gpu1.out" --wrap "python3 $WORK/opendev.py $devs; echo ---; srun python3 $WORK/opendev.py $devs; echo ---; sleep 6")
  wait_running "$j"
  capsh cg.gpu1_devices_list "devices.list of each cgroup of the --gres=gpu:1 job" "dumpcg $j | grep -E '^(==|devices)'"
  wait_end "$j"
  cap cg.gpu1_open "--gres=gpu:1 batch + step: open() of each fake GPU (ENXIO = allowed, no driver; EPERM = denied)" cat "$WORK/gpu1.out"
  cap cg.gpu2_srun_open "srun --gres=gpu:2: the same" srun -w n1 --gres=gpu:2 python3 "$WORK/opendev.py" $devs
  cap cg.gpu0_srun_open "srun without --gres: the same" srun -w n1 python3 "$WORK/opendev.py" $devs
  j=$(submit -w n1 --gres=gpu:2 -o "$WORK/gpu2_step1.out" --wrap "python3 $WORK/opendev.py $devs; echo ---; srun --gres=gpu:1 python3 $WORK/opendev.py $devs")
  wait_end "$j"
  cap cg.gpu2_job_gpu1_step "a gpu:2 batch job (first block) whose srun step asks gpu:1 (second block)" cat "$WORK/gpu2_step1.out"
  capsh cg.slurmd_log "slurmd n1 log lines of this phase (task/cgroup, devices)" "grep -E 'task/cgroup|devices|cgroup' $BASE/log/slurmd-n1.log | tail -n 60"
}

phase_linux() {
  PHASE=linux; echo "phase $PHASE"
  configure linux distinct
  local j
  j=$(submit -w n1 --mem=100M -o "$WORK/l_oom_batch.out" -e "$WORK/l_oom_batch.err" --wrap "echo before; $HOG; echo after rc=\$?")
  wait_end "$j"
  cap linux.oom_batch_stderr "jobacct_gather/linux: OOM batch job's -e file" cat "$WORK/l_oom_batch.err"
  cap linux.oom_batch_stdout "its -o file" cat "$WORK/l_oom_batch.out"
  cap linux.oom_batch_sacct_P "its sacct -P" sacct -j "$j" -o "$SACCT_OOM" -P
  cap linux.oom_batch_scontrol "its scontrol show job" scontrol show job "$j"
  cap linux.oom_srun "srun of the hog" srun -w n1 --mem=100M bash -c "$HOG"
  j=$(submit -w n1 --mem=400M -o "$WORK/l_usage.out" --wrap "python3 $WORK/usage.py; srun python3 $WORK/usage.py")
  wait_end "$j"
  cap linux.usage_out "usage job's output" cat "$WORK/l_usage.out"
  cap linux.usage_sacct_P "jobacct_gather/linux usage: sacct -P" sacct -j "$j" -o "$SACCT_USE" -P
  cap linux.usage_sacct_wide "jobacct_gather/linux usage: sacct without -P" sacct -j "$j" -o "$SACCT_USE"
}

# cgroup.conf variants: which limits Slurm derives (AllowedRAMSpace, AllowedSwapSpace, MinRAMSpace)
# and which controllers get directories when a Constrain* is off
phase_variants() {
  local j name conf
  PHASE=variants; echo "phase $PHASE"
  sed -e 's|^# no usable cgroup setup.*|# regenerate.sh: cgroup plugins|' -e 's|^ProctrackType=.*|ProctrackType=proctrack/cgroup|' \
      -e 's|^TaskPlugin=.*|TaskPlugin=task/cgroup,task/affinity|' -e 's|^JobAcctGatherType=.*|JobAcctGatherType=jobacct_gather/cgroup|' \
      -e 's|^JobAcctGatherFrequency=.*|JobAcctGatherFrequency=1|' "$BASE/orig.slurm.conf" >"$ETC/slurm.conf"
  sed -e "s|File=$BASE/dev/nvidia|File=$DEVS/nvidia|" "$BASE/orig.gres.conf" >"$ETC/gres.conf"
  for name in allowed150_swap50 ramonly_noswap swaponly; do
    case $name in
      allowed150_swap50) conf="ConstrainRAMSpace=yes AllowedRAMSpace=150 ConstrainSwapSpace=yes AllowedSwapSpace=50 ConstrainCores=yes ConstrainDevices=yes" ;;
      ramonly_noswap) conf="ConstrainRAMSpace=yes" ;;
      swaponly) conf="ConstrainSwapSpace=yes AllowedSwapSpace=20" ;;
    esac
    { echo CgroupPlugin=cgroup/v1; tr ' ' '\n' <<<"$conf"; } >"$ETC/cgroup.conf"
    restart_daemons
    cap "variants.${name}_cgroup_conf" "cgroup.conf of variant $name" cat "$ETC/cgroup.conf"
    j=$(submit -w n1 --mem=100M -o /dev/null --wrap "sleep 12")
    wait_running "$j"
    capsh "variants.${name}_mem100M" "--mem=100M job: directories and values" "dumpcg $j"
    scancel "$j"; wait_end "$j"
    j=$(submit -w n1 --mem=10M -o /dev/null --wrap "sleep 12")
    wait_running "$j"
    capsh "variants.${name}_mem10M" "--mem=10M job (below MinRAMSpace=30): values" "dumpcg $j | grep -E '^(==.*memory|memory.(limit|memsw|soft))'"
    scancel "$j"; wait_end "$j"
  done
}

# PrologFlags=Contain: the extern step and its cgroup
phase_contain() {
  local j
  PHASE=contain; echo "phase $PHASE"
  configure cgroup distinct
  echo "PrologFlags=Contain" >>"$ETC/slurm.conf"
  restart_daemons
  cap contain.00_slurm_conf_tail "slurm.conf of this phase: the cg phase's plus PrologFlags=Contain" tail -n 3 "$ETC/slurm.conf"
  j=$(submit -w n1 -c1 --mem=100M -o /dev/null --wrap "srun sleep 12")
  wait_running "$j" 0
  capsh contain.layout_find "cgroup directories of a job with a step under PrologFlags=Contain" "find /sys/fs/cgroup/{memory,cpuset,devices,freezer,cpuacct} -regex '.*/slurm_n[12]/uid_[0-9]*/job_$j\\(/.*\\)?' -type d | sort"
  capsh contain.layout_procs "slurmstepd and task processes (extern's sleep)" "procs $j"
  capsh contain.layout_values "values" "dumpcg $j"
  wait_end "$j"
  cap contain.sacct_P "sacct -P: the extern step" sacct -j "$j" -o JobID,JobName,State,ExitCode,MaxRSS,TotalCPU -P
  cap contain.sacct_default "default sacct" sacct -j "$j"
}

restore() {
  PHASE=restore; echo "restoring setup.sh's config"
  cp "$BASE/orig.slurm.conf" "$ETC/slurm.conf"; cp "$BASE/orig.gres.conf" "$ETC/gres.conf"; rm -f "$ETC/cgroup.conf"
  restart_daemons
  sinfo -N -o '%N %T'
}

write_index() {
  {
    cat "$HERE/INDEX.head.md"
    echo
    echo "| file | stderr | phase | t | rc | command | note |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    local name phase rc t cmd note err
    while IFS=$'\t' read -r name phase rc t cmd note; do
      err=""; [ -f "$OUTDIR/$name.stderr.txt" ] && err="$name.stderr.txt"
      printf '| %s.txt | %s | %s | %s | %s | `%s` | %s |\n' "$name" "$err" "$phase" "$t" "$rc" "${cmd//|/\\|}" "${note//|/\\|}"
    done <"$TSV"
  } >"$OUTDIR/INDEX.md"
}

if [ "${1:-}" = index ]; then write_index; exit 0; fi   # only rebuild INDEX.md from captures.tsv
phases=("$@"); [ ${#phases[@]} -eq 0 ] && phases=(stockdev cg linux variants contain)
for p in "${phases[@]}"; do "phase_$p"; done
restore
[ -f "$HERE/INDEX.head.md" ] && write_index
echo "done in $((SECONDS - T0)) s"
