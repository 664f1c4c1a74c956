"""Small helpers shared by the built-in backends (no vendor imports)."""

from __future__ import annotations

import os
from collections.abc import Mapping

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
