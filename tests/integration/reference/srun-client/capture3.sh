#!/bin/bash
# Run on the real Slurm 22.05.8 through /tmp/b15/anchor.sh: steps sharing a job's CPUs
# (--exact, --whole, the default), --debugger-test, --interactive, --resv-ports without MpiParams.
c() { echo "\$ $*"; bash -c "$*" 2>&1; echo "[rc=$?]"; }
c 'salloc -N1 -n2 bash -c "srun -n1 --exact sleep 4 & sleep 1; srun -n1 --exact echo second; srun -n2 --exact echo third; wait; sacct -j \$SLURM_JOB_ID -n -P --format=jobid,alloccpus,ntasks,state"'
c 'salloc -N1 -n2 bash -c "srun -n1 sleep 3 & sleep 1; srun -n1 echo second; wait; sacct -j \$SLURM_JOB_ID -n -P --format=jobid,alloccpus,ntasks,state"'
c 'salloc -N2 -n2 bash -c "srun -n1 -N1 --exact sleep 3 & sleep 1; srun -n1 -N1 --exact printenv SLURMD_NODENAME; wait"'
c 'salloc -N1 -n2 bash -c "SLURM_EXACT=1 srun -n1 --whole sleep 3 & sleep 1; srun -n1 --exact echo second; wait; sacct -j \$SLURM_JOB_ID -n -P --format=jobid,alloccpus,ntasks,state"'
c 'salloc -N1 -n2 bash -c "srun -n1 --exact --overlap sleep 2 & sleep 1; srun -n2 --exact echo overlapped; wait"'
c 'srun -N1 --debugger-test sleep 1'
c 'srun -N1 --interactive printenv SLURM_STEP_ID'
c 'salloc -N1 srun --interactive printenv SLURM_STEP_ID'
c 'srun -N1 --resv-ports printenv SLURM_STEP_RESV_PORTS'
c 'srun -N1 --resv-ports=2 printenv SLURM_STEP_RESV_PORTS'
