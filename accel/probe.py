"""The probe: runs one backend function in a process of its own.

    python -m plurm.accel.probe BACKEND [--op detect|usage|health] [--target MOD:FUNC]

Reads ``{"options": {...}, "devices": [...]}`` as JSON on stdin and writes one
JSON reply on stdout: ``{"ok": true, "result": ...}`` or ``{"ok": false,
"error": "...", "unavailable": bool}``.  A detect function may return a list
with an ``excluded`` mapping (``accel.backends._util.Found``): devices it found
but does not offer, and why; the reply carries it as ``"excluded"``.  ``accel.detect`` starts it with a
timeout, so a vendor library that segfaults or hangs costs a probe, never the
node daemon.  Without ``--target`` the probe finds BACKEND through the plugin
manager (entry points); ``detect`` passes the target to skip that discovery.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

OPS = ("detect", "usage", "health")


def _run(backend: str, op: str, target: str | None, request: dict[str, Any],
         notes: dict[str, Any]) -> Any:
    from plurm.accel.model import Device
    from plurm.plugins.types import resolve
    if target is None:
        from plurm.plugins.manager import get_plugin_manager
        record = get_plugin_manager().get_accel_backend(backend)
        ref = {"detect": record.detect, "usage": record.usage,
               "health": record.health_check}[op]
        if ref is None:
            raise LookupError(f"backend {backend!r} has no {op} function")
        fn = resolve(ref)
    else:
        fn = resolve(target)
    options = {str(k): str(v) for k, v in (request.get("options") or {}).items()}
    if op == "detect":
        found = fn(options)
        excluded = getattr(found, "excluded", None)
        if excluded:
            notes["excluded"] = {str(k): str(v) for k, v in dict(excluded).items()}
        return [d.to_dict() if isinstance(d, Device) else Device.from_dict(d).to_dict()
                for d in found]
    devices = [Device.from_dict(d) for d in request.get("devices") or []]
    return fn(devices, options)


def main(argv: list[str] | None = None) -> int:
    # Vendor libraries print to stdout (amdsmi does when it cannot find its
    # library): keep our reply on a private copy of fd 1 and send fd 1 to stderr.
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    parser = argparse.ArgumentParser(prog="python -m plurm.accel.probe")
    parser.add_argument("backend")
    parser.add_argument("--op", choices=OPS, default="detect")
    parser.add_argument("--target", default=None)
    args = parser.parse_args(argv)
    try:
        raw = sys.stdin.read()
        request = json.loads(raw) if raw.strip() else {}
        notes: dict[str, Any] = {}
        result = _run(args.backend, args.op, args.target, request, notes)
        reply: dict[str, Any] = {"ok": True, "result": result, **notes}
    except BaseException as exc:  # everything becomes an error entry, even SystemExit
        from plurm.accel.errors import BackendUnavailable
        reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}",
                 "unavailable": isinstance(exc, BackendUnavailable)}
    with os.fdopen(reply_fd, "w") as out:
        json.dump(reply, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
