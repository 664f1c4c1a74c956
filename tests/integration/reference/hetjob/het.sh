#!/bin/bash
#SBATCH -n1 -c2 --job-name=hetcap
#SBATCH -o /tmp/b14/hetcap/out-%j.txt
#SBATCH hetjob
#SBATCH -n2 -c1
env | grep ^SLURM | sort
echo ===SRUN0
srun --het-group=0 bash -c 'env | grep ^SLURM | sort' 
echo ===SRUN1
srun --het-group=1 hostname
echo ===SRUNALL
srun --het-group=0,1 bash -c 'echo $SLURM_PROCID $SLURM_HET_SIZE $SLURM_JOB_ID'
sleep 20
