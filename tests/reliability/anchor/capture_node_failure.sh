#!/usr/bin/env bash
# Node failure on the REAL Slurm 22.05 anchor (../shared/slurm-anchor): what slurmctld does when
# a slurmd dies (kill -9) with jobs on its node, and when it comes back, for ReturnToService
# 1, 2 and 0.  Outputs go to tests/reliability/reference/node_failure/ with an INDEX.md
# (NAME.txt stdout, NAME.stderr.txt stderr when not empty); tests/reliability and
# tests/integration/test_node_failure.py compare plurm with the fields that must match.
#
# Run as root with the Debian Slurm on PATH:  PATH=/usr/sbin:/usr/bin:/sbin:/bin bash capture_node_failure.sh
# It starts the anchor (setup.sh, ACCOUNTING=dbd, 2 nodes), rewrites slurm.conf with
# SlurmdTimeout=10, AuthInfo=cred_expire=10 and the ReturnToService of each round, and
# tears the anchor down at the end (KEEP=1 leaves it up).  About 6 minutes.
# Rounds rts1 (ReturnToService=1), rts2 (2), rts0 (0, JobRequeue=0): three jobs on one
# node, its slurmd killed, restarted while the old copies still run; then n2 set DOWN by
# an administrator and its slurmd restarted.  rts1 also: a job sent to the node after its
# slurmd died ("late"), and an administrator's DOWN of a node with jobs on it (10_*).
# Last, stop.*: a slurmd stopped (SIGSTOP) past SlurmdTimeout, then continued.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ANCHOR=${ANCHOR:-$(cd "$HERE/../../../.." && pwd)/shared/slurm-anchor}
OUT=${OUT:-$HERE/../reference/node_failure}
BASE=/tmp/slurm-anchor
RUN=$BASE/run
WORK=$BASE/node_failure
TIMEOUT_S=10
CRED_EXPIRE=10
[ -f "$ANCHOR/setup.sh" ] || { echo "no anchor at $ANCHOR" >&2; exit 1; }

NNODES=2 ACCOUNTING=dbd FRESH=1 bash "$ANCHOR/setup.sh" >&2 || exit 1
rm -rf "$WORK" "$OUT"; mkdir -p "$WORK" "$OUT"
cd "$WORK"
T0=$SECONDS
{
  echo "# Node failure on real Slurm ($(sinfo -V))"
  echo
  echo "Produced by \`tests/reliability/anchor/capture_node_failure.sh\` on $(date -u +%Y-%m-%d) (2-core Debian 12 VM),"
  echo "anchor from ../shared/slurm-anchor/setup.sh: NNODES=2 ACCOUNTING=dbd (n1, n2: 4 CPUs, 2800 MB each), then"
  echo "SlurmdTimeout=$TIMEOUT_S, AuthInfo=cred_expire=$CRED_EXPIRE and ReturnToService per round (slurm.conf.*.txt)."
  echo "\`NAME.txt\` is stdout, \`NAME.stderr.txt\` stderr (when not empty); \`t\` is seconds since the start of the"
  echo "capture, \`events.txt\` the timeline.  Each round: three batch jobs (\`--requeue\`, \`--no-requeue\`, neither),"
  echo "kill -9 of the slurmd of their node, captures while it is silent, DOWN, and after its slurmd restarts."
  echo
  echo "| name | t | rc | command |"
  echo "| --- | --- | --- | --- |"
} > "$OUT/INDEX.md"
cap() {
  local name=$1; shift
  "$@" >"$OUT/$name.txt" 2>"$OUT/$name.stderr.txt"
  local rc=$?
  [ -s "$OUT/$name.stderr.txt" ] || rm -f "$OUT/$name.stderr.txt"
  printf '| %s | %s | %s | `%s` |\n' "$name" "$((SECONDS - T0))" "$rc" \
    "$(printf '%q ' "$@" | sed 's/ $//; s/|/\\|/g')" >> "$OUT/INDEX.md"
}
event() { echo "t=$((SECONDS - T0)) $*" | tee -a "$OUT/events.txt" >&2; }
jid() { awk '{print $NF}' <<<"$1"; }
node_state() { sinfo -h -N -o '%N %T' 2>/dev/null | awk -v n="$1" '$1 == n {print $2}'; }
wait_state() { # wait_state NODE REGEX SECONDS
  local i
  for i in $(seq 1 $(($3 * 5))); do grep -Eq "$2" <<<"$(node_state "$1")" && return 0; sleep 0.2; done
  event "timeout waiting for $1 to match $2 (is $(node_state "$1"))"; return 1
}
wait_jobs_gone() {
  local i
  for i in $(seq 1 900); do [ -z "$(squeue -h -j "$1" -o %i 2>/dev/null)" ] && return 0; sleep 0.2; done
  event "timeout waiting for jobs $1"
}
pidof_file() { tr -dc 0-9 < "$1" 2>/dev/null; }
kill_slurmd() { # kill -9 the slurmd of node $1 (by its pid file)
  local pid; pid=$(pidof_file "$RUN/slurmd-$1.pid")
  [ -n "$pid" ] && [ "$(cat /proc/$pid/comm 2>/dev/null)" = slurmd ] && kill -9 "$pid" && event "kill -9 slurmd $1 (pid $pid)"
}
start_slurmd() { /usr/sbin/slurmd -N "$1" && event "slurmd $1 started"; }
# which job processes still live (each script sleeps its own number of seconds)
procs() { ps -eo pid,args | awk '$2 == "sleep" && $3 ~ /^[6-9][0-9]$/ {print $1, $2, $3}' | sort -k3; }

