#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /tmp/resv_cap
run() { echo "### $*"; "$@" 2>&1; echo "rc=$?"; }
runj() { echo "### $*"; out=$("$@" 2>&1); rc=$?; echo "$out"; echo "rc=$rc"; [ $rc = 0 ] && echo "$out" >> /tmp/resv_cap/jobids2; }
: > /tmp/resv_cap/jobids2
run squeue
run scontrol create reservation ReservationName=mnt StartTime=now Duration=60 Nodes=n1 Users=root Flags=MAINT
runj sbatch --parsable -N4 -t 10 --wrap 'sleep 1' -o /dev/null
sleep 3
run squeue -o '%i %t %r'
run scontrol delete ReservationName=mnt
for j in $(cat jobids2); do scancel $j; done; : > jobids2; sleep 1
run scontrol create reservation ReservationName=fut StartTime=now+30minutes Duration=30 Nodes=n[1-2] Users=root
runj sbatch --parsable -N4 -t 60 --wrap 'sleep 1' -o /dev/null
runj sbatch --parsable -N4 -t 10 --wrap 'sleep 1' -o /dev/null
sleep 3
run squeue -o '%i %t %r'
run scontrol update ReservationName=fut Flags+=MAINT
run scontrol show res fut
run scontrol update ReservationName=fut Flags-=MAINT
run scontrol update ReservationName=fut Nodes=n9
run scontrol update ReservationName=fut Bogus=1
run scontrol delete ReservationName=nosuch
run scontrol delete Reservation=nosuch
for j in $(cat jobids2); do scancel $j; done; : > jobids2; sleep 1
run scontrol create reservation ReservationName=act StartTime=now Duration=60 Nodes=n1 Users=root
runj sbatch --parsable -N4 -t 10 --wrap 'sleep 1' -o /dev/null
runj sbatch --parsable -N1 -w n1 -t 10 --wrap 'sleep 1' -o /dev/null
runj sbatch --parsable -N1 --reservation=act -t 10 --wrap 'sleep 30' -o /dev/null
sleep 3
run squeue -o '%i %t %r %N'
run scontrol delete ReservationName=act
for j in $(cat jobids2); do scancel $j; done; sleep 1
run scontrol delete ReservationName=fut
run scontrol show res
