#!/usr/bin/env bash
# Copyright the plurm authors.
# SPDX-License-Identifier: Apache-2.0
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file
# except in compliance with the License. You may obtain a copy of the License at
#     http://www.apache.org/licenses/LICENSE-2.0
# Unless required by applicable law or agreed to in writing, software distributed under the
# License is distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND.
#
# Capture how the REAL Slurm 22.05 (the anchor in /work/shared/slurm-anchor) answers
# authorization questions: who may cancel / hold / update / signal whose job, what a plain
# user may change on an own job, operator vs user vs root, sacctmgr privileges, PrivateData,
# bad values and size limits, and what a batch job sees about its own identity.
# Only observable behaviour is recorded (stdout, stderr, exit code); no Slurm code.
#
# Run as root on the anchor machine:
#     bash tests/security/anchor/capture_authz.sh
# It restarts the anchor with a wiped state (FRESH=1 ACCOUNTING=dbd NNODES=2, so job ids start
# at 1), adds a partition `restricted` (AllowGroups=root) to /etc/slurm/slurm.conf, creates
# the operator user plurmtop, runs every scenario, and finally restores slurm.conf and
# slurmdbd.conf as setup.sh wrote them. It does not tear the anchor down (teardown.sh does).
# SKIP_SETUP=1 reuses a running anchor (job ids then do not start at 1).
#
# Output: tests/security/reference/slurm-22.05-authz/NAME.txt (stdout), NAME.stderr.txt
# (stderr, always written, may be empty) and INDEX.md (name | user | command | rc | note).
set -uo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin      # the real Slurm commands, never plurm's
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
ANCHOR=${ANCHOR:-/work/shared/slurm-anchor}
OUT=${OUT:-$REPO/tests/security/reference/slurm-22.05-authz}
WORK=/tmp/authz-work
CONF=/etc/slurm/slurm.conf
DBDCONF=/etc/slurm/slurmdbd.conf
BASE=/tmp/slurm-anchor
A=plurmta B=plurmtb OP=plurmtop
umask 022

[ "$(id -u)" = 0 ] || { echo "capture_authz: must run as root" >&2; exit 1; }

# ------------------------------------------------------------------ anchor + users
if [ "${SKIP_SETUP:-0}" != 1 ]; then
  FRESH=1 ACCOUNTING=dbd NNODES=2 bash "$ANCHOR/setup.sh" >&2 || exit 1
fi
python3 -c "import sys; sys.path.insert(0, '$REPO/tests'); import osusers; osusers.ensure_test_users()" || exit 1
id "$OP" >/dev/null 2>&1 || useradd --create-home --user-group --groups plurmtgrp --shell /bin/sh "$OP" || exit 1

cp "$CONF" "$BASE/slurm.conf.authz-orig"; cp "$DBDCONF" "$BASE/slurmdbd.conf.authz-orig"
restore_conf() {
  cp "$BASE/slurm.conf.authz-orig" "$CONF"
  install -m 600 "$BASE/slurmdbd.conf.authz-orig" "$DBDCONF"
}
trap restore_conf EXIT

rm -rf "$WORK"; mkdir -p "$WORK" "$OUT"; chmod 1777 "$WORK"
find "$OUT" -maxdepth 1 -type f \( -name '*.txt' -o -name INDEX.md \) -delete   # (SUMMARY.md is hand-written)
cd "$WORK"

SLURM_V=$(sinfo -V)
cat > "$OUT/INDEX.md" <<EOF
# Authorization behaviour of real Slurm ($SLURM_V)

