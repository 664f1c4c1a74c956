#!/bin/bash
# Run on the real Slurm 22.05.8 through /tmp/b15/anchor.sh, with MpiParams=ports=12000-12003
# added to slurm.conf for this run only (restored before it returns).
c() { echo "\$ $*"; timeout 20 bash -c "$*" 2>&1; echo "[rc=$?]"; }
cp /tmp/slurm-anchor/shared.slurm.conf /etc/slurm/slurm.conf
echo "MpiParams=ports=12000-12003" >> /etc/slurm/slurm.conf
scontrol reconfigure; sleep 2
scontrol show config | grep -i mpiparams
c 'srun -N1 --resv-ports printenv SLURM_STEP_RESV_PORTS'
c 'srun -N2 --resv-ports printenv SLURM_STEP_RESV_PORTS'
c 'srun -N1 --resv-ports=3 printenv SLURM_STEP_RESV_PORTS'
c 'srun -N1 --resv-ports=5 printenv SLURM_STEP_RESV_PORTS'
c 'srun -N1 --resv-ports=0 printenv SLURM_STEP_RESV_PORTS'
c 'srun -N1 printenv SLURM_STEP_RESV_PORTS'
c 'salloc -N1 -n2 bash -c "srun -n1 --exact --resv-ports=3 bash -c \"echo A \\\$SLURM_STEP_RESV_PORTS; sleep 3\" & sleep 1.5; srun -n1 --exact --resv-ports=2 printenv SLURM_STEP_RESV_PORTS; srun -n1 --exact --resv-ports=1 printenv SLURM_STEP_RESV_PORTS; wait"'
c 'salloc -N1 --resv-ports=2 bash -c "printenv SLURM_RESV_PORTS; srun printenv SLURM_STEP_RESV_PORTS"'
cp /tmp/slurm-anchor/shared.slurm.conf /etc/slurm/slurm.conf
scontrol reconfigure; sleep 1
scontrol show config | grep -i mpiparams
