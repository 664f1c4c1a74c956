#!/bin/bash
# Run on the real Slurm 22.05.8 through /tmp/b15/anchor.sh: -E, -r, -T, --msg-timeout.
c() { echo "\$ $*"; bash -c "$*" 2>&1; echo "[rc=$?]"; }
c 'salloc -N2 -n4 bash -c "SLURM_NTASKS=7 SLURM_NNODES=9 SLURM_JOB_NUM_NODES=9 srun -E -n1 -N1 env | grep -E \"^SLURM_(NNODES|NTASKS|JOB_NUM_NODES|NPROCS|STEP_NUM_TASKS|STEP_NUM_NODES)=\" | sort"'
c 'salloc -N2 -n4 bash -c "SLURM_NTASKS=7 SLURM_NNODES=9 SLURM_JOB_NUM_NODES=9 srun -n1 -N1 env | grep -E \"^SLURM_(NNODES|NTASKS|JOB_NUM_NODES|NPROCS|STEP_NUM_TASKS|STEP_NUM_NODES)=\" | sort"'
c 'salloc -N3 bash -c "srun -r1 -N1 printenv SLURMD_NODENAME; srun -r2 printenv SLURMD_NODENAME; srun -r1 -N3 printenv SLURMD_NODENAME; srun -r3 true; srun -r1 -w n1 true; srun -r -1 true; srun -r x true"'
c 'srun -r1 true'
c 'srun -T 0 true; srun -T 61 -N1 true; srun -T 1 -N2 printenv SLURMD_NODENAME; srun -T x true'
c 'srun --msg-timeout=abc true; srun --msg-timeout=0 -N1 true; srun --msg-timeout=2 -N1 printenv SLURMD_NODENAME'
