"""sacctmgr, sshare and scontrol show config as tools call them, against the real Slurm 22.05.

The captures (tests/tools/reference/accounts/, capture.sh regenerates them) come from a
Slurm with slurmdbd whose cluster and only account are both named ``anchor``, with user
root in ``root`` and ``anchor``.  The test builds the same associations on a real local
plurm cluster with sacctmgr, and names plurm's cluster ``anchor`` in what it compares.
Usage figures (jobs ran on the real one) are compared only where both have none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import Cluster, start_cluster

REF = Path(__file__).parent / "reference" / "accounts"


def _ref(name: str) -> str:
    return (REF / f"{name}.out").read_text()


@pytest.fixture(scope="module")
def acct(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("accounts"), nodes=1, cpus=2, memory=1000)
    try:
        c.run("sacctmgr", "-i", "add", "account", "anchor", "Description=anchor", check=True)
        c.run("sacctmgr", "-i", "add", "user", "root", "Account=anchor", "DefaultAccount=anchor",
              "AdminLevel=Administrator", check=True)
        c.run("sacctmgr", "-i", "add", "user", "root", "Account=root", check=True)
        yield c
    finally:
        c.down()


def _cluster_name(c: Cluster) -> str:
    return re.search(r"^ClusterName\s+= (\S+)", c.run("scontrol", "show", "config", check=True).stdout,
                     re.M).group(1)


def _out(c: Cluster, *args: str) -> str:
    return c.run(*args, check=True).stdout.replace(f"|{_cluster_name(c)}|", "|anchor|")


@pytest.mark.parametrize("name, args", [
    ("user_where", ["sacctmgr", "-n", "-P", "show", "user", "where", "name=root"]),
    ("user_format", ["sacctmgr", "show", "user", "format=user,defaultaccount%15,adminlevel"]),
    ("user", ["sacctmgr", "show", "user"]),
    ("user_list", ["sacctmgr", "list", "users"]),
    ("account", ["sacctmgr", "show", "account"]),
    ("account_P", ["sacctmgr", "-P", "show", "account"]),
    ("account_p", ["sacctmgr", "-p", "show", "account"]),
    ("account_n", ["sacctmgr", "-n", "show", "account"]),
    ("account_name", ["sacctmgr", "show", "account", "name=anchor"]),
    ("account_format", ["sacctmgr", "-P", "show", "account", "format=Account,Description,Organization"]),
    ("assoc_width", ["sacctmgr", "show", "assoc", "format=account%20,user%-8,fairshare"]),
    ("assoc_where", ["sacctmgr", "-n", "-P", "show", "assoc", "where", "user=root", "account=anchor",
                     "format=account,user"]),
    ("qos_format", ["sacctmgr", "-P", "show", "qos", "format=name,priority,maxjobspu"]),
])
def test_same_output_as_slurm(acct: Cluster, name: str, args: list[str]) -> None:
    assert _out(acct, *args) == _ref(name)


# sshare orders siblings by their level fair share (Fair Tree): the real one's jobs put
# root's own user first, plurm's idle cluster ties them; the lines themselves are compared.
@pytest.mark.parametrize("name, args", [
    ("sshare_o", ["sshare", "-o", "Account,User,RawShares,NormShares"]),
    ("sshare_aP", ["sshare", "-a", "-P", "-o", "account,user,rawshares"]),
])
def test_sshare_fields_as_slurm(acct: Cluster, name: str, args: list[str]) -> None:
    out, ref = _out(acct, *args), _ref(name)
    assert out.splitlines()[0] == ref.splitlines()[0]
    assert sorted(out.splitlines()[1:]) == sorted(ref.splitlines()[1:])


def test_assoc_where_cluster_and_its_columns(acct: Cluster) -> None:
    name = _cluster_name(acct)
    out = acct.run("sacctmgr", "-n", "-P", "show", "assoc", f"where", f"cluster={name}",
                   "format=cluster,account,user", check=True).stdout
    assert out.replace(f"{name}|", "anchor|") == _ref("assoc_cluster")
    assert acct.run("sacctmgr", "-n", "-P", "show", "assoc", "where", "cluster=elsewhere",
                    check=True).stdout == ""
    # The default columns: Slurm's header, exactly.
    assert acct.run("sacctmgr", "show", "assoc", check=True).stdout.splitlines()[:2] == \
        _ref("assoc").splitlines()[:2]


def test_unknown_field_is_refused_as_slurm(acct: Cluster) -> None:
    proc = acct.run("sacctmgr", "show", "user", "format=bogus")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (REF / "bad_field.err").read_text())


def test_user_with_associations(acct: Cluster) -> None:
    for args in (["-s", "show", "user"], ["show", "user", "withassoc"]):
        out = acct.run("sacctmgr", "-P", *args, "format=user,defaultaccount,adminlevel,account,fairshare",
                       check=True).stdout
        assert out == "User|Def Acct|Admin|Account|Share\nroot|anchor|Administrator|anchor|1\n" \
                      "root|anchor|Administrator|root|1\n"


def _columns(text: str, upto: int) -> list[list[str]]:
    return [line.split("|")[:upto] for line in text.splitlines()]


@pytest.mark.parametrize("name, args", [
    ("sshare_P", ["-P"]), ("sshare_p", ["-p"]),
])
def test_sshare_parsable(acct: Cluster, name: str, args: list[str]) -> None:
    out = _out(acct, "sshare", *args)
    # Account, User, RawShares, NormShares as Slurm; the usage columns are the real one's jobs.
    assert sorted(_columns(out, 4)) == sorted(_columns(_ref(name), 4))
    assert out.splitlines()[0] == _ref(name).splitlines()[0]


@pytest.mark.parametrize("name, args", [
    ("sshare", []), ("sshare_U", ["-U"]), ("sshare_u", ["-u", "root"]), ("sshare_A", ["-A", "anchor"]),
    ("sshare_n", ["-n"]), ("sshare_l", ["-l"]), ("sshare_a", ["-a"]),
])
def test_sshare_forms(acct: Cluster, name: str, args: list[str]) -> None:
    out, ref = _out(acct, "sshare", *args).splitlines(), _ref(name).splitlines()
    assert len(out) == len(ref)
    # The first 53 characters: Account (indented by depth), User, RawShares, NormShares.
    assert sorted(line[:53] for line in out) == sorted(line[:53] for line in ref)
    if "-n" not in args:
        assert out[:2] == ref[:2]


def test_sshare_unknown_field(acct: Cluster) -> None:
    proc = acct.run("sshare", "-o", "Account,Bogus")
    assert proc.returncode == 1 and proc.stderr == 'sshare: error: Invalid field requested: "Bogus"\n'


def test_show_config_has_every_key_of_slurm_in_its_order(acct: Cluster) -> None:
    def keys(text: str) -> list[str]:
        return re.findall(r"^(\S+)\s+= ", text, re.M)

    out = acct.run("scontrol", "show", "config", check=True).stdout
    assert keys(out) == keys(_ref("config"))
    # Slurm pads each key to 23 columns before " = " (tools split on it).
    assert all(re.match(r"^\S+ *= ", line) and line.index("=") == 24
               for line in out.splitlines() if re.match(r"^\S+\s+= ", line) and len(line.split("=")[0]) <= 24)
    for key in ("MinJobAge", "MaxArraySize", "MaxJobCount", "SchedulerParameters", "SelectTypeParameters",
                "SlurmctldPort", "SlurmdPort", "ClusterName", "SlurmUser", "AccountingStorageType",
                "PriorityType"):
        assert re.search(rf"^{key}\s+= \S", out, re.M), key


# ------------------------------------------------------------------ show cluster, show tres
def _cluster_text(c: Cluster, text: str) -> str:
    """plurm's cluster name and port put where the real one's (`anchor`, 6817) stand, in their
    right-aligned columns (10 and 12 wide by default) or between bars."""
    from plurm.wire.client import read_settings

    settings = read_settings(str(c.conf))
    name, port = settings.cluster_name, str(settings.port)
    text = text.replace(f"{name:>10} ", "    anchor ").replace(f"{name}|", "anchor|")
    return text.replace(f"{port:>12} ", f"{'6817':>12} ").replace(f"|{port}|", "|6817|")


@pytest.mark.parametrize("name, args", [
    ("cluster", ["sacctmgr", "show", "cluster"]),
    ("cluster_P", ["sacctmgr", "-P", "show", "cluster"]),
])
def test_show_cluster_as_slurm(acct: Cluster, name: str, args: list[str]) -> None:
    assert _cluster_text(acct, acct.run(*args, check=True).stdout) == _ref(name)


def test_show_cluster_by_name_and_format(acct: Cluster) -> None:
    name = _cluster_name(acct)
    out = acct.run("sacctmgr", "-n", "-P", "show", "cluster", name, check=True).stdout
    assert _cluster_text(acct, out) == _ref("cluster_name")
    assert acct.run("sacctmgr", "-n", "-P", "show", "cluster", "elsewhere", check=True).stdout == ""
    out = acct.run("sacctmgr", "show", "cluster", "format=qos%-20,cluster%-12,controlport", check=True).stdout
    from plurm.wire.client import read_settings

    port = str(read_settings(str(acct.conf)).port)
    assert out.replace(f"{name:<12} ", f"{'anchor':<12} ").replace(f"{port:>12} ", f"{'6817':>12} ") == \
        _ref("cluster_format")


def test_show_tres_as_slurm(acct: Cluster) -> None:
    """The test cluster tracks no GRES (no AccountingStorageTRES): Slurm's table without the
    anchor's gres/gpu row; with it, the table the anchor prints (the same writer, in-process)."""
    from plurm.tools import sacctmgr
    from plurm.tools.sacctmgr_cluster import TRES_COLUMNS, tres_rows

    ref = _ref("tres").splitlines(keepends=True)
    assert acct.run("sacctmgr", "show", "tres", check=True).stdout == "".join(ref[:-1])
    assert acct.run("sacctmgr", "-n", "-P", "show", "tres", check=True).stdout == \
        "".join(_ref("tres_P").splitlines(keepends=True)[:-1])
    sacctmgr.COLUMNS.setdefault("tres", TRES_COLUMNS)  # as sacctmgr's show does
    rows = tres_rows({"AccountingStorageTRES": "cpu,mem,gres/gpu"})
    assert sacctmgr._table("tres", sacctmgr.parse_format("tres", "type,name%15,id"), rows, True, None) == \
        _ref("tres")
    gres = [r for r in rows if r["type"] == "gres"]
    assert sacctmgr._table("tres", sacctmgr.parse_format("tres", "id,name,type"), gres, True, None) == \
        _ref("tres_where")


