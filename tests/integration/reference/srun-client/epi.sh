#!/bin/bash
echo "EPILOG args=[$*] job=$SLURM_JOB_ID step=$SLURM_STEP_ID" >> /tmp/sc/log
echo "epilog stdout"
exit ${EPI_RC:-0}
