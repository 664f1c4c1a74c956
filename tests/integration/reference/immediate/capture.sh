#!/bin/bash
# What the real Slurm 22.05 prints and exits with for salloc/srun -I, salloc -K and
# `scontrol update job Reservation=` (tests/integration/test_immediate.py; see INDEX.md).
# Run on the anchor cluster (4 nodes n[1-4]) as root, one group per call:
#     env PATH=/usr/sbin:/usr/bin:/sbin:/bin bash capture.sh immediate|priority|kill|status|resv
# Job ids are normalised to J (the other ids of a group: K), the host to HOST.
set -u
cd /tmp
norm() { sed -E -e "s/\b(job |allocation |Job |JobId=)[0-9]+/\1J/g" -e "s/$(hostname)/HOST/g"; }
case_() {  # case_ TITLE COMMAND...: the command's output (stdout and stderr together) and status
    echo "=== $1"; shift
    out=$("$@" 2>&1); rc=$?
    [ -n "$out" ] && printf '%s\n' "$out" | norm
    echo "rc=$rc"
}
kill_case() {  # kill_case SALLOC-OPTIONS...: salloc runs trapper.sh; scancel 2 s later
    salloc "$@" /tmp/imm-capture-trapper.sh > /tmp/imm-capture.out 2>&1 & local p=$!
    sleep 2; scancel "$(squeue -h -u root -n interactive -o %i | tail -1)"; wait $p; local rc=$?
    echo "=== salloc $* trapper.sh (scancel after 2 s)"; norm < /tmp/imm-capture.out; echo "rc=$rc"
}
cat > /tmp/imm-capture-trapper.sh <<'SH'
#!/bin/sh
trap 'echo got TERM; exit 3' TERM
trap 'echo got HUP; exit 4' HUP
trap 'echo got USR1; exit 6' USR1
sleep 4 & wait
echo command ended by itself
SH
chmod +x /tmp/imm-capture-trapper.sh
case "$1" in
immediate)
    blocker=$(sbatch --parsable --exclusive -N4 -o /dev/null --wrap "sleep 30"); sleep 1
    first=$((blocker + 1))
    case_ "salloc -I true (all nodes busy)" salloc -I true
    case_ "salloc -I2 true" salloc -I2 true
    case_ "srun -I true" srun -I true
    case_ "srun -I2 true" srun -I2 true
    case_ "SLURM_EXIT_IMMEDIATE=7 salloc -I true" env SLURM_EXIT_IMMEDIATE=7 salloc -I true
    case_ "SLURM_EXIT_IMMEDIATE=7 srun -I3 true" env SLURM_EXIT_IMMEDIATE=7 srun -I3 true
    case_ "salloc --immediate=0 true (off: waits; cancelled here after 2 s)" timeout 2 salloc --immediate=0 true
    last=$(squeue -h -t all -u root -o %i | sort -n | tail -1)
    ids=$(seq -s, $first $last)
    echo "=== squeue -t all -o '%j %t %r' (the -I jobs, in order)"
    for i in $(seq $first $last); do squeue -h -t all -j $i -o "%j %t %r"; done
    echo "=== sacct -X -n -P -o JobName,State,ExitCode (the -I jobs, in order)"
    sacct -X -n -P -j $ids -o JobName,State,ExitCode | sed -E 's/CANCELLED by [0-9]+/CANCELLED by UID/'
    scancel $blocker; sleep 2
    case_ "salloc -I true (nodes free)" salloc -I true
    case_ "srun -I hostname (nodes free)" srun -I hostname
    ;;
priority)
    a=$(sbatch --parsable --exclusive -w n1 -o /dev/null --wrap "sleep 15")
    b=$(sbatch --parsable --exclusive -N4 -o /dev/null --wrap "true"); sleep 1
    echo "=== squeue (a job on n1, a 4-node job waiting for it)"; squeue -h -j $a,$b -o "%t %r"
    case_ "salloc -I --nice=1000 true (free nodes, a higher priority job waiting)" salloc -I --nice=1000 true
    case_ "srun -I --nice=1000 true" srun -I --nice=1000 true
    scancel $a $b
    ;;
