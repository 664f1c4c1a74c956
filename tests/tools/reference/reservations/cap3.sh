#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /tmp/resv_cap
run() { echo "### $*"; "$@" 2>&1; echo "rc=$?"; }
runj() { echo "### $*"; out=$("$@" 2>&1); rc=$?; echo "$out"; echo "rc=$rc"; [ $rc = 0 ] && echo "$out" >> /tmp/resv_cap/jobids3; }
: > /tmp/resv_cap/jobids3
run squeue
run scontrol create reservation ReservationName=mnt StartTime=now Duration=60 Nodes=n1 Users=root Flags=MAINT Bogus=1
run scontrol create reservation ReservationName=mnt StartTime=now Duration=60 Nodes=n1 Users=root Flags=MAINT
runj sbatch --parsable -N1 -w n1 -t 10 --wrap 'sleep 1' -o /dev/null
runj sbatch --parsable -N1 -w n2 -t 10 --wrap 'sleep 20' -o /dev/null
sleep 3
run squeue -o '%i %t %r %N'
run scontrol create reservation ReservationName=busy StartTime=now Duration=60 Nodes=n2 Users=root
run scontrol create reservation ReservationName=busy2 StartTime=now Duration=60 NodeCnt=4 Users=root
run scontrol delete ReservationName=mnt
for j in $(cat jobids3); do scancel $j; done; sleep 1
for r in busy busy2; do scontrol delete ReservationName=$r 2>/dev/null; done
run scontrol show res
