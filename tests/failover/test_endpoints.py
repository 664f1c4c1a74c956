"""Which SlurmctldHost entry a controller is, and the starts that must be refused."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from plurm.corescheduler.failover import EndpointError, choose_endpoint
from plurmtest import command, free_ports, write_key

TWO = [("ctl1", "127.0.0.1"), ("ctl2", "127.0.0.2")]


def test_the_entry_is_named_by_host_or_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLURM_SLURMCTLD_HOST", raising=False)
    assert choose_endpoint(TWO, "ctl2").index == 1
    assert choose_endpoint(TWO, "127.0.0.1").name == "ctl1"
    assert choose_endpoint([("localhost", "127.0.0.1")]).mode == "primary"
    assert choose_endpoint(TWO, "ctl2").mode == "backup"
    assert choose_endpoint(TWO + [("ctl3", "127.0.0.3")], "ctl3").mode == "backup2"
    monkeypatch.setenv("PLURM_SLURMCTLD_HOST", "ctl2")
    assert choose_endpoint(TWO).addr == "127.0.0.2"
    with pytest.raises(EndpointError, match="ctl9 is none of the SlurmctldHost entries"):
        choose_endpoint(TWO, "ctl9")


def test_this_hosts_name_picks_its_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PLURM_SLURMCTLD_HOST", raising=False)
    me = socket.gethostname().split(".", 1)[0]
    assert choose_endpoint([("elsewhere", "10.0.0.1"), (me, "127.0.0.1")]).index == 1
    with pytest.raises(EndpointError, match="--host NAME"):
        choose_endpoint([("elsewhere", "10.0.0.1"), ("nowhere", "10.0.0.2")])


def _conf(tmp_path: Path, state: str) -> Path:
    port, node_port = free_ports(2)
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"""ClusterName=e
SlurmctldHost=ctl1(127.0.0.1)
SlurmctldHost=ctl2(127.0.0.2)
SlurmctldPort={port}
StateSaveLocation={state}
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port={node_port} CPUs=1 RealMemory=500
PartitionName=p Nodes=n1 Default=YES State=UP
""")
    write_key(tmp_path / "slurm.key")
    return conf


def _start(conf: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, SLURM_CONF=str(conf))
    env.pop("PLURM_SLURMCTLD_HOST", None)
    return subprocess.run(command("plurmctld") + ["-D", "-f", str(conf), *extra], env=env,
                          capture_output=True, text=True, timeout=60)


def test_a_backup_on_the_sqlite_store_refuses_to_start(tmp_path: Path) -> None:
    proc = _start(_conf(tmp_path, str(tmp_path / "state")), "--host", "ctl2")
    assert proc.returncode != 0
    assert "a backup needs a shared store, StateSaveLocation=postgresql://" in proc.stderr


def test_an_unknown_host_is_refused_before_starting(tmp_path: Path) -> None:
    proc = _start(_conf(tmp_path, str(tmp_path / "state")), "--host", "ctl7")
    assert proc.returncode == 1
    assert "SlurmctldHost: ctl7 is none of the SlurmctldHost entries (ctl1, ctl2)" in proc.stderr
