#!/bin/bash
# Run on the real Slurm 22.05.8 through /tmp/b15/anchor.sh, with MpiParams=ports=12000-12009
# for this run only: the default count of reserved ports, and how the pool is dealt out.
c() { echo "\$ $*"; timeout 20 bash -c "$*" 2>&1; echo "[rc=$?]"; }
cp /tmp/slurm-anchor/shared.slurm.conf /etc/slurm/slurm.conf
echo "MpiParams=ports=12000-12009" >> /etc/slurm/slurm.conf
scontrol reconfigure; sleep 2
c 'srun -N1 -n1 printenv SLURM_STEP_RESV_PORTS'
c 'srun -N1 -n3 -l printenv SLURM_STEP_RESV_PORTS'
c 'srun -N2 -n3 -l printenv SLURM_STEP_RESV_PORTS'
c 'srun -N1 --resv-ports=4 printenv SLURM_STEP_RESV_PORTS'
c 'srun -N1 --resv-ports=4 printenv SLURM_STEP_RESV_PORTS'
c 'srun -N1 --resv-ports=10 printenv SLURM_STEP_RESV_PORTS'
c 'srun -N1 --resv-ports=11 printenv SLURM_STEP_RESV_PORTS'
c 'salloc -N1 -n2 bash -c "srun -n1 --exact --resv-ports=7 bash -c \"echo A \\\$SLURM_STEP_RESV_PORTS; sleep 4\" & sleep 2; srun -n1 --exact --resv-ports=3 printenv SLURM_STEP_RESV_PORTS; srun -n1 --exact --resv-ports=4 printenv SLURM_STEP_RESV_PORTS; wait"'
cp /tmp/slurm-anchor/shared.slurm.conf /etc/slurm/slurm.conf
scontrol reconfigure; sleep 1
