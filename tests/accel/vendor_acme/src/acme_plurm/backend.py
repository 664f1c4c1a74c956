"""ACME's "driver" is a JSON file: ``$ACME_DEVICES_FILE`` lists the devices as
``[{"model": ..., "serial": ..., "memory_mb": ..., "load": ..., "temp": ...}]``."""

import json
import os

from plurm.accel.binding import vendor_env
from plurm.accel.errors import BackendUnavailable
from plurm.accel.model import Device


def _read():
    path = os.environ.get("ACME_DEVICES_FILE")
    if not path or not os.path.exists(path):
        raise BackendUnavailable("no ACME driver (ACME_DEVICES_FILE unset or missing)")
    with open(path) as f:
        return json.load(f)


def detect(options):
    return [Device(vendor="acme", model=d["model"], uuid=f"ACME-{d['serial']}", index=i,
                   backend="acme", memory_mb=d.get("memory_mb"),
                   device_file=f"/dev/acme{i}")
            for i, d in enumerate(_read())]


def binding_env(devices, use_uuid=False):
    return vendor_env(devices, ("ACME_VISIBLE_DEVICES",), use_uuid)


def usage(devices, options):
    found = {f"ACME-{d['serial']}": d for d in _read()}
    return {dev.uuid: {"util": float(found[dev.uuid].get("load", 0)), "mem_used_mb": 0}
            for dev in devices if dev.uuid in found}


def health_check(devices, options):
    found = {f"ACME-{d['serial']}": d for d in _read()}
    out = {}
    for dev in devices:
        d = found.get(dev.uuid)
        if d is None:
            out[dev.uuid] = "device vanished"
        elif d.get("temp", 0) > float(options.get("temp_limit_c", 90)):
            out[dev.uuid] = f"temperature {d['temp']}C too high"
        else:
            out[dev.uuid] = "ok"
    return out