def test_show_tres_where_and_a_bad_condition(acct: Cluster) -> None:
    out = acct.run("sacctmgr", "-n", "-P", "show", "tres", "where", "type=cpu,fs", check=True).stdout
    assert out == "cpu||1\nfs|disk|6\n"
    assert acct.run("sacctmgr", "-n", "-P", "show", "tres", "name=disk", check=True).stdout == "fs|disk|6\n"
    proc = acct.run("sacctmgr", "show", "tres", "bogus=1")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (REF / "tres_bad.err").read_text())


def _tres_run(acct: Cluster, tmp_path: Path) -> dict[tuple[str, str], str]:
    """sshare's TRESRunMins per (account, user) while a 2-CPU, 300 MB, 10-minute job runs."""
    job_id = acct.sbatch("-A", "anchor", "-c", "2", "--mem=300", "-t", "10", "--wrap", "sleep 120", cwd=tmp_path)
    try:
        acct.wait_state(job_id, "RUNNING")
        out = acct.run("sshare", "-l", "-P", "-n", "-o", "account,user,tresrunmins", check=True).stdout
    finally:
        acct.run("scancel", str(job_id))
    return {tuple(line.split("|")[:2]): line.split("|")[2] for line in out.splitlines()}


_ZERO_RUN = "cpu=0,mem=0,energy=0,node=0,billing=0,fs/disk=0,vmem=0,pages=0"


