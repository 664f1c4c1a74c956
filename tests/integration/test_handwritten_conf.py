"""The daemons from a hand-written slurm.conf, in the foreground, several plurmd per host."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from plurmtest import Cluster, command, free_ports, wait_for, write_key


def test_daemons_from_handwritten_conf(tmp_path: Path) -> None:
    ctld_port, n1_port, n2_port = free_ports(3)
    conf = tmp_path / "slurm.conf"
    # Case-insensitive keys, comments, a DEFAULT line, a hostlist with a port per node.
    conf.write_text(f"""# written by hand
ClusterName=handmade
SlurmctldHost=ctl(127.0.0.1)
slurmctldport={ctld_port}
SlurmdPort=6818
StateSaveLocation={tmp_path}/state
SlurmdSpoolDir={tmp_path}/spool/%n
NodeName=DEFAULT CPUs=2 RealMemory=1000
NodeName=gpu[01-02] NodeHostname=localhost NodeAddr=127.0.0.1 Port={n1_port},{n2_port}
PartitionName=main Nodes=gpu[01-02] Default=YES MaxTime=10:00 State=UP
""")
    write_key(tmp_path / "slurm.key")
    env = dict(os.environ, SLURM_CONF=str(conf))
    procs = [subprocess.Popen(command("plurmctld") + ["-D", "-f", str(conf)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    for name in ("gpu01", "gpu02"):
        procs.append(subprocess.Popen(command("plurmd") + ["-D", "-N", name], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    cluster = Cluster(tmp_path, conf, env)
    try:
        wait_for(lambda: _responding(cluster) == {"gpu01", "gpu02"}, timeout=30, what="nodes to register")
        work = tmp_path / "work"
        work.mkdir()
        job_id = cluster.sbatch("-N", "2", "--wrap", "echo $SLURM_JOB_NODELIST $SLURM_CLUSTER_NAME", cwd=work)
        job = cluster.wait_state(job_id, "COMPLETED")
        assert job["partition"] == "main" and job["time_limit"] == 10
        assert (work / f"slurm-{job_id}.out").read_text() == "gpu[01-02] handmade\n"
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=15)
    assert all(p.returncode == 0 for p in procs)


def _responding(cluster: Cluster) -> set[str]:
    try:
        return {n["name"] for n in cluster.request("node_info", {})["nodes"] if n.get("responding")}
    except Exception:
        return set()


def test_bad_conf_is_reported_with_file_and_line(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\nNodeName=n1 CPUs=lots\n")
    write_key(tmp_path / "slurm.key")
    proc = subprocess.run(command("plurmctld") + ["-D", "-f", str(conf)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert f"{conf}:2" in proc.stderr and "CPUs" in proc.stderr
