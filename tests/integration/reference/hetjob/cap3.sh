#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /tmp/b14/hetcap
out=$(sbatch het3.sh); id=$(echo "$out" | awk '{print $4}'); echo $id > id3.txt
for i in $(seq 1 40); do sleep 1; [ -z "$(squeue -h -j $id 2>/dev/null)" ] && break; done
squeue -h -j $id && scancel $id
timeout 60 salloc -n1 : -n2 bash -c 'env | grep ^SLURM | sort' > salloc_env.txt 2> salloc_err.txt
sbatch --wrap 'srun --het-group=1 hostname; echo rc=$?' -o /tmp/b14/hetcap/nonhet-%j.txt > nonhet.txt
sleep 5
