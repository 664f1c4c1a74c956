#!/usr/bin/env bash
# Captures what the REAL Slurm 22.05.8 on this machine (the anchor: 4 nodes n[1-4] of
# CPUs=4 Sockets=1 CoresPerSocket=4, all on one 2-CPU host) does with --cpu-bind,
# --distribution, --mem-bind and --gpu-bind: first as configured (TaskPlugin=task/none),
# then with TaskPlugin=task/affinity after `scontrol reconfigure` (no daemon restart),
# then slurm.conf is restored.  Run as root under the anchor lock:
#   mkdir /tmp/anchor.lock.d && echo "binding $(date)" > /tmp/anchor.lock.d/owner
#   bash tests/integration/reference/binding/capture.sh; rm -rf /tmp/anchor.lock.d
# Each capture NAME: NAME.txt (stdout, then stderr after a '--- stderr (rc N)' line).
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
OUT=$(cd "$(dirname "$0")" && pwd)
cd /tmp
ENVS='env | grep -E "^SLURM_(CPU_BIND|DISTRIBUTION|MEM_BIND|GPU_BIND|PROCID|LOCALID|NODEID|TASKS_PER_NODE|STEP_TASKS_PER_NODE)" | sort; python3 -c "import os; print(sorted(os.sched_getaffinity(0)))"'
cap() {
  local name=$1; shift
  timeout 60 "$@" >"$OUT/$name.txt" 2>"$OUT/$name.err"; local rc=$?
  { echo "--- stderr (rc $rc)"; cat "$OUT/$name.err"; } >>"$OUT/$name.txt"; rm -f "$OUT/$name.err"
  echo "$name rc=$rc"
}
phase() {
  PH=$1
  cap "$PH.rank_verbose" srun -w n1 --exclusive -n2 -l --cpu-bind=verbose,rank bash -c "$ENVS"
  cap "$PH.map_cpu" srun -w n1 --exclusive -n2 -l --cpu-bind=verbose,map_cpu:1,0 bash -c "$ENVS"
  cap "$PH.mask_cpu" srun -w n1 --exclusive -n2 -l --cpu-bind=verbose,mask_cpu:0x2,0x1 bash -c "$ENVS"
  cap "$PH.none_verbose" srun -w n1 -n2 -l --cpu-bind=verbose,none bash -c "$ENVS"
  cap "$PH.default_n2" srun -w n1 -n2 -l bash -c "$ENVS"
  cap "$PH.default_n1" srun -w n1 -n1 -l bash -c "$ENVS"
  cap "$PH.cores" srun -w n1 -n2 -l --cpu-bind=verbose,cores bash -c "$ENVS"
  cap "$PH.sockets" srun -w n1 -n2 -l --cpu-bind=verbose,sockets bash -c "$ENVS"
  cap "$PH.threads_c2" srun -w n1 -n2 -c2 -l --cpu-bind=verbose,threads bash -c "$ENVS"
  cap "$PH.ldoms" srun -w n1 -n2 -l --cpu-bind=verbose,ldoms bash -c "$ENVS"
  cap "$PH.rank_ldom" srun -w n1 --exclusive -n2 -l --cpu-bind=verbose,rank_ldom bash -c "$ENVS"
  cap "$PH.map_cpu_bad" srun -w n1 -n1 -l --cpu-bind=verbose,map_cpu:7 bash -c "$ENVS"
  cap "$PH.env_cpu_bind" env SLURM_CPU_BIND=verbose,map_cpu:0,1 srun -w n1 --exclusive -n2 -l bash -c "$ENVS"
  cap "$PH.mem_bind_local" srun -w n1 -n1 -l --mem-bind=verbose,local bash -c "$ENVS"
  cap "$PH.mem_bind_map" srun -w n1 -n1 -l --mem-bind=verbose,map_mem:0 bash -c "$ENVS"
  cap "$PH.gpu_bind_single" srun -w n1 -n2 -l --gres=gpu:2 --gpu-bind=verbose,single:1 bash -c 'echo CVD=$CUDA_VISIBLE_DEVICES; '"$ENVS"
  cap "$PH.gpu_bind_map" srun -w n1 -n2 -l --gres=gpu:2 --gpu-bind=map_gpu:1,0 bash -c 'echo CVD=$CUDA_VISIBLE_DEVICES; '"$ENVS"
}
phase none
cap none.dist_block srun -N2 -n4 -l -m block bash -c "$ENVS"
cap none.dist_cyclic srun -N2 -n4 -l -m cyclic bash -c "$ENVS"
cap none.dist_default srun -N2 -n4 -l bash -c "$ENVS"
cap none.dist_plane2 srun -N2 -n6 -l -m plane=2 bash -c "$ENVS"
cap none.dist_cyclic_cyclic srun -N2 -n4 -l -m cyclic:cyclic bash -c "$ENVS"
cap none.dist_arbitrary srun -N2 -n4 -l -m arbitrary bash -c "$ENVS"
cp /etc/slurm/slurm.conf /tmp/binding.slurm.conf.before
sed -i 's|^TaskPlugin=.*|TaskPlugin=task/affinity|' /etc/slurm/slurm.conf
scontrol reconfigure; sleep 3
scontrol show config | grep -E 'TaskPlugin' > "$OUT/affinity.00_config.txt"
phase affinity
cp /tmp/slurm-anchor/shared.slurm.conf /etc/slurm/slurm.conf; scontrol reconfigure; sleep 2
scontrol show config | grep -E 'TaskPlugin' > "$OUT/restored.00_config.txt"
