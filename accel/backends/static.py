"""Devices listed in gres.conf (``File=`` or ``Count=``), for nodes without a
detection library or with ``AutoDetect=off``.  No vendor library is involved.

Options: ``gres_conf`` (path; else ``$PLURM_GRES_CONF``), ``node`` (this node's
name; else the short host name), ``gres_names`` (comma list; default ``gpu``).
The vendor comes from the entry's environment flag (``nvidia_gpu_env`` ->
nvidia, ...); without one the device binds as Slurm binds a plain gres/gpu:
every vendor's variable (``CUDA_VISIBLE_DEVICES``, ``ROCR_VISIBLE_DEVICES``,
``GPU_DEVICE_ORDINAL``, ``ZE_AFFINITY_MASK``), even for ``/dev/nvidia*`` files.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from plurm.accel.binding import DEFAULT_VARS, VENDOR_VARS, vendor_env
from plurm.accel.errors import BackendUnavailable
from plurm.accel.model import Device

NAME = "static"

_FLAG_VENDOR = (("no_gpu_env", "none"), ("nvidia_gpu_env", "nvidia"), ("amd_gpu_env", "amd"),
                ("intel_gpu_env", "intel"), ("opencl_env", "opencl"))


def _vendor(entry: Any) -> str:
    flags = {f.lower() for f in entry.flags}
    for flag, vendor in _FLAG_VENDOR:
        if flag in flags:
            return vendor
    # No flag: a plain gres/gpu, whatever its device files are called.  Slurm 22.05 sets every
    # vendor's variable for File=/dev/nvidia[0-3] without flags (tests/integration/reference/env,
    # gres_gpu1), so a file name must not narrow the binding to CUDA's.
    return "unknown"


def detect(options: Mapping[str, str]) -> list[Device]:
    from plurm.grammar.gresconf import load_gres_conf
    path = options.get("gres_conf") or os.environ.get("PLURM_GRES_CONF")
    if not path:
        raise BackendUnavailable("no gres.conf given (option gres_conf or $PLURM_GRES_CONF)")
    if not os.path.exists(path):
        raise BackendUnavailable(f"gres.conf {path} does not exist")
    node = options.get("node") or socket.gethostname().split(".")[0]
    names = {n.strip() for n in options.get("gres_names", "gpu").split(",") if n.strip()}
    devices: list[Device] = []
    for entry in load_gres_conf(path).for_node(node):
        if entry.name not in names:
            continue
        vendor = _vendor(entry)
        model = entry.type or entry.name
        files: list[str | None] = list(entry.files) or [None] * (entry.count or 1)
        for f in files:
            # Slurm's index is the device's position in the node's list for this GRES.
            index = len(devices)
            ident = f if f else f"{entry.name}{index}"
            devices.append(Device(vendor=vendor, model=model, uuid=f"static:{node}:{ident}",
                                  index=index, backend=NAME, links=entry.links,
                                  device_file=f))
    return devices


def binding_env(devices: Sequence[Device], use_uuid: bool = False) -> dict[str, str]:
    env: dict[str, str] = {}
    by_vendor: dict[str, list[Device]] = {}
    for d in devices:
        by_vendor.setdefault(d.vendor, []).append(d)
    for vendor, devs in sorted(by_vendor.items()):
        for var, value in vendor_env(devs, VENDOR_VARS.get(vendor, DEFAULT_VARS),
                                     use_uuid).items():
            env[var] = f"{env[var]},{value}" if var in env else value
    return env


def health_check(devices: Sequence[Device], options: Mapping[str, str]) -> dict[str, str]:
    return {d.uuid: "ok" if not d.device_file or os.path.exists(d.device_file)
            else f"device file {d.device_file} missing" for d in devices}