restart_ctld() { # restart_ctld RTS JOBREQUEUE : new slurm.conf, slurmctld restarted (state kept)
  local pid n i
  sed -i -e '/^ReturnToService=/d' -e '/^SlurmdTimeout=/d' -e '/^AuthInfo=/d' -e '/^JobRequeue=/d' \
      -e '/^MinJobAge=/d' /etc/slurm/slurm.conf
  printf 'ReturnToService=%s\nSlurmdTimeout=%s\nAuthInfo=cred_expire=%s\nJobRequeue=%s\nMinJobAge=600\n' \
      "$1" "$TIMEOUT_S" "$CRED_EXPIRE" "$2" >> /etc/slurm/slurm.conf
  for n in n1 n2; do
    pid=$(pidof_file "$RUN/slurmd-$n.pid")
    [ -n "$pid" ] && [ "$(cat /proc/$pid/comm 2>/dev/null)" = slurmd ] && kill -TERM "$pid"
  done
  pid=$(pidof_file "$RUN/slurmctld.pid")
  [ -n "$pid" ] && [ "$(cat /proc/$pid/comm 2>/dev/null)" = slurmctld ] && kill -TERM "$pid"
  sleep 3
  ( cd "$BASE" && /usr/sbin/slurmctld )
  for i in $(seq 1 100); do grep -q UP <<<"$(scontrol ping 2>/dev/null)" && break; sleep 0.2; done
  start_slurmd n1; start_slurmd n2
  for n in n1 n2; do
    wait_state $n '^(idle|mixed|allocated)$' 30 || { scontrol update nodename=$n state=resume; wait_state $n '^idle$' 30; }
  done
  event "slurmctld restarted: ReturnToService=$1 JobRequeue=$2"
}

