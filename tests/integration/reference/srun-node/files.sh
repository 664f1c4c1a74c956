#!/usr/bin/env bash
# The files capture.sh's commands (and tests/integration/test_srun_node.py's) use, in $1.
set -eu
cd "$1"
cat > tp.sh <<'X'
#!/bin/sh
echo "export TPVAR=hello_$SLURM_PROCID"
echo "print from prolog $SLURM_PROCID"
echo "unset HOME"
echo "garbage line"
X
cat > te.sh <<'X'
#!/bin/sh
echo "epilog $SLURM_PROCID TPVAR=${TPVAR-unset}" > "$PWD/epi.$SLURM_PROCID"
X
printf '#!/bin/sh\necho "export A=1"\nexit 3\n' > tpfail.sh
printf '#!/bin/sh\necho "me=$0 args=$* LD=${LD_LIBRARY_PATH-unset}"\n' > prog.sh
printf '#!/bin/sh\necho "LD=${LD_LIBRARY_PATH-unset}"\n' > ld.sh
cp /usr/bin/printenv myprintenv  # a program with shared libraries (ldd)
chmod 755 tp.sh te.sh tpfail.sh prog.sh ld.sh myprintenv
printf "# comment\n0,2 echo task:%%t off:%%o\n1   echo 'a b'  %%t\n*  echo rest %%t %%o\n" > mp.conf
printf '0 echo zero\n' > mp_missing.conf
printf '0 echo zero\nx-y echo bad\n' > mp_bad.conf
printf '0-1 echo r%%t\n3 echo three\n' > mp_gap.conf
printf '0 echo a\n0 echo b\n' > mp_dup.conf
printf '0\n' > mp_noexe.conf
printf '1-0 echo rev\n' > mp_rev.conf
printf '*  echo all %%t\n0 echo zero\n' > mp_star_first.conf
printf '0 sh -c "echo hi"\n' > mp_dquote.conf
chmod 644 ./*.conf
