#!/bin/sh
#SBATCH -p debug -N1 -n1 -c2 --exclusive --mem=100 --gres=gpu:1 --mail-type=END -L fluent:1 -t 10 -A anchor --qos=normal -o /tmp/x -d singleton --ntasks-per-node=1 --contiguous -w n1 -x n2 --gpus-per-node=1 -s --begin=now -H --nice=5 --comment=c --requeue --tmp=1 --mincpus=1 --reservation=r --wckey=w --signal=USR1 --time-min=5 --priority=1 --export=ALL --open-mode=append -e /tmp/e -D /tmp --constraint=c
#SBATCH hetjob
#SBATCH -n1
hostname
