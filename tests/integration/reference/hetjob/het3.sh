#!/bin/bash
#SBATCH -n1 -c2 --job-name=hetstep
#SBATCH -o /tmp/b14/hetcap/step-%j.txt
#SBATCH hetjob
#SBATCH -n2 -c1
echo ===SRUN1
srun --het-group=1 bash -c 'env | grep ^SLURM | sort' | sort -u
echo ===SRUNBAD
srun --het-group=2 hostname; echo "rc=$?"
srun --het-group=x hostname; echo "rc=$?"
