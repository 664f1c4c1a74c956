"""Accelerator detection, usage and health that never hang or crash the caller.

Each backend function runs in a spawned probe subprocess (``python -m
plurm.accel.probe``) with a timeout (conda's CUDA probe pattern): a vendor
library that is missing, raises, segfaults or hangs yields an entry in
``errors`` (or ``skipped``), never an exception or a hang in plurmd.  Backends
run in parallel, one probe each.  Detection results are cached per process.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.util import find_spec
from typing import Any, Literal

from plurm.accel.model import HEALTH_OK, Device
from plurm.plugins.manager import PluginManager, get_plugin_manager
from plurm.plugins.types import AccelBackend, Ref, callable_path

log = logging.getLogger("plurm.accel")

__all__ = [
    "AUTODETECT_BACKENDS", "DetectionResult", "backends_for_autodetect", "check_against_conf",
    "clear_cache", "detect", "health_check", "installed_backends", "run_probe", "sample_usage",
]

# gres.conf AutoDetect= values -> built-in backends.  A vendor plugin adds its
# own values through AccelBackend.autodetect; "auto" tries every installed one.
AUTODETECT_BACKENDS: dict[str, list[str]] = {
    "nvml": ["nvml"],
    "nvidia": ["nvml"],      # Slurm 23.11's driver-only NVIDIA detection: NVML serves
    "rsmi": ["amdsmi"],      # ROCm SMI's successor is AMD SMI
    "oneapi": ["opencl"],    # Intel GPUs through OpenCL, bound with ZE_AFFINITY_MASK
    "opencl": ["opencl"],
    "nrt": [],               # AWS Neuron: no backend yet (a plugin may add one)
    "off": [],
}


@dataclass(frozen=True)
class DetectionResult:
    """Devices found, and per backend why it found nothing.

    ``errors``: a backend that failed (raised, crashed, hung, bad output) or that was
    asked for by name but is not available.  ``skipped``: backends that ``auto``
    tried and whose library is simply absent on this node (normal, logged at info).
    ``excluded``: devices a backend found but does not offer (an OpenCL device no
    kernel builds for), by label, with the reason; each is logged at warning.
    """

    devices: list[Device] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    excluded: dict[str, str] = field(default_factory=dict)

    def by_backend(self, name: str) -> list[Device]:
        return [d for d in self.devices if d.backend == name]


class ProbeError(Exception):
    def __init__(self, message: str, unavailable: bool = False) -> None:
        super().__init__(message)
        self.unavailable = unavailable


def run_probe(backend: str, op: str, target: Ref, payload: Mapping[str, Any],
              timeout_s: float) -> Any:
    """Run ``target`` for ``op`` in a probe subprocess; its result, or ``ProbeError``."""
    return probe_reply(backend, op, target, payload, timeout_s).get("result")


def probe_reply(backend: str, op: str, target: Ref, payload: Mapping[str, Any],
                timeout_s: float) -> dict[str, Any]:
    """The probe's whole reply (``result`` and notes such as ``excluded``), or ``ProbeError``.

    The probe gets a session of its own so that a timeout kills it and anything it
    started; stdout carries only the JSON reply (the probe keeps library chatter on
    stderr).
    """
    cmd = [sys.executable, "-m", "plurm.accel.probe", backend, "--op", op,
           "--target", callable_path(target)]
    # The probe must import what this process can (a plugin found on a path added
    # at run time included): hand it our sys.path ahead of its own.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        dict.fromkeys([p for p in sys.path if p] + env.get("PYTHONPATH", "").split(os.pathsep))
    ).strip(os.pathsep)
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, env=env)
    try:
        out, err = proc.communicate(json.dumps(payload).encode(), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise ProbeError(f"{op} timed out after {timeout_s:g}s (probe killed)") from None
    if proc.returncode < 0:
        sig = signal.Signals(-proc.returncode).name
        raise ProbeError(f"{op} probe crashed ({sig}){_tail(err)}")
    try:
        reply = json.loads(out)
    except ValueError:
        raise ProbeError(f"{op} probe exited with status {proc.returncode} and no reply"
                         f"{_tail(err)}") from None
    if not isinstance(reply, dict):
        raise ProbeError(f"{op} probe replied {type(reply).__name__}, not an object")
    if not reply.get("ok"):
        raise ProbeError(str(reply.get("error")), bool(reply.get("unavailable")))
    return reply


def _tail(err: bytes) -> str:
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return f": {lines[-1]}" if lines else ""


def installed_backends(manager: PluginManager | None = None) -> list[str]:
    """Backends ``auto`` tries: those in auto mode whose required modules exist
    (looked up with ``find_spec``, which imports nothing)."""
    pm = manager or get_plugin_manager()
    names = []
    for name, rec in pm.get_accel_backends().items():
        if rec.in_auto and all(_module_exists(m) for m in rec.requires):
            names.append(name)
    return names


def _module_exists(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def backends_for_autodetect(value: str | None,
                            manager: PluginManager | None = None) -> list[str] | Literal["auto"]:
    """Backends for a gres.conf ``AutoDetect=`` value (None: not set -> ``auto``).

    A value is also accepted when it is a backend's name or one of a plugin's
    ``autodetect`` values, so ``AutoDetect=acme`` works for a vendor package.
    """
    mode = (value or "auto").strip().lower()
    if mode == "auto":
        return "auto"
    pm = manager or get_plugin_manager()
    backends = pm.get_accel_backends()
    if mode == "off":
        return []
    names = [n for n, rec in backends.items() if mode == n or mode in rec.autodetect]
    if names:
        return names
    if mode in AUTODETECT_BACKENDS:
        return list(AUTODETECT_BACKENDS[mode])
    pm.get_accel_backend(mode)  # raises UnknownPluginError listing the valid names
    return []


_cache: dict[tuple[Any, ...], DetectionResult] = {}
_cache_lock = threading.Lock()


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def detect(backends: Sequence[str] | Literal["auto"] = "auto", timeout_s: float = 10.0, *,
           options: Mapping[str, str] | None = None, refresh: bool = False,
           manager: PluginManager | None = None) -> DetectionResult:
    """Find this node's accelerators with the named backends (or every installed one).

    Never raises for a backend's failure and never waits much longer than
    ``timeout_s`` (backends run in parallel).  An unknown backend name is an error
    entry that lists the valid names.  Results are cached per process for the same
    backends and options; ``refresh=True`` probes again (plurmd on reconfigure).
    """
    pm = manager or get_plugin_manager()
    auto = backends == "auto"
    names = installed_backends(pm) if auto else list(dict.fromkeys(backends))
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    key = (tuple(names), tuple(sorted(opts.items())), id(pm))
    with _cache_lock:
        if not refresh and key in _cache:
            return _cache[key]

    def one(name: str) -> tuple[str, tuple[list[Device], dict[str, str]] | ProbeError]:
        try:
            record = pm.get_accel_backend(name)
            reply = probe_reply(name, "detect", record.detect, {"options": opts}, timeout_s)
            excluded = reply.get("excluded") or {}
            if not isinstance(excluded, dict):
                raise ProbeError(f"detect probe's 'excluded' is {type(excluded).__name__}")
            return name, ([Device.from_dict(d) for d in reply.get("result") or []],
                          {str(k): str(v) for k, v in excluded.items()})
        except ProbeError as exc:
            return name, exc
        except Exception as exc:  # unknown name, unimportable target, bad reply
            return name, ProbeError(f"{type(exc).__name__}: {exc}")

    result = DetectionResult()
    if names:
        with ThreadPoolExecutor(max_workers=len(names)) as pool:
            outcomes = list(pool.map(one, names))
        for name, outcome in outcomes:
            if isinstance(outcome, ProbeError):
                target = result.skipped if auto and outcome.unavailable else result.errors
                target[name] = str(outcome)
            else:
                found, excluded = outcome
                result.devices.extend(found)
                for label, why in excluded.items():
                    # The node daemon's log is where an admin looks for a missing GPU.
                    log.warning("accelerator %s not offered: %s", label, why)
                    result.excluded[label] = why
    with _cache_lock:
        _cache[key] = result
    return result


def _per_backend(devices: Sequence[Device], op: str, attr: str, timeout_s: float,
                 options: Mapping[str, str] | None, manager: PluginManager | None,
                 ) -> list[tuple[str, list[Device], AccelBackend | None, Any]]:
    pm = manager or get_plugin_manager()
    groups: dict[str, list[Device]] = {}
    for d in devices:
        groups.setdefault(d.backend, []).append(d)
    opts = {str(k): str(v) for k, v in (options or {}).items()}

    def one(item: tuple[str, list[Device]]) -> tuple[str, list[Device], AccelBackend | None, Any]:
        name, devs = item
        try:
            record = pm.get_accel_backend(name)
        except Exception as exc:
            return name, devs, None, ProbeError(str(exc))
        ref = getattr(record, attr)
        if ref is None:
            return name, devs, record, None
        payload = {"options": opts, "devices": [d.to_dict() for d in devs]}
        try:
            return name, devs, record, run_probe(name, op, ref, payload, timeout_s)
        except ProbeError as exc:
            return name, devs, record, exc
        except Exception as exc:
            return name, devs, record, ProbeError(f"{type(exc).__name__}: {exc}")

    if not groups:
        return []
    with ThreadPoolExecutor(max_workers=len(groups)) as pool:
        return list(pool.map(one, sorted(groups.items())))


def sample_usage(devices: Sequence[Device], timeout_s: float = 10.0, *,
                 options: Mapping[str, str] | None = None,
                 manager: PluginManager | None = None) -> dict[str, dict[str, Any]]:
    """``{uuid: {"util": percent, "mem_used_mb": n}}`` for devices whose backend can
    tell; a backend without usage, or whose probe fails, contributes nothing."""
    out: dict[str, dict[str, Any]] = {}
    for _, _, _, result in _per_backend(devices, "usage", "usage", timeout_s, options, manager):
        if isinstance(result, dict):
            out.update(result)
    return out


def health_check(devices: Sequence[Device], timeout_s: float = 10.0, *,
                 options: Mapping[str, str] | None = None,
                 manager: PluginManager | None = None) -> dict[str, str]:
    """``{uuid: "ok" | reason}`` for every device given.

    Reasons: XID or ECC errors, temperature over the limit (option ``temp_limit_c``,
    or ``$PLURM_ACCEL_TEMP_LIMIT_C``, default 90), device vanished.  When the
    backend's probe itself fails, each of its devices gets that failure as reason:
    a node whose GPU library stopped answering should drain.  A backend without a
    health check reports its devices ``ok``.
    """
    out: dict[str, str] = {}
    for name, devs, _, result in _per_backend(devices, "health", "health_check", timeout_s,
                                              options, manager):
        for d in devs:
            if isinstance(result, ProbeError):
                out[d.uuid] = f"{name} health check failed: {result}"
            elif isinstance(result, dict):
                out[d.uuid] = str(result.get(d.uuid, "device vanished"))
            else:
                out[d.uuid] = HEALTH_OK
    return out


def check_against_conf(detected: Sequence[Device], gres_entries: Iterable[Any], node: str,
                       gres_name: str = "gpu") -> list[str]:
    """Why the detected devices fall short of gres.conf for ``node`` ([] if they don't).

    ``gres_entries`` are ``plurm.grammar.gresconf.GresEntry`` records (anything with
    ``node_names``, ``name``, ``type``, ``count``, ``files``).  Slurm drains a node
    whose configured count exceeds what was found, with reasons like
    ``gres/gpu count reported lower than configured (0 < 4)``.
    """
    entries = [e for e in gres_entries
               if e.name == gres_name and (e.node_names is None or node in e.node_names)]
    if not entries:
        return []

    def count(e: Any) -> int:
        return e.count if e.count is not None else (len(e.files) or 1)

    reasons = []
    configured = sum(count(e) for e in entries)
    if len(detected) < configured:
        reasons.append(f"gres/{gres_name} count reported lower than configured "
                       f"({len(detected)} < {configured})")
    by_type: dict[str, int] = {}
    for e in entries:
        if e.type:
            by_type[e.type.lower()] = by_type.get(e.type.lower(), 0) + count(e)
    for gtype, want in sorted(by_type.items()):
        # Slurm matches a Type against the model name case-insensitively.
        have = sum(1 for d in detected if d.gres_type == gtype or gtype in d.model.lower())
        if have < want:
            reasons.append(f"gres/{gres_name}:{gtype} count reported lower than configured "
                           f"({have} < {want})")
    files = {d.device_file for d in detected if d.device_file}
    if files:
        for e in entries:
            for f in e.files:
                if f not in files:
                    reasons.append(f"gres/{gres_name} file {f} not found by detection")
    return reasons
