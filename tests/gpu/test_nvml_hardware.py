"""The NVML backend on a real NVIDIA GPU: what nvidia-smi lists, plurm detects, and real CUDA
work shows up in usage, in a job's binding and in sacct.

Marked ``gpu``, so not in the default run: ``bash tests/gpu/device_check.sh`` runs it on a node
with a GPU (docs/accelerators.md, "Checking on real hardware").  Where there is no usable NVIDIA
GPU (no nvidia-smi, pynvml not installed, nvmlInit failing, no device) the tests skip with the
reason; ``PLURM_REQUIRE_GPU=1`` (device_check.sh sets it) makes that a failure instead.  The CUDA
work runs torch in this same Python; without torch those tests skip.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import NoReturn

import pytest

from plurm.accel.detect import DetectionResult, detect, health_check, sample_usage
from plurm.accel.model import Device, normalise_pci_bus_id
from plurm.plugins.manager import PluginManager
from plurmtest import Cluster, command, free_ports, wait_for, write_key

pytestmark = pytest.mark.gpu

# A GPU without persistence mode initialises on first use, which can take seconds per device.
PROBE_TIMEOUT_S = 60.0
NODE = "g1"
ACTIVE_STATES = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED"}


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("PLURM_REQUIRE_GPU", "") not in ("", "0"):
        pytest.fail(f"PLURM_REQUIRE_GPU is set, but {reason}", pytrace=False)
    pytest.skip(reason)


def _need_torch() -> None:
    if find_spec("torch") is None:
        pytest.skip(f"torch is not installed for {sys.executable}: no CUDA work to run")


def _nvidia_smi(*args: str) -> str:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        _unavailable("nvidia-smi not found: no NVIDIA driver here")
    proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        _unavailable(f"nvidia-smi {' '.join(args)} failed ({proc.returncode}): "
                     f"{(proc.stderr or proc.stdout).strip()[-300:]}")
    return proc.stdout


@dataclass(frozen=True)
class SmiGpu:
    """One row of nvidia-smi --query-gpu, the bus id normalised as plurm does."""

    index: int
    name: str
    uuid: str
    pci_bus_id: str | None
    memory_mb: int


def _minor_numbers(report: str) -> dict[str | None, int | None]:
    """``nvidia-smi -q``: each GPU's section opens with ``GPU 00000000:17:00.0`` and holds
    ``Minor Number : 0`` (``N/A`` where the driver has none)."""
    minors: dict[str | None, int | None] = {}
    bus = None
    for line in report.splitlines():
        if m := re.match(r"GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$", line):
            bus = normalise_pci_bus_id(m.group(1))
        elif bus and (m := re.match(r"\s+Minor Number\s*:\s*(\S+)", line)):
            minors[bus] = int(m.group(1)) if m.group(1).isdigit() else None
    return minors


@pytest.fixture(scope="module")
def smi() -> list[SmiGpu]:
    rows = _nvidia_smi("--query-gpu=index,name,uuid,pci.bus_id,memory.total",
                       "--format=csv,noheader,nounits")
    gpus = []
    for row in rows.splitlines():
        if not row.strip():
            continue
        index, rest = row.split(",", 1)
        name, uuid, bus, memory = (f.strip() for f in rest.rsplit(",", 3))
        gpus.append(SmiGpu(int(index), name, uuid, normalise_pci_bus_id(bus), int(memory)))
    print(f"nvidia-smi: {gpus}")
    if not gpus:
        _unavailable("nvidia-smi lists no GPU")
    return gpus


@pytest.fixture(scope="module")
def nvml_count() -> int:
    """How many GPUs NVML itself lists (pynvml in a subprocess of its own, as plurm runs it)."""
    if find_spec("pynvml") is None:
        _unavailable("pynvml is not installed (pip install nvidia-ml-py)")
    code = "import pynvml; pynvml.nvmlInit(); print(pynvml.nvmlDeviceGetCount()); pynvml.nvmlShutdown()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        _unavailable(f"nvmlInit failed: {(proc.stderr.strip().splitlines() or ['?'])[-1][-300:]}")
    count = int(proc.stdout.split()[-1])
    if count == 0:
        _unavailable("NVML lists no GPU")
    return count


@pytest.fixture(scope="module")
def pm() -> PluginManager:
    return PluginManager(autoload=False)  # the built-in backends only


@pytest.fixture(scope="module")
def detection(nvml_count: int, pm: PluginManager) -> DetectionResult:
    start = time.monotonic()
    result = detect(["nvml"], PROBE_TIMEOUT_S, manager=pm, refresh=True)
    print(f"detect(['nvml']) in {time.monotonic() - start:.1f}s: errors={result.errors}")
    for d in result.devices:
        print(f"  {d}")
    return result


@pytest.fixture(scope="module")
def devices(detection: DetectionResult) -> list[Device]:
    assert detection.errors == {} and detection.devices, detection
    return detection.devices


def test_detect_matches_nvidia_smi(smi: list[SmiGpu], nvml_count: int, detection: DetectionResult) -> None:
    assert detection.errors == {}
    found = {d.index: d for d in detection.devices}
    assert sorted(found) == sorted(g.index for g in smi)
    assert len(detection.devices) == nvml_count
    minors = _minor_numbers(_nvidia_smi("-q"))
    for g in smi:
        d = found[g.index]
        print(f"GPU {g.index}: smi {g}; minor {minors.get(g.pci_bus_id, '?')}; plurm {d.device_file} "
              f"(exists: {os.path.exists(d.device_file) if d.device_file else '-'}), numa {d.numa_node}, "
              f"gres type {d.gres_type}")
        assert (d.vendor, d.backend, d.model, d.uuid, d.pci_bus_id) == \
            ("nvidia", "nvml", g.name, g.uuid, g.pci_bus_id)
        assert d.memory_mb is not None and abs(d.memory_mb - g.memory_mb) <= 1, (d.memory_mb, g.memory_mb)
        if g.pci_bus_id in minors:
            minor = minors[g.pci_bus_id]
            assert d.device_file == (f"/dev/nvidia{minor}" if minor is not None else None)
        else:
            assert d.device_file is None or re.fullmatch(r"/dev/nvidia\d+", d.device_file)
        # The GRES type is the chip: "NVIDIA H200" -> h200, "NVIDIA H100 80GB HBM3" -> h100.
        assert d.gres_type != "unknown" and d.gres_type in re.sub(r"[\s-]+", "_", g.name.lower())
        if "H200" in g.name:
            assert d.gres_type == "h200"
        assert d.health == "ok"


def test_health_check_reports_healthy(devices: list[Device], pm: PluginManager) -> None:
    start = time.monotonic()
    health = health_check(devices, PROBE_TIMEOUT_S, manager=pm)
    print(f"health_check in {time.monotonic() - start:.1f}s: {health}")
    assert health == {d.uuid: "ok" for d in devices}


# Holds 4 GiB on the one GPU it sees, then multiplies matrices for argv[1] seconds.
LOAD = """
import sys, time, torch
held = torch.empty(4 << 30, dtype=torch.uint8, device="cuda:0")
held.fill_(1)
a = torch.randn(4096, 4096, device="cuda:0")
torch.cuda.synchronize()
open(sys.argv[2], "w").write("ready")
end, n = time.monotonic() + float(sys.argv[1]), 0
while time.monotonic() < end:
    b = a @ a
    n += 1
    if n % 20 == 0:
        torch.cuda.synchronize()
