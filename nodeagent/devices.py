"""A node's accelerators: detected at start, checked against the configuration,
bound into jobs, and health-checked on a timer.

Detection goes through plurm.accel (vendor libraries only inside probe
subprocesses with a timeout: a missing, hanging or crashing library never
takes plurmd down).  Which backends run follows gres.conf beside slurm.conf:
its AutoDetect= for this node, else its File=/Count= lines (the static
backend).  A node without gres.conf and without Gres= detects nothing.

The scheduler counts GRES units per node from slurm.conf's Gres= (index 0..n-1
per name); ``unit_devices`` pairs each gpu unit with a detected device of the
same type, so a job's unit indices bind the vendor's variables of those
devices (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK, ...).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from plurm.common import gres

log = logging.getLogger("plurmd")

DETECT_TIMEOUT_S = float(os.environ.get("PLURM_ACCEL_DETECT_TIMEOUT", "10"))


class UsageStats:
    """A job's accelerator usage over its samples: what sacct shows as TRESUsageInMax/Ave."""

    def __init__(self) -> None:
        self.samples = 0
        self.util_max = 0.0
        self.util_sum = 0.0
        self.mem_max = 0
        self.mem_sum = 0

    def add(self, readings: list[dict[str, Any]]) -> None:
        # Several gpus: utilisation is their mean, memory their sum, as one job's figures.  A
        # reading the board could not give (NVML answers "not supported" on some: None) counts
        # as nothing rather than failing the sample.
        known = [float(r["util"]) for r in readings if r.get("util") is not None]
        util = sum(known) / len(known) if known else 0.0
        mem = sum(int(r.get("mem_used_mb") or 0) for r in readings)
        self.samples += 1
        self.util_max = max(self.util_max, util)
        self.util_sum += util
        self.mem_max = max(self.mem_max, mem)
        self.mem_sum += mem

    def as_tres(self) -> tuple[dict[str, str], dict[str, str]]:
        if not self.samples:
            return {}, {}
        return ({"gres/gpumem": f"{self.mem_max}M", "gres/gpuutil": f"{self.util_max:g}"},
                {"gres/gpumem": f"{self.mem_sum // self.samples}M",
                 "gres/gpuutil": f"{self.util_sum / self.samples:g}"})


