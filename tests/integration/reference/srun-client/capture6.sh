#!/bin/bash
# Run on the real Slurm 22.05.8 through /tmp/b15/anchor.sh: a failing srun prolog before a longer
# task, and the epilog's environment.
c() { echo "\$ $*"; timeout 25 bash -c "$*" 2>&1; echo "[rc=$?]"; }
rm -f /tmp/sc/log
c 'PRO_RC=3 srun -N1 --prolog=/tmp/sc/pro.sh --epilog=/tmp/sc/epi.sh sleep 5'
grep -v PENV /tmp/sc/log; rm -f /tmp/sc/log
cat > /tmp/sc/epienv.sh <<'EOS'
#!/bin/bash
env | grep -E '^SLURM_(SCRIPT_CONTEXT|STEP_ID|JOB_ID|NODELIST|NTASKS)=' | sort | sed 's/^/EENV /'
EOS
chmod 755 /tmp/sc/epienv.sh
c 'srun -N1 --epilog=/tmp/sc/epienv.sh true'
