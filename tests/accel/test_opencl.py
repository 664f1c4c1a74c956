"""The OpenCL backend for real, on PoCL's CPU device (pocl-binary-distribution)."""

from __future__ import annotations

import pytest

from plurm.accel.binding import binding_env
from plurm.accel.detect import detect, health_check
from plurm.accel.model import Device

cl = pytest.importorskip("pyopencl")


def _pocl_present() -> bool:
    try:
        return any("portable" in p.name.lower() or "pocl" in p.name.lower()
                   for p in cl.get_platforms())
    except cl.Error:
        return False


needs_pocl = pytest.mark.skipif(not _pocl_present(),
                                reason="no PoCL platform (pip install pocl-binary-distribution)")


@needs_pocl
def test_cpu_devices_are_left_out_by_default(pm, monkeypatch):
    monkeypatch.delenv("PLURM_OPENCL_DEVICE_TYPES", raising=False)
    result = detect(["opencl"], manager=pm)
    assert result.errors == {}
    assert all("cpu" not in d.model.lower() for d in result.devices)


@needs_pocl
def test_cpu_device_when_asked(pm, monkeypatch):
    via_option = detect(["opencl"], options={"opencl_device_types": "all"}, manager=pm)
    monkeypatch.setenv("PLURM_OPENCL_DEVICE_TYPES", "all")
    via_env = detect(["opencl"], refresh=True, manager=pm)
    assert via_option.devices == via_env.devices
    cpus = [d for d in via_env.devices if d.backend == "opencl"]
    assert cpus, via_env
    dev = cpus[0]
    assert dev.index == 0 and dev.uuid.startswith("OCL-") and dev.memory_mb > 0
    assert dev.health == "ok"
    assert binding_env([dev], manager=pm) == {"GPU_DEVICE_ORDINAL": "0"}
    assert health_check([dev], manager=pm) == {dev.uuid: "ok"}
    gone = Device(**{**dev.to_dict(), "uuid": "OCL-0000000000000000"})
    assert health_check([gone], manager=pm)[gone.uuid].startswith("device vanished")


@needs_pocl
def test_kernel_runs_on_the_detected_device(pm):
    """The device plurm detected is one a job can compute on."""
    np = pytest.importorskip("numpy")
    (dev,) = detect(["opencl"], options={"opencl_device_types": "cpu"}, manager=pm).devices[:1]
    matches = [d for p in cl.get_platforms() for d in p.get_devices()
               if d.name.strip() == dev.model]
    ctx = cl.Context([matches[dev.index if len(matches) > dev.index else 0]])
    queue = cl.CommandQueue(ctx)
    a = np.arange(64, dtype=np.float32)
    b = np.full(64, 2.0, dtype=np.float32)
    mf = cl.mem_flags
    a_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    b_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
    out = cl.Buffer(ctx, mf.WRITE_ONLY, a.nbytes)
    prog = cl.Program(ctx, """
        __kernel void axpy(__global const float *a, __global const float *b,
                           __global float *out) {
            int i = get_global_id(0);
            out[i] = 3.0f * a[i] + b[i];
        }""").build()
    prog.axpy(queue, a.shape, None, a_buf, b_buf, out)
    result = np.empty_like(a)
    cl.enqueue_copy(queue, result, out)
    assert np.allclose(result, 3 * a + b)


def test_intel_gpus_also_bind_level_zero(pm):
    gpus = [Device(vendor="intel", model="Intel(R) Data Center GPU Max 1550", uuid=f"GPU-{i}",
                   index=i, backend="opencl") for i in range(2)]
    assert binding_env(gpus, manager=pm) == {"GPU_DEVICE_ORDINAL": "0,1",
                                             "ZE_AFFINITY_MASK": "0,1"}
