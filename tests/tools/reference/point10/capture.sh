#!/bin/bash
# Regenerates the captures in this folder from a real Slurm 22.05 (the anchor:
# ../shared/slurm-anchor, nodes n[1-4], partition debug, slurmdbd).  Run as root on
# the machine where it runs; it submits its own jobs and cancels them.  Usage:
#   tests/tools/reference/point10/capture.sh [timeout|steps|all]
set -u
cd "$(dirname "$0")"
export PATH=/usr/sbin:/usr/bin:/sbin:/bin  # the real commands, not plurm's
unset SLURM_CONF
WORK=$(mktemp -d)
what=${1:-all}

if [[ $what == timeout || $what == all ]]; then
  # A job past its limit: -t 1 running sleep 300 (the limit is checked every ~30 s),
  # and one whose limit is lowered to 0 while it runs (it ends at the next check).
  a=$(sbatch --parsable -t 1 -o "$WORK/a.out" --wrap 'sleep 300')
  b=$(sbatch --parsable -t 5 -o "$WORK/b.out" --wrap 'sleep 300')
  while [[ $(squeue -h -j "$b" -o %T) != RUNNING ]]; do sleep 1; done
  scontrol update jobid="$b" TimeLimit=0
  while squeue -h -j "$a,$b" | grep -q .; do sleep 5; done
  sleep 5  # slurmdbd
  for j in "$a" "$b"; do
    tag=$([[ $j == "$a" ]] && echo t1 || echo t0)
    scontrol show job "$j" > "timeout_${tag}_scontrol_show_job.txt"
    sacct -j "$j" -P -o JobID,State,ExitCode,DerivedExitCode > "timeout_${tag}_sacct.txt"
    sacct -X -j "$j" -P -o JobID,State,ExitCode > "timeout_${tag}_sacct_X.txt"
  done
  echo "$a $b" > timeout_jobids.txt
  # A script that ignores SIGTERM (-t 1): killed KillWait later, 0:9.
  printf '#!/bin/bash\ntrap "echo got TERM" TERM\nfor i in $(seq 3000); do sleep 0.1; done\n' > "$WORK/stub.sh"
  c=$(sbatch --parsable -t 1 -o "$WORK/c.out" "$WORK/stub.sh")
  while squeue -h -j "$c" | grep -q .; do sleep 5; done
  sleep 5
  scontrol show job "$c" > timeout_stubborn_scontrol_show_job.txt
  sacct -j "$c" -P -o JobID,State,ExitCode,DerivedExitCode > timeout_stubborn_sacct.txt
  echo "$c" > timeout_stubborn_jobid.txt
fi

if [[ $what == steps || $what == all ]]; then
  # A batch job with a running step 0 (srun sleep), seen by the step tools.
  j=$(sbatch --parsable -N1 -n2 -o "$WORK/s.out" --wrap 'srun -n2 sleep 120')
  while [[ $(squeue -h -s -j "$j" -o %i | grep -c "^$j\.0$") == 0 ]]; do sleep 1; done
  sleep 3
  squeue -s -j "$j" > steps_squeue_s.txt
  squeue -s -j "$j" -o "%.15i %.9P %.8j %.8u %.10M %N" > steps_squeue_s_o.txt
  squeue --steps="$j.0" > steps_squeue_steps_J0.txt
  scontrol show step "$j.0" > steps_scontrol_show_step_J0.txt
  scontrol show steps > steps_scontrol_show_steps.txt
  sstat -j "$j" -a -P -o JobID,NTasks,MaxRSSNode > steps_sstat_a_P.txt 2>&1
  sstat -j "$j.0" -n -p -o JobID,NTasks > steps_sstat_J0_n_p.txt 2>&1
  sstat -j "$j.0" --format=JobID,NTasks,Nodelist > steps_sstat_J0_format.txt 2>&1
  scontrol listpids "$j" > steps_scontrol_listpids_J.txt 2>&1
  scontrol listpids "$j.0" > steps_scontrol_listpids_J0.txt 2>&1
  scancel "$j"
  echo "$j" > steps_jobid.txt
fi
rm -rf "$WORK"
