"""The static backend: devices from gres.conf, no library; binding as Slurm's."""

from __future__ import annotations

from pathlib import Path

import pytest

from plurm.accel.binding import binding_env
from plurm.accel.detect import detect, health_check

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "slurm-22.05"


def _env_file(name: str) -> dict[str, str]:
    path = REFERENCE / name
    if not path.exists():
        pytest.skip(f"reference capture {name} not available")
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


@pytest.fixture
def gres_conf(tmp_path):
    devs = tmp_path / "dev"
    devs.mkdir()
    for i in range(4):
        (devs / f"nvidia{i}").touch()
    conf = tmp_path / "gres.conf"
    conf.write_text(f"AutoDetect=off\nNodeName=n[1-8] Name=gpu File={devs}/nvidia[0-3]\n"
                    "NodeName=n9 Name=gpu Type=mi300x Count=2 Flags=amd_gpu_env\n"
                    "Name=shard Count=8\n")
    return conf


def test_devices_from_files(gres_conf, pm):
    result = detect(["static"], options={"gres_conf": str(gres_conf), "node": "n2"}, manager=pm)
    assert result.errors == {}
    assert [d.index for d in result.devices] == [0, 1, 2, 3]
    assert result.devices[2].device_file.endswith("/dev/nvidia2")
    # No environment flag: a plain gres/gpu, whatever the files are called (Slurm sets every
    # vendor's variable for them; see test_binding_matches_the_slurm_capture).
    assert {d.vendor for d in result.devices} == {"unknown"}


def test_devices_from_count_and_flags(gres_conf, pm):
    result = detect(["static"], options={"gres_conf": str(gres_conf), "node": "n9"}, manager=pm)
    assert [(d.vendor, d.gres_type, d.index) for d in result.devices] == [
        ("amd", "mi300x", 0), ("amd", "mi300x", 1)]
    assert binding_env(result.devices, manager=pm) == {
        "ROCR_VISIBLE_DEVICES": "0,1", "GPU_DEVICE_ORDINAL": "0,1"}


def test_binding_matches_the_slurm_capture(gres_conf, pm):
    """The reference cluster's gres.conf (File=.../nvidia[0-3], no flags) gave job x-1_0,
    holding GPUs 0 and 1, CUDA_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL (that capture kept only
    those two); the anchor's whole-environment capture of a `--gres=gpu:1` job shows that
    Slurm sets all four vendors' variables for such a gres.conf."""
    import json

    captured = _env_file("envfile_x-1_0.out.txt")
    devices = detect(["static"], options={"gres_conf": str(gres_conf), "node": "n1"},
                     manager=pm).devices
    env = binding_env(devices[:2], manager=pm)
    assert {k: env[k] for k in ("CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")} == {
        k: captured[k] for k in ("CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")}
    whole = json.loads((Path(__file__).parents[1] / "integration" / "reference" / "env" / "slurm-22.05.json")
                       .read_text())["kinds"]["gres_gpu1"]["dumps"][""]
    vendor_vars = {k: v for k, v in whole.items()
                   if k in ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ZE_AFFINITY_MASK")}
    assert binding_env(devices[:1], manager=pm) == vendor_vars == dict.fromkeys(vendor_vars, "0")
    assert len(vendor_vars) == 4

def test_gres_conf_flags_choose_the_variables(gres_conf, pm):
    devices = detect(["static"], options={"gres_conf": str(gres_conf), "node": "n1"},
                     manager=pm).devices
    assert binding_env(devices[1:3], flags=["intel_gpu_env"], manager=pm) == {
        "ZE_AFFINITY_MASK": "1,2"}
    assert binding_env(devices, flags=["no_gpu_env"], manager=pm) == {}
    uuid_env = binding_env(devices[:1], flags=["nvidia_gpu_env", "env_uuid"], manager=pm)
    assert uuid_env == {"CUDA_VISIBLE_DEVICES": devices[0].uuid}


def test_health_when_a_device_file_goes(gres_conf, tmp_path, pm):
    devices = detect(["static"], options={"gres_conf": str(gres_conf), "node": "n1"},
                     manager=pm).devices
    (tmp_path / "dev" / "nvidia3").unlink()
    health = health_check(devices, manager=pm)
    assert [health[d.uuid] for d in devices[:3]] == ["ok"] * 3
    assert "missing" in health[devices[3].uuid]


def test_no_gres_conf_is_an_error(pm, monkeypatch):
    monkeypatch.delenv("PLURM_GRES_CONF", raising=False)
    assert "no gres.conf" in detect(["static"], manager=pm).errors["static"]