torch.cuda.synchronize()
print("matmuls", n, flush=True)
"""


@pytest.mark.timeout(240)
def test_usage_under_real_load(devices: list[Device], pm: PluginManager, tmp_path: Path) -> None:
    _need_torch()
    dev = devices[0]
    idle = sample_usage([dev], PROBE_TIMEOUT_S, manager=pm).get(dev.uuid, {})
    print(f"idle {dev.uuid}: {idle}")
    assert idle.get("mem_used_mb") is not None, idle
    ready, log = tmp_path / "ready", tmp_path / "load.log"
    env = dict(os.environ, CUDA_DEVICE_ORDER="PCI_BUS_ID", CUDA_VISIBLE_DEVICES=str(dev.index))
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-c", LOAD, "15", str(ready)], stdout=out,
                                stderr=subprocess.STDOUT, env=env)
    samples = []
    try:
        wait_for(lambda: ready.exists() or proc.poll() is not None, timeout=150, what="the load on the GPU")
        while proc.poll() is None:
            samples.append(sample_usage([dev], PROBE_TIMEOUT_S, manager=pm).get(dev.uuid, {}))
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    print(f"load exited {proc.returncode}: {log.read_text().strip()[-500:]}")
    print(f"{len(samples)} samples (mem_used_mb, util): {[(s.get('mem_used_mb'), s.get('util')) for s in samples]}")
    assert proc.returncode == 0 and samples
    mem = max(s.get("mem_used_mb") or 0 for s in samples)
    util = max(s.get("util") or 0 for s in samples)
    print(f"mem_used_mb idle {idle['mem_used_mb']} -> max {mem} (+{mem - idle['mem_used_mb']}); util max {util}")
    assert mem - idle["mem_used_mb"] >= 4000
    assert util > 0


# ---------------------------------------------------------------------------
# End to end: plurmctld and one plurmd on loopback, gres.conf AutoDetect=nvml
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_node(tmp_path_factory: pytest.TempPathFactory, devices: list[Device]) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("gpu-node")
    ctld, node = free_ports(2)
    gres = ",".join(f"gpu:{t}:{n}" for t, n in sorted(Counter(d.gres_type for d in devices).items()))
    (base / "slurm.conf").write_text(f"""ClusterName=gpucheck
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld}
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool/%n
GresTypes=gpu
DefMemPerCPU=100
NodeName={NODE} NodeHostname=localhost NodeAddr=127.0.0.1 Port={node} CPUs=2 RealMemory=4000 Gres={gres}
PartitionName=all Nodes=ALL Default=YES
""")
    (base / "gres.conf").write_text(f"NodeName={NODE} AutoDetect=nvml\n")
    write_key(base / "slurm.key")
    env = dict(os.environ, SLURM_CONF=str(base / "slurm.conf"), PLURM_ACCEL_HEALTH_INTERVAL="2",
               PLURM_ACCEL_USAGE_INTERVAL="0.5", PLURM_ACCEL_DETECT_TIMEOUT=str(int(PROBE_TIMEOUT_S)))
    env.pop("SLURM_JOB_ID", None)
    print(f"Gres={gres}")
    procs = [subprocess.Popen(command("plurmctld") + ["-D"], env=env, stdout=subprocess.DEVNULL,
                              stderr=open(base / "ctld.log", "w"))]
    procs.append(subprocess.Popen(command("plurmd") + ["-D", "-N", NODE], env=env, stdout=subprocess.DEVNULL,
                                  stderr=open(base / f"{NODE}.log", "w")))
    cluster = Cluster(base, base / "slurm.conf", env)

    def registered() -> bool:
        try:
            return bool(_node(cluster).get("responding"))
        except Exception:
            return False

    try:
        wait_for(registered, timeout=120, what=f"{NODE} to register")
        yield cluster
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        print(f"--- {NODE}.log (tail) ---\n" + "".join((base / f"{NODE}.log").read_text().splitlines(True)[-20:]))


def _node(cluster: Cluster) -> dict:
    return next(n for n in cluster.request("node_info", {})["nodes"] if n["name"] == NODE)


def _run_job(cluster: Cluster, script: Path, *options: str, timeout: float = 180) -> tuple[int, dict]:
    """Submit ``python3 script`` and wait for it to end; fail at once if the node drains meanwhile."""
    job_id = cluster.sbatch(*options, "--wrap", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}",
                            cwd=script.parent)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = cluster.job(job_id)
        if job.get("state", "PENDING") not in ACTIVE_STATES and not job.get("completing"):
            return job_id, job
        if job.get("state", "PENDING") == "PENDING" and (node := _node(cluster)).get("drain"):
            pytest.fail(f"job {job_id} pending on a drained node: {node.get('reason')}")
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} not ended after {timeout}s: {cluster.job(job_id)}")


@pytest.mark.timeout(240)
def test_node_registers_with_its_gpus(gpu_node: Cluster, devices: list[Device]) -> None:
    # In service, and still so after health checks (PLURM_ACCEL_HEALTH_INTERVAL=2) have been
    # reported with the next pings (every 2 s).
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline and not (node := _node(gpu_node)).get("drain"):
        time.sleep(0.25)
    print({k: node.get(k) for k in ("state", "responding", "drain", "reason", "gres")})
    assert node["responding"] and not node.get("drain"), node.get("reason")
    assert [(d["uuid"], d["model"], d["backend"]) for d in node["devices"]] == \
        [(d.uuid, d.model, d.backend) for d in sorted(devices, key=lambda d: d.index)]
    out = gpu_node.run("sinfo", "-h", "-N", "-o", "%N %G %T", check=True).stdout
    print(out.strip())
    assert out.split()[0] == NODE


CUDA_JOB = """
import os, torch
print("CUDA_VISIBLE_DEVICES=" + os.environ.get("CUDA_VISIBLE_DEVICES", "(unset)"))
print("SLURM_JOB_GPUS=" + os.environ.get("SLURM_JOB_GPUS", "(unset)"))
print("device_count", torch.cuda.device_count())
print("name", torch.cuda.get_device_name(0))
print("uuid", getattr(torch.cuda.get_device_properties(0), "uuid", "n/a"))
a = torch.ones(512, 512, device="cuda")
print("matmul", (a @ a)[0, 0].item())
"""

UUID = re.compile(r"(?:GPU-)?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\Z", re.I)


@pytest.mark.timeout(240)
def test_job_computes_on_its_bound_gpu(gpu_node: Cluster, tmp_path: Path) -> None:
    _need_torch()
    script = tmp_path / "cuda_job.py"
    script.write_text(CUDA_JOB)
    job_id, job = _run_job(gpu_node, script, "--gres=gpu:1")
    out = (tmp_path / f"slurm-{job_id}.out").read_text()
    print(f"job {job_id} {job.get('state')}:\n{out}")
    assert job["state"] == "COMPLETED"
    lines = dict(re.findall(r"^(CUDA_VISIBLE_DEVICES|SLURM_JOB_GPUS|device_count|name|uuid|matmul)[= ](.*)$",
                            out, re.M))
    bound = _node(gpu_node)["devices"][int(lines["SLURM_JOB_GPUS"])]
    assert lines["CUDA_VISIBLE_DEVICES"] == str(bound["index"])
    assert lines["device_count"] == "1"
    assert lines["name"] == bound["model"]
    assert lines["matmul"] == "512.0"
    if m := UUID.match(lines["uuid"]):  # torch >= 2.2 tells the UUID: the very device plurm bound
        assert m.group(1).lower() == UUID.match(bound["uuid"]).group(1).lower()


HOLD_JOB = """
import time, torch
held = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
held.fill_(1)
torch.cuda.synchronize()
print("holding", held.numel() >> 20, "MiB", flush=True)
time.sleep(8)
"""


@pytest.mark.timeout(240)
def test_gpu_memory_lands_in_accounting(gpu_node: Cluster, tmp_path: Path) -> None:
    _need_torch()
    script = tmp_path / "hold_job.py"
    script.write_text(HOLD_JOB)
    job_id, job = _run_job(gpu_node, script, "--gres=gpu:1")
    print(f"job {job_id} {job.get('state')}: {(tmp_path / f'slurm-{job_id}.out').read_text().strip()}")
    assert job["state"] == "COMPLETED"
    usage = gpu_node.run("sacct", "-j", f"{job_id}.batch", "-n", "-P", "-o", "TRESUsageInMax,TRESUsageInAve",
                         check=True).stdout.strip()
    print(f"sacct TRESUsageInMax|TRESUsageInAve: {usage}")
    peak = usage.split("|")[0]
    mem = re.search(r"gres/gpumem=(\d+)M", peak)
    assert mem and int(mem.group(1)) >= 2048, usage  # the device's memory in use: the job's 2 GiB and more
    assert re.search(r"gres/gpuutil=[\d.]+", peak), usage


@pytest.mark.timeout(240)
def test_live_gpu_usage_reaches_the_metrics(gpu_node: Cluster, devices: list[Device], tmp_path: Path) -> None:
    """Every GPU's reading comes with plurmd's pings into the controller's stats reply (what
    plurmrestd's /metrics renders: rest/openmetrics.py gpu_usage), and a job's memory shows in it."""
    from plurm.rest import openmetrics

    rows: list[dict] = []

    def read(check) -> bool:
        rows[:] = gpu_node.request("stats", {}).get("gpu_readings") or []
        return bool(check(rows))

    wanted = {d.uuid for d in devices}
    wait_for(lambda: read(lambda r: {x["uuid"] for x in r} == wanted), timeout=60, what=f"readings of {sorted(wanted)}")
    print(f"readings: {rows}")
    total_mb = {d.uuid: d.memory_mb for d in devices}
    families = {name: samples for name, _, _, samples in openmetrics.gpu_usage(rows)}
    assert all(0.0 <= v <= 1.0 for _, v in families["plurm_node_gpu_utilization_ratio"]), families
    for labels, used in families["plurm_node_gpu_memory_used_bytes"]:
        assert 0 <= used <= (total_mb[labels["uuid"]] or used >> 20) << 20, (labels, used)
    _need_torch()
    base = {r["uuid"]: r["mem_used_mb"] or 0 for r in rows}
    script = tmp_path / "hold_job.py"
    script.write_text(HOLD_JOB.replace("time.sleep(8)", "time.sleep(30)"))
    job_id = gpu_node.sbatch("--gres=gpu:1", "--wrap", f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}",
                             cwd=tmp_path)
    try:
        wait_for(lambda: read(lambda r: any((x["mem_used_mb"] or 0) - base.get(x["uuid"], 0) >= 2000 for x in r)),
                 timeout=150, what=f"job {job_id}'s 2 GiB in the readings")
        print(f"under job {job_id}: {rows}")
    finally:
        gpu_node.run("scancel", str(job_id))