kill)
    kill_case -K
    kill_case -KUSR1
    kill_case --kill-command=TERM
    kill_case
    case_ "salloc -KFOO true" salloc -KFOO true
    case_ "salloc --kill-command=0 true" salloc --kill-command=0 true
    ;;
status)
    for s in HUP INT KILL TERM USR1; do case_ "salloc sh -c 'kill -$s \$\$'" salloc sh -c "kill -$s \$\$"; done
    ;;
resv)
    sacctmgr -i add user plurmta account=anchor > /dev/null 2>&1
    scontrol create reservation ReservationName=imr StartTime=now Duration=10 Nodes=n4 Users=root
    scontrol create reservation ReservationName=ima StartTime=now Duration=10 Nodes=n3 Users=plurmta
    j=$(sbatch --parsable -H -o /tmp/imm-capture-resv.out --wrap 'echo $SLURM_JOB_RESERVATION $SLURMD_NODENAME')
    case_ "scontrol update JobId=J Reservation=imr (pending, held)" scontrol update JobId=$j Reservation=imr
    echo "=== squeue -o '%v %r'"; squeue -h -j $j -o "%v %r"; scontrol show job $j | grep -E "^   Reservation="
    case_ "scontrol update JobId=J Reservation=nosuch" scontrol update JobId=$j Reservation=nosuch
    case_ "scontrol update JobId=J Reservation=" scontrol update JobId=$j Reservation=
    echo "=== squeue -o '%v'; show job's Reservation line"; squeue -h -j $j -o "%v"; scontrol show job $j | grep -c "^   Reservation="
    case_ "scontrol update job J Reservation=imr" scontrol update job $j Reservation=imr
    case_ "scontrol update Reservation= JobId=J" scontrol update Reservation= JobId=$j
    echo "=== squeue -o '%v'"; squeue -h -j $j -o "%v"
    scontrol update JobId=$j Reservation=imr; scontrol release $j; sleep 3
    echo "=== the job's output (released in imr)"; cat /tmp/imm-capture-resv.out | norm
    case_ "scontrol update JobId=J Reservation=imr (finished)" scontrol update JobId=$j Reservation=imr
    k=$(sbatch --parsable -x n4 -o /dev/null --wrap "sleep 10")
    for i in 1 2 3 4 5; do [ "$(squeue -h -j $k -o %t)" = R ] && break; sleep 1; done
    case_ "scontrol update JobId=K Reservation=imr (running, not on n4)" scontrol update JobId=$k Reservation=imr
    echo "=== squeue -o '%t %v'; show job's Reservation line"; squeue -h -j $k -o "%t %v"
    scontrol show job $k | grep "^   Reservation="
    scancel $k
    u=$(su plurmta -s /bin/sh -c "cd /tmp; sbatch --parsable -H -o /dev/null --wrap true")
    case_ "plurmta: scontrol update JobId=J Reservation=imr (imr: Users=root)" \
        su plurmta -s /bin/sh -c "scontrol update JobId=$u Reservation=imr"
    case_ "plurmta: scontrol update JobId=J Reservation=ima (ima: Users=plurmta)" \
        su plurmta -s /bin/sh -c "scontrol update JobId=$u Reservation=ima"
    case_ "root: scontrol update JobId=J Reservation=imr (plurmta's job)" scontrol update JobId=$u Reservation=imr
    r=$(sbatch --parsable -H -o /dev/null --wrap true)
    case_ "plurmta: scontrol update JobId=J Reservation=ima (root's job)" \
        su plurmta -s /bin/sh -c "scontrol update JobId=$r Reservation=ima"
    scancel $u $r
    scontrol delete ReservationName=imr; scontrol delete ReservationName=ima
    sacctmgr -i delete user plurmta > /dev/null 2>&1
    ;;
esac
