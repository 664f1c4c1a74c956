#!/usr/bin/env bash
# salloc's environment for -m/--mem-bind/--gpu-bind, and --cpu-bind=help / --mem-bind=help (binding area)
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
O=$(cd "$(dirname "$0")" && pwd)
cd /tmp || exit 1
mkdir /tmp/anchor.lock.d 2>/dev/null || { echo "lock busy"; exit 3; }
echo "binding $(date)" > /tmp/anchor.lock.d/owner
{ timeout 60 salloc -N1 -w n1 -n2 -m cyclic --mem-bind=verbose,local --gpu-bind=single:1 --gres=gpu:2 bash -c 'env | grep -E "^SLURM_(DIST|MEM_BIND|GPU_BIND|CPU_BIND)" | sort; echo ---; srun -l bash -c "echo CVD=\$CUDA_VISIBLE_DEVICES; env | grep -E \"^SLURM_(DIST|MEM_BIND|GPU_BIND)\" | sort"'; echo "--- rc $?"; } > $O/salloc.env_options.txt 2>&1
{ timeout 20 srun --cpu-bind=help true 2>/tmp/binding_cap_e1; echo "--- stderr (rc $?)"; cat /tmp/binding_cap_e1; } > $O/none.cpu_bind_help.txt
{ timeout 20 srun --mem-bind=help true 2>/tmp/binding_cap_e2; echo "--- stderr (rc $?)"; cat /tmp/binding_cap_e2; } > $O/none.mem_bind_help.txt
cp /etc/slurm/slurm.conf /tmp/binding.slurm.conf.before2
sed -i 's|^TaskPlugin=.*|TaskPlugin=task/affinity|' /etc/slurm/slurm.conf && scontrol reconfigure && sleep 2
{ timeout 20 srun --cpu-bind=help true 2>/tmp/binding_cap_e3; echo "--- stderr (rc $?)"; cat /tmp/binding_cap_e3; } > $O/affinity.cpu_bind_help.txt
cp /tmp/slurm-anchor/shared.slurm.conf /etc/slurm/slurm.conf; scontrol reconfigure; sleep 1
scontrol show config | grep TaskPlugin
rm -rf /tmp/anchor.lock.d
echo done
