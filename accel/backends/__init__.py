"""plurm's built-in accelerator backends, registered as a plugin.

They register through ``plurm_register_accel_backends`` exactly as a vendor's
package does, with ``trylast=True`` so a third-party plugin is consulted first.
Functions are named by import path: the probe subprocess imports them, and the
node daemon never imports a backend module it does not use.
"""

from __future__ import annotations

from plurm.plugins.hookspecs import hookimpl
from plurm.plugins.types import AccelBackend

__all__ = ["BUILTIN_BACKENDS", "plurm_register_accel_backends"]

_P = "plurm.accel.backends"

BUILTIN_BACKENDS: tuple[AccelBackend, ...] = (
    AccelBackend(
        name="nvml", vendor="nvidia",
        detect=f"{_P}.nvml:detect", binding_env=f"{_P}.nvml:binding_env",
        usage=f"{_P}.nvml:usage", health_check=f"{_P}.nvml:health_check",
        requires=("pynvml",), autodetect=("nvml", "nvidia"),
        description="NVIDIA GPUs through NVML (nvidia-ml-py)",
    ),
    AccelBackend(
        name="amdsmi", vendor="amd",
        detect=f"{_P}.amdsmi:detect", binding_env=f"{_P}.amdsmi:binding_env",
        usage=f"{_P}.amdsmi:usage", health_check=f"{_P}.amdsmi:health_check",
        requires=("amdsmi",), autodetect=("rsmi", "amdsmi"),
        description="AMD GPUs through AMD SMI (amdsmi)",
    ),
    AccelBackend(
        name="opencl", vendor="any",
        detect=f"{_P}.opencl:detect", binding_env=f"{_P}.opencl:binding_env",
        health_check=f"{_P}.opencl:health_check",
        requires=("pyopencl",), autodetect=("opencl", "oneapi"),
        description="any OpenCL GPU or accelerator (pyopencl); Intel GPUs bind ZE_AFFINITY_MASK",
    ),
    AccelBackend(
        name="static", vendor="any",
        detect=f"{_P}.static:detect", binding_env=f"{_P}.static:binding_env",
        health_check=f"{_P}.static:health_check",
        in_auto=False, autodetect=("off",),
        description="devices listed in gres.conf (File=, Count=); no library",
    ),
)


@hookimpl(trylast=True)
def plurm_register_accel_backends() -> list[AccelBackend]:
    return list(BUILTIN_BACKENDS)
