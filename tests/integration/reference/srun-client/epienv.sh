#!/bin/bash
env | grep -E '^SLURM_(SCRIPT_CONTEXT|STEP_ID|JOB_ID|NODELIST|NTASKS)=' | sort | sed 's/^/EENV /'
