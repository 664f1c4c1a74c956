"""AMD GPUs through AMD SMI (the ``amdsmi`` Python package over libamd_smi.so).

``amdsmi`` loads libamd_smi.so when it is imported (from ``$ROCM_PATH/lib``,
the linker path, or /opt/rocm/lib) and prints to stdout when it cannot: so it is
imported here, inside the probe subprocess, whose stdout the probe keeps apart
from its JSON reply.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from plurm.accel.backends._util import MIB, join_reasons, sysfs_numa_node, temp_limit
from plurm.accel.binding import VENDOR_VARS, vendor_env
from plurm.accel.errors import BackendUnavailable
from plurm.accel.model import Device, normalise_pci_bus_id

NAME = "amdsmi"


@contextmanager
def _smi() -> Iterator[Any]:
    try:
        import amdsmi
    except ImportError as exc:
        raise BackendUnavailable(f"amdsmi is not installed (pip install amdsmi): {exc}")
    except (KeyError, OSError) as exc:
        # The package imports but its wrapper finds no libamd_smi.so.
        raise BackendUnavailable(f"AMD SMI library libamd_smi.so not found "
                                 f"(install amd-smi-lib or set ROCM_PATH): {exc!r}")
    try:
        amdsmi.amdsmi_init(amdsmi.AmdSmiInitFlags.INIT_AMD_GPUS)
    except amdsmi.AmdSmiException as exc:
        raise BackendUnavailable(f"amdsmi_init failed (amdgpu driver not loaded?): {exc}")
    try:
        yield amdsmi
    finally:
        try:
            amdsmi.amdsmi_shut_down()
        except amdsmi.AmdSmiException:
            pass


def _optional(fn: Any, *args: Any) -> Any:
    import amdsmi
    try:
        return fn(*args)
    except amdsmi.AmdSmiException:
        return None


def _handles(smi: Any) -> list[tuple[int, Any, str]]:
    """(index, handle, uuid) in AMD SMI's order, which is ROCR's device order."""
    return [(i, h, smi.amdsmi_get_gpu_device_uuid(h))
            for i, h in enumerate(smi.amdsmi_get_processor_handles())]


def detect(options: Mapping[str, str]) -> list[Device]:
    devices = []
    with _smi() as smi:
        for index, h, uuid in _handles(smi):
            asic = smi.amdsmi_get_gpu_asic_info(h)
            bus_id = normalise_pci_bus_id(_optional(smi.amdsmi_get_gpu_device_bdf, h))
            total = _optional(smi.amdsmi_get_gpu_memory_total, h, smi.AmdSmiMemoryType.VRAM)
            numa = _optional(smi.amdsmi_topo_get_numa_node_number, h)
            if numa is None:
                numa = sysfs_numa_node(bus_id)
            model = asic.get("market_name") or "N/A"
            devices.append(Device(
                vendor="amd", model=model if model != "N/A" else "amd_gpu", uuid=uuid,
                index=index, backend=NAME, pci_bus_id=bus_id,
                memory_mb=total // MIB if total is not None else None, numa_node=numa,
            ))
    return devices


def binding_env(devices: Sequence[Device], use_uuid: bool = False) -> dict[str, str]:
    return vendor_env(devices, VENDOR_VARS["amd"], use_uuid)


def usage(devices: Sequence[Device], options: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    wanted = {d.uuid for d in devices}
    out: dict[str, dict[str, Any]] = {}
    with _smi() as smi:
        for _, h, uuid in _handles(smi):
            if uuid not in wanted:
                continue
            activity = _optional(smi.amdsmi_get_gpu_activity, h) or {}
            gfx = activity.get("gfx_activity")
            used = _optional(smi.amdsmi_get_gpu_memory_usage, h, smi.AmdSmiMemoryType.VRAM)
            out[uuid] = {"util": float(gfx) if isinstance(gfx, (int, float)) else None,
                         "mem_used_mb": used // MIB if used is not None else None}
    return out


def health_check(devices: Sequence[Device], options: Mapping[str, str]) -> dict[str, str]:
    limit = temp_limit(options)
    out: dict[str, str] = {}
    with _smi() as smi:
        present = {uuid: h for _, h, uuid in _handles(smi)}
        for dev in devices:
            h = present.get(dev.uuid)
            if h is None:
                out[dev.uuid] = "device vanished (not listed by AMD SMI)"
                continue
            reasons = []
            ecc = _optional(smi.amdsmi_get_gpu_total_ecc_count, h) or {}
            if ecc.get("uncorrectable_count"):
                reasons.append(f"{ecc['uncorrectable_count']} uncorrectable ECC errors")
            for sensor in (smi.AmdSmiTemperatureType.EDGE, smi.AmdSmiTemperatureType.HOTSPOT):
                temp = _optional(smi.amdsmi_get_temp_metric, h, sensor,
                                 smi.AmdSmiTemperatureMetric.CURRENT)
                if temp is not None and temp > limit:
                    reasons.append(f"temperature {temp}C ({sensor.name.lower()}) over limit "
                                   f"{limit:g}C")
                    break
            out[dev.uuid] = join_reasons(reasons)
    return out
