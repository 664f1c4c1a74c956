"""The vendor-neutral device model."""

from __future__ import annotations

import dataclasses
import json

import pytest

from plurm.accel.model import Device, gres_type, normalise_pci_bus_id, normalise_vendor


def test_round_trip_through_json():
    d = Device(vendor="nvidia", model="NVIDIA H200", uuid="GPU-1", index=3, backend="nvml",
               pci_bus_id="0000:17:00.0", memory_mb=143771, numa_node=1, links="-1,18",
               health="XID 79", device_file="/dev/nvidia3")
    again = Device.from_dict(json.loads(json.dumps(d.to_dict())))
    assert again == d and not again.healthy


def test_unknown_keys_are_ignored_and_defaults_apply():
    d = Device.from_dict({"vendor": "amd", "model": "MI300X", "uuid": "u", "index": 0,
                          "backend": "amdsmi", "from_a_newer_daemon": 1})
    assert d.health == "ok" and d.healthy and d.memory_mb is None


def test_frozen():
    d = Device(vendor="amd", model="MI300X", uuid="u", index=0, backend="amdsmi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.index = 1  # type: ignore[misc]


@pytest.mark.parametrize("model, expected", [
    ("NVIDIA H200", "h200"),
    ("NVIDIA A100-SXM4-80GB", "a100"),
    ("NVIDIA A100-PCIE-40GB", "a100"),
    ("Tesla V100-SXM2-16GB", "v100"),
    ("NVIDIA H100 80GB HBM3", "h100"),
    ("NVIDIA H100 NVL", "h100"),
    ("NVIDIA GeForce RTX 4090", "rtx_4090"),
    ("NVIDIA L40S", "l40s"),
    ("AMD Instinct MI300X", "mi300x"),
    ("AMD Instinct MI250X/MI250", "mi250x"),
    ("Intel(R) Data Center GPU Max 1550", "max_1550"),
    ("", "unknown"),
])
def test_gres_type(model, expected):
    assert gres_type(model) == expected


def test_vendor_and_bus_normalisation():
    assert normalise_vendor("NVIDIA Corporation") == "nvidia"
    assert normalise_vendor("Advanced Micro Devices, Inc.") == "amd"
    assert normalise_vendor("Intel(R) Corporation") == "intel"
    assert normalise_vendor("GenuineIntel") == "intel"
    assert normalise_vendor("Acme Tensor Works") == "acme_tensor_works"
    assert normalise_pci_bus_id("00000000:2A:00.0") == "0000:2a:00.0"
    assert normalise_pci_bus_id(None) is None