def test_sshare_tres_run_minutes_of_a_running_job(acct: Cluster, tmp_path: Path) -> None:
    """TRESRunMins: without AccountingStorageEnforce=limits, zero on every line with a job
    running (what the real 22.05 shows, AccountingStorageEnforce=associations, jobs running
    for 7 minutes); with it, the running job's TRES times its minutes left, on its user's
    line, its account's and root's."""
    assert set(_tres_run(acct, tmp_path).values()) == {_ZERO_RUN}
    conf = acct.conf.read_text()
    acct.conf.write_text(conf + "AccountingStorageEnforce=associations,limits\n")
    try:
        acct.run("scontrol", "reconfigure", check=True)
        lines = _tres_run(acct, tmp_path)
    finally:
        acct.conf.write_text(conf)
        acct.run("scontrol", "reconfigure", check=True)
    run = dict(item.split("=") for item in lines[("  anchor", "root")].split(","))
    left = int(run["node"])
    assert 8 <= left <= 10  # a 10-minute limit, started moments ago
    assert run == {"cpu": str(2 * left), "mem": str(300 * left), "energy": "0", "node": str(left),
                   "billing": str(2 * left), "fs/disk": "0", "vmem": "0", "pages": "0"}
    assert lines[(" anchor", "")] == lines[("root", "")] == lines[("  anchor", "root")]
    assert lines[(" root", "root")] == _ZERO_RUN
