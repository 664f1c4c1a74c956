"""The test helpers themselves: waiting for a job's state gives up once it cannot come; the
ports daemons get are outside the kernel's ephemeral range."""

from __future__ import annotations

from pathlib import Path

import pytest

from plurm.tools.localcluster import ephemeral_low, free_port_block
from plurmtest import Cluster, free_ports


def test_wait_state_stops_at_a_different_final_state(cluster: Cluster, workdir: Path) -> None:
    job_id = cluster.sbatch("--wrap", "echo about to fail; exit 3", cwd=workdir)
    # A timeout far past pytest's own (120 s): only failing fast lets this test pass.
    with pytest.raises(AssertionError) as caught:
        cluster.wait_state(job_id, "COMPLETED", timeout=3600)
    message = str(caught.value)
    assert message.startswith(f"job {job_id} ended FAILED (exit code 3, reason "
                              f"{cluster.job(job_id).get('reason', 'None')}) while waiting for ['COMPLETED']; the end of {workdir}/slurm-{job_id}.out:\n"
                              "about to fail\n")
    # The state it did reach is still waited for as before.
    assert cluster.wait_state(job_id, {"FAILED", "COMPLETED"})["state"] == "FAILED"


def test_wait_state_still_times_out_on_a_live_job(cluster: Cluster, workdir: Path) -> None:
    job_id = cluster.sbatch("--hold", "--wrap", "true", cwd=workdir)
    try:
        with pytest.raises(AssertionError, match=rf"job {job_id} not in \{{'RUNNING'\}} after 0.5s"):
            cluster.wait_state(job_id, "RUNNING", timeout=0.5)
    finally:
        cluster.run("scancel", str(job_id), check=True)


def test_daemon_ports_are_below_the_ephemeral_range() -> None:
    # A port from the ephemeral range can be taken by an outgoing connection while its
    # daemon restarts (a restarted plurmd once found its SlurmdPort in use).
    low = ephemeral_low()
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        assert low >= int(f.read().split()[0])
    ports = free_ports(20)
    assert len(set(ports)) == 20
    assert all(10000 <= port < low for port in ports)
    for _ in range(20):
        base = free_port_block(6)
        assert 10000 <= base and base + 6 <= low
