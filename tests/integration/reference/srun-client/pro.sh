#!/bin/bash
echo "PROLOG args=[$*] job=$SLURM_JOB_ID step=$SLURM_STEP_ID stepid=$SLURM_STEPID nodelist=$SLURM_NODELIST ntasks=$SLURM_NTASKS nnodes=$SLURM_NNODES tty=$(tty -s && echo y || echo n)" >> /tmp/sc/log
env | grep ^SLURM | sort | sed 's/^/PENV /' >> /tmp/sc/log
echo "prolog stdout"
echo "prolog stderr" >&2
exit ${PRO_RC:-0}
