"""The OpenCL backend for real, on PoCL's CPU device (pocl-binary-distribution).

Nothing here assumes the host's CPU model: PoCL's compiler cannot build kernels
on hosts its LLVM does not know, and there detection must leave the device out
and say why.  ``opencl_oracle`` asks pyopencl directly whether the CPU device
computes; each test holds plurm to that answer, both ways.  A broken compiler is
simulated with ``POCL_EXTRA_BUILD_FLAGS``: PoCL 3.0 takes no CPU override (there
is no ``POCL_CPU_TARGET`` in it), and it refuses ``-target-cpu`` as a build
option, so a build there fails the way the unknown-CPU build does, in clBuildProgram.
"""

from __future__ import annotations

import logging

import pytest

from opencl_oracle import cpu_devices_that_compute
from plurm.accel.backends.opencl import _short_build_error
from plurm.accel.binding import binding_env
from plurm.accel.detect import detect, health_check
from plurm.accel.model import Device

cl = pytest.importorskip("pyopencl")
pytest.importorskip("numpy")

# What PoCL 3.0 refuses at clBuildProgram: a stand-in for a compiler that cannot
# generate code for this CPU.
BROKEN_COMPILER = {"POCL_EXTRA_BUILD_FLAGS": "-target-cpu generic"}


def _pocl_present() -> bool:
    try:
        return any("portable" in p.name.lower() or "pocl" in p.name.lower()
                   for p in cl.get_platforms())
    except cl.Error:
        return False


needs_pocl = pytest.mark.skipif(not _pocl_present(),
                                reason="no PoCL platform (pip install pocl-binary-distribution)")


@pytest.fixture(scope="module")
def computing() -> dict[str, bool]:
    """{CPU device name: pyopencl itself built and ran a kernel on it}."""
    return cpu_devices_that_compute()


@needs_pocl
def test_cpu_devices_are_left_out_by_default(pm, monkeypatch):
    monkeypatch.delenv("PLURM_OPENCL_DEVICE_TYPES", raising=False)
    result = detect(["opencl"], manager=pm)
    assert result.errors == {}
    assert all(d.kind != "cpu" for d in result.devices)


@needs_pocl
def test_cpu_device_when_asked_is_offered_exactly_when_it_computes(pm, monkeypatch, computing):
    via_option = detect(["opencl"], options={"opencl_device_types": "all"}, manager=pm)
    monkeypatch.setenv("PLURM_OPENCL_DEVICE_TYPES", "all")
    via_env = detect(["opencl"], refresh=True, manager=pm)
    assert via_option.devices == via_env.devices
    assert via_env.errors == {}
    offered = {d.model for d in via_env.devices if d.backend == "opencl"}
    assert offered == {name for name, ok in computing.items() if ok}
    left_out = {label.rsplit(":", 1)[-1] for label in via_env.excluded}
    assert left_out == {name for name, ok in computing.items() if not ok}
    assert all(why.startswith("kernel build failed: ") for why in via_env.excluded.values())
    if not offered:
        return  # this host's PoCL cannot compile: what is left is checked above
    dev = next(d for d in via_env.devices if d.backend == "opencl")
    assert dev.index == 0 and dev.uuid.startswith("OCL-") and dev.memory_mb > 0
    assert dev.health == "ok" and dev.kind == "cpu"
    # a CPU device binds by its OpenCL ordinal alone, even where PoCL names it
    # "pthread-Intel(R) Xeon(R) Processor" with vendor GenuineIntel
    assert binding_env([dev], manager=pm) == {"GPU_DEVICE_ORDINAL": "0"}
    assert health_check([dev], manager=pm) == {dev.uuid: "ok"}
    gone = Device(**{**dev.to_dict(), "uuid": "OCL-0000000000000000"})
    assert health_check([gone], manager=pm)[gone.uuid].startswith("device vanished")


@needs_pocl
def test_a_device_no_kernel_builds_for_is_not_offered_and_the_log_says_why(pm, monkeypatch, caplog):
    for k, v in BROKEN_COMPILER.items():
        monkeypatch.setenv(k, v)
    assert not any(cpu_devices_that_compute(BROKEN_COMPILER).values())  # the simulation holds
    caplog.set_level(logging.WARNING, logger="plurm.accel")
    result = detect(["opencl"], options={"opencl_device_types": "all"}, manager=pm)
    assert result.devices == [] and result.errors == {}
    ((label, why),) = [(k, v) for k, v in result.excluded.items() if "Portable" in k]
    assert label.startswith("opencl:Portable Computing Language:")
    assert why == "kernel build failed: clBuildProgram failed: INVALID_BUILD_OPTIONS; " \
                  "Invalid build option: -target-cpu"
    assert f"accelerator {label} not offered: {why}" in caplog.messages
    # The check is what leaves it out: without it PoCL's device is listed again
    # (what plurm did before, and what a job then failed on).
    unchecked = detect(["opencl"], options={"opencl_device_types": "all", "opencl_build_check": "no"},
                       manager=pm)
    assert [d.model for d in unchecked.devices] == [label.rsplit(":", 1)[-1]]
    assert unchecked.excluded == {}


@needs_pocl
def test_health_checks_do_not_rebuild_and_keep_an_offered_device(pm, monkeypatch, computing):
    found = detect(["opencl"], options={"opencl_device_types": "all"}, manager=pm).devices
    if not found:
        assert not any(computing.values())
        return
    # A compiler that breaks after detection does not turn presence into absence:
    # the kernel check runs when the device is offered, health only asks it is listed.
    for k, v in BROKEN_COMPILER.items():
        monkeypatch.setenv(k, v)
    assert health_check(found[:1], manager=pm) == {found[0].uuid: "ok"}


def test_the_compilers_words_out_of_pyopencl_s_message():
    # The message pyopencl raised on an AMD EPYC host whose CPU PoCL 3.0's LLVM 14 does not know.
    raw = ("clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: BUILD_PROGRAM_FAILURE"
           " - clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\nBuild on <pyopencl.Device 'pthread-AMD EPYC"
           " 9654 96-Core Processor' on 'Portable Computing Language' at 0x55d0>:\n\nerror: unknown target"
           " CPU 'generic'\n\n(options: -I /site-packages/pyopencl/cl)\n(source saved as /tmp/x.cl)")
    assert _short_build_error(RuntimeError(raw)) == \
        "clBuildProgram failed: BUILD_PROGRAM_FAILURE; error: unknown target CPU 'generic'; " \
        "(source saved as /tmp/x.cl)"
    assert len(_short_build_error(RuntimeError("x\n" + "y" * 1000))) == 300


@needs_pocl
def test_kernel_runs_on_the_detected_device(pm, computing):
    """The device plurm detected is one a job can compute on; none detected only where none computes."""
    np = pytest.importorskip("numpy")
    found = detect(["opencl"], options={"opencl_device_types": "cpu"}, manager=pm).devices
    if not found:
        assert not any(computing.values()), computing
        return
    dev = found[0]
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
    xeon = Device(vendor="intel", model="pthread-Intel(R) Xeon(R) Processor", uuid="OCL-1",
                  index=0, backend="opencl", kind="cpu")
    assert binding_env([xeon], manager=pm) == {"GPU_DEVICE_ORDINAL": "0"}
