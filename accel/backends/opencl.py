"""Any OpenCL device through ``pyopencl``: the vendor-neutral fallback.

By default only GPU and ACCELERATOR devices count: a CPU is not a GRES.  CPU
devices (PoCL's, for tests and for sites that schedule them) are included when
asked for, with the backend option ``opencl_device_types=all`` or the
environment variable ``PLURM_OPENCL_DEVICE_TYPES=all`` (or a list such as
``gpu,cpu``).  gres.conf ``AutoDetect=oneapi`` maps here: Intel GPUs found
through OpenCL bind with ``ZE_AFFINITY_MASK`` (Level Zero) as well.

OpenCL has no usage counters, so this backend offers no ``usage``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from typing import Any

from plurm.accel.backends._util import MIB, sysfs_numa_node, text
from plurm.accel.binding import VENDOR_VARS, vendor_env
from plurm.accel.errors import BackendUnavailable
from plurm.accel.model import Device, normalise_pci_bus_id, normalise_vendor

NAME = "opencl"
DEFAULT_TYPES = frozenset({"gpu", "accelerator"})
ALL_TYPES = frozenset({"gpu", "accelerator", "cpu", "custom"})


def wanted_types(options: Mapping[str, str]) -> frozenset[str]:
    raw = (options.get("opencl_device_types") or os.environ.get("PLURM_OPENCL_DEVICE_TYPES")
           or "").lower()
    if not raw:
        return DEFAULT_TYPES
    parts = {p.strip() for p in raw.split(",") if p.strip()}
    return ALL_TYPES if "all" in parts else frozenset(parts)


def _kinds(cl: Any, type_bits: int) -> set[str]:
    dt = cl.device_type
    return {name for name, bit in (("gpu", dt.GPU), ("accelerator", dt.ACCELERATOR),
                                   ("cpu", dt.CPU), ("custom", dt.CUSTOM)) if type_bits & bit}


def _attr(dev: Any, name: str) -> Any:
    # pyopencl raises LogicError (not AttributeError) for an unsupported query.
    try:
        return getattr(dev, name)
    except Exception:
        return None


def _pci_bus_id(dev: Any) -> str | None:
    info = _attr(dev, "pci_bus_info_khr")
    if info is not None:
        return normalise_pci_bus_id(f"{info.pci_domain:04x}:{info.pci_bus:02x}:"
                                    f"{info.pci_device:02x}.{info.pci_function}")
    topo = _attr(dev, "topology_amd")
    if topo is not None:
        return normalise_pci_bus_id(f"0000:{topo.bus:02x}:{topo.device:02x}.{topo.function}")
    return None


def _uuid(platform: Any, dev: Any, ordinal: int, bus_id: str | None) -> str:
    raw = _attr(dev, "uuid_khr")
    if raw:
        b = bytes(raw)
        h = b.hex()
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
    # No UUID extension: derive a stable name from what identifies the device.
    key = "|".join((text(platform.name), text(dev.vendor), text(dev.name),
                    bus_id or str(ordinal)))
    return "OCL-" + hashlib.sha1(key.encode()).hexdigest()[:16]


def _devices(cl: Any, types: frozenset[str]) -> list[tuple[Any, Any]]:
    out = []
    for platform in cl.get_platforms():
        try:
            devs = platform.get_devices()
        except cl.Error:  # DEVICE_NOT_FOUND on an empty platform
            continue
        out.extend((platform, d) for d in devs if _kinds(cl, d.type) & types)
    return out


def _import() -> Any:
    try:
        import pyopencl as cl
    except ImportError as exc:
        raise BackendUnavailable(f"pyopencl is not installed (pip install pyopencl): {exc}")
    return cl


def detect(options: Mapping[str, str]) -> list[Device]:
    cl = _import()
    try:
        found = _devices(cl, wanted_types(options))
    except cl.Error as exc:  # PLATFORM_NOT_FOUND_KHR: no ICD installed
        raise BackendUnavailable(f"no OpenCL platform: {exc}")
    devices = []
    for ordinal, (platform, dev) in enumerate(found):
        bus_id = _pci_bus_id(dev)
        vendor = normalise_vendor(text(dev.vendor))
        devices.append(Device(
            vendor=vendor, model=text(dev.name), uuid=_uuid(platform, dev, ordinal, bus_id),
            index=ordinal, backend=NAME, pci_bus_id=bus_id,
            memory_mb=int(dev.global_mem_size) // MIB, numa_node=sysfs_numa_node(bus_id),
        ))
    return devices


def binding_env(devices: Sequence[Device], use_uuid: bool = False) -> dict[str, str]:
    env = vendor_env(devices, VENDOR_VARS["opencl"], use_uuid)
    # Level Zero numbers Intel GPUs on its own; the OpenCL order matches it when
    # the node's Intel GPUs are its only OpenCL GPUs, the usual case.
    intel = [d for d in devices if d.vendor == "intel" and "cpu" not in d.model.lower()]
    env.update(vendor_env(intel, ("ZE_AFFINITY_MASK",), use_uuid))
    return env


def health_check(devices: Sequence[Device], options: Mapping[str, str]) -> dict[str, str]:
    present = {d.uuid for d in detect({**options, "opencl_device_types": "all"})}
    return {d.uuid: "ok" if d.uuid in present else "device vanished (not listed by OpenCL)"
            for d in devices}
