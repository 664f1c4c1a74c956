#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd /tmp/b14/hetcap
out=$(sbatch het.sh); echo "$out" > sbatch.txt
id=$(echo "$out" | awk '{print $4}')
sleep 4
squeue > squeue.txt
squeue -o "%i %A %F %o %j %T" >> squeue.txt 2>&1
scontrol show job $id > scontrol_show_job.txt
scontrol show job ${id}+1 > scontrol_show_job_plus1.txt 2>&1
sleep 2
sacct -j $id > sacct.txt
sacct -j $id -o JobID,JobIDRaw,JobName,NNodes,NCPUS,State >> sacct.txt
scancel $id; sleep 3
sacct -j $id -o JobID,JobIDRaw,State,ExitCode > sacct_after_cancel.txt
squeue > squeue_after.txt
echo $id > id.txt
# refusals
sbatch --array=1-2 het.sh > array_refuse.txt 2>&1; echo "rc=$?" >> array_refuse.txt
sbatch -n1 : -n2 --wrap hostname > cmdline.txt 2>&1; echo "rc=$?" >> cmdline.txt
sbatch -n1 -o /tmp/b14/hetcap/cl-%j.txt : -n2 het.sh >> cmdline.txt 2>&1; echo "rc=$?" >> cmdline.txt
sleep 3; squeue >> cmdline.txt
for j in $(grep -o "Submitted batch job [0-9]*" cmdline.txt | awk '{print $4}'); do scancel $j; done; sleep 1
out=$(sbatch -H het.sh); hid=$(echo "$out" | awk '{print $4}')
scancel ${hid}+1 > cancel_pending_component.txt 2>&1; echo "rc=$?" >> cancel_pending_component.txt
squeue >> cancel_pending_component.txt
scontrol show job $hid > scontrol_show_job_pending.txt
squeue -j $hid >> cancel_pending_component.txt 2>&1
squeue -j ${hid}+1 >> cancel_pending_component.txt 2>&1
scancel $hid; sleep 1
sacct -j $hid -o JobID,JobIDRaw,State >> cancel_pending_component.txt
