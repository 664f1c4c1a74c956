"""Dynamic nodes against a real local cluster (issue 16 item 6): ``scontrol create/delete
node``, ``plurmd -Z --conf``, State=EXTERNAL, MaxNodeCount, and the nodes kept across a
controller kill -9 and ``scontrol reconfigure``.

The refusals' texts are 22.05.8's, captured from the real scontrol on this machine (its
MaxNodeCount is its node count: "node table is full" is what its slurmctld logs, while its
scontrol, oddly, exits 0; plurm's exits 1 and says why).
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from plurmtest import Cluster, command, free_ports, start_cluster, wait_for

SLURMD_TIMEOUT_S = 6


@pytest.fixture
def dyn(tmp_path: Path) -> Iterator[Cluster]:
    """Two static nodes; room for three dynamic ones; a partition that takes feature "gpu"."""
    c = start_cluster(tmp_path / "c", nodes=2, cpus=2, memory=2000)
    c.down()
    text = c.conf.read_text().replace("SlurmdTimeout=300", f"SlurmdTimeout={SLURMD_TIMEOUT_S}")
    c.conf.write_text(text + "MaxNodeCount=5\nNodeSet=gpuset Feature=gpu\nPartitionName=gpus Nodes=gpuset\n")
    c.up()
    try:
        yield c
    finally:
        c.down()


def _node(c: Cluster, name: str) -> dict | None:
    return next(iter(c.request("node_info", {"nodes": [name], "future": True})["nodes"]), None)


def _show(c: Cluster, name: str, *options: str) -> str:
    return c.run("scontrol", *options, "show", "node", name).stdout


def _ctld_pid(c: Cluster) -> int:
    return int((c.dir / "run" / "plurmctld.pid").read_text())


def _plurmd_z(c: Cluster, name: str, shape: str) -> subprocess.Popen:
    port = free_ports(1)[0]
    with open(c.dir / "log" / f"plurmd-{name}.log", "ab") as log:  # (the child keeps its own copy)
        return subprocess.Popen(command("plurmd") + ["-D", "-f", str(c.conf), "-N", name, "-Z", "--conf",
                                                     f"{shape} Port={port}"],
                                env=c.env, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_create_refused_without_max_node_count(fresh_cluster: Cluster) -> None:
    r = fresh_cluster.run("scontrol", "create", "NodeName=d1", "CPUs=2", "State=CLOUD")
    assert r.returncode == 1
    assert r.stderr == ("scontrol: error: Unable to add node 'd1', node table is full (MaxNodeCount=2)\n"
                        "Error creating the node(s): Unspecified error\n")
    assert _node(fresh_cluster, "d1") is None


def test_create_show_delete_and_refusals(dyn: Cluster) -> None:
    c = dyn
    r = c.run("scontrol", "create", "NodeName=d[1-2]", "CPUs=2", "RealMemory=1000", "Features=gpu", "Gres=gpu:1",
              "State=FUTURE")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    # FUTURE nodes are seen by scontrol -F only (Slurm's SHOW_FUTURE; 22.05's sinfo has no --future).
    shown = _show(c, "d1", "-F")
    assert "State=FUTURE " in shown and "Partitions=debug,gpus" in shown and "Gres=gpu:1" in shown, shown
    assert "AvailableFeatures=gpu" in shown and "RealMemory=1000" in shown
    assert _show(c, "d1") == "Node d1 not found\n"
    assert c.run("sinfo", "-h", "-N", "-o", "%N").stdout.split() == ["n1", "n2"]
    # 22.05's words, refusal by refusal (scontrol's two lines, exit 1).
    cases = {
        ("NodeName=d3", "State=IDLE"): "scontrol: error: Only State=FUTURE, State=CLOUD and State=EXTERNAL allowed "
                                       "for nodes created by scontrol\nError creating the node(s): Invalid node "
                                       "state specified\n",
        ("NodeName=d3", "Bogus=1"): "scontrol: error: Failed to parse nodeline 'NodeName=d3 Bogus=1'\n"
                                    "Error creating the node(s): Unspecified error\n",
        ("node",): "scontrol: error: Failed to parse nodeline 'node'\nError creating the node(s): Unspecified error\n",
        ("NodeName=d1", "CPUs=1"): "scontrol: error: Node 'd1' already exists\n"
                                   "Error creating the node(s): Duplicate node name\n",
        ("NodeName=x[1-2]", "CPUs=1", "State=CLOUD"): "scontrol: error: Unable to add node 'x2', node table is full "
                                                      "(MaxNodeCount=5)\nError creating the node(s): Unspecified error\n",
        (): "too few arguments for create keyword\n",
    }
    for words, expected in cases.items():
        r = c.run("scontrol", "create", *words)
        assert (r.returncode, r.stderr) == (1, expected), words
    assert _node(c, "x1") is None  # (all or none)
    r = c.run("scontrol", "delete", "NodeName=n1")
    assert (r.returncode, r.stderr) == (1, ("scontrol: error: failed to delete nodes n1\n"
                                            "scontrol: error: Can't delete non-dynamic node 'n1'.\n"
                                            "delete_node NodeName=n1: Invalid node state specified\n"))
    r = c.run("scontrol", "delete", "NodeName=nosuch")
    assert (r.returncode, r.stderr) == (1, ("scontrol: error: failed to delete nodes nosuch\n"
                                            "delete_node NodeName=nosuch: Invalid node name specified\n"))
    r = c.run("scontrol", "delete", "NodeName=")
    assert (r.returncode, r.stderr) == (1, "delete_node NodeName=: Invalid node name specified\n")
    r = c.run("scontrol", "delete", "NodeName=d[1-2]")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert _node(c, "d1") is None and _node(c, "d2") is None
    assert c.run("scontrol", "-F", "show", "node", "d1").returncode == 1
    assert c.request("node_info", {"partitions": ["gpus"]})["partitions"][0].get("nodes", []) == []


def test_external_node_is_shown_never_launched_on(dyn: Cluster, tmp_path: Path) -> None:
    c = dyn
    c.run("scontrol", "create", "NodeName=k1", "CPUs=4", "RealMemory=4000", "State=EXTERNAL", check=True)
    assert "State=IDLE+EXTERNAL " in _show(c, "k1")
    assert "k1" in c.run("sinfo", "-h", "-N", "-o", "%N").stdout.split()
    # A batch job asking for it could never run there (External nodes take EXTERNAL_JOB jobs only):
    # refused at submission, as a job no node of its partition could hold.
    refused = c.run("sbatch", "-w", "k1", "--wrap", "touch ran-on-k1", cwd=tmp_path)
    assert refused.returncode == 1 and "Requested node configuration is not available" in refused.stderr, refused
    # A job that anywhere would do never lands on it either.
    other = c.sbatch("-N", "1", "--wrap", "hostname", cwd=tmp_path)
    assert c.wait_state(other, "COMPLETED")["nodes"] != ["k1"]
    assert not (tmp_path / "ran-on-k1").exists()
    # No plurmd speaks for an External node: its registration is refused, the node stays as it was.
    proc = _plurmd_z(c, "k1", "CPUs=4")
    try:
        log = c.dir / "log" / "plurmctld.log"
        wait_for(lambda: "node k1 registration refused: Node k1 is External" in log.read_text(), what="refusal")
        assert not (_node(c, "k1") or {}).get("responding") and "State=IDLE+EXTERNAL " in _show(c, "k1")
    finally:
        _stop(proc)


def test_plurmd_z_registers_runs_and_survives_restart(dyn: Cluster, tmp_path: Path) -> None:
    c = dyn
    proc = _plurmd_z(c, "dz1", "CPUs=2 RealMemory=1000 Features=gpu")
    try:
        wait_for(lambda: (_node(c, "dz1") or {}).get("responding"), what="dz1 registered")
        shown = _show(c, "dz1")
        assert "State=IDLE+DYNAMIC_NORM " in shown and "Partitions=debug,gpus" in shown, shown
        c.run("scontrol", "create", "NodeName=k1", "CPUs=2", "State=EXTERNAL", check=True)
        job_id = c.sbatch("-p", "gpus", "--wrap", "hostname; sleep 4", cwd=tmp_path)
        assert c.wait_state(job_id, "RUNNING")["nodes"] == ["dz1"]
        r = c.run("scontrol", "delete", "NodeName=dz1")
        assert (r.returncode, r.stderr) == (1, (f"scontrol: error: failed to delete nodes dz1\nscontrol: error: "
                                                f"Node 'dz1' has jobs ({job_id})\ndelete_node NodeName=dz1: "
                                                "Node has active jobs\n"))
        # kill -9 the controller while the job runs on the dynamic node: nothing is lost.
        os.kill(_ctld_pid(c), signal.SIGKILL)
        c.up()
        assert c.wait_state(job_id, "COMPLETED", timeout=30)["nodes"] == ["dz1"]
        assert "State=IDLE+EXTERNAL " in _show(c, "k1")
        wait_for(lambda: (_node(c, "dz1") or {}).get("responding"), what="dz1 back after the restart")
        assert "Partitions=debug,gpus" in _show(c, "dz1")
        # scontrol reconfigure keeps them.
        c.run("scontrol", "reconfigure", check=True)
        assert _node(c, "dz1") is not None and _node(c, "k1") is not None
        second = c.sbatch("-w", "dz1", "--wrap", "true", cwd=tmp_path)
        c.wait_state(second, "COMPLETED")
        # plurmd gone: the node stays, DOWN once SlurmdTimeout passes; back when plurmd is.
        _stop(proc)
        wait_for(lambda: "DOWN" in (_node(c, "dz1") or {}).get("state", ""), timeout=4 * SLURMD_TIMEOUT_S,
                 what="dz1 down")
        proc = _plurmd_z(c, "dz1", "CPUs=2 RealMemory=1000 Features=gpu")
        wait_for(lambda: (_node(c, "dz1") or {}).get("state") == "IDLE+DYNAMIC_NORM", what="dz1 back")
        # More than SlurmdTimeout after the restart, the External node is not DOWN: nothing to hear from.
        assert "State=IDLE+EXTERNAL " in _show(c, "k1")
    finally:
        _stop(proc)
    r = c.run("scontrol", "delete", "NodeName=dz1,k1")
    assert (r.returncode, r.stderr) == (0, "")
    os.kill(_ctld_pid(c), signal.SIGKILL)
    c.up()
    assert _node(c, "dz1") is None and _node(c, "k1") is None  # (deleted for good)


def test_plurmd_z_refused_for_a_static_node(dyn: Cluster) -> None:
    r = dyn.run("plurmd", "-D", "-f", str(dyn.conf), "-N", "n1", "-Z", "--conf", "CPUs=1")
    assert r.returncode != 0 and "-Z is for a node that slurm.conf does not have" in r.stderr


# The real Slurm 22.05.8 of this machine (PATH without plurm's commands; its own slurm.conf):
# only refusals are asked of it, none that could add a node to it.
_REAL_ENV = {k: v for k, v in os.environ.items() if k not in ("SLURM_CONF", "PLURM_HOME")}
_REAL_ENV["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"


@pytest.mark.compat
@pytest.mark.skipif(not os.access("/usr/bin/scontrol", os.X_OK), reason="needs Slurm's scontrol")
@pytest.mark.parametrize("words, same", [
    (["create"], "all"),
    (["create", "node"], "all"),
    (["create", "NodeName=dyn_cmp1", "Bogus=1"], "all"),
    (["create", "NodeName=dyn_cmp1", "CPUs=1", "State=IDLE"], "last line"),  # (plurm adds EXTERNAL)
    (["delete"], "all"),
    (["delete", "NodeName=dyn_nosuch"], "all"),
    (["delete", "NodeName="], "all"),
])
def test_refusals_as_the_real_scontrol(cluster: Cluster, words: list[str], same: str) -> None:
    real = subprocess.run(["scontrol", *words], capture_output=True, text=True, env=_REAL_ENV, timeout=30, check=False)
    if "Unable to contact" in real.stderr:
        pytest.skip("the real slurmctld does not answer")
    ours = cluster.run("scontrol", *words)
    assert ours.returncode == real.returncode == 1, (ours.stderr, real.stderr)
    if same == "all":
        assert ours.stderr == real.stderr
    else:
        assert ours.stderr.splitlines()[-1] == real.stderr.splitlines()[-1]
