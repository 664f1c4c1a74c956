"""Any OpenCL device through ``pyopencl``: the vendor-neutral fallback.

By default only GPU and ACCELERATOR devices count: a CPU is not a GRES.  CPU
devices (PoCL's, for tests and for sites that schedule them) are included when
asked for, with the backend option ``opencl_device_types=all`` or the
environment variable ``PLURM_OPENCL_DEVICE_TYPES=all`` (or a list such as
``gpu,cpu``).  gres.conf ``AutoDetect=oneapi`` maps here: Intel GPUs found
through OpenCL bind with ``ZE_AFFINITY_MASK`` (Level Zero) as well.

OpenCL has no usage counters, so this backend offers no ``usage``.

A device is offered only once a trivial kernel has been built and run on it,
here in the probe subprocess (under its timeout): an OpenCL compiler that
cannot generate code for the device (PoCL whose LLVM does not know the host
CPU: ``error: unknown target CPU 'generic'``) lists a device that no job can
use.  Such a device is left out and the node daemon's log says why.  Option
``opencl_build_check=no`` (or ``PLURM_OPENCL_BUILD_CHECK=0``) skips the check.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from typing import Any

from plurm.accel.backends._util import MIB, Found, sysfs_numa_node, text
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


def _kind(cl: Any, type_bits: int) -> str:
    """One name for a device's type: a GPU that is also something else is a GPU."""
    kinds = _kinds(cl, type_bits)
    return next((k for k in ("gpu", "accelerator", "cpu", "custom") if k in kinds), "custom")


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


# Small enough to compile in well under a second, yet it goes through the whole
# compiler (front end, code generation for the device's CPU name, linking).
CHECK_KERNEL = """
__kernel void plurm_check(__global float *x) { x[get_global_id(0)] = 2.0f * x[get_global_id(0)] + 1.0f; }
"""
# PoCL's LLVM names the host CPU; when it does not know it, code generation fails.
_UNKNOWN_CPU_HINT = (" (the OpenCL compiler's LLVM does not know this CPU: a PoCL that generates"
                     " code for its kernel library's CPU, such as Debian's pocl-opencl-icd,"
                     " works; see docs/accelerators.md)")


def build_check_wanted(options: Mapping[str, str]) -> bool:
    raw = (options.get("opencl_build_check") or os.environ.get("PLURM_OPENCL_BUILD_CHECK")
           or "yes").strip().lower()
    return raw not in ("0", "no", "false", "off")


def _short_build_error(exc: BaseException) -> str:
    """The compiler's words out of pyopencl's message (which repeats itself and
    names the Python objects): the build log lines, at most 300 characters."""
    lines = [ln.strip() for ln in str(exc).splitlines()]
    log_lines = [ln for ln in lines[1:] if ln and not ln.startswith(("Build on", "(options"))]
    head = lines[0].split(" - ")[0] if lines else type(exc).__name__
    text_ = "; ".join([head] + list(dict.fromkeys(log_lines)))
    return text_ if len(text_) <= 300 else text_[:297] + "..."


def kernel_check(cl: Any, dev: Any) -> str | None:
    """Why a job could not compute on ``dev`` (None: a kernel built and ran)."""
    try:
        import numpy as np
    except ImportError:
        np = None
    try:
        ctx = cl.Context([dev])
        queue = cl.CommandQueue(ctx)
        # cache_dir=False: pyopencl's own binary cache could hand back a binary
        # built elsewhere (a home directory shared between hosts) and hide the failure.
        prog = cl.Program(ctx, CHECK_KERNEL).build(cache_dir=False)
        if np is None:  # pyopencl needs numpy, so this is a broken install; building is the check
            return None
        data = np.arange(8, dtype=np.float32)
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
        prog.plurm_check(queue, data.shape, None, buf)
        out = np.empty_like(data)
        cl.enqueue_copy(queue, out, buf)
        queue.finish()
        if not np.array_equal(out, 2 * data + 1):
            return f"kernel ran but computed {out.tolist()!r}"
        return None
    except Exception as exc:  # BUILD_PROGRAM_FAILURE, INVALID_BUILD_OPTIONS, OUT_OF_RESOURCES...
        reason = "kernel build failed: " + _short_build_error(exc)
        return reason + (_UNKNOWN_CPU_HINT if "unknown target CPU" in reason else "")


def _label(platform: Any, dev: Any) -> str:
    return f"{NAME}:{text(platform.name)}:{text(dev.name)}"


def _import() -> Any:
    try:
        import pyopencl as cl
    except ImportError as exc:
        raise BackendUnavailable(f"pyopencl is not installed (pip install pyopencl): {exc}")
    return cl


def detect(options: Mapping[str, str]) -> list[Device]:
    """The usable devices (a ``Found``: those left out are in ``.excluded``)."""
    cl = _import()
    try:
        found = _devices(cl, wanted_types(options))
    except cl.Error as exc:  # PLATFORM_NOT_FOUND_KHR: no ICD installed
        raise BackendUnavailable(f"no OpenCL platform: {exc}")
    devices = Found()
    check = build_check_wanted(options)
    # Ordinals stay those of the devices OpenCL lists (a job's GPU_DEVICE_ORDINAL
    # counts them so), so a device left out leaves a gap, never a renumbering.
    for ordinal, (platform, dev) in enumerate(found):
        why = kernel_check(cl, dev) if check else None
        if why is not None:
            devices.excluded[_label(platform, dev)] = why
            continue
        bus_id = _pci_bus_id(dev)
        vendor = normalise_vendor(text(dev.vendor))
        devices.append(Device(
            vendor=vendor, model=text(dev.name), uuid=_uuid(platform, dev, ordinal, bus_id),
            index=ordinal, backend=NAME, pci_bus_id=bus_id,
            memory_mb=int(dev.global_mem_size) // MIB, numa_node=sysfs_numa_node(bus_id),
            kind=_kind(cl, dev.type),
        ))
    return devices


def binding_env(devices: Sequence[Device], use_uuid: bool = False) -> dict[str, str]:
    env = vendor_env(devices, VENDOR_VARS["opencl"], use_uuid)
    # Level Zero numbers Intel GPUs on its own; the OpenCL order matches it when
    # the node's Intel GPUs are its only OpenCL GPUs, the usual case.
    intel = [d for d in devices if d.vendor == "intel" and d.kind == "gpu"]
    env.update(vendor_env(intel, ("ZE_AFFINITY_MASK",), use_uuid))
    return env


def health_check(devices: Sequence[Device], options: Mapping[str, str]) -> dict[str, str]:
    # Presence only: the kernel check ran at detection and need not run every interval.
    present = {d.uuid for d in detect({**options, "opencl_device_types": "all",
                                       "opencl_build_check": "no"})}
    return {d.uuid: "ok" if d.uuid in present else "device vanished (not listed by OpenCL)"
            for d in devices}
