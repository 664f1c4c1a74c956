"""Small helpers shared by the built-in backends (no vendor imports)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

MIB = 1024 * 1024
DEFAULT_TEMP_LIMIT_C = 90


def text(value: object) -> str:
    """Vendor bindings return bytes or str depending on version; want str."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace").strip("\x00 ")
    return str(value).strip()


def temp_limit(options: Mapping[str, str]) -> float:
    raw = options.get("temp_limit_c") or os.environ.get("PLURM_ACCEL_TEMP_LIMIT_C")
    return float(raw) if raw else DEFAULT_TEMP_LIMIT_C


def sysfs_numa_node(pci_bus_id: str | None) -> int | None:
    """The NUMA node the kernel reports for a PCI device (-1 or absent: None)."""
    if not pci_bus_id:
        return None
    try:
        with open(f"/sys/bus/pci/devices/{pci_bus_id}/numa_node") as f:
            node = int(f.read().strip())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def join_reasons(reasons: list[str]) -> str:
    return "; ".join(reasons) if reasons else "ok"


class Found(list):  # type: ignore[type-arg]
    """A backend's detected devices, plus the ones it found and left out.

    A plain ``list`` of devices to every caller; ``excluded`` maps a device's
    label (backend, platform and name) to why it is not offered.  The probe
    forwards ``excluded`` to ``accel.detect``, which logs it in the node daemon's
    log: a device left out must say why, or the node just looks short of GPUs.
    """

    def __init__(self, devices: Iterable[Any] = (), excluded: Mapping[str, str] | None = None) -> None:
        super().__init__(devices)
        self.excluded: dict[str, str] = dict(excluded or {})