snap() { # snap PREFIX : everything informative at this moment
  local p=$1
  cap "${p}_sinfo" sinfo
  cap "${p}_sinfo_R" sinfo -R
  cap "${p}_sinfo_N" sinfo -N -o '%N %T %E'
  cap "${p}_squeue" squeue -o '%i %j %T %r %N'
  cap "${p}_scontrol_show_node" scontrol show node "$NODE"
  local j
  for j in ${JOBS//,/ }; do cap "${p}_scontrol_show_job_$j" scontrol show job "$j"; done
  cap "${p}_sacct_D" sacct -D -X -j "$JOBS" -o JobID,JobName,State,ExitCode,NodeList,Start,End,Reason%30 -P
  cap "${p}_sacct" sacct -X -j "$JOBS" -o JobID,JobName,State,ExitCode,NodeList,Reason%30 -P
  cap "${p}_sacct_D_steps" sacct -D -j "$JOBS" -o JobID,JobName,State,ExitCode,NodeList -P
  cap "${p}_sacct_D_default" sacct -D -j "$JOBS"
  procs > "$OUT/${p}_procs.txt"
}

round() { # round NAME RTS JOBREQUEUE SLEEP
  local r=$1 rts=$2 jr=$3 mark=$4 a b c i f
  restart_ctld "$rts" "$jr"
  cp /etc/slurm/slurm.conf "$OUT/slurm.conf.$r.txt"
  # Three jobs, one CPU each (cons_tres packs them on one node).  Each prints its restart count.
  # Run 0 sleeps long (its copy still runs when the slurmd comes back), a later run 20 s.
  body() { echo "echo start \$SLURM_RESTART_COUNT \$SLURMD_NODENAME; if [ \"\${SLURM_RESTART_COUNT:-0}\" -ge 1 ]; then sleep 20; else sleep $1; fi; echo end"; }
  a=$(jid "$(sbatch --requeue -J rq -o "$WORK/$r-rq-%j.out" --wrap "$(body "$mark")")")
  b=$(jid "$(sbatch --no-requeue -J norq -o "$WORK/$r-norq-%j.out" --wrap "$(body $((mark + 1)))")")
  c=$(jid "$(sbatch -J dflt -o "$WORK/$r-dflt-%j.out" --wrap "$(body $((mark + 2)))")")
  JOBS="$a,$b,$c"
  for i in $(seq 1 100); do [ "$(squeue -h -j "$JOBS" -t R -o %i | wc -l)" = 3 ] && break; sleep 0.2; done
  NODE=$(squeue -h -j "$a" -o %N)
  event "round $r: jobs rq=$a norq=$b dflt=$c on $(squeue -h -j "$JOBS" -o '%i@%N' | tr '\n' ' ')"
  snap "$r.1_running"
  kill_slurmd "$NODE"
  if [ "$r" = rts1 ]; then
    # A job sent to the node after its slurmd died, before the controller knows.
    L=$(jid "$(sbatch -w "$NODE" -J late -o "$WORK/$r-late-%j.out" --wrap "echo start \$SLURM_RESTART_COUNT; sleep 5")")
    JOBS="$JOBS,$L"
    event "job late=$L sent to $NODE"
  fi
  sleep 3
  snap "$r.2_silent"
  wait_state "$NODE" 'down' 90 && event "$NODE is $(node_state "$NODE")"
  snap "$r.3_down"
  sleep 2
  snap "$r.4_down_later"
  for i in $(seq 1 150); do [ -n "$(squeue -h -j "$JOBS" -t R -o %i)" ] && break; sleep 0.2; done
  event "running again: $(squeue -h -j "$JOBS" -t R -o '%i@%N' | tr '\n' ' ')"
  snap "$r.5_requeued_running"
  procs > "$OUT/$r.5_requeued_running_procs_before_slurmd.txt"
  start_slurmd "$NODE"
  sleep 5
  event "$NODE is $(node_state "$NODE") after its slurmd restarted"
  snap "$r.6_slurmd_back"
  if [ "$rts" = 0 ]; then
    cap "$r.7_resume" scontrol update nodename="$NODE" state=resume
    sleep 2
    event "$NODE is $(node_state "$NODE") after state=resume"
    snap "$r.7_resumed"
  fi
  wait_jobs_gone "$JOBS"
  event "round $r: jobs done"
  snap "$r.8_done"
  for f in "$WORK/$r"-*.out; do cp "$f" "$OUT/$r.out.$(basename "$f" .out | sed "s/^$r-//").txt"; done
  # DOWN for another reason than not responding, then its slurmd registers again (restart):
  # ReturnToService=2 should return it, 1 and 0 leave it DOWN.
  cap "$r.9_admin_down" scontrol update nodename=n2 state=down reason=maintenance
  kill_slurmd n2; sleep 1; start_slurmd n2; sleep 5
  event "n2 (admin DOWN, slurmd re-registered) is $(node_state n2)"
  cap "$r.9_admin_down_sinfo_R" sinfo -R
  cap "$r.9_admin_down_sinfo_N" sinfo -N -o '%N %T %E'
  scontrol update nodename=n2 state=resume
  wait_state n2 '^idle$' 30
  if [ "$rts" = 1 ]; then
    # An administrator sets DOWN a node with a --requeue job and a --no-requeue job on it.
    local d e
    d=$(jid "$(sbatch -w n2 --requeue -J adrq -o "$WORK/$r-adrq-%j.out" --wrap "echo start \$SLURM_RESTART_COUNT; sleep 30")")
    e=$(jid "$(sbatch -w n2 --no-requeue -J adnorq -o "$WORK/$r-adnorq-%j.out" --wrap "echo start \$SLURM_RESTART_COUNT; sleep 30")")
    for i in $(seq 1 100); do [ "$(squeue -h -j "$d,$e" -t R -o %i | wc -l)" = 2 ] && break; sleep 0.2; done
    JOBS="$d,$e"; NODE=n2
    cap "$r.10_admin_down_busy" scontrol update nodename=n2 state=down reason=maintenance
    sleep 2
    snap "$r.10_admin_down_busy"
    scontrol update nodename=n2 state=resume
    scancel "$d" "$e" 2>/dev/null
    wait_jobs_gone "$d,$e"
  fi
}

cap sacct_helpformat sacct --helpformat
round rts1 1 1 91
round rts2 2 1 94
round rts0 0 0 97

# A slurmd stopped (SIGSTOP) past SlurmdTimeout, then continued (ReturnToService=1).
restart_ctld 1 1
pid=$(pidof_file "$RUN/slurmd-n1.pid")
if [ -n "$pid" ]; then
  kill -STOP "$pid"; event "SIGSTOP slurmd n1 ($pid)"
  wait_state n1 'down' 60 && event "stopped n1 is $(node_state n1)"
  cap stop.1_sinfo_R sinfo -R
  cap stop.1_sinfo_N sinfo -N -o '%N %T %E'
  kill -CONT "$pid"; event "SIGCONT slurmd n1"
  wait_state n1 '^idle$' 60 && event "continued n1 is $(node_state n1)"
  cap stop.2_sinfo_R sinfo -R
  cap stop.2_sinfo_N sinfo -N -o '%N %T %E'
fi
cp "$BASE/log/slurmctld.log" "$OUT/slurmctld.log.txt"
event "done"
[ "${KEEP:-0}" = 1 ] || bash "$ANCHOR/teardown.sh" >&2
