"""Binding variables: the job environment that makes a set of devices visible.

Values follow Slurm: a comma-separated list of the devices' indices, ascending
(``CUDA_VISIBLE_DEVICES=0,1`` with ``GPU_DEVICE_ORDINAL=0,1`` for a gres/gpu job
in the Slurm 22.05 capture), or their UUIDs where the variable accepts them and
the site asked for UUIDs (gres.conf ``Flags=env_uuid``).  Runs in the node
daemon at job launch, so nothing here imports a vendor library.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from plurm.accel.model import Device

if TYPE_CHECKING:
    from plurm.plugins.manager import PluginManager

__all__ = ["DEFAULT_VARS", "FLAG_VARS", "VENDOR_VARS", "binding_env", "vendor_env"]

# Variables that take UUIDs as well as indices; the others are ordinals only.
_UUID_CAPABLE = frozenset({"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"})

# gres.conf environment flags -> the variable each one turns on.
FLAG_VARS: dict[str, str] = {
    "nvidia_gpu_env": "CUDA_VISIBLE_DEVICES",
    "amd_gpu_env": "ROCR_VISIBLE_DEVICES",
    "intel_gpu_env": "ZE_AFFINITY_MASK",
    "opencl_env": "GPU_DEVICE_ORDINAL",
}

# What a vendor's devices get when gres.conf names no environment flag.  Every GPU
# also gets GPU_DEVICE_ORDINAL (OpenCL and HIP read it), as Slurm sets it by default.
VENDOR_VARS: dict[str, tuple[str, ...]] = {
    "nvidia": ("CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"),
    "amd": ("ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL"),
    "intel": ("ZE_AFFINITY_MASK", "GPU_DEVICE_ORDINAL"),
    "opencl": ("GPU_DEVICE_ORDINAL",),
    "none": (),
}
# A plain gres/gpu of unknown make: what Slurm 22.05 sets when gres.conf names no environment
# flag, every vendor's variable (tests/integration/reference/env/slurm-22.05.json, gres_gpu1).
DEFAULT_VARS: tuple[str, ...] = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
                                 "ZE_AFFINITY_MASK")


def vendor_env(devices: Sequence[Device], variables: Iterable[str],
               use_uuid: bool = False) -> dict[str, str]:
    """``{VAR: "i,j,..."}`` for each variable; UUIDs where allowed and asked for."""
    if not devices:
        return {}
    ordered = sorted(devices, key=lambda d: d.index)
    indices = ",".join(str(d.index) for d in ordered)
    uuids = ",".join(d.uuid for d in ordered)
    return {var: uuids if use_uuid and var in _UUID_CAPABLE else indices for var in variables}


def binding_env(devices: Sequence[Device], flags: Iterable[str] = (), use_uuid: bool = False,
                manager: PluginManager | None = None) -> dict[str, str]:
    """The variables for a job step given ``devices`` on this node.

    ``flags`` are the gres.conf ``Flags=`` of the devices' GRES: an environment
    flag (``nvidia_gpu_env``, ...) chooses the variables outright, ``no_gpu_env``
    sets none, ``env_uuid`` asks for UUIDs.  Without such flags each device's
    backend names its own variables (its ``binding_env``), so a vendor plugin
    binds its devices with no change here.
    """
    flags = {f.lower() for f in flags}
    use_uuid = use_uuid or "env_uuid" in flags
    if not devices or "no_gpu_env" in flags:
        return {}
    chosen = [var for flag, var in FLAG_VARS.items() if flag in flags]
    if chosen:
        return vendor_env(devices, chosen, use_uuid)
    from plurm.plugins.manager import get_plugin_manager
    from plurm.plugins.types import resolve
    pm = manager or get_plugin_manager()
    env: dict[str, str] = {}
    by_backend: dict[str, list[Device]] = {}
    for dev in devices:
        by_backend.setdefault(dev.backend, []).append(dev)
    for name, devs in sorted(by_backend.items()):
        part = resolve(pm.get_accel_backend(name).binding_env)(devs, use_uuid=use_uuid)
        for var, value in part.items():
            # Two backends naming one variable (GPU_DEVICE_ORDINAL): one list.
            env[var] = f"{env[var]},{value}" if var in env and value else value
    return env
