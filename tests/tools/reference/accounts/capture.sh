#!/bin/bash
# Regenerates the captures of the real Slurm 22.05 (with slurmdbd) that
# tests/tools/test_account_tools.py compares plurm with.  Run on a host where the
# real Slurm answers (account `anchor` with user root, as ../shared/slurm-anchor
# sets it up); the real commands are found with a plain system PATH.
# Nothing is replaced: the cluster there is named `anchor`, like its account, and
# the test names its plurm cluster's rows the same way (see the test's _normal()).
set -u
cd "$(dirname "$0")"
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cluster=$(scontrol show config | awk '$1=="ClusterName"{print $3}')
{
    echo "# Real Slurm 22.05 (slurmdbd) captures for tests/tools/test_account_tools.py"
    echo
    echo "Made by capture.sh on $(date -u +%F), cluster and account \`$cluster\`, user root."
    echo "NAME.out is stdout, NAME.err stderr (when any)."
    echo
    echo "| name | rc | command |"
    echo "| --- | --- | --- |"
} > INDEX.md
run() {  # name, then the command
    local name=$1; shift
    "$@" > "$name.out" 2> "$name.err"; local rc=$?
    [ -s "$name.err" ] || rm -f "$name.err"
    printf '| %s | %s | `%s` |\n' "$name" "$rc" "$*" >> INDEX.md
}
run user sacctmgr show user
run user_list sacctmgr list users
run user_s sacctmgr -s show user
run user_withassoc sacctmgr show user withassoc
run user_where sacctmgr -n -P show user where name=root
run user_format sacctmgr show user format=user,defaultaccount%15,adminlevel
run account sacctmgr show account
run account_P sacctmgr -P show account
run account_p sacctmgr -p show account
run account_n sacctmgr -n show account
run account_name sacctmgr show account name=anchor
run account_format sacctmgr -P show account format=Account,Description,Organization
run assoc sacctmgr show assoc
run assoc_format sacctmgr show assoc format=Cluster,Account,User,Share
run assoc_width sacctmgr show assoc format=account%20,user%-8,fairshare
run assoc_where sacctmgr -n -P show assoc where user=root account=anchor format=account,user
run assoc_cluster sacctmgr -n -P show assoc where cluster=$cluster format=cluster,account,user
run qos sacctmgr show qos
run qos_format sacctmgr -P show qos format=name,priority,maxjobspu
run bad_field sacctmgr show user format=bogus
run sshare sshare
run sshare_U sshare -U
run sshare_u sshare -u root
run sshare_A sshare -A anchor
run sshare_a sshare -a
run sshare_l sshare -l
run sshare_P sshare -P
run sshare_p sshare -p
run sshare_n sshare -n
run sshare_o sshare -o Account,User,RawShares,NormShares
run sshare_aP sshare -a -P -o account,user,rawshares
run config scontrol show config
run cluster sacctmgr show cluster
run cluster_P sacctmgr -P show cluster
run cluster_format sacctmgr show cluster format=qos%-20,cluster%-12,controlport
run cluster_name sacctmgr -n -P show cluster anchor
run tres sacctmgr show tres
run tres_P sacctmgr -n -P show tres
run tres_where sacctmgr show tres format=id,name,type where type=gres
run tres_bad sacctmgr show tres bogus=1
