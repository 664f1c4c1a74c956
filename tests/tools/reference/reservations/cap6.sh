#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /tmp/resv_cap
run() { echo "### $*"; "$@" 2>&1; echo "rc=$?"; }
run scontrol create reservation ReservationName=mnt6 StartTime=now Duration=10 Nodes=n1 Users=root Flags=MAINT,IGNORE_JOBS
run scontrol create reservation ReservationName=act6 StartTime=now Duration=10 Nodes=n2 Users=root Flags=IGNORE_JOBS
for i in $(seq 1 16); do
  s1=$(scontrol show node n1 | grep -o 'State=[^ ]*'); s2=$(scontrol show node n2 | grep -o 'State=[^ ]*')
  echo "t=$((i*5)) n1 $s1 n2 $s2"
  case "$s1$s2" in *RESERV*|*MAINT*) break;; esac
  sleep 5
done
run sinfo
run sinfo -N -o '%N %t %T'
run scontrol show node n1
run scontrol show node n2
run scontrol delete ReservationName=mnt6
run scontrol delete ReservationName=act6
sleep 2
run sinfo -N -o '%N %t %T'
