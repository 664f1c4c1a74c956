"""A mixed-vendor cluster end to end: NVIDIA (fake NVML), AMD (fake AMD SMI) and OpenCL (PoCL).

Real daemons, real jobs; only the GPUs are fake, at the vendor libraries' C boundary,
so pynvml and amdsmi themselves run inside plurmd's detection probes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from opencl_oracle import cpu_devices_that_compute
from plurmtest import Cluster, command, free_ports, wait_for, write_key

cl = pytest.importorskip("pyopencl")
pytest.importorskip("pynvml")
pytest.importorskip("numpy")

# What PoCL 3.0 refuses at clBuildProgram (test_opencl.py says why this stands for an unknown CPU).
BROKEN_COMPILER = {"POCL_EXTRA_BUILD_FLAGS": "-target-cpu generic"}
H200 = {"name": "NVIDIA H200", "mem_total_mb": 143771, "mem_used_mb": 1024, "util": 37, "temp": 45}


def _h200s(n: int, **extra) -> list[dict]:
    return [{**H200, "uuid": f"GPU-{i:08x}-0000-0000-0000-000000000000", "bus": f"00000000:{0x17 + i:02X}:00.0",
             "minor": i, "numa": 0, **extra} for i in range(n)]


def _mi300x(n: int) -> list[dict]:
    return [{"name": "AMD Instinct MI300X", "uuid": f"{i:02x}ff74a1-0000-1000-80e9-7a1d0c5e6f7{i}",
             "bdf": f"0000:{0xc1 + i:02x}:00.0", "vram_mb": 196592, "vram_used_mb": 512, "gfx": 12,
             "temp": 50, "hotspot": 60, "numa": 1} for i in range(n)]


def _inventory(path: Path, devices: list[dict], **lines: str) -> None:
    text = "".join("device " + ";".join(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}"
                                         for k, v in d.items()) + "\n" for d in devices)
    text += "".join(f"{k} {v}\n" for k, v in lines.items())
    path.write_text(text)


ACME = Path(__file__).parent / "vendor_acme"


def _acme_site(base: Path) -> Path:
    """The acme package as an installed distribution: a dist-info with its entry points."""
    project = tomllib.loads((ACME / "pyproject.toml").read_text())["project"]
    info = base / "acme-site" / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (info / "entry_points.txt").write_text(
        "[plurm]\n" + "".join(f"{k} = {v}\n" for k, v in project["entry-points"]["plurm"].items()))
    return info.parent


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory, nvml_libdir: Path, amdsmi_root: Path) -> Iterator[dict]:
    base = tmp_path_factory.mktemp("mixed")
    ctld, nv1, nv2, amd1, cl1, clbad, hang1, acme1 = free_ports(8)
    (base / "slurm.conf").write_text(f"""ClusterName=mixed
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld}
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool/%n
GresTypes=gpu
DefMemPerCPU=100
NodeName=DEFAULT NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000
NodeName=nv1 Port={nv1} Gres=gpu:h200:2
NodeName=nv2 Port={nv2} Gres=gpu:h200:4
NodeName=amd1 Port={amd1} Gres=gpu:mi300x:2
NodeName=cl1 Port={cl1} Gres=gpu:1
NodeName=clbad Port={clbad} Gres=gpu:1
NodeName=hang1 Port={hang1} Gres=gpu:h200:2
NodeName=acme1 Port={acme1} Gres=gpu:1
PartitionName=all Nodes=ALL Default=YES
""")
    (base / "gres.conf").write_text("""NodeName=nv[1-2],hang1 AutoDetect=nvml
