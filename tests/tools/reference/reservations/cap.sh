#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
set -x
cd /tmp/resv_cap
run() { echo "### $*"; "$@" 2>&1; echo "rc=$?"; }
runj() { echo "### $*"; out=$("$@" 2>&1); rc=$?; echo "$out"; echo "rc=$rc"; [ $rc = 0 ] && echo "$out" >> /tmp/resv_cap/jobids; }
: > /tmp/resv_cap/jobids
run scontrol show reservation
run sinfo -T
run scontrol create reservation ReservationName=maint1 StartTime=now Duration=60 Nodes=n1 Users=root Flags=MAINT
run scontrol show reservation
run scontrol show reservation maint1
run scontrol show reservation nosuch
run scontrol -o show reservation
run sinfo -T
run scontrol create reservation ReservationName=r2 StartTime=now+1hour Duration=30 Nodes=n[2-3] Accounts=anchor
run scontrol create reservation ReservationName=r3 StartTime=now Duration=60 Nodes=n1 Users=root
run scontrol create reservation ReservationName=r4 StartTime=now Duration=60 Nodes=n1 Users=root Flags=OVERLAP
run scontrol create reservation ReservationName=r5 StartTime=now Duration=60 Nodes=n9 Users=root
run scontrol create reservation ReservationName=r6 StartTime=now Duration=60 Nodes=n4
run scontrol create reservation ReservationName=r7 StartTime=now Duration=60 NodeCnt=1 Users=nobody
run scontrol create reservation ReservationName=r8 StartTime=now Duration=60 NodeCnt=1 Users=root Flags=BOGUS
run scontrol create reservation ReservationName=r9 StartTime=2026-12-31T10:00:00 EndTime=2026-12-31T12:00:00 NodeCnt=2 Users=root Flags=DAILY
run scontrol create reservation StartTime=now Duration=60 NodeCnt=1 Users=root
run scontrol create reservation ReservationName=r10 StartTime=now Duration=60 NodeCnt=9 Users=root
run scontrol create reservation ReservationName=r11 Duration=60 NodeCnt=1 Users=root
run scontrol create reservation ReservationName=r12 StartTime=now Duration=60 Nodes=n4 Users=root PartitionName=nopart
run scontrol create reservation ReservationName=r13 StartTime=now Duration=60 Nodes=n4 Users=root Flags=FLEX,IGNORE_JOBS,WEEKLY
run scontrol show reservation
run sinfo -T
# jobs: a job that wants all 4 nodes while n1 is in maint
runj sbatch --parsable -N4 -t 10 --wrap 'sleep 30' -o /dev/null
runj sbatch --parsable -N1 -t 120 -w n2 --wrap 'sleep 30' -o /dev/null
runj sbatch --parsable -N1 -t 10 --reservation=maint1 --wrap 'env | grep SLURM_JOB_RESERVATION; sleep 2' -o /tmp/resv_cap/env.out
runj sbatch --parsable -N1 -t 10 --reservation=r2 --wrap 'sleep 1' -o /dev/null
runj sbatch --parsable -N1 -t 10 --reservation=nosuch --wrap 'sleep 1' -o /dev/null
sleep 4
run squeue
run squeue -o '%i %r %R' --start
run squeue -o '%i %r %R'
run scontrol show job
run scontrol update reservation ReservationName=r2 Duration=45 Users=root
run scontrol update reservation ReservationName=nosuch Duration=45
run scontrol show reservation r2
cat /tmp/resv_cap/env.out
run su nobody -s /bin/sh -c "scontrol create reservation ReservationName=x StartTime=now Duration=5 NodeCnt=1 Users=root"
run su nobody -s /bin/sh -c "scontrol delete reservation r2"
run su nobody -s /bin/sh -c "sbatch -N1 --reservation=maint1 --wrap true"
run scontrol delete reservation nosuch
for j in $(cat /tmp/resv_cap/jobids); do scancel $j; done; sleep 2
for r in maint1 r2 r3 r4 r5 r6 r7 r8 r9 r10 r11 r12 r13; do scontrol delete reservation $r 2>/dev/null; done
run scontrol delete reservation maint1
run scontrol show reservation
