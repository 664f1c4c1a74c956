#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /tmp/resv_cap
run() { echo "### $*"; "$@" 2>&1; echo "rc=$?"; }
run scontrol create reservation ReservationName=envr StartTime=now Duration=10 Nodes=n4 Users=root Flags=IGNORE_JOBS
run timeout 60 srun --reservation=envr bash -c 'echo srun: $SLURMD_NODENAME ${SLURM_JOB_RESERVATION-unset}'
run timeout 60 salloc --reservation=envr bash -c 'echo salloc: $SLURM_JOB_NODELIST ${SLURM_JOB_RESERVATION-unset}'
run scontrol delete ReservationName=envr
