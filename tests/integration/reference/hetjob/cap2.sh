#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /tmp/b14/hetcap
out=$(sbatch het2.sh); echo "$out" > sbatch2.txt
id=$(echo "$out" | awk '{print $4}')
for i in $(seq 1 30); do sleep 1; st=$(squeue -h -j $id -o %T | head -1); [ "$st" = RUNNING ] && break; done
sleep 2
squeue > run_squeue.txt; squeue -j $id -o "%i %A %F %j %T %N %C %D" >> run_squeue.txt
scontrol show job $id > run_scontrol_show_job.txt
for i in $(seq 1 40); do sleep 1; [ -z "$(squeue -h -j $id 2>/dev/null)" ] && break; done
sleep 2
sacct -j $id > run_sacct.txt
sacct -j $id -o JobID,JobIDRaw,JobName,NNodes,NCPUS,NodeList,State,ExitCode >> run_sacct.txt
squeue -h -j $id && scancel $id
echo $id > id2.txt
