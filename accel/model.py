"""One device model for every accelerator vendor.

A backend (NVML, AMD SMI, OpenCL, gres.conf, or a vendor's plugin package) turns
what its library reports into ``Device`` records; everything above the backends
(registration, GRES placement, binding variables, health) sees only these.  The
records cross process boundaries (the probe subprocess, the wire to the
controller), so they are plain data with a JSON-safe ``to_dict``/``from_dict``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["HEALTH_OK", "Device", "gres_type", "normalise_pci_bus_id", "normalise_vendor"]

HEALTH_OK = "ok"


@dataclass(frozen=True)
class Device:
    """One accelerator as a backend found it.

    ``index`` is the backend's own ordinal (what the vendor's visibility variable
    takes); ``uuid`` is stable across reboots where the vendor has one and is the
    key for usage and health.  ``health`` is ``"ok"`` or a reason string.
    """

    vendor: str
    model: str
    uuid: str
    index: int
    backend: str
    pci_bus_id: str | None = None
    memory_mb: int | None = None
    numa_node: int | None = None
    links: str | None = None
    health: str = HEALTH_OK
    device_file: str | None = None
    # What the library calls it: "gpu", or OpenCL's "accelerator", "cpu", "custom"
    # (PoCL's CPU device, vendor GenuineIntel, must not bind like an Intel GPU).
    kind: str = "gpu"

    @property
    def gres_type(self) -> str:
        """The GRES type (``gpu:TYPE``) this device is scheduled as."""
        return gres_type(self.model)

    @property
    def healthy(self) -> bool:
        return self.health == HEALTH_OK

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Device:
        """Build from ``to_dict`` output; unknown keys are ignored so that a newer
        daemon's records still load in an older one."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


# Words that name the vendor or the product family rather than the model: Slurm
# sites write Type=a100, not Type=nvidia_a100-sxm4-80gb.
_NOISE_WORDS = frozenset("""
nvidia amd intel tesla geforce quadro instinct radeon pro data center gpu graphics
accelerator corporation inc ltd r tm
""".split())
# Tokens that describe the board, not the chip: form factor, memory size and kind.
_BOARD_TOKEN = re.compile(r"(sxm\d*|pcie|nvl|\d+gb|hbm\d*e?|oam|\d+g)\Z")


def gres_type(model: str) -> str:
    """Normalise a vendor's model string to a GRES type name.

    >>> gres_type("NVIDIA H200"), gres_type("NVIDIA A100-SXM4-80GB")
    ('h200', 'a100')
    >>> gres_type("AMD Instinct MI300X"), gres_type("NVIDIA GeForce RTX 4090")
    ('mi300x', 'rtx_4090')
    """
    text = re.sub(r"\((r|tm)\)", " ", model.lower())
    words: list[str] = []
    for word in re.split(r"[\s_]+", text):
        # "a100-sxm4-80gb": the chip is the first dash-separated part.
        word = word.split("/")[0]  # "mi250x/mi250": one name is enough
        head, *rest = [p for p in word.split("-") if p] or [""]
        parts = [head] + [p for p in rest if not _BOARD_TOKEN.match(p)]
        for part in parts:
            part = re.sub(r"[^a-z0-9.+]", "", part)
            if part and part not in _NOISE_WORDS and not _BOARD_TOKEN.match(part):
                words.append(part)
        if rest:
            # After a dashed word the rest of the string is board detail.
            break
    return "_".join(words) or "unknown"


_VENDOR_HINTS = (
    ("nvidia", "nvidia"),
    ("advanced micro devices", "amd"),
    ("authenticamd", "amd"),
    ("amd", "amd"),
    ("intel", "intel"),
    ("genuineintel", "intel"),
    ("apple", "apple"),
    ("arm", "arm"),
)


def normalise_vendor(text: str) -> str:
    """Map a library's vendor string ("NVIDIA Corporation", "Advanced Micro
    Devices, Inc.", "Intel(R) Corporation", "GenuineIntel") to a short name."""
    low = text.lower()
    for hint, name in _VENDOR_HINTS:
        if hint in low:
            return name
    return re.sub(r"[^a-z0-9]+", "_", low).strip("_") or "unknown"


def normalise_pci_bus_id(bus_id: str | None) -> str | None:
    """``00000000:17:00.0`` (NVML's 8-digit domain) -> ``0000:17:00.0`` (sysfs)."""
    if not bus_id:
        return None
    m = re.match(r"([0-9a-fA-F]+):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])\Z", bus_id.strip())
    if not m:
        return bus_id.strip().lower()
    domain = int(m.group(1), 16)
    return f"{domain:04x}:{m.group(2).lower()}:{m.group(3).lower()}.{m.group(4)}"
