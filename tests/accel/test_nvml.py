"""The NVML backend against the real pynvml and a fake libnvidia-ml.so.1."""

from __future__ import annotations

import time

import pytest

from plurm.accel.binding import binding_env
from plurm.accel.detect import check_against_conf, detect, health_check, sample_usage
from plurm.grammar.gresconf import parse_gres_conf_text


def test_detects_inventory(fake_nvml, h200s, pm):
    fake_nvml.write(h200s(4))
    result = detect(["nvml"], manager=pm)
    assert result.errors == {}
    assert [d.index for d in result.devices] == [0, 1, 2, 3]
    d = result.devices[1]
    assert (d.vendor, d.model, d.backend, d.gres_type) == ("nvidia", "NVIDIA H200", "nvml", "h200")
    assert d.uuid == "GPU-00000001-0000-0000-0000-000000000000"
    assert d.pci_bus_id == "0000:18:00.0"
    assert d.memory_mb == 143771
    assert d.numa_node == 0 and result.devices[2].numa_node == 1
    assert d.device_file == "/dev/nvidia1"
    assert d.health == "ok"


def test_numa_falls_back_when_nvml_lacks_it(fake_nvml, h200s, pm):
    fake_nvml.write(h200s(1, numa=-1))
    (dev,) = detect(["nvml"], manager=pm).devices
    assert dev.numa_node is None  # no such PCI device in sysfs here


def test_binding_matches_slurm(fake_nvml, h200s, pm):
    """Slurm 22.05 gives a 2-GPU job CUDA_VISIBLE_DEVICES=0,1 and GPU_DEVICE_ORDINAL=0,1."""
    fake_nvml.write(h200s(4))
    devices = detect(["nvml"], manager=pm).devices
    assert binding_env(devices[:2], manager=pm) == {
        "CUDA_VISIBLE_DEVICES": "0,1", "GPU_DEVICE_ORDINAL": "0,1"}
    env = binding_env([devices[3], devices[1]], use_uuid=True, manager=pm)
    assert env["CUDA_VISIBLE_DEVICES"] == f"{devices[1].uuid},{devices[3].uuid}"
    assert env["GPU_DEVICE_ORDINAL"] == "1,3"  # an ordinal, never a UUID


def test_usage(fake_nvml, h200s, pm):
    fake_nvml.write(h200s(2, util=73, mem_used_mb=4096))
    devices = detect(["nvml"], manager=pm).devices
    usage = sample_usage(devices, manager=pm)
    assert usage == {d.uuid: {"util": 73.0, "mem_used_mb": 4096} for d in devices}


def test_health_reports_xid_ecc_temperature(fake_nvml, h200s, pm):
    inv = h200s(4)
    fake_nvml.write(inv)
    devices = detect(["nvml"], manager=pm).devices
    inv[1]["xids"] = [79, 13]   # 13 is the application's fault: not the GPU's
    inv[2]["ecc"] = 3
    inv[3]["temp"] = 97
    fake_nvml.write(inv)
    health = health_check(devices, manager=pm)
    assert health[devices[0].uuid] == "ok"
    assert health[devices[1].uuid] == "XID 79"
    assert health[devices[2].uuid] == "3 uncorrected ECC errors"
    assert health[devices[3].uuid] == "temperature 97C over limit 90C"
    relaxed = health_check(devices, options={"temp_limit_c": "100"}, manager=pm)
    assert relaxed[devices[3].uuid] == "ok"


def test_health_reports_vanished_and_lost_devices(fake_nvml, h200s, pm):
    inv = h200s(3)
    fake_nvml.write(inv)
    devices = detect(["nvml"], manager=pm).devices
    inv[1]["lost"] = 1
    fake_nvml.write([inv[0], inv[1]])
    health = health_check(devices, manager=pm)
    assert health[devices[0].uuid] == "ok"
    assert health[devices[1].uuid] == "GPU is lost"
    assert health[devices[2].uuid].startswith("device vanished")


def test_driver_not_loaded_is_an_error_entry(fake_nvml, pm):
    fake_nvml.write([], init_error=9)
    result = detect(["nvml"], manager=pm)
    assert result.devices == []
    assert "driver not loaded" in result.errors["nvml"].lower()


def test_missing_library_is_an_error_entry(tmp_path, monkeypatch, pm):
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))  # holds no libnvidia-ml.so.1
    result = detect(["nvml"], manager=pm)
    assert result.devices == []
    assert "libnvidia-ml.so.1 not found" in result.errors["nvml"]
    # Under "auto" a missing library is normal: skipped, not an error.
    auto = detect("auto", manager=pm)
    assert "nvml" in auto.skipped and "nvml" not in auto.errors


def test_hanging_library_times_out(fake_nvml, h200s, pm):
    fake_nvml.write(h200s(2), hang="nvmlDeviceGetCount_v2")
    start = time.monotonic()
    result = detect(["nvml"], timeout_s=1.5, manager=pm)
    elapsed = time.monotonic() - start
    assert result.devices == []
    assert "timed out after 1.5s" in result.errors["nvml"]
    assert elapsed < 5


def test_hang_in_health_check_times_out(fake_nvml, h200s, pm):
    fake_nvml.write(h200s(1))
    devices = detect(["nvml"], manager=pm).devices
    fake_nvml.write(h200s(1), hang="nvmlDeviceGetTemperature")
    health = health_check(devices, timeout_s=1.5, manager=pm)
    assert "timed out" in health[devices[0].uuid]


def test_crashing_library_is_an_error_entry(fake_nvml, h200s, pm):
    fake_nvml.write(h200s(2), crash="nvmlDeviceGetName")
    result = detect(["nvml"], manager=pm)
    assert result.devices == []
    assert "crashed (SIGSEGV)" in result.errors["nvml"]


def test_one_broken_backend_does_not_hide_another(fake_nvml, h200s, tmp_path, pm):
    fake_nvml.write(h200s(2), hang="nvmlInitWithFlags")
    conf = tmp_path / "gres.conf"
    conf.write_text("NodeName=n1 Name=gpu File=/dev/null\n")
    result = detect(["nvml", "static"], timeout_s=1.5,
                    options={"gres_conf": str(conf), "node": "n1"}, manager=pm)
    assert "timed out" in result.errors["nvml"]
    assert [d.backend for d in result.devices] == ["static"]


def test_detected_count_against_gres_conf(fake_nvml, h200s, pm):
    conf = parse_gres_conf_text("AutoDetect=nvml\nNodeName=n[1-2] Name=gpu Type=h200 Count=4\n")
    fake_nvml.write(h200s(4))
    devices = detect(["nvml"], manager=pm).devices
    assert check_against_conf(devices, conf.entries, "n1") == []
    assert check_against_conf(devices[:2], conf.entries, "n1") == [
        "gres/gpu count reported lower than configured (2 < 4)",
        "gres/gpu:h200 count reported lower than configured (2 < 4)",
    ]
    assert check_against_conf([], conf.entries, "n3") == []  # no entry for n3


@pytest.mark.parametrize("count", [0, 8])
def test_counts(fake_nvml, h200s, pm, count):
    fake_nvml.write(h200s(count))
    assert len(detect(["nvml"], manager=pm).devices) == count
