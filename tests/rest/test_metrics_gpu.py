"""Live GPU usage on /metrics (issue 16 item 3): plurmd reads every detected GPU on its usage
timer, the next ping carries the reading, the controller keeps the last one per device and
plurmrestd's /metrics shows it.

Only the GPUs are fake, at the vendor library's C boundary: tests/accel/fakes/fake_nvml.c is
built as libnvidia-ml.so.1 and the real pynvml loads it inside plurmd's real usage probe (found
through LD_LIBRARY_PATH, as on a node).  The probe re-reads the fake's inventory each time, so
rewriting it changes what the "GPUs" report next.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from plurmtest import Cluster, wait_for
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from resttest import Rest

pytest.importorskip("pynvml")

FAKE_NVML = Path(__file__).parent.parent / "accel" / "fakes" / "fake_nvml.c"
UTIL, MEM, AGE = ("plurm_node_gpu_utilization_ratio", "plurm_node_gpu_memory_used_bytes",
                  "plurm_node_gpu_reading_age_seconds")
MIB = 1024 * 1024


def _h200(i: int, util: int, mem_used_mb: int) -> str:
    return (f"device name=NVIDIA H200;uuid=GPU-{i:08x}-0000-0000-0000-000000000000;bus=00000000:{0x17 + i:02X}:00.0;"
            f"mem_total_mb=143771;mem_used_mb={mem_used_mb};util={util};temp=45;minor={i};numa=0\n")


def _inventory(path: Path, figures: list[tuple[int, int]], *extra: str) -> None:
    text = "".join(_h200(i, util, mem) for i, (util, mem) in enumerate(figures)) + "".join(f"{e}\n" for e in extra)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)  # (a probe never reads half a file)


@pytest.fixture(scope="module")
def gpu_rest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the fake libnvidia-ml.so.1")
    from plurm.tools.localcluster import ClusterShape, LocalCluster

    base = tmp_path_factory.mktemp("metrics_gpu")
    libdir = base / "lib"
    libdir.mkdir()
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-Wall", "-Wno-format-truncation", "-o",
                    str(libdir / "libnvidia-ml.so.1"), str(FAKE_NVML)], check=True, capture_output=True, text=True)
    inventory = base / "nvml.inv"
    _inventory(inventory, [(37, 1024), (80, 2048)])
    local = LocalCluster(str(base / "cluster"))
    local.write_files(ClusterShape(nodes=1, cpus_per_node=2, memory_per_node=1000, gres="gpu:h200:2"))
    (Path(local.dir) / "gres.conf").write_text("AutoDetect=nvml\n")
    env = dict(os.environ, SLURM_CONF=local.conf_path, LD_LIBRARY_PATH=str(libdir), FAKE_NVML_CONFIG=str(inventory),
               PLURM_ACCEL_USAGE_INTERVAL="0.5", PLURM_PING_INTERVAL="0.5")
    env.pop("SLURM_JOB_ID", None)
    cluster = Cluster(Path(local.dir), Path(local.conf_path), env)
    out = cluster.up("--rest").stdout
    try:
        url = next(line.split("=", 1)[1] for line in out.splitlines() if line.startswith("export SLURM_RESTD_URL="))
        yield SimpleNamespace(rest=Rest(cluster, url, b"", base), inventory=inventory, dir=Path(local.dir))
    finally:
        cluster.down()


def scrape(url: str, path: str = "/metrics") -> dict[str, list[Any]]:
    with urllib.request.urlopen(url + path, timeout=30) as reply:
        text = reply.read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def by_gpu(families: dict[str, list[Any]], name: str) -> dict[str, float]:
    return {s.labels["gpu"]: s.value for s in families.get(name, [])}


def wait_metrics(url: str, check: Any, what: str) -> dict[str, list[Any]]:
    seen: dict[str, list[Any]] = {}

    def ok() -> bool:
        seen.clear()
        seen.update(scrape(url))
        return bool(check(seen))

    wait_for(ok, 60, f"{what} (last: { {k: v for k, v in seen.items() if k.startswith('plurm_node_gpu')} })")
    return seen


def test_each_gpu_reports_its_utilisation_and_memory(gpu_rest: SimpleNamespace) -> None:
    url = gpu_rest.rest.url
    families = wait_metrics(url, lambda f: by_gpu(f, UTIL) == {"0": 0.37, "1": 0.8}, "both GPUs' readings")
    assert by_gpu(families, MEM) == {"0": 1024 * MIB, "1": 2048 * MIB}
    labels = {s.labels["gpu"]: s.labels for s in families[UTIL]}
    assert labels["1"] == {"node": "n1", "gpu": "1", "type": "h200", "model": "NVIDIA H200",
                           "uuid": "GPU-00000001-0000-0000-0000-000000000000"}
    ages = by_gpu(families, AGE)
    assert set(ages) == {"0", "1"} and all(a >= 0 for a in ages.values()), ages
    # The per-endpoint split: the nodes' endpoint has them, the jobs' has not.
    assert UTIL in scrape(url, "/metrics/nodes") and UTIL not in scrape(url, "/metrics/jobs")


def test_readings_follow_the_devices(gpu_rest: SimpleNamespace) -> None:
    _inventory(gpu_rest.inventory, [(5, 100), (100, 143771)])
    families = wait_metrics(gpu_rest.rest.url, lambda f: by_gpu(f, UTIL) == {"0": 0.05, "1": 1.0}, "new readings")
    assert by_gpu(families, MEM) == {"0": 100 * MIB, "1": 143771 * MIB}


def test_a_failing_reading_leaves_no_gauge_and_plurmd_alive(gpu_rest: SimpleNamespace) -> None:
    url = gpu_rest.rest.url
    wait_metrics(url, lambda f: by_gpu(f, UTIL), "readings before the failure")
    # The library crashes (SIGSEGV) in the usage call: the probe dies, plurmd must not.
    _inventory(gpu_rest.inventory, [(37, 1024), (80, 2048)], "crash nvmlDeviceGetUtilizationRates")
    families = wait_metrics(url, lambda f: UTIL not in f and MEM not in f and AGE not in f, "the readings gone")
    assert not [n for n in families if n.startswith("plurm_node_gpu_")], families.keys()
    pid = int((gpu_rest.dir / "run" / "plurmd-n1.pid").read_text())
    os.kill(pid, 0)  # (raises if plurmd died)
    log = (gpu_rest.dir / "log" / "plurmd-n1.log").read_text(errors="replace")
    assert "no usage reading for nvml device 0" in log, log[-3000:]
    # Still responding and in service: a usage reading is not a health check.
    state = gpu_rest.rest.cluster.run("sinfo", "-h", "-n", "n1", "-o", "%t", check=True).stdout.strip()
    assert state == "idle", state
    # And the next good reading comes back from the same plurmd.
    _inventory(gpu_rest.inventory, [(12, 512), (34, 768)])
    wait_metrics(url, lambda f: by_gpu(f, UTIL) == {"0": 0.12, "1": 0.34}, "readings after the failure")
    assert int((gpu_rest.dir / "run" / "plurmd-n1.pid").read_text()) == pid
    assert "usage readings for nvml device 0" in (gpu_rest.dir / "log" / "plurmd-n1.log").read_text(errors="replace")


# ----------------------------------------------------------------------------- the controller's table, pure

def _node(name: str, uuids: list[str], responding: bool = True) -> SimpleNamespace:
    return SimpleNamespace(name=name, devices=[{"uuid": u} for u in uuids], responding=responding)


def _reading(gpu: int, uuid: str, util: float | None = 50.0, age_s: float = 1.0) -> Any:
    from plurm.wire.protocol import GpuReading

    return GpuReading(gpu=gpu, uuid=uuid, type="h200", model="NVIDIA H200", util=util, mem_used_mb=10, age_s=age_s)


def test_the_controller_keeps_the_last_reading_of_registered_devices_only() -> None:
    from plurm.corescheduler.gpu_readings import GpuReadings
    from plurm.rest import openmetrics

    table = GpuReadings()
    n1 = _node("n1", ["A", "B"])
    table.update(n1, [_reading(0, "A"), _reading(1, "wrong"), _reading(7, "Z")], now=100.0)
    rows = table.rows({"n1": n1}, now=102.0)
    assert [(r["gpu"], r["uuid"], r["age_s"]) for r in rows] == [(0, "A", 3.0)]  # 1 s old + 2 s here
    table.update(n1, None, now=103.0)  # a ping without a new reading: kept
    assert len(table.rows({"n1": n1}, now=103.0)) == 1
    table.update(n1, [_reading(0, "A", util=None), _reading(1, "B", util=90.0)], now=104.0)
    families = {name: samples for name, _, _, samples in openmetrics.gpu_usage(table.rows({"n1": n1}, now=104.0))}
    assert [(s[0]["gpu"], s[1]) for s in families["plurm_node_gpu_utilization_ratio"]] == [("1", 0.9)]
    assert len(families["plurm_node_gpu_memory_used_bytes"]) == 2  # (memory known for both)
    assert table.rows({"n1": _node("n1", ["A", "B"], responding=False)}, now=105.0) == []  # a silent node
    table.update(n1, [], now=106.0)  # it could read nothing: its readings go
    assert table.rows({"n1": n1}, now=106.0) == [] and openmetrics.gpu_usage([]) == []
    table.update(n1, [_reading(0, "A")], now=107.0)
    assert table.rows({}, now=107.0) == [] and table.rows({"n1": n1}, now=107.0) == []  # a deleted node: forgotten
