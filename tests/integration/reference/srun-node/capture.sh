#!/usr/bin/env bash
# Captures what the REAL Slurm 22.05.8 on this machine (the anchor, TaskPlugin=task/none,
# fake GPUs, BcastExclude left at its default) does with srun's node-side options:
# --task-prolog/--task-epilog, --multi-prog, --bcast/--send-libs/--compress, --slurmd-debug,
# --accel-bind.  Run as root under the anchor lock:
#   /tmp/b15/anchor.sh srun-node 'bash tests/integration/reference/srun-node/capture.sh'
# Each capture NAME: NAME.txt (stdout, then stderr after a '--- stderr (rc N)' line).  The
# files the commands use are written by files.sh (the test writes the same ones).
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
OUT=$(cd "$(dirname "$0")" && pwd)
D=$(mktemp -d /tmp/srun-node.XXXXXX); chmod 755 "$D"
bash "$OUT/files.sh" "$D"
cd "$D"
cap() {
  local name=$1; shift
  timeout 60 "$@" >"$OUT/$name.txt" 2>"$OUT/$name.err"; local rc=$?
  { echo "--- stderr (rc $rc)"; cat "$OUT/$name.err"; } >>"$OUT/$name.txt"; rm -f "$OUT/$name.err"
  echo "$name rc=$rc"
}
cap task_prolog sh -c 'srun -n2 -l --task-prolog=$PWD/tp.sh --task-epilog=$PWD/te.sh sh -c "echo TPVAR=\$TPVAR HOME=\${HOME-unset}"; cat epi.* | sort'
cap task_prolog_fails srun -n1 --task-prolog=$D/tpfail.sh echo ran
cap task_prolog_missing srun -n1 --task-prolog=$D/nonexist echo ran
cap multi_prog srun -n4 -l --multi-prog mp.conf extra
for c in mp_missing mp_bad mp_gap mp_dup mp_noexe mp_rev mp_star_first; do
  cap "multi_prog.$c" srun -n2 -l --multi-prog $c.conf
done
cap multi_prog.dquote srun -n1 -l --multi-prog mp_dquote.conf
cap multi_prog.nonexist srun -n1 --multi-prog nonexist.conf
cap bcast_default sh -c 'srun -N2 -l --bcast ./prog.sh x y; ls | grep slurm_bcast'
cap bcast_nodir srun -N2 -l --bcast=$D/nodir/ ./prog.sh
cap bcast_dir sh -c 'mkdir -m 777 dest; srun -N2 -l --bcast=$PWD/dest/ ./prog.sh; ls dest'
cap bcast_file srun -N1 -l --bcast=$D/mine ./prog.sh
cap send_libs sh -c 'srun -N1 -w n1 --bcast=$PWD/dest/ --send-libs --bcast-exclude=NONE ./ld.sh; ls dest/*_libs | sort'
cap send_libs_default_exclude sh -c 'rm -rf dest2; mkdir -m 777 dest2; srun -N1 -w n1 --bcast=$PWD/dest2/ --send-libs ./ld.sh; ls dest2/*_libs | sort'
cap send_libs_binary sh -c 'srun -N1 -w n1 --bcast=$PWD/dest/ --send-libs --bcast-exclude=NONE ./myprintenv LD_LIBRARY_PATH; ls dest/*_libs | sort'
cap send_libs_binary_default_exclude sh -c 'mkdir -m 777 dest3; srun -N1 -w n1 --bcast=$PWD/dest3/ --send-libs ./myprintenv LD_LIBRARY_PATH; ls -a dest3/*_libs | sort'
cap compress_zlib srun -N1 --bcast --compress=zlib ./prog.sh
cap send_libs_bad srun -N1 --bcast --send-libs=maybe ./prog.sh
cap slurmd_debug_2 srun -N1 -w n1 --slurmd-debug=2 true
cap slurmd_debug_signal srun -w n1 -n2 -l --slurmd-debug=2 sh -c 'kill -9 $$'
cap slurmd_debug_bogus srun -N1 -w n1 --slurmd-debug=bogus true
cap accel_bind_gv srun -w n1 -n2 -l --gres=gpu:2 --accel-bind=gv bash -c 'echo CVD=$CUDA_VISIBLE_DEVICES'
cap accel_bind_bad srun -n1 --accel-bind=x true
cd /; rm -rf "$D"
