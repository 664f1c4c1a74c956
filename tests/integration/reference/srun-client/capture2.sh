#!/bin/bash
# Run on the real Slurm 22.05.8 through /tmp/b15/anchor.sh: each srun's rc, --prolog/--epilog, -Z.
# /tmp/sc/pro.sh logs its arguments and SLURM_* environment to /tmp/sc/log, prints a line on
# stdout and on stderr, and exits $PRO_RC; /tmp/sc/epi.sh logs and exits $EPI_RC.
c() { echo "\$ $*"; bash -c "$*" 2>&1; echo "[rc=$?]"; }
c 'salloc -N3 bash -c "srun -r1 -N3 true; echo rc=\$?; srun -r3 true; echo rc=\$?; srun -r1 -w n1 true; echo rc=\$?; srun -r x true; echo rc=\$?"'
c 'srun -T 61 -N1 true'
c 'srun -N1 -w n1 true'
rm -f /tmp/sc/log
c 'srun -N2 --prolog=/tmp/sc/pro.sh --epilog=/tmp/sc/epi.sh echo task a b'
cat /tmp/sc/log; rm -f /tmp/sc/log
c 'PRO_RC=3 srun -N1 --prolog=/tmp/sc/pro.sh --epilog=/tmp/sc/epi.sh echo task'
cat /tmp/sc/log; rm -f /tmp/sc/log
c 'EPI_RC=4 srun -N1 --prolog=/tmp/sc/pro.sh --epilog=/tmp/sc/epi.sh sh -c "exit 2"'
cat /tmp/sc/log; rm -f /tmp/sc/log
c 'srun -N1 --prolog=/tmp/sc/missing --epilog=none echo task'
c 'srun -N1 --prolog=none --epilog=/tmp/sc/missing echo task'
c 'runuser -u cloudsdk -- srun -Z -w n1 printenv SLURM_JOB_ID'
c 'srun -Z true'
c 'srun -Z -w n2 -n2 env | grep -E "^SLURM_(JOB_ID|STEP_ID|NODELIST|NTASKS|JOB_NODELIST|NNODES|PROCID)=" | sort'
c 'squeue; sacct -X -n --format=jobid,jobname,state | tail -3'
c 'srun -Z -w n1,n3 printenv SLURMD_NODENAME'