NodeName=amd1 AutoDetect=rsmi
NodeName=cl1,clbad AutoDetect=opencl
NodeName=acme1 AutoDetect=acme
""")
    write_key(base / "slurm.key")
    for name, devices in (("nv1", _h200s(2)), ("nv2", _h200s(2)), ("amd1", _mi300x(2))):
        _inventory(base / f"{name}.inv", devices)
    _inventory(base / "hang1.inv", _h200s(2), hang="nvmlInitWithFlags")
    env = dict(os.environ, SLURM_CONF=str(base / "slurm.conf"), PLURM_ACCEL_HEALTH_INTERVAL="1",
               PLURM_ACCEL_USAGE_INTERVAL="0.5")
    env.pop("SLURM_JOB_ID", None)
    node_env = {
        "nv1": {"LD_LIBRARY_PATH": str(nvml_libdir), "FAKE_NVML_CONFIG": str(base / "nv1.inv")},
        "nv2": {"LD_LIBRARY_PATH": str(nvml_libdir), "FAKE_NVML_CONFIG": str(base / "nv2.inv")},
        "amd1": {"ROCM_PATH": str(amdsmi_root), "FAKE_AMDSMI_CONFIG": str(base / "amd1.inv")},
        "cl1": {"PLURM_OPENCL_DEVICE_TYPES": "all"},
        # Its OpenCL compiler cannot build (as PoCL on a CPU its LLVM does not know).
        "clbad": {"PLURM_OPENCL_DEVICE_TYPES": "all", **BROKEN_COMPILER},
        # Its NVML hangs: detection gives up after the timeout, plurmd carries on.
        "hang1": {"LD_LIBRARY_PATH": str(nvml_libdir), "FAKE_NVML_CONFIG": str(base / "hang1.inv"),
                  "PLURM_ACCEL_DETECT_TIMEOUT": "2"},
        # A fictional vendor's own package (tests/accel/vendor_acme), found through its entry point.
        "acme1": {"PYTHONPATH": os.pathsep.join([str(_acme_site(base)), str(ACME / "src")]),
                  "ACME_DEVICES_FILE": str(base / "acme.json")},
    }
    (base / "acme.json").write_text(json.dumps([{"model": "ACME Tensor-9", "serial": "A1", "memory_mb": 65536,
                                                  "load": 5, "temp": 40}]))
    procs = [subprocess.Popen(command("plurmctld") + ["-D"], env=env, stdout=subprocess.DEVNULL,
                              stderr=open(base / "ctld.log", "w"))]
    for name, extra in node_env.items():
        procs.append(subprocess.Popen(command("plurmd") + ["-D", "-N", name], env=dict(env, **extra),
                                      stdout=subprocess.DEVNULL, stderr=open(base / f"{name}.log", "w")))
    cluster = Cluster(base, base / "slurm.conf", env)

    def registered() -> bool:
        try:
            return len([n for n in cluster.request("node_info", {})["nodes"] if n.get("responding")]) == 7
        except Exception:
            return False

    try:
        wait_for(registered, timeout=60, what="7 nodes to register")
        yield {"cluster": cluster, "base": base}
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=20)


def _node(cluster: Cluster, name: str) -> dict:
    return next(n for n in cluster.request("node_info", {})["nodes"] if n["name"] == name)


@pytest.fixture(scope="module")
def opencl_computes() -> bool:
    """pyopencl itself, asked directly: does this host's PoCL build and run a kernel?"""
    return any(cpu_devices_that_compute().values())


def test_each_vendor_detected_and_bound(mixed: dict, tmp_path: Path, opencl_computes: bool) -> None:
    c: Cluster = mixed["cluster"]
    assert [d["vendor"] for d in _node(c, "nv1")["devices"]] == ["nvidia", "nvidia"]
    assert [d["model"] for d in _node(c, "amd1")["devices"]] == ["AMD Instinct MI300X"] * 2
    # Offered exactly where a kernel builds (PoCL fails on CPUs its LLVM does not know).
    assert [d["backend"] for d in _node(c, "cl1").get("devices", [])] == (["opencl"] if opencl_computes else [])
    show = "env | grep -E '^(CUDA_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL|SLURM_JOB_GPUS)=' | sort"
    nvidia = c.sbatch("--gres=gpu:h200:1", "--wrap", show, cwd=tmp_path)
    amd = c.sbatch("--gres=gpu:mi300x:2", "--wrap", show, cwd=tmp_path)
    assert c.wait_state(nvidia, "COMPLETED")["nodes"] == ["nv1"]
    assert c.wait_state(amd, "COMPLETED")["nodes"] == ["amd1"]
    assert (tmp_path / f"slurm-{nvidia}.out").read_text() == \
        "CUDA_VISIBLE_DEVICES=0\nGPU_DEVICE_ORDINAL=0\nSLURM_JOB_GPUS=0\n"
    assert (tmp_path / f"slurm-{amd}.out").read_text() == \
        "GPU_DEVICE_ORDINAL=0,1\nROCR_VISIBLE_DEVICES=0,1\nSLURM_JOB_GPUS=0,1\n"


def _not_offered_lines(mixed: dict, node: str) -> list[str]:
    return [ln for ln in (mixed["base"] / f"{node}.log").read_text().splitlines()
            if "not offered: kernel build failed" in ln]


def test_a_device_no_kernel_builds_for_is_not_offered(mixed: dict) -> None:
    """A node whose OpenCL compiler fails offers no device, drains as Slurm does, and says why."""
    node = _node(mixed["cluster"], "clbad")
    assert node.get("devices", []) == []
    assert node["drain"] and node["reason"] == "gres/gpu count reported lower than configured (0 < 1)"
    (line,) = _not_offered_lines(mixed, "clbad")
    assert "accelerator opencl:Portable Computing Language:" in line
    assert line.endswith("kernel build failed: clBuildProgram failed: INVALID_BUILD_OPTIONS; "
                         "Invalid build option: -target-cpu")


