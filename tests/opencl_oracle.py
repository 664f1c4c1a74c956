"""Whether this host's OpenCL CPU device can compute, asked of pyopencl directly.

The tests compare plurm's detection with this answer instead of assuming a CPU
model: PoCL's compiler fails on hosts its LLVM does not know (``unknown target
CPU 'generic'``), and there plurm must leave the device out.  The check runs in
a subprocess (a compiler crash must not take the test run with it) and uses
none of plurm's code, so it is an independent witness.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping

_CHECK = r"""
import json, sys
import numpy as np
import pyopencl as cl
out = {}
for p in cl.get_platforms():
    try:
        devs = p.get_devices(device_type=cl.device_type.CPU)
    except cl.Error:
        continue
    for d in devs:
        try:
            ctx = cl.Context([d])
            q = cl.CommandQueue(ctx)
            a = np.arange(4, dtype=np.float32)
            buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
            cl.Program(ctx, "__kernel void t(__global float *x) { x[get_global_id(0)] += 1.0f; }"
                       ).build(cache_dir=False).t(q, a.shape, None, buf)
            r = np.empty_like(a)
            cl.enqueue_copy(q, r, buf)
            out[d.name.strip()] = bool((r == a + 1).all())
        except Exception as exc:
            out[d.name.strip()] = False
print(json.dumps(out))
"""


def cpu_devices_that_compute(env: Mapping[str, str] | None = None) -> dict[str, bool]:
    """``{device name: a kernel built and ran}`` for every OpenCL CPU device."""
    proc = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})), timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"the OpenCL oracle failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
