"""The AMD SMI backend against the real amdsmi package and a fake libamd_smi.so."""

from __future__ import annotations

import pytest

from plurm.accel.binding import binding_env
from plurm.accel.detect import detect, health_check, sample_usage


def mi300x(n: int, **overrides):
    return [{"name": "AMD Instinct MI300X", "uuid": f"{i:02x}ff74a1-0000-1000-80e9-7a1d0c5e6f7{i}",
             "bdf": f"0000:{0xc1 + i:02x}:00.0", "vram_mb": 196592, "vram_used_mb": 512,
             "gfx": 12, "temp": 50, "hotspot": 60, "numa": 1, **overrides} for i in range(n)]


def test_detects_inventory(fake_amdsmi, pm):
    fake_amdsmi.write(mi300x(2))
    result = detect(["amdsmi"], manager=pm)
    assert result.errors == {}
    a, b = result.devices
    assert (a.vendor, a.model, a.backend, a.gres_type) == ("amd", "AMD Instinct MI300X",
                                                           "amdsmi", "mi300x")
    assert (a.index, b.index) == (0, 1)
    assert a.uuid == "00ff74a1-0000-1000-80e9-7a1d0c5e6f70"
    assert b.pci_bus_id == "0000:c2:00.0"
    assert a.memory_mb == 196592 and a.numa_node == 1


def test_binding(fake_amdsmi, pm):
    fake_amdsmi.write(mi300x(4))
    devices = detect(["amdsmi"], manager=pm).devices
    assert binding_env(devices[2:], manager=pm) == {
        "ROCR_VISIBLE_DEVICES": "2,3", "GPU_DEVICE_ORDINAL": "2,3"}


def test_usage(fake_amdsmi, pm):
    fake_amdsmi.write(mi300x(2, gfx=64, vram_used_mb=2048))
    devices = detect(["amdsmi"], manager=pm).devices
    assert sample_usage(devices, manager=pm) == {
        d.uuid: {"util": 64.0, "mem_used_mb": 2048} for d in devices}


def test_health(fake_amdsmi, pm):
    inv = mi300x(4)
    fake_amdsmi.write(inv)
    devices = detect(["amdsmi"], manager=pm).devices
    inv[1]["ecc"] = 2
    inv[2]["hotspot"] = 105
    fake_amdsmi.write(inv[:3])
    health = health_check(devices, manager=pm)
    assert health[devices[0].uuid] == "ok"
    assert health[devices[1].uuid] == "2 uncorrectable ECC errors"
    assert health[devices[2].uuid] == "temperature 105C (hotspot) over limit 90C"
    assert health[devices[3].uuid].startswith("device vanished")


def test_missing_library(tmp_path, monkeypatch, pm):
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))  # no lib/libamd_smi.so there
    result = detect(["amdsmi"], manager=pm)
    assert "libamd_smi.so not found" in result.errors["amdsmi"]
    assert "amdsmi" in detect("auto", manager=pm).skipped


def test_init_failure(fake_amdsmi, pm):
    fake_amdsmi.write([], init_error=18)  # AMDSMI_STATUS_INIT_ERROR
    assert "amdsmi_init failed" in detect(["amdsmi"], manager=pm).errors["amdsmi"]


@pytest.mark.parametrize("how", ["hang", "crash"])
def test_misbehaving_library(fake_amdsmi, pm, how):
    fake_amdsmi.write(mi300x(1), **{how: "amdsmi_get_gpu_asic_info"})
    result = detect(["amdsmi"], timeout_s=1.5, manager=pm)
    assert result.devices == []
    assert ("timed out" if how == "hang" else "SIGSEGV") in result.errors["amdsmi"]
