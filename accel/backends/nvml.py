"""NVIDIA GPUs through NVML (the ``pynvml`` module of ``nvidia-ml-py``).

``pynvml`` is imported inside the functions only: they run in the probe
subprocess, so a node without the NVIDIA driver never loads it, and a driver
that hangs or crashes takes down the probe, not plurmd.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from plurm.accel.backends._util import MIB, join_reasons, sysfs_numa_node, temp_limit, text
from plurm.accel.binding import VENDOR_VARS, vendor_env
from plurm.accel.errors import BackendUnavailable
from plurm.accel.model import Device, normalise_pci_bus_id

NAME = "nvml"

# XIDs that report an application's own fault (illegal address, ...), not a
# broken GPU; the node stays in service.  Others (48 double-bit ECC, 79 fallen
# off the bus, 92/94/95 ECC, 119/120 GSP, ...) make the device unhealthy.
APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68})


@contextmanager
def _nvml() -> Iterator[Any]:
    try:
        import pynvml
    except ImportError as exc:
        raise BackendUnavailable(f"pynvml is not installed (pip install nvidia-ml-py): {exc}")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError_LibraryNotFound as exc:
        raise BackendUnavailable(f"NVML library libnvidia-ml.so.1 not found: {exc}")
    except pynvml.NVMLError_DriverNotLoaded as exc:
        raise BackendUnavailable(f"NVIDIA driver not loaded: {exc}")
    try:
        yield pynvml
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


def _handles(nv: Any, failed: dict[int, str] | None = None) -> list[tuple[int, Any, str]]:
    """(index, handle, uuid) for every device NVML can name; a device NVML lists
    but cannot answer for (fallen off the bus: GPU_IS_LOST) goes to ``failed``."""
    out = []
    for i in range(nv.nvmlDeviceGetCount()):
        try:
            h = nv.nvmlDeviceGetHandleByIndex(i)
            out.append((i, h, text(nv.nvmlDeviceGetUUID(h))))
        except nv.NVMLError_GpuIsLost:
            if failed is not None:
                failed[i] = "GPU is lost"
        except nv.NVMLError as exc:
            if failed is not None:
                failed[i] = f"NVML error: {exc}"
    return out


def _optional(fn: Any, *args: Any) -> Any:
    """Call an NVML getter that older drivers or some boards lack; None if so."""
    import pynvml
    try:
        return fn(*args)
    except pynvml.NVMLError:
        return None


def detect(options: Mapping[str, str]) -> list[Device]:
    with _nvml() as nv:
        devices = []
        for index, h, uuid in _handles(nv):
            pci = nv.nvmlDeviceGetPciInfo(h)
            bus_id = normalise_pci_bus_id(text(pci.busId))
            mem = _optional(nv.nvmlDeviceGetMemoryInfo, h)
            numa = _optional(nv.nvmlDeviceGetNumaNodeId, h)
            if numa is None or numa < 0:
                numa = sysfs_numa_node(bus_id)
            minor = _optional(nv.nvmlDeviceGetMinorNumber, h)
            devices.append(Device(
                vendor="nvidia", model=text(nv.nvmlDeviceGetName(h)), uuid=uuid, index=index,
                backend=NAME, pci_bus_id=bus_id,
                memory_mb=mem.total // MIB if mem is not None else None,
                numa_node=numa,
                device_file=f"/dev/nvidia{minor}" if minor is not None else None,
            ))
        return devices


def binding_env(devices: Sequence[Device], use_uuid: bool = False) -> dict[str, str]:
    return vendor_env(devices, VENDOR_VARS["nvidia"], use_uuid)


def usage(devices: Sequence[Device], options: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    wanted = {d.uuid for d in devices}
    out: dict[str, dict[str, Any]] = {}
    with _nvml() as nv:
        for _, h, uuid in _handles(nv):
            if uuid not in wanted:
                continue
            util = _optional(nv.nvmlDeviceGetUtilizationRates, h)
            mem = _optional(nv.nvmlDeviceGetMemoryInfo, h)
            out[uuid] = {"util": float(util.gpu) if util is not None else None,
                         "mem_used_mb": mem.used // MIB if mem is not None else None}
    return out


def _xids(nv: Any, handles: list[tuple[int, Any, str]], wait_ms: int) -> dict[str, list[int]]:
    """XIDs NVML delivers while we listen.  NVML reports only XIDs that occur after
    registration, so a one-shot probe sees those of the last ``wait_ms`` (a
    long-lived listener is future work); the fake library in the tests queues them."""
    found: dict[str, list[int]] = {}
    try:
        event_set = nv.nvmlEventSetCreate()
    except nv.NVMLError:
        return found
    by_ptr: dict[int | None, str] = {}
    try:
        for _, h, uuid in handles:
            try:
                nv.nvmlDeviceRegisterEvents(h, nv.nvmlEventTypeXidCriticalError, event_set)
            except nv.NVMLError:
                continue  # not supported on this board
            by_ptr[ctypes.cast(h, ctypes.c_void_p).value] = uuid
        while by_ptr:
            try:
                data = nv.nvmlEventSetWait_v2(event_set, wait_ms)
            except nv.NVMLError:  # NVML_ERROR_TIMEOUT: nothing more
                break
            uuid = by_ptr.get(ctypes.cast(data.device, ctypes.c_void_p).value)
            if uuid is not None and data.eventData not in APPLICATION_XIDS:
                found.setdefault(uuid, []).append(int(data.eventData))
    finally:
        try:
            nv.nvmlEventSetFree(event_set)
        except nv.NVMLError:
            pass
    return found


def health_check(devices: Sequence[Device], options: Mapping[str, str]) -> dict[str, str]:
    limit = temp_limit(options)
    wait_ms = int(options.get("xid_wait_ms", "100"))
    out: dict[str, str] = {}
    with _nvml() as nv:
        failed: dict[int, str] = {}
        handles = _handles(nv, failed)
        present = {uuid: h for _, h, uuid in handles}
        xids = _xids(nv, handles, wait_ms)
        for dev in devices:
            h = present.get(dev.uuid)
            if h is None:
                # Not answering under its index: lost; not listed at all: vanished.
                out[dev.uuid] = failed.get(dev.index, "device vanished (not listed by NVML)")
                continue
            reasons = [f"XID {x}" for x in xids.get(dev.uuid, [])]
            try:
                ecc = _optional(nv.nvmlDeviceGetTotalEccErrors, h,
                                nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_VOLATILE_ECC)
                temp = nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)
            except nv.NVMLError_GpuIsLost:
                out[dev.uuid] = "GPU is lost"
                continue
            except nv.NVMLError as exc:
                reasons.append(f"NVML error: {exc}")
                temp = None
            if ecc:
                reasons.append(f"{ecc} uncorrected ECC errors")
            if temp is not None and temp > limit:
                reasons.append(f"temperature {temp}C over limit {limit:g}C")
            out[dev.uuid] = join_reasons(reasons)
    return out
