"""sdiag against a real cluster: Slurm 22.05's layout (the real one's output is
../shared/reference/slurm-22.05/busy_sdiag.txt), counters that move with the work done, -r."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from plurmtest import REFERENCE, Cluster

RPC_LINE = re.compile(r"^\t(\S+)\s*\(\s*(\d+)\) count:(\d+)\s+ave_time:(\d+)\s+total_time:(\d+)$")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """bf_interval=3600: the first pass runs the backfill cycle, every later one is a main pass
    (both kinds counted, whatever the machine's speed: 22.05 prints the means only then)."""
    from plurm.tools.localcluster import ClusterShape, LocalCluster

    local = LocalCluster(str(tmp_path_factory.mktemp("sdiag") / "cluster"))
    local.write_files(ClusterShape(nodes=1, cpus_per_node=2, memory_per_node=1000))
    conf = Path(local.conf_path)
    conf.write_text(conf.read_text().replace("SchedulerParameters=bf_interval=1", "SchedulerParameters=bf_interval=3600"))
    assert "bf_interval=3600" in conf.read_text()
    env = dict(os.environ, SLURM_CONF=str(conf))
    env.pop("SLURM_JOB_ID", None)
    c = Cluster(Path(local.dir), conf, env)
    c.up()
    try:
        yield c
    finally:
        c.down()


def _skeleton(text: str) -> list[str]:
    """The labels of each line up to the RPC tables, numbers and dates taken out."""
    head = text.split("Remote Procedure Call statistics by message type")[0]
    out = []
    for line in head.splitlines():
        line = re.sub(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} \(\d+\)", "WHEN", line)
        out.append(re.sub(r"\d+", "N", line).rstrip())
    return out


def _rpcs(text: str, section: str) -> dict[str, tuple[int, int, int, int]]:
    body = text.split(section)[1].split("\n\n")[0]
    rows = {}
    for line in body.splitlines()[1:]:
        found = RPC_LINE.match(line)
        assert found, repr(line)
        name, number, count, ave, total = found.groups()
        rows[name] = (int(number), int(count), int(ave), int(total))
    return rows


def test_layout_and_counters_as_slurm_prints_them(cluster: Cluster, tmp_path: Path) -> None:
    job = cluster.sbatch("--wrap", "true", cwd=tmp_path)
    cluster.wait_state(job, "COMPLETED")
    cluster.sbatch("--hold", "--wrap", "true", cwd=tmp_path)
    cluster.run("squeue", check=True)
    out = cluster.run("sdiag", check=True).stdout
    assert [int(n) for n in re.findall(r"^\tTotal cycles: (\d+)$", out, re.M)][1] == 1, out  # the first pass
    assert _skeleton(out) == _skeleton((REFERENCE / "busy_sdiag.txt").read_text())
    by_type = _rpcs(out, "Remote Procedure Call statistics by message type")
    assert by_type["REQUEST_SUBMIT_BATCH_JOB"][:2] == (4003, 2)
    assert by_type["REQUEST_JOB_INFO"][1] >= 1 and by_type["REQUEST_JOB_INFO"][3] > 0
    assert by_type["REQUEST_COMPLETE_BATCH_SCRIPT"][1] >= 1  # plurmd's report of the job's end
    counts = [row[1] for row in by_type.values()]
    assert counts == sorted(counts, reverse=True)  # by count, as the real one
    by_user = _rpcs(out, "Remote Procedure Call statistics by user")
    assert sum(row[1] for row in by_user.values()) == sum(counts)
    assert re.search(r"^Jobs submitted: 2$", out, re.M) and re.search(r"^Jobs pending:   1$", out, re.M)
    assert re.search(r"^\tTotal cycles: [1-9]", out, re.M)
    by_id = _rpcs(cluster.run("sdiag", "-i", check=True).stdout, "Remote Procedure Call statistics by message type")
    ids = [row[0] for row in by_id.values()]
    assert ids == sorted(ids)


def test_reset_zeroes_the_counters(cluster: Cluster) -> None:
    proc = cluster.run("sdiag", "-r", check=True)
    assert proc.stdout == "Reset scheduling statistics\n"
    out = cluster.run("sdiag", check=True).stdout
    by_type = _rpcs(out, "Remote Procedure Call statistics by message type")
    assert "REQUEST_SUBMIT_BATCH_JOB" not in by_type  # only what came after the reset
    assert re.search(r"^\tTotal cycles: 0$", out, re.M)


def test_bad_option_is_a_usage_error(cluster: Cluster) -> None:
    proc = cluster.run("sdiag", "--bogus")
    assert proc.returncode == 1 and "Try \"sdiag --help\"" in proc.stderr, proc
    assert cluster.run("sdiag", "--usage", check=True).stdout.startswith("Usage: sdiag")