def test_opencl_job_runs_a_kernel_on_its_device(mixed: dict, tmp_path: Path, opencl_computes: bool) -> None:
    c: Cluster = mixed["cluster"]
    if not opencl_computes:
        # The device is honestly absent: cl1 drains with Slurm's reason and its log says why.
        node = _node(c, "cl1")
        assert node.get("devices", []) == [] and node["drain"]
        assert node["reason"] == "gres/gpu count reported lower than configured (0 < 1)"
        assert _not_offered_lines(mixed, "cl1")
        return
    script = tmp_path / "kernel.py"
    script.write_text(f"""#!{sys.executable}
import os
import numpy as np
import pyopencl as cl
ordinal = int(os.environ["GPU_DEVICE_ORDINAL"])
devices = [d for p in cl.get_platforms() for d in p.get_devices()]
ctx = cl.Context([devices[ordinal]])
queue = cl.CommandQueue(ctx)
a = np.arange(16, dtype=np.float32)
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
cl.Program(ctx, "__kernel void twice(__global float *x) {{ x[get_global_id(0)] *= 2.0f; }}").build().twice(
    queue, a.shape, None, buf)
out = np.empty_like(a)
cl.enqueue_copy(queue, out, buf)
print("ordinal", ordinal, "sum", int(out.sum()))
""")
    job_id = c.sbatch("-w", "cl1", "--gres=gpu:1", str(script), cwd=tmp_path)
    c.wait_state(job_id, "COMPLETED", timeout=60)
    assert (tmp_path / f"slurm-{job_id}.out").read_text().endswith("ordinal 0 sum 240\n")


def test_gpu_usage_lands_in_accounting(mixed: dict, tmp_path: Path) -> None:
    c: Cluster = mixed["cluster"]
    # Sampled every 0.5 s, each sample a probe subprocess: on a loaded 2-core machine a probe
    # can take seconds, so the job runs long enough for one to finish while it holds the gpus.
    job_id = c.sbatch("--gres=gpu:mi300x:2", "--wrap", "sleep 8", cwd=tmp_path)
    c.wait_state(job_id, "COMPLETED", timeout=40)
    out = c.run("sacct", "-j", f"{job_id}.batch", "-n", "-P", "-o", "TRESUsageInMax,TRESUsageInAve",
                check=True).stdout.strip()
    # The fake MI300Xs report 12 % activity and 512 MB in use each: two of them.  Beside them
    # the step's own cpu, memory and energy figures (their values depend on the machine; no
    # vmem: the job ends before its first usage sample, and its peak RSS is the supervisor's
    # wait4's).
    usage_max, usage_ave = (dict(part.split("=", 1) for part in field.split(",")) for field in out.split("|"))
    for usage in (usage_max, usage_ave):
        assert (usage["gres/gpumem"], usage["gres/gpuutil"]) == ("1024M", "12")
        assert {"cpu", "energy", "mem"} <= set(usage), out


def test_fewer_devices_than_configured_drains_the_node(mixed: dict) -> None:
    node = _node(mixed["cluster"], "nv2")
    assert node["drain"] and node["reason"] == "gres/gpu count reported lower than configured (2 < 4)"
    out = mixed["cluster"].run("sinfo", "-R", "-h", "-o", "%N %E", check=True).stdout
    assert "nv2 gres/gpu count reported lower than configured (2 < 4)" in out


def test_device_error_drains_the_node(mixed: dict) -> None:
    c: Cluster = mixed["cluster"]
    _inventory(mixed["base"] / "nv1.inv", _h200s(2)[:1] + _h200s(2, temp=99)[1:])
    wait_for(lambda: _node(c, "nv1").get("drain"), timeout=30, what="nv1 drained")
    assert _node(c, "nv1")["reason"] == "gpu GPU-00000001-0000-0000-0000-000000000000: temperature 99C over limit 90C"


def test_hanging_library_never_hangs_the_node_daemon(mixed: dict, tmp_path: Path) -> None:
    c: Cluster = mixed["cluster"]
    node = _node(c, "hang1")
    assert node["responding"] and node["drain"]
    assert node["reason"] == "gres/gpu count reported lower than configured (0 < 2)"
    # A drained node takes no new work, the others do.
    job_id = c.sbatch("--gres=gpu:h200:1", "-x", "nv1", "--wrap", "true", cwd=tmp_path)
    assert c.job(job_id).get("reason") in ("Resources", "None") and c.job(job_id).get("nodes", []) != ["hang1"]
    c.run("scancel", str(job_id), check=True)


def test_third_party_vendor_plugin_end_to_end(mixed: dict, tmp_path: Path) -> None:
    c: Cluster = mixed["cluster"]
    assert [d["vendor"] for d in _node(c, "acme1")["devices"]] == ["acme"]
    job_id = c.sbatch("-w", "acme1", "--gres=gpu:1", "--wrap", "echo $ACME_VISIBLE_DEVICES $SLURM_JOB_GPUS",
                      cwd=tmp_path)
    c.wait_state(job_id, "COMPLETED")
    assert (tmp_path / f"slurm-{job_id}.out").read_text() == "0 0\n"