Produced by \`bash tests/security/anchor/capture_authz.sh\` on $(date -u +%Y-%m-%d) on a 2-core Debian 12 VM
(Debian's slurm-wlm 22.05.8, munge, slurmdbd + MariaDB), cluster from \`/work/shared/slurm-anchor/setup.sh\`
with \`FRESH=1 ACCOUNTING=dbd NNODES=2\`: nodes n[1-2] (4 CPUs, 2800 MB, gpu:4 each), partition \`debug\` (default)
plus \`restricted\` (\`AllowGroups=root\`) and \`capped\` (\`MaxTime=60\`), \`AccountingStorageEnforce=associations\`, SlurmUser=root.
See \`slurm.conf.txt\` / \`slurm.conf.privatedata.txt\`.

Users: \`plurmta\` (uid 1001), \`plurmtb\` (uid 1002), both in group \`plurmtgrp\`; \`plurmtop\` (uid 1003,
sacctmgr AdminLevel=Operator); all in account \`authz\`. root is AdminLevel=Administrator.
Non-root commands ran as \`runuser -u USER -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=~USER USER=USER LOGNAME=USER CMD\`
in \`$WORK\` (mode 1777), umask 022.

\`NAME.txt\` is stdout, \`NAME.stderr.txt\` stderr (empty file = nothing on stderr). Job ids are deterministic
(fresh state, ids start at 1); times, the scheduler's pids, StartTime/EndTime/SubmitTime fields and
\`RunTime\` in \`scontrol show job\` / \`sacct\` output vary between runs. \`JOB=N\` in a command is the id of the job
the scenario uses (see the names). Notes marked (times vary) contain timestamps.

| name | user | command | rc | note |
| --- | --- | --- | --- | --- |
EOF

home_of() { getent passwd "$1" | cut -d: -f6; }
# as USER CMD... : run CMD as USER with a clean environment
as() {
  local u=$1; shift
  if [ "$u" = root ]; then
    env -i PATH="$PATH" HOME=/root USER=root LOGNAME=root "$@"
  else
    runuser -u "$u" -- env -i PATH="$PATH" HOME="$(home_of "$u")" USER="$u" LOGNAME="$u" "$@"
  fi
}
# cap NAME USER NOTE CMD... : run CMD as USER, store stdout/stderr, add an INDEX row
cap() {
  local name=$1 u=$2 note=$3; shift 3
  as "$u" "$@" >"$OUT/$name.txt" 2>"$OUT/$name.stderr.txt"
  local rc=$?
  local shown; shown=$(printf '%q ' "$@" | sed 's/ $//')
  row "$name" "$u" "$shown" "$rc" "$note$(outcome "$name" "$rc")"
  return 0
}
# capsh NAME USER NOTE 'snippet' : same for a shell snippet (shown verbatim in INDEX)
capsh() {
  local name=$1 u=$2 note=$3 snip=$4
  as "$u" bash -c "$snip" >"$OUT/$name.txt" 2>"$OUT/$name.stderr.txt"
  local rc=$?
  row "$name" "$u" "$snip" "$rc" "$note$(outcome "$name" "$rc")"
  return 0
}
# outcome NAME RC : " -> <last stderr line>" (or the last stdout line when rc != 0), for the INDEX note
outcome() {
  local line=""
  if [ -s "$OUT/$1.stderr.txt" ]; then line=$(grep -v '^ *$' "$OUT/$1.stderr.txt" | tail -n 1)
  elif [ "$2" != 0 ]; then line=$(grep -v '^ *$' "$OUT/$1.txt" | tail -n 1); fi
  line=$(printf '%s' "$line" | sed 's/^ *//' | cut -c1-140)
  [ -n "$line" ] && printf ' → `%s`' "${line//\`/\'}"
}
row() {
  local cmd=${3//|/\\|}; cmd=${cmd//$'\n'/ }
  local note=${5//|/\\|}
  printf '| %s | %s | `%s` | %s | %s |\n' "$1" "$2" "$cmd" "$4" "$note" >> "$OUT/INDEX.md"
}
# annot NAME TEXT : append ": TEXT" to the note of NAME's INDEX row (for rows made by s7set)
annot() {
  local t=${2//|/\\|}
  awk -v n="| $1 |" -v t="$t" 'index($0, n) == 1 { sub(/ \|$/, ": " t " |") } { print }' "$OUT/INDEX.md" > "$OUT/INDEX.md.tmp" && mv "$OUT/INDEX.md.tmp" "$OUT/INDEX.md"
}
section() { printf '| **%s** | | | | |\n' "$1" >> "$OUT/INDEX.md"; }
# sub USER ARGS... : sbatch as USER, print the job id (empty on failure)
sub() { local u=$1; shift; as "$u" sbatch --parsable "$@" 2>>"$WORK/sub.err" | cut -d';' -f1; }
# wait_state JOB STATE : until squeue reports STATE (R/PD/...) for JOB (max ~60 s)
wait_state() {
  local i
  for i in $(seq 1 300); do [ "$(squeue -h -j "$1" -o %t 2>/dev/null)" = "$2" ] && return 0; sleep 0.2; done
  echo "capture_authz: job $1 not in state $2" >&2
}
wait_gone() {
  local i
  for i in $(seq 1 300); do [ -z "$(squeue -h -j "$1" -o %t 2>/dev/null)" ] && return 0; sleep 0.2; done
  echo "capture_authz: job $1 still queued" >&2
}
wait_ctld() { local i; for i in $(seq 1 150); do scontrol ping 2>/dev/null | grep -q UP && return 0; sleep 0.2; done; return 1; }
restart_dbd() {
  local pid; pid=$(tr -dc 0-9 < "$BASE/run/slurmdbd.pid")
  if [ -n "$pid" ] && [ "$(cat /proc/$pid/comm 2>/dev/null)" = slurmdbd ]; then
    kill -TERM "$pid"; for i in $(seq 1 100); do [ -d /proc/$pid ] || break; sleep 0.1; done
  fi
  /usr/sbin/slurmdbd
  for i in $(seq 1 100); do sacctmgr -n show cluster >/dev/null 2>&1 && break; sleep 0.2; done
  sleep 2   # slurmctld reconnects to slurmdbd
}
PEND=(--begin=now+3600)   # pending job: Reason=BeginTime

# ------------------------------------------------------------------ setup as root (recorded)
section "setup (root)"
printf 'PartitionName=restricted Nodes=ALL AllowGroups=root MaxTime=INFINITE State=UP\nPartitionName=capped Nodes=ALL MaxTime=60 State=UP\n' >> "$CONF"
cap setup_reconfigure root "adds partitions restricted (AllowGroups=root) and capped (MaxTime=60) to slurm.conf" scontrol reconfigure
wait_ctld; sleep 1
cp "$CONF" "$OUT/slurm.conf.txt"
cap setup_add_account root "account authz" sacctmgr -i add account authz Cluster=anchor Description=authz Organization=authz
cap setup_add_users root "associations for the three test users" sacctmgr -i add user "$A,$B,$OP" account=authz defaultaccount=authz
cap setup_operator root "plurmtop becomes AdminLevel=Operator" sacctmgr -i modify user "$OP" set adminlevel=Operator
cap setup_show_user root "users and admin levels" sacctmgr show user format=User,DefaultAccount,AdminLevel
sleep 2   # let slurmctld receive the association/admin-level updates
capsh config_grep root "auth / PrivateData / SlurmUser / script size settings (no PrivateData)" \
  "scontrol show config | grep -i -E 'auth|privatedata|slurmuser|maxscript|max_script'"
cap setup_partitions root "partitions (restricted: AllowGroups=root, capped: MaxTime=60)" scontrol show partition

# ------------------------------------------------------------------ 1+2: other user's jobs
section "1-2: cancel / hold / update / signal another user's job"
J1=$(sub $A -t 10 "${PEND[@]}" -J a_pend --wrap 'sleep 600')
J2=$(sub $A -t 10 -J a_run -o "$WORK/a_run-%j.out" --wrap 'trap "echo got USR1" USR1; for i in $(seq 600); do sleep 1; done')
wait_state "$J2" R
cap s1_queue_before root "JOB=$J1 pending, JOB=$J2 running, both plurmta" squeue -o '%i %u %t %r %j'
cap s1_b_scancel_pending $B "plurmtb cancels plurmta's pending job: refused, rc 210 (= 2002 ESLURM_ACCESS_DENIED & 0xff)" scancel "$J1"
cap s1_b_scancel_running $B "plurmtb cancels plurmta's running job" scancel "$J2"
cap s1_b_scancel_v_pending $B "same with -v" scancel -v "$J1"
cap s1_b_scancel_v_running $B "same with -v (running job)" scancel -v "$J2"
cap s1_b_scancel_u $B "plurmtb cancels by user filter -u plurmta" scancel -u "$A"
cap s1_b_scancel_u_v $B "same with -v" scancel -v -u "$A"
cap s1_b_scancel_name $B "plurmtb cancels by job name of plurmta's job" scancel -v -n a_pend
cap s1_b_scancel_nosuch $B "plurmtb cancels a job id that does not exist: rc 0 (error only on stderr)" scancel -v 999999
cap s1_queue_after_b root "plurmta's jobs untouched" squeue -o '%i %u %t %r %j'
cap s2_b_hold $B "plurmtb holds plurmta's pending job: refused with 'Invalid user id' (two lines)" scontrol hold "$J1"
cap s2_b_uhold $B "plurmtb uholds plurmta's pending job" scontrol uhold "$J1"
cap s2_b_release $B "plurmtb releases plurmta's pending job" scontrol release "$J1"
cap s2_b_requeue $B "plurmtb requeues plurmta's running job" scontrol requeue "$J2"
cap s2_b_suspend $B "plurmtb suspends plurmta's running job" scontrol suspend "$J2"
cap s2_b_resume $B "plurmtb resumes plurmta's running job" scontrol resume "$J2"
cap s2_b_update_timelimit $B "plurmtb lowers TimeLimit of plurmta's pending job" scontrol update JobId="$J1" TimeLimit=5
cap s2_b_update_jobname $B "plurmtb renames plurmta's pending job" scontrol update JobId="$J1" JobName=stolen
cap s2_b_signal $B "plurmtb sends USR1 to plurmta's running job" scancel -s USR1 "$J2"
cap s2_b_signal_v $B "same with -v" scancel -v -s USR1 "$J2"
cap s2_b_scontrol_show_job root "after plurmtb's attempts: job unchanged (times vary)" scontrol show job "$J1"
cap s2_a_suspend_own $A "plurmta suspends own running job: suspend is operator/admin-only" scontrol suspend "$J2"
cap s2_op_suspend $OP "operator suspends plurmta's running job: allowed" scontrol suspend "$J2"
sleep 1
cap s2_op_suspend_state root "state after operator suspend" squeue -h -j "$J2" -o '%i %t %r'
cap s2_op_resume $OP "operator resumes it" scontrol resume "$J2"
sleep 1
cap s2_op_signal $OP "operator sends USR1 to plurmta's job" scancel -v -s USR1 "$J2"
cap s2_op_update_timelimit $OP "operator lowers TimeLimit of plurmta's pending job" scontrol update JobId="$J1" TimeLimit=9
cap s2_a_signal_own $A "plurmta sends USR1 to own job (without --full the batch shell's trap does not run)" scancel -v -s USR1 "$J2"
cap s2_a_signal_own_full $A "plurmta sends USR1 to own job incl. the batch shell (--full)" scancel -v --full -s USR1 "$J2"
sleep 2
capsh s2_signal_output root "job output after the USR1 signals: the plain signals reached the shell's child (bash reports it), only --full ran the trap ('got USR1')" "cat $WORK/a_run-$J2.out"
cap s2_a_requeue_own $A "plurmta requeues own running job: allowed, job goes back to PD (BeginTime)" scontrol requeue "$J2"
sleep 1
cap s2_a_requeue_state root "state after own requeue" squeue -h -j "$J2" -o '%i %t %r'
cap s1_a_scancel_own_pending $A "plurmta cancels own pending job (-v)" scancel -v "$J1"
cap s1_root_scancel_running root "root cancels plurmta's (requeued/running) job (-v)" scancel -v "$J2"
wait_gone "$J1"; wait_gone "$J2"
cap s1_sacct_cancelled root "State shows 'CANCELLED by UID' (uid 1001 = plurmta, 0 = root)" sacct -X -j "$J1,$J2" -o JobID,User,State%20,ExitCode

# ------------------------------------------------------------------ 3: updates of own pending job
section "3: plurmta updates own pending job"
J3=$(sub $A -t 30 "${PEND[@]}" -J orig --wrap 'sleep 600')
J3R=$(sub $A -t 30 -J a_run3 --wrap 'sleep 600')
wait_state "$J3R" R
cap s3_show_before root "JOB=$J3 before the updates (times vary)" scontrol show job "$J3"
cap s3_timelimit_lower $A "TimeLimit 30 -> 20" scontrol update JobId="$J3" TimeLimit=20
cap s3_timelimit_higher $A "TimeLimit 20 -> 60 on a PENDING job: accepted (partition MaxTime is INFINITE)" scontrol update JobId="$J3" TimeLimit=60
cap s3_timelimit_equal $A "TimeLimit = current (20)" scontrol update JobId="$J3" TimeLimit=20
cap s3_timelimit_unlimited $A "TimeLimit=UNLIMITED on a PENDING job: accepted" scontrol update JobId="$J3" TimeLimit=UNLIMITED
cap s3_timelimit_running_lower $A "running job: TimeLimit 30 -> 15: accepted" scontrol update JobId="$J3R" TimeLimit=15
cap s3_timelimit_running_higher $A "running job: TimeLimit 15 -> 45" scontrol update JobId="$J3R" TimeLimit=45
cap s3_priority_higher $A "Priority=100000" scontrol update JobId="$J3" Priority=100000
cap s3_priority_lower $A "Priority=1" scontrol update JobId="$J3" Priority=1
cap s3_nice_negative $A "Nice=-10" scontrol update JobId="$J3" Nice=-10
cap s3_nice_positive $A "Nice=10: accepted" scontrol update JobId="$J3" Nice=10
cap s3_nice_lower_again $A "Nice=5 after Nice=10 (lowering own nice, still >= 0): accepted" scontrol update JobId="$J3" Nice=5
cap s3_partition_allowed $A "Partition=debug (usable)" scontrol update JobId="$J3" Partition=debug
cap s3_jobname $A "JobName=renamed" scontrol update JobId="$J3" JobName=renamed
cap s3_comment $A "Comment=hello" scontrol update JobId="$J3" Comment=hello
cap s3_numnodes $A "NumNodes=2 on a pending job: accepted" scontrol update JobId="$J3" NumNodes=2
cap s3_starttime $A "StartTime=now+7200 (BeginTime)" scontrol update JobId="$J3" StartTime=now+7200
cap s3_account $A "Account=anchor (an account plurmta is not in)" scontrol update JobId="$J3" Account=anchor
cap s3_show_after root "JOB=$J3 after the updates (times vary)" scontrol show job "$J3"
cap s3_show_running_after root "JOB=$J3R after the updates (times vary)" scontrol show job "$J3R"
cap s3_root_timelimit_higher root "root raises TimeLimit (admin may)" scontrol update JobId="$J3" TimeLimit=120
cap s3_root_priority root "root sets Priority" scontrol update JobId="$J3" Priority=100000
cap s3_root_nice_negative root "root sets Nice=-10" scontrol update JobId="$J3" Nice=-10
cap s3_op_timelimit_higher $OP "operator raises TimeLimit" scontrol update JobId="$J3" TimeLimit=180
cap s3_op_priority $OP "operator sets Priority" scontrol update JobId="$J3" Priority=5000
cap s3_show_after_admin root "JOB=$J3 after root/operator updates (times vary)" scontrol show job "$J3"
cap s3_partition_restricted $A "Partition=restricted (AllowGroups=root): rc 1, yet the job IS moved (see s3_show_after_restricted)" scontrol update JobId="$J3" Partition=restricted
cap s3_sbatch_restricted $A "submit directly to restricted" sbatch -p restricted --wrap true
cap s3_show_after_restricted root "after the 'refused' update: Partition=restricted Reason=PartitionConfig (times vary)" scontrol show job "$J3"
cap s3_a_partition_back $A "plurmta moves it back to debug" scontrol update JobId="$J3" Partition=debug
capsh s3_state_after_back root "partition/reason after moving back" "squeue -h -j $J3 -o '%i %P %t %r'"
J3C=$(sub $A -p capped -t 30 "${PEND[@]}" -J capped --wrap 'sleep 600')
cap s3_capped_raise_within $A "JOB=$J3C in partition capped (MaxTime=60): TimeLimit 30 -> 50: accepted" scontrol update JobId="$J3C" TimeLimit=50
cap s3_capped_raise_over $A "TimeLimit 50 -> 90 (over the partition MaxTime)" scontrol update JobId="$J3C" TimeLimit=90
cap s3_capped_root_raise_over root "root: TimeLimit 90 (over MaxTime): accepted" scontrol update JobId="$J3C" TimeLimit=90
capsh s3_capped_state root "time limit / reason of the capped job" "squeue -h -j $J3C -o '%i %P %l %t %r'"
cap s3_capped_sbatch_over $A "sbatch -p capped -t 90 (over MaxTime): accepted, stays pending" sbatch -p capped -t 90 --wrap true
sleep 4
capsh s3_capped_sbatch_over_state root "state/reason of that job" "squeue -h -j $(awk '{print $NF}' "$OUT/s3_capped_sbatch_over.txt") -o '%i %P %l %t %r'"
as root scancel -u $A >/dev/null 2>&1; sleep 1
for j in $(squeue -h -u $A -o %i); do wait_gone "$j"; done

# ------------------------------------------------------------------ 4: hold / release
section "4: user hold vs admin hold"
J4=$(sub $A -t 10 "${PEND[@]}" -J holdme --wrap 'sleep 600')
st4() { squeue -h -j "$J4" -o '%i %t %r %Q'; }
cap s4_a_hold_own $A "plurmta holds own job (JOB=$J4)" scontrol hold "$J4"
capsh s4_state_a_hold root "reason after own hold; priority 0" "squeue -h -j $J4 -o '%i %t %r %Q'"
cap s4_b_release_a_hold $B "plurmtb releases plurmta's user-held job" scontrol release "$J4"
cap s4_a_release_own $A "plurmta releases own hold" scontrol release "$J4"
capsh s4_state_a_release root "after release" "squeue -h -j $J4 -o '%i %t %r %Q'"
cap s4_root_hold root "root holds plurmta's job (admin hold)" scontrol hold "$J4"
capsh s4_state_root_hold root "reason after root's hold" "squeue -h -j $J4 -o '%i %t %r %Q'"
cap s4_a_release_admin_hold $A "plurmta releases root's admin hold" scontrol release "$J4"
capsh s4_state_after_a_release root "still held?" "squeue -h -j $J4 -o '%i %t %r %Q'"
cap s4_a_uhold_admin_held $A "plurmta uholds the admin-held job: rc 0 but it stays JobHeldAdmin" scontrol uhold "$J4"
capsh s4_state_after_a_uhold root "reason after plurmta's uhold of an admin-held job" "squeue -h -j $J4 -o '%i %t %r %Q'"
cap s4_root_release root "root releases" scontrol release "$J4"
cap s4_a_uhold_own $A "plurmta uholds own job" scontrol uhold "$J4"
capsh s4_state_a_uhold root "reason after uhold" "squeue -h -j $J4 -o '%i %t %r %Q'"
cap s4_a_release_uhold $A "plurmta releases own uhold" scontrol release "$J4"
cap s4_root_uhold root "root uholds plurmta's job (user hold by root)" scontrol uhold "$J4"
capsh s4_state_root_uhold root "reason after root's uhold" "squeue -h -j $J4 -o '%i %t %r %Q'"
cap s4_a_release_root_uhold $A "plurmta releases root's uhold: allowed (a user hold, whoever set it)" scontrol release "$J4"
capsh s4_state_after_a_release2 root "after plurmta's release of root's uhold" "squeue -h -j $J4 -o '%i %t %r %Q'"
cap s4_op_hold $OP "operator holds plurmta's job: an admin hold (JobHeldAdmin)" scontrol hold "$J4"
capsh s4_state_op_hold root "reason after operator hold" "squeue -h -j $J4 -o '%i %t %r %Q'"
cap s4_a_release_op_hold $A "plurmta releases operator's hold" scontrol release "$J4"
cap s4_op_release $OP "operator releases" scontrol release "$J4"
cap s4_a_update_priority0 $A "plurmta sets Priority=0 on own job: accepted, = user hold (JobHeldUser)" scontrol update JobId="$J4" Priority=0
capsh s4_state_priority0 root "after Priority=0 update" "squeue -h -j $J4 -o '%i %t %r %Q'"
cap s4_root_release2 root "root releases" scontrol release "$J4"
cap s4_sbatch_hold $A "sbatch -H (user hold at submit)" sbatch -H --wrap true
J4H=$(squeue -h -u $A -n wrap -o %i | head -1)
capsh s4_state_sbatch_hold root "reason of the -H job" "squeue -h -u $A -n wrap -o '%i %t %r %Q'"
cap s4_a_release_sbatch_hold $A "plurmta releases the -H job" scontrol release "$J4H"
as root scancel "$J4" "$J4H"; wait_gone "$J4"; wait_gone "$J4H"

# ------------------------------------------------------------------ 5: cluster administration
section "5: node / controller administration"
cap s5_a_drain $A "plurmta drains n1" scontrol update NodeName=n1 State=DRAIN Reason=x
cap s5_a_reconfigure $A "plurmta reconfigures" scontrol reconfigure
cap s5_a_shutdown $A "plurmta shuts the controller down" scontrol shutdown
cap s5_a_update_partition $A "plurmta sets partition debug DOWN" scontrol update PartitionName=debug State=DOWN
cap s5_a_create_partition $A "plurmta creates a partition" scontrol create PartitionName=mine Nodes=n1
cap s5_a_create_reservation $A "plurmta creates a reservation" scontrol create reservation ReservationName=mine StartTime=now+86400 Duration=60 Users=$A Nodes=n1
cap s5_a_setdebug $A "plurmta changes slurmctld log level" scontrol setdebug debug
cap s5_a_ping $A "ping works for everyone" scontrol ping
cap s5_sinfo_after_a root "n1 not drained" sinfo -N -p debug -o '%N %T %E'
cap s5_op_drain $OP "operator drains n1: refused like a plain user (node update needs Administrator)" scontrol update NodeName=n1 State=DRAIN Reason=x
cap s5_sinfo_after_op root "state after the operator's drain" sinfo -N -p debug -o '%N %T %E'
cap s5_op_resume_node $OP "operator resumes n1" scontrol update NodeName=n1 State=RESUME
cap s5_op_update_partition $OP "operator updates partition debug (MaxTime)" scontrol update PartitionName=debug MaxTime=INFINITE
cap s5_op_create_reservation $OP "operator creates a reservation: allowed" scontrol create reservation ReservationName=opres StartTime=now+86400 Duration=60 Users=$A Nodes=n1
cap s5_op_delete_reservation $OP "operator deletes it" scontrol delete ReservationName=opres
cap s5_op_reconfigure $OP "operator reconfigures" scontrol reconfigure
wait_ctld; sleep 1
cap s5_op_setdebug $OP "operator changes slurmctld log level" scontrol setdebug info
as root scontrol update NodeName=n1 State=RESUME >/dev/null 2>&1
cap s5_sinfo_end root "nodes idle again" sinfo -N -p debug -o '%N %T %E'
# (the operator's `scontrol shutdown` runs at the very end, with a restart guard)

# ------------------------------------------------------------------ 6: sacctmgr
section "6: sacctmgr privileges"
cap s6_a_add_account $A "plurmta adds an account" sacctmgr -i add account foo
cap s6_a_modify_user $A "plurmta sets plurmtb's fairshare" sacctmgr -i modify user $B set fairshare=5
cap s6_a_modify_self $A "plurmta sets own fairshare" sacctmgr -i modify user $A set fairshare=5
cap s6_a_adminlevel_self $A "plurmta makes itself Administrator" sacctmgr -i modify user $A set adminlevel=Administrator
cap s6_a_delete_user $A "plurmta deletes plurmtb" sacctmgr -i delete user $B
cap s6_a_add_user $A "plurmta adds plurmtb to account anchor" sacctmgr -i add user $B account=anchor
cap s6_a_add_qos $A "plurmta adds a QOS" sacctmgr -i add qos fast
cap s6_a_show_assoc $A "plurmta lists associations (no PrivateData)" sacctmgr show assoc format=Cluster,Account,User,Share
cap s6_a_show_user $A "plurmta lists users" sacctmgr show user
cap s6_a_show_account $A "plurmta lists accounts" sacctmgr show account
cap s6_op_add_account $OP "operator adds account opacct: allowed" sacctmgr -i add account opacct Description=op Organization=op
cap s6_op_add_user $OP "operator adds plurmtb to opacct" sacctmgr -i add user $B account=opacct
cap s6_op_modify_fairshare $OP "operator sets plurmtb's fairshare: allowed (all plurmtb's associations)" sacctmgr -i modify user $B set fairshare=5
cap s6_op_adminlevel_admin $OP "operator makes plurmtb Administrator" sacctmgr -i modify user $B set adminlevel=Administrator
cap s6_op_adminlevel_operator $OP "operator makes plurmtb Operator" sacctmgr -i modify user $B set adminlevel=Operator
cap s6_op_adminlevel_self $OP "operator makes itself Administrator" sacctmgr -i modify user $OP set adminlevel=Administrator
cap s6_op_delete_user_assoc $OP "operator removes plurmtb from opacct" sacctmgr -i delete user $B account=opacct
cap s6_op_delete_account $OP "operator deletes opacct" sacctmgr -i delete account opacct
cap s6_show_user_end root "admin levels at the end of section 6" sacctmgr show user format=User,DefaultAccount,AdminLevel
cap s6_show_assoc_end root "associations at the end of section 6" sacctmgr show assoc format=Cluster,Account,User,Share
# undo whatever the operator managed to do
as root sacctmgr -i modify user $B set adminlevel=None fairshare=1 >/dev/null 2>&1
as root sacctmgr -i modify user $OP set adminlevel=Operator >/dev/null 2>&1
as root sacctmgr -i delete user $B account=opacct >/dev/null 2>&1
as root sacctmgr -i delete account opacct >/dev/null 2>&1
sleep 2

# ------------------------------------------------------------------ 8: bad values and sizes
section "8: bad values and sizes"
J8=$(sub $A -t 10 "${PEND[@]}" -J badvals --wrap 'sleep 600')
cap s8_priority_abc $A "Priority=abc on own job JOB=$J8" scontrol update JobId="$J8" Priority=abc
cap s8_timelimit_abc $A "TimeLimit=abc" scontrol update JobId="$J8" TimeLimit=abc
cap s8_root_priority_abc root "root: Priority=abc" scontrol update JobId="$J8" Priority=abc
cap s8_root_timelimit_abc root "root: TimeLimit=abc" scontrol update JobId="$J8" TimeLimit=abc
cap s8_nice_abc $A "Nice=abc: accepted, rc 0 (Nice stays 0, see s8_nice_abc_state)" scontrol update JobId="$J8" Nice=abc
cap s8_jobid_abc $A "JobId=abc" scontrol update JobId=abc TimeLimit=5
cap s8_unknown_key $A "unknown keyword" scontrol update JobId="$J8" Bogus=1
cap s8_squeue_o_unknown $A "squeue -o %? (unknown field letter): rc 0, prints %? literally, error on stderr" squeue -o '%?'
cap s8_squeue_o_mixed $A "squeue -o '%i %?'" squeue -o '%i %?'
cap s8_squeue_O_unknown $A "squeue -O bogus" squeue -O bogus
capsh s8_nice_abc_state root "Nice after Nice=abc" "scontrol show job $J8 | grep -o 'Nice=[^ ]*'"
# scripts of an exact size: '#!/bin/sh' 'true' and one long comment line
for sz in 4194304 4194305 5242880; do
  { printf '#!/bin/sh\ntrue\n#'; head -c $((sz - 17)) /dev/zero | tr '\0' '#'; echo; } > "$WORK/big-$sz.sh"
  chmod 644 "$WORK/big-$sz.sh"
done
capsh s8_script_sizes root "sizes of the generated scripts" "wc -c $WORK/big-*.sh"
cap s8_sbatch_4MiB $A "script of exactly 4194304 bytes (4 MiB): accepted" sbatch "${PEND[@]}" "$WORK/big-4194304.sh"
cap s8_sbatch_4MiB_plus1 $A "script of 4194305 bytes" sbatch "${PEND[@]}" "$WORK/big-4194305.sh"
cap s8_sbatch_5MiB $A "script of 5 MiB" sbatch "${PEND[@]}" "$WORK/big-5242880.sh"
capsh s8_sbatch_5MiB_stdin $A "5 MiB script on stdin" "sbatch ${PEND[*]} < $WORK/big-5242880.sh"
capsh s8_sbatch_name_100k $A "sbatch -J with a 100,000-char name" \
  "sbatch ${PEND[*]} -t 10 -J \"\$(head -c 100000 /dev/zero | tr '\\0' n)\" --wrap 'sleep 600'"
capsh s8_sbatch_name_1025 $A "sbatch -J with a 1025-char name" \
  "sbatch ${PEND[*]} -t 10 -J \"\$(head -c 1025 /dev/zero | tr '\\0' n)\" --wrap 'sleep 600'"
capsh s8_sbatch_name_1024 $A "sbatch -J with a 1024-char name: accepted (limit is 1024)" \
  "sbatch ${PEND[*]} -t 10 -J \"\$(head -c 1024 /dev/zero | tr '\\0' n)\" --wrap 'sleep 600'"
J8N=$(squeue -h -u $A -t PD -o '%i %j' | awk 'length($2) > 1000 {print $1}' | head -1)
J8N=${J8N:-none}
capsh s8_name_1024_squeue_len root "length of %j in squeue for JOB=$J8N (wc -c counts the newline)" "squeue -h -j $J8N -o %j | wc -c"
cap s8_name_1024_squeue_default root "default squeue NAME column (8 wide)" squeue -j "$J8N"
capsh s8_name_1024_scontrol_len root "length of 'JobName=...' in scontrol show job" \
  "scontrol show job $J8N | grep -o 'JobName=[^ ]*' | wc -c"
capsh s8_update_name_1025 $A "scontrol update JobName= with 1025 chars" \
  "scontrol update JobId=$J8N JobName=\"\$(head -c 1025 /dev/zero | tr '\\0' u)\""
capsh s8_sbatch_comment_1025 $A "sbatch --comment with 1025 chars" \
  "sbatch ${PEND[*]} --comment \"\$(head -c 1025 /dev/zero | tr '\\0' c)\" --wrap true"
capsh s8_dependency_5000_existing $A "afterok with 5000 ids: every id 1..$J8 (existing or not) + never-existing 100001..: accepted" \
  "sbatch -t 10 --dependency=afterok:\$(seq -s: 1 $J8):\$(seq -s: 100001 \$((100000 + 5000 - $J8))) --wrap true"
J8D=$(awk '{print $NF}' "$OUT/s8_dependency_5000_existing.txt"); J8D=${J8D:-none}
sleep 4
capsh s8_dependency_5000_existing_state root "JOB=$J8D: DependencyNeverSatisfied; only existing ids are kept (count), unknown ones dropped" \
  "squeue -h -j $J8D -o '%i %t %r'; scontrol show job $J8D | grep -o 'Dependency=[^ ]*' | tr ',' '\\n' | wc -l; scontrol show job $J8D | grep -o 'Dependency=[^ ]*' | cut -c1-160"
capsh s8_dependency_5000_self $A "afterok:1:2:...:5000 (includes the new job's own id): refused, and the id is used up" \
  "sbatch -t 10 --dependency=afterok:\$(seq -s: 1 5000) --wrap true"
capsh s8_dependency_self_small $A "--dependency=afterok:D:D+1 where D is a held job just submitted and D+1 the new job's own id" \
  "d=\$(sbatch --parsable -H --wrap true); sbatch -t 10 --dependency=afterok:\$d:\$((d+1)) --wrap true; scancel \$d"
capsh s8_dependency_5000_missing $A "afterok: 5000 ids that never existed (100001-105000): accepted, all dropped" \
  "sbatch -t 10 --dependency=afterok:\$(seq -s: 100001 105000) --wrap true"
J8M=$(awk '{print $NF}' "$OUT/s8_dependency_5000_missing.txt")
sleep 4
capsh s8_dependency_5000_missing_state root "what happened to it (sacct)" "sacct -X -j ${J8M:-0} -o JobID,State,ExitCode"
cap s8_dependency_cancelled $A "--dependency=afterok:1 (a cancelled job): accepted, DependencyNeverSatisfied" sbatch -t 10 --dependency=afterok:1 --wrap true
cap s8_dependency_one_missing $A "--dependency=afterok:999999 (single unknown id): accepted, runs" sbatch -t 10 --dependency=afterok:999999 --wrap true
sleep 4
capsh s8_dependency_single_state root "states of the last two jobs" "squeue -h -u $A -o '%i %t %r %E' | sort -n | tail -n 2; sacct -X -u $A -S now-1hour -o JobID,State | tail -n 2"
capsh s8_dependency_20000 $A "--dependency with 20,000 ids 1..20000 (includes own id)" \
  "sbatch -t 10 --dependency=afterok:\$(seq -s: 1 20000) --wrap true"
{ echo '#!/bin/sh'; echo "#SBATCH --dependency=afterok:$(seq -s: 100001 120000)"; echo true; } > "$WORK/dep20000.sh"
cap s8_dependency_20000_missing $A "20,000 never-existing ids in an #SBATCH --dependency line of the script (too long for one command-line argument)" sbatch -t 10 "$WORK/dep20000.sh"
sleep 4
if grep -q Submitted "$OUT/s8_dependency_20000_missing.txt"; then
  capsh s8_dependency_20000_missing_state root "what happened to it" "sacct -X -j $(awk '{print $NF}' "$OUT/s8_dependency_20000_missing.txt") -o JobID,State,ExitCode"
fi
capsh s8_job_ids_consumed root "job ids known to slurmctld so far: gaps are rejected submissions that still used up an id" \
  "scontrol -o show job | grep -o '^JobId=[0-9]*' | cut -d= -f2 | sort -n | tr '\\n' ' '; echo"
as root scancel -u $A >/dev/null 2>&1; sleep 2
for j in $(squeue -h -u $A -o %i); do wait_gone "$j"; done

# ------------------------------------------------------------------ 9: --uid / --gid
section "9: sbatch --uid / --gid"
cap s9_a_uid0 $A "plurmta: --uid=0" sbatch --uid=0 --wrap id
cap s9_a_uid_b $A "plurmta: --uid=plurmtb" sbatch --uid=$B --wrap id
cap s9_a_uid_self $A "plurmta: --uid=plurmta (itself)" sbatch --uid=$A -o "$WORK/uidself-%j.out" --wrap id
cap s9_a_gid0 $A "plurmta: --gid=0" sbatch --gid=0 --wrap id
cap s9_a_gid_grp $A "plurmta: --gid=plurmtgrp (a supplementary group of its own)" sbatch --gid=plurmtgrp -o "$WORK/gidgrp-%j.out" --wrap id
cap s9_root_uid_a root "root: --uid=plurmta: allowed; job runs as uid 1001 but gid 0 (see s9_job_outputs)" sbatch --uid=$A -o "$WORK/rootuid-%j.out" --wrap 'id; echo "$HOME $USER $LOGNAME"'
J9=$(awk '{print $NF}' "$OUT/s9_root_uid_a.txt")
cap s9_root_uid_gid_a root "root: --uid=plurmta --gid=plurmta" sbatch --uid=$A --gid=$A -o "$WORK/rootuidgid-%j.out" --wrap 'id; echo "$HOME $USER $LOGNAME"'
J9G=$(awk '{print $NF}' "$OUT/s9_root_uid_gid_a.txt")
sleep 1
for j in $(squeue -h -o %i); do wait_gone "$j"; done
capsh s9_job_outputs root "what the accepted jobs printed, and who owns the files" \
  "for f in $WORK/uidself-*.out $WORK/gidgrp-*.out $WORK/rootuid-*.out $WORK/rootuidgid-*.out; do [ -e \"\$f\" ] || continue; echo \"== \$(basename \$f)\"; cat \"\$f\"; ls -ln \"\$f\" | awk '{print \$1, \$3, \$4}'; done"
capsh s9_sacct root "user/group recorded by accounting for those jobs" \
  "sacct -X -j ${J9:-0},${J9G:-0} -o JobID,User,Group,State,ExitCode"

# ------------------------------------------------------------------ 10: identity inside a job
section "10: identity inside a batch job"
IDSCRIPT='id; umask; echo "$HOME $USER $LOGNAME"; id -G; id -Gn; pwd; env | grep -E "^(HOME|USER|LOGNAME|SHELL|PWD|SLURM_JOB_USER|SLURM_JOB_UID|SLURM_JOB_GID|SLURM_SUBMIT_DIR)=" | sort'
J10D=$(sub $A -o "$WORK/env-default-%j.out" --wrap "$IDSCRIPT")
J10N=$(sub $A --export=NONE -o "$WORK/env-none-%j.out" --wrap "$IDSCRIPT")
capsh s10_umask077_submit $A "submitted with umask 077 (SLURM_UMASK propagates)" \
  "umask 077; sbatch -o $WORK/env-umask077-%j.out --wrap '$IDSCRIPT'"
J10F=$(sub $A -o /root/forbidden.out --wrap 'echo hi')
J10I=$(sub $A -i /etc/shadow -o "$WORK/shadow-%j.out" --wrap 'cat; echo "cat rc=$?"')
J10C=$(sub $A --chdir=/root -o "$WORK/chdir-%j.out" --wrap 'pwd; echo "$SLURM_SUBMIT_DIR"')
J10C2=$(sub $A --chdir=/root --wrap 'pwd')
J10E=$(sub $A -e /root/forbidden.err -o "$WORK/forbidden-err-%j.out" --wrap 'echo out; echo err >&2')
# the same against a directory whose mode this script controls (root:root 0700): /root's mode is the host's
mkdir -p "$WORK/private"; chown root:root "$WORK/private"; chmod 700 "$WORK/private"
J10P=$(sub $A --chdir="$WORK/private" -o "$WORK/chdir-private-%j.out" --wrap 'pwd; /bin/pwd')
J10PO=$(sub $A -o "$WORK/private/forbidden-%j.out" --wrap 'echo hi')
sleep 2
for j in $J10D $J10N $J10F $J10I $J10C $J10C2 $J10E $J10P $J10PO; do wait_gone "$j"; done
sleep 2
capsh s10_env_default root "JOB=$J10D default export: id, umask, HOME/USER/LOGNAME, groups" "cat $WORK/env-default-$J10D.out"
capsh s10_env_none root "JOB=$J10N --export=NONE: same identity, plus SHELL=/bin/sh" "cat $WORK/env-none-$J10N.out"
capsh s10_env_umask077 root "the umask 077 job's output" "cat $WORK/env-umask077-*.out"
capsh s10_ls_outputs root "owners and modes of the output files (umask 022 vs 077)" \
  "cd $WORK && ls -ln env-default-$J10D.out env-none-$J10N.out env-umask077-*.out | awk '{print \$1, \$3, \$4, \$NF}'"
capsh s10_forbidden_out root "JOB=$J10F -o /root/forbidden.out: FAILED, ExitCode 0:53, no file (scontrol: Reason=JobLaunchFailure)" \
  "sacct -j $J10F -o JobID,State,ExitCode,Reason%30; stat -c '%A %u %g %n' /root/forbidden.out 2>/dev/null || echo '/root/forbidden.out: not created'"
cap s10_forbidden_out_show root "scontrol show job (times vary)" scontrol show job "$J10F"
capsh s10_stdin_shadow root "JOB=$J10I -i /etc/shadow: FAILED 0:53, no output file created (rc 1 is the cat of it)" \
  "sacct -j $J10I -o JobID,State,ExitCode,Reason%30; echo '== output'; cat $WORK/shadow-$J10I.out 2>&1"
cap s10_stdin_shadow_show root "scontrol show job (times vary)" scontrol show job "$J10I"
capsh s10_chdir_root root "JOB=$J10C --chdir=/root -o in WORK: COMPLETED; where it ran depends on /root's mode (s10_dir_modes)" \
  "sacct -j $J10C -o JobID,State,ExitCode; echo '== output'; cat $WORK/chdir-$J10C.out 2>&1"
capsh s10_chdir_root_default_out root "JOB=$J10C2 --chdir=/root, default output (slurm-%j.out relative to /root): FAILED 0:53" \
  "sacct -j $J10C2 -o JobID,State,ExitCode,Reason%30; for f in /root/slurm-$J10C2.out /tmp/slurm-$J10C2.out; do stat -c '%A %u %g %n' \$f 2>/dev/null || echo \"\$f: not created\"; done"
cap s10_chdir_root_show root "scontrol show job of the default-output job (times vary)" scontrol show job "$J10C2"
capsh s10_forbidden_err root "JOB=$J10E -e /root/forbidden.err, -o in WORK: FAILED 0:53, the -o file stays empty" \
  "sacct -j $J10E -o JobID,State,ExitCode,Reason%30; echo '== output'; cat $WORK/forbidden-err-$J10E.out 2>&1"
capsh s10_dir_modes root "modes of /root and WORK/private (the --chdir=/root outcome depends on /root's mode: 0700 -> chdir error and /tmp; 0701 -> runs in /root)" \
  "stat -c '%a %U %G %n' /root $WORK/private"
capsh s10_chdir_private root "JOB=$J10P --chdir=WORK/private (root 0700): state and output" \
  "sacct -j $J10P -o JobID,State,ExitCode; echo '== output'; cat $WORK/chdir-private-$J10P.out 2>&1"
capsh s10_output_private root "JOB=$J10PO -o WORK/private/forbidden-%j.out: state, and whether the file exists" \
  "sacct -j $J10PO -o JobID,State,ExitCode; stat -c '%A %u %g %n' $WORK/private/forbidden-$J10PO.out 2>/dev/null || echo 'not created'"
capsh s10_slurmd_log root "slurmd log lines about these jobs (times vary)" \
  "grep -h -E 'job ($J10F|$J10I|$J10C|$J10C2|$J10E|$J10P|$J10PO)|forbidden|shadow|chdir|/root|private' $BASE/log/slurmd-n*.log | sed 's/^\[[^]]*\] //' | sort | uniq | tail -n 40"

# ------------------------------------------------------------------ 7: PrivateData
section "7: PrivateData (baseline without it first)"
as root scontrol create reservation ReservationName=ares StartTime=now+86400 Duration=60 Users=$A Nodes=n1 >/dev/null 2>&1
J7AR=$(sub $A -t 30 -J a_run7 --wrap 'sleep 600')
J7BR=$(sub $B -t 30 -J b_run7 --wrap 'sleep 600')
wait_state "$J7AR" R; wait_state "$J7BR" R
# pending but eligible (so that sprio lists them): both nodes are busy
J7AP=$(sub $A -t 30 -J a_pend7 -N2 --exclusive --wrap 'sleep 600')
J7BP=$(sub $B -t 30 -J b_pend7 -N2 --exclusive --wrap 'sleep 600')
sleep 2
SQF='%i %u %t %j %r'
s7set() { # s7set PREFIX USER NOTE_SUFFIX
  local p=$1 u=$2 n=$3
  cap ${p}_squeue $u "squeue $n" squeue -o "$SQF"
  cap ${p}_squeue_u_a $u "squeue -u plurmta $n" squeue -u $A -o "$SQF"
  cap ${p}_squeue_j_a $u "squeue -j <plurmta's running job> $n" squeue -j "$J7AR" -o "$SQF"
  cap ${p}_show_job_a $u "scontrol show job <plurmta's running job> $n (times vary)" scontrol show job "$J7AR"
  cap ${p}_show_job_all $u "scontrol -o show job, ids only $n" bash -c "scontrol -o show job | grep -o '^JobId=[0-9]*'"
  cap ${p}_sacct_a $u "sacct -a -X $n" sacct -a -X -o JobID,User,JobName,State -S now-1hour
  cap ${p}_sacct_j_a $u "sacct -j <plurmta's running job> $n" sacct -X -j "$J7AR" -o JobID,User,JobName,State
  cap ${p}_sacct_u_a $u "sacct -u plurmta $n" sacct -X -u $A -o JobID,User,JobName,State -S now-1hour
  cap ${p}_sshare_a $u "sshare -a $n (usage figures vary)" sshare -a -o Account,User,RawShares
  cap ${p}_sprio $u "sprio $n" sprio -o '%i %u'
  cap ${p}_sacctmgr_user $u "sacctmgr show user $n" sacctmgr show user
  cap ${p}_sacctmgr_assoc $u "sacctmgr show assoc $n" sacctmgr show assoc format=Cluster,Account,User,Share
  cap ${p}_sacctmgr_account $u "sacctmgr show account $n" sacctmgr show account
  cap ${p}_show_res $u "scontrol show reservation (ares is for plurmta) $n (times vary)" scontrol show reservation
  cap ${p}_sinfo $u "sinfo $n" sinfo
  cap ${p}_sinfo_T $u "sinfo -T (reservations) $n (times vary)" sinfo -T
}
s7set s7_nopd_b $B "as plurmtb, no PrivateData"
capsh s7_jobs root "the jobs of this section" "echo a_run=$J7AR a_pend=$J7AP b_run=$J7BR b_pend=$J7BP; squeue -o '$SQF'"
section "7: PrivateData=jobs,usage,users,accounts,reservations in slurm.conf only (scontrol reconfigure)"
printf 'PrivateData=jobs,usage,users,accounts,reservations\n' >> "$CONF"
cap s7_reconfigure root "PrivateData added to slurm.conf" scontrol reconfigure
wait_ctld; sleep 2
cp "$CONF" "$OUT/slurm.conf.privatedata.txt"
capsh s7_config_grep root "config with PrivateData" \
  "scontrol show config | grep -i -E 'auth|privatedata|slurmuser|maxscript|max_script'"
s7set s7_pd_b $B "as plurmtb, PrivateData in slurm.conf"
s7set s7_pd_a $A "as plurmta (owner), PrivateData in slurm.conf"
s7set s7_pd_op $OP "as operator, PrivateData in slurm.conf"
s7set s7_pd_root root "as root, PrivateData in slurm.conf"
annot s7_pd_b_squeue "own jobs only"
annot s7_pd_b_squeue_u_a "header only"
annot s7_pd_b_show_job_all "own jobs only"
annot s7_pd_b_sacct_a "NOT filtered (sacct is answered by slurmdbd, which has no PrivateData yet)"
annot s7_pd_b_sacct_j_a "NOT filtered"
annot s7_pd_b_sshare_a "own association only"
annot s7_pd_b_sprio "own jobs only"
annot s7_pd_b_sacctmgr_user "NOT filtered (slurmdbd)"
annot s7_pd_b_show_res "'No reservations in the system'"
annot s7_pd_b_sinfo_T "'No reservations in the system'"
annot s7_pd_a_show_res "the owner (a user of the reservation) sees it"
annot s7_pd_op_squeue "operator sees everything"
section "7: PrivateData also in slurmdbd.conf (slurmdbd restarted)"
printf 'PrivateData=jobs,usage,users,accounts,reservations\n' >> "$DBDCONF"
restart_dbd
cap s7_dbd_b_sacct_a $B "sacct -a -X, dbd PrivateData" sacct -a -X -o JobID,User,JobName,State -S now-1hour
cap s7_dbd_b_sacct_j_a $B "sacct -j <plurmta's job>, dbd PrivateData" sacct -X -j "$J7AR" -o JobID,User,JobName,State
cap s7_dbd_b_sacctmgr_user $B "sacctmgr show user, dbd PrivateData" sacctmgr show user
cap s7_dbd_b_sacctmgr_assoc $B "sacctmgr show assoc, dbd PrivateData" sacctmgr show assoc format=Cluster,Account,User,Share
cap s7_dbd_b_sacctmgr_account $B "sacctmgr show account, dbd PrivateData" sacctmgr show account
cap s7_dbd_b_sshare_a $B "sshare -a, dbd PrivateData" sshare -a -o Account,User,RawShares
cap s7_dbd_op_sacct_a $OP "operator: sacct -a -X, dbd PrivateData" sacct -a -X -o JobID,User,JobName,State -S now-1hour
cap s7_dbd_op_sacctmgr_user $OP "operator: sacctmgr show user, dbd PrivateData" sacctmgr show user
cap s7_dbd_root_sacct_a root "root: sacct -a -X, dbd PrivateData" sacct -a -X -o JobID,User,JobName,State -S now-1hour
annot s7_dbd_b_sacct_a "own jobs only"
annot s7_dbd_b_sacct_j_a "header only, rc 0"
annot s7_dbd_b_sacctmgr_user "own row only"
annot s7_dbd_b_sacctmgr_assoc "own association and its parent accounts"
annot s7_dbd_b_sshare_a "own association only"
annot s7_dbd_op_sacct_a "operator sees everything"
# back to the configuration setup.sh wrote (plus the restricted partition)
grep -v '^PrivateData=' "$CONF" > "$CONF.tmp" && cat "$CONF.tmp" > "$CONF" && rm -f "$CONF.tmp"
install -m 600 "$BASE/slurmdbd.conf.authz-orig" "$DBDCONF"
restart_dbd
as root scontrol reconfigure >/dev/null 2>&1; wait_ctld; sleep 1
as root scancel "$J7AR" "$J7AP" "$J7BR" "$J7BP" >/dev/null 2>&1
as root scontrol delete ReservationName=ares >/dev/null 2>&1
for j in $J7AR $J7AP $J7BR $J7BP; do wait_gone "$j"; done

# ------------------------------------------------------------------ operator shutdown (last)
section "5 (last): operator shutdown"
cap s5_op_shutdown $OP "operator shuts the controller down" scontrol shutdown
sleep 3
if scontrol ping 2>/dev/null | grep -q UP; then
  cap s5_op_shutdown_ping root "controller still up after the operator's attempt" scontrol ping
else
  cap s5_op_shutdown_ping root "controller went down after the operator's shutdown" scontrol ping
  (cd "$BASE" && /usr/sbin/slurmctld); wait_ctld
fi

capsh ctld_log_security root "slurmctld log: every 'Security violation' / permission line of this run (times vary)" \
  "grep -h -E 'Security violation|ermission denied|Invalid user id|not permitted' $BASE/log/slurmctld.log | sed 's/^\[[^]]*\] //'"

restore_conf; trap - EXIT
as root scontrol reconfigure >/dev/null 2>&1
rm -f "$WORK"/big-*.sh
echo "capture_authz: wrote $(ls "$OUT" | wc -l) files to $OUT" >&2
