#!/bin/sh
#SBATCH -n4 --mem-per-cpu=100 --gpus=4 --gpus-per-task=1 --cpus-per-gpu=1 --ntasks-per-socket=4 --sockets-per-node=1 --cores-per-socket=4 --threads-per-core=1 --mem-bind=local --gpu-bind=closest --distribution=block -J nm --switches=1 --mail-user=x --overcommit --spread-job --use-min-nodes --deadline=now+1hour --kill-on-invalid-dep=yes --ntasks-per-core=1 --cpu-freq=high --gres-flags=enforce-binding --no-kill -k --wait-all-nodes=1 --delay-boot=1 --acctg-freq=1 --propagate=ALL --get-user-env --uid=0 --thread-spec=1
#SBATCH hetjob
#SBATCH -N1
hostname