class NodeDevices:
    def __init__(self, conf_path: str, node_name: str, configured_gres: list[str]) -> None:
        self.node = node_name
        self.gres_conf_path = os.path.join(os.path.dirname(os.path.abspath(conf_path)), "gres.conf")
        self.units = gres.node_units(configured_gres)
        self.entries: list[Any] = []
        self.autodetect: str | None = None
        self.flags: list[str] = []
        self.devices: list[Any] = []  # plurm.accel.model.Device, in gpu unit order
        self.problems: list[str] = []
        self.unhealthy: dict[str, str] = {}

    @property
    def wanted(self) -> bool:
        return bool(self.units) or os.path.exists(self.gres_conf_path)

    def _backends(self) -> list[str] | str:
        from plurm.accel.detect import backends_for_autodetect

        if self.autodetect is None or self.autodetect == "off":
            return ["static"] if any(e.name == "gpu" for e in self.entries) else []
        return backends_for_autodetect(self.autodetect)

    def detect(self) -> None:
        """Find the devices and the reasons to drain the node, if any; never raises."""
        if not self.wanted:
            return
        try:
            from plurm.accel.detect import check_against_conf, detect

            if os.path.exists(self.gres_conf_path):
                from plurm.grammar.gresconf import load_gres_conf

                conf = load_gres_conf(self.gres_conf_path)
                self.entries = conf.for_node(self.node)
                self.autodetect = conf.autodetect_for(self.node)
                self.flags = sorted({f for e in self.entries if e.name == "gpu" for f in e.flags})
            backends = self._backends()
            result = detect(backends, DETECT_TIMEOUT_S,
                            options={"gres_conf": self.gres_conf_path, "node": self.node}) if backends else None
            found = list(result.devices) if result else []
            for backend, error in (result.errors.items() if result else []):
                log.warning("accelerator detection with %s failed: %s", backend, error)
            self.problems = check_against_conf(found, self.entries, self.node)
            configured = len(self.units.get("gpu", []))
            if backends and len(found) < configured and not self.problems:
                self.problems.append(f"gres/gpu count reported lower than configured ({len(found)} < {configured})")
            self.devices = self.unit_devices(found)
            log.info("node %s: %d accelerator(s) detected%s", self.node, len(found),
                     f"; problems: {'; '.join(self.problems)}" if self.problems else "")
        except Exception as exc:  # a broken plugin must not stop the node daemon
            log.exception("accelerator detection failed")
            self.problems = [f"accelerator detection failed: {exc}"]

    def unit_devices(self, found: list[Any]) -> list[Any]:
        """Detected devices in the order of the node's gpu units (matching types)."""
        pool = sorted(found, key=lambda d: (d.backend, d.index))
        types = self.units.get("gpu") or [None] * len(pool)
        ordered = []
        for unit_type in types:
            match = next((d for d in pool if unit_type is None or d.gres_type == unit_type
                          or unit_type.lower() in d.model.lower()), None)
            if match is None:
                break
            pool.remove(match)
            ordered.append(match)
        return ordered

    def binding(self, name: str, indices: list[int]) -> dict[str, str]:
        """The vendor's variables for GRES units ``indices`` of ``name`` (gpu, or shard:
        the gpus those shards live on) on this node."""
        if name == "shard":
            indices = sorted({owner for s in indices if (owner := gres.shard_owner(self.units, s)) is not None})
        elif name != "gpu":
            return {}
        if not indices:
            return {}
        from plurm.accel.binding import DEFAULT_VARS, binding_env

        if not self.devices:  # a plain gres/gpu: every vendor's variable, as Slurm 22.05 without flags
            ids = ",".join(str(i) for i in sorted(indices))
            return {var: ids for var in DEFAULT_VARS}

        chosen = [self.devices[i] for i in sorted(indices) if i < len(self.devices)]
        return binding_env(chosen, flags=self.flags)

    def check_health(self) -> dict[str, str]:
        """Unhealthy devices by uuid (XID/ECC errors, temperature, vanished)."""
        if not self.devices:
            return {}
        try:
            from plurm.accel.detect import health_check

            report = health_check(self.devices, DETECT_TIMEOUT_S)
        except Exception as exc:
            log.exception("accelerator health check failed")
            return {"*": f"health check failed: {exc}"}
        self.unhealthy = {uuid: reason for uuid, reason in report.items() if reason != "ok"}
        return self.unhealthy

    def sample(self, jobs: dict[int, list[int]], usage: dict[int, "UsageStats"]) -> None:
        """One usage sample of the gpus each job holds (``jobs``: job id -> gpu units)."""
        held = {i for units in jobs.values() for i in units}
        devices = [self.devices[i] for i in sorted(held) if i < len(self.devices)]
        if not devices:
            return
        try:
            from plurm.accel.detect import sample_usage

            report = sample_usage(devices, DETECT_TIMEOUT_S)
        except Exception:
            log.exception("accelerator usage sampling failed")
            return
        self.attribute(jobs, usage, report)

    def attribute(self, jobs: dict[int, list[int]], usage: dict[int, UsageStats],
                  report: dict[str, dict[str, Any]]) -> None:
        """A usage probe's ``report`` (uuid -> reading) as one sample of each job's gpus."""
        for job_id, units in jobs.items():
            readings = [report[self.devices[i].uuid] for i in units
                        if i < len(self.devices) and self.devices[i].uuid in report]
            if readings:
                usage.setdefault(job_id, UsageStats()).add(readings)

    def describe(self) -> list[dict[str, Any]]:
        return [d.to_dict() for d in self.devices]
