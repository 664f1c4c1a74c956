"""The node's accelerators read on the usage timer, for the controller's /metrics.

Every ``PLURM_ACCEL_USAGE_INTERVAL`` seconds (nodeagent/sampling.py ``AccelWork``, in its
thread) one usage probe reads *every* detected device -- not only those jobs hold -- through
the backends' ``usage`` call (vendor libraries only in the probe subprocess, as for detection).
The same report feeds the running jobs' accounting samples (``NodeDevices.attribute``), so a
node with busy GPUs runs one probe per interval, as before.

The next ping carries the new reading once (``for_ping``; None until a newer one): no message
of its own and never more often than the usage interval.  A device the probe could not read
(the library failed, crashed or hung; a backend without usage) has no reading: the controller
then drops what it had for it.  A failure is logged when it starts and when it ends, not each
interval, and never stops plurmd.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("plurmd")


class GpuReport:
    """The last reading of the node's devices, and whether the controller has had it."""

    def __init__(self, accel: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self.accel = accel  # nodeagent.devices.NodeDevices
        self.clock = clock
        self._lock = threading.Lock()  # read() runs in AccelWork's thread, for_ping() on the loop
        self._readings: list[dict[str, Any]] = []
        self._taken_at = 0.0
        self._fresh = False
        self._unread: frozenset[str] = frozenset()  # uuids the last reading lacked (logged once)

    def read(self, jobs: dict[int, list[int]], usage: dict[int, Any]) -> None:
        """One probe of every device: the node's readings, and the samples of ``jobs``
        (job id -> gpu units) into ``usage``.  Never raises."""
        devices = list(self.accel.devices)
        if not devices:
            return
        report: dict[str, dict[str, Any]] = {}
        try:
            from plurm.accel.detect import sample_usage
            from plurm.nodeagent.devices import DETECT_TIMEOUT_S

            report = sample_usage(devices, DETECT_TIMEOUT_S)
        except Exception:  # a broken backend plugin: no readings this time, the daemon goes on
            log.exception("accelerator usage reading failed")
        types = list(self.accel.units.get("gpu") or [])
        readings: list[dict[str, Any]] = []
        unread: list[str] = []
        for unit, device in enumerate(devices):
            got = report.get(device.uuid) or {}
            util, mem = _number(got.get("util"), float), _number(got.get("mem_used_mb"), int)
            if util is None and mem is None:
                unread.append(device.uuid)
                continue
            readings.append({"gpu": unit, "uuid": device.uuid, "model": device.model,
                             "type": (types[unit] if unit < len(types) and types[unit] else device.gres_type),
                             "util": util, "mem_used_mb": mem})
        self._log_change(frozenset(unread), devices)
        with self._lock:
            self._readings, self._taken_at, self._fresh = readings, self.clock(), True
        if jobs:
            try:
                self.accel.attribute(jobs, usage, report)
            except Exception:
                log.exception("accelerator usage sampling failed")

    def for_ping(self) -> list[dict[str, Any]] | None:
        """The reading not yet sent (each with its age now), else None."""
        with self._lock:
            if not self._fresh:
                return None
            self._fresh = False
            age = round(max(0.0, self.clock() - self._taken_at), 3)
            return [dict(r, age_s=age) for r in self._readings]

    def _log_change(self, unread: frozenset[str], devices: list[Any]) -> None:
        if unread == self._unread:
            return
        names = {d.uuid: f"{d.backend} device {d.index} ({d.uuid})" for d in devices}
        for uuid in sorted(unread - self._unread):
            log.warning("no usage reading for %s: its backend's probe failed or cannot tell", names[uuid])
        for uuid in sorted(self._unread - unread):
            if uuid in names:
                log.info("usage readings for %s again", names[uuid])
        self._unread = unread


def _number(value: Any, kind: type) -> Any:
    """A backend's figure as ``kind``, None when absent or not a number (a plugin's odd reply)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = kind(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None
