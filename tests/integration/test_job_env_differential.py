"""The job environment, differentially: every job kind's whole environment against Slurm 22.05's.

The same driver (reference/env/jobkinds.py) ran the same kinds on the real Slurm (the anchor,
reference/env/capture.py wrote slurm-22.05.json) and runs them here on a plurm cluster shaped
like the anchor (n[1-4] x 4 CPUs, 4 GPUs each, DefMemPerCPU=256, account `anchor` with
associations enforced).  Each dump is compared whole after normalising what is specific to the
host or the run (pids, ports, job ids, node names, the submit dir, SLURM_CONF, the user): the
same names set, none more, and the same values.  What may still differ is ALLOWED, each with
its reason; an entry that no longer differs fails too, so the list cannot go stale.
"""

from __future__ import annotations

import json
import os
import pwd
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import BIN_DIR, Cluster, free_ports

REFERENCE_DIR = Path(__file__).parent / "reference" / "env"
sys.path.insert(0, str(REFERENCE_DIR))
import jobkinds  # noqa: E402

REFERENCE = json.loads((REFERENCE_DIR / "slurm-22.05.json").read_text())

# (kind+suffix, variable) -> why plurm differs there.  Empty: no difference remains on the
# kinds compared (docs/compatibility.md, "The job environment", lists what is not compared).
ALLOWED: dict[tuple[str, str], str] = {}

CASES = [(kind, suffix) for kind, result in sorted(REFERENCE["kinds"].items()) for suffix in sorted(result["dumps"])]


def _anchor_conf(directory: Path) -> Path:
    ports = free_ports(6)
    conf = directory / "slurm.conf"
    conf.write_text(f"""# The anchor's shape (tests/integration/reference/env/capture.py ran on it)
ClusterName=anchor
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
SlurmUser={pwd.getpwuid(os.getuid()).pw_name}
SlurmdUser={pwd.getpwuid(os.getuid()).pw_name}
StateSaveLocation={directory}/state
SlurmdSpoolDir={directory}/spool/%n
SlurmctldPidFile={directory}/run/plurmctld.pid
SlurmdPidFile={directory}/run/plurmd-%n.pid
SlurmctldLogFile={directory}/log/plurmctld.log
SlurmdLogFile={directory}/log/plurmd-%n.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
GresTypes=gpu
AccountingStorageEnforce=associations
NodeName=n[1-4] NodeHostname=localhost NodeAddr=127.0.0.1 Port={",".join(map(str, ports[2:]))} CPUs=4 Sockets=1 \
CoresPerSocket=4 ThreadsPerCore=1 RealMemory=2800 Gres=gpu:4 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
    return conf


@pytest.fixture(scope="module")
def plurm_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """Every kind run once on an anchor-shaped plurm cluster: {"facts": ..., "kinds": ...}."""
    base = tmp_path_factory.mktemp("jobenv")
    directory = base / "cluster"
    directory.mkdir()
    conf = _anchor_conf(directory)
    env = dict(os.environ, SLURM_CONF=str(conf))
    env.pop("SLURM_JOB_ID", None)
    cluster = Cluster(directory, conf, env)
    cluster.up()
    try:
        me = pwd.getpwuid(os.getuid())
        cluster.run("sacctmgr", "-i", "add", "account", "anchor", check=True)
        cluster.run("sacctmgr", "-i", "add", "user", me.pw_name, "account=anchor", check=True)
        # plurm's commands first on PATH (Slurm's were in /usr/bin on the anchor).
        prefix = f"{BIN_DIR}:"
        submitted = jobkinds.submit_environment(prefix + "/usr/sbin:/usr/bin:/sbin:/bin", str(conf))
        work = base / "work"
        kinds = jobkinds.run_kinds(work, submitted, timeout=60)
        facts = {
            "host": socket.gethostname().split(".", 1)[0], "submit_dir": str(work), "conf": str(conf),
            "ctld_port": _port(conf), "path_prefix": prefix,
            "uid": str(me.pw_uid), "gid": str(me.pw_gid), "user": me.pw_name, "home": me.pw_dir,
            "login": jobkinds.login_environment(me.pw_name), "submitted": submitted,
        }
        yield {"facts": facts, "kinds": kinds}
    finally:
        cluster.down()


def _port(conf: Path) -> str:
    return next(line.split("=", 1)[1].strip() for line in conf.read_text().splitlines()
                if line.startswith("SlurmctldPort="))


def _normalised(side: dict, kind: str, suffix: str) -> dict[str, str]:
    result = side["kinds"][kind]
    return jobkinds.normalise(kind, result["dumps"][suffix], side["facts"], result["job_ids"], result["dependency"])


def test_reference_covers_every_kind() -> None:
    """The capture is the driver's: every kind, every dump, from the Slurm it names."""
    assert REFERENCE["slurm"] == "slurm-wlm 22.05.8"
    assert {k.name: tuple(sorted(k.files)) for k in jobkinds.KINDS} == \
        {k: tuple(sorted(r["dumps"])) for k, r in REFERENCE["kinds"].items()}


@pytest.mark.parametrize(("kind", "suffix"), CASES, ids=[k + s for k, s in CASES])
def test_environment_as_slurm(plurm_run: dict, kind: str, suffix: str) -> None:
    slurm = _normalised(REFERENCE, kind, suffix)
    ours = _normalised(plurm_run, kind, suffix)
    name = kind + suffix
    differs = {var: (slurm.get(var), ours.get(var)) for var in sorted(set(slurm) | set(ours))
               if slurm.get(var) != ours.get(var)}
    unexplained = {var: pair for var, pair in differs.items() if (name, var) not in ALLOWED}
    assert unexplained == {}, f"{name}: (slurm, plurm) differ: {unexplained}"
    stale = [var for (case, var) in ALLOWED if case == name and var not in differs]
    assert stale == [], f"{name}: allowed differences that no longer differ: {stale}"


def test_normalising_keeps_what_matters() -> None:
    """The normaliser hides only what is host- or run-specific: a wrong value still shows."""
    facts = REFERENCE["facts"]
    result = REFERENCE["kinds"]["nodes2_tasks4"]
    dump = dict(result["dumps"][""])
    good = jobkinds.normalise("nodes2_tasks4", dump, facts, result["job_ids"], None)
    assert good["SLURM_JOB_ID"] == "<JOB>" and good["SLURM_JOB_NODELIST"] == "<N0>,<N1>"
    assert good["SLURM_TASKS_PER_NODE"] == "3,1" and good["SLURM_SUBMIT_DIR"] == "<SUBMIT_DIR>"
    for var, wrong in (("SLURM_JOB_ID", str(result["job_ids"][0] + 1)), ("SLURM_TASKS_PER_NODE", "2(x2)"),
                       ("SLURMD_NODENAME", "n4"), ("SLURM_SUBMIT_DIR", "/elsewhere")):
        bad = jobkinds.normalise("nodes2_tasks4", dict(dump, **{var: wrong}), facts, result["job_ids"], None)
        assert bad[var] != good[var], var
