"""ConstrainDevices on cgroup v2: a small eBPF program of type BPF_PROG_TYPE_CGROUP_DEVICE
attached to the job's (and step's) directory, as Slurm 22.05's cgroup/v2 does (v2 has no
devices.deny file: device access is decided by such programs).

The program compares the device an open/mknod asks for with each denied one and returns 0
(EPERM) on a match, 1 otherwise; everything else stays allowed, as with v1's devices.deny.
It is attached with BPF_F_ALLOW_MULTI, so a step's program adds to its job's (the kernel runs
both and both must allow).  The attachment holds the program: it lives as long as the
cgroup directory, and our file descriptors are closed right away.

Built by hand, without libbpf or a compiler: a few fixed instructions per device.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import struct

from plurm.nodeagent.cgroups.base import CreateError

_SYS_BPF = {"x86_64": 321, "aarch64": 280, "ppc64le": 361, "s390x": 351}.get(platform.machine())
BPF_PROG_LOAD, BPF_PROG_ATTACH = 5, 8
BPF_PROG_TYPE_CGROUP_DEVICE, BPF_CGROUP_DEVICE, BPF_F_ALLOW_MULTI = 15, 6, 2
_TYPE = {"b": 1, "c": 2}  # BPF_DEVCG_DEV_BLOCK, BPF_DEVCG_DEV_CHAR

# Opcodes (linux/bpf.h, linux/bpf_common.h).
_LDX_W = 0x61  # r_dst = *(u32 *)(r_src + off)
_AND64_K = 0x57  # r_dst &= imm
_JNE_K = 0x55  # if r_dst != imm: pc += off
_MOV64_K = 0xB7  # r_dst = imm
_EXIT = 0x95


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def program(denied: list[tuple[str, int, int]]) -> bytes:
    """The instructions: r1 is struct bpf_cgroup_dev_ctx {u32 access_type; u32 major; u32
    minor;}, the device type in access_type's low 16 bits."""
    out = [_insn(_LDX_W, 2, 1, 0), _insn(_AND64_K, 2, imm=0xFFFF),
           _insn(_LDX_W, 3, 1, 4), _insn(_LDX_W, 4, 1, 8)]
    for kind, major, minor in denied:
        out += [_insn(_JNE_K, 2, off=4, imm=_TYPE[kind]), _insn(_JNE_K, 3, off=3, imm=major),
                _insn(_JNE_K, 4, off=2, imm=minor), _insn(_MOV64_K, 0, imm=0), _insn(_EXIT)]
    out += [_insn(_MOV64_K, 0, imm=1), _insn(_EXIT)]
    return b"".join(out)


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _bpf(cmd: int, attr: ctypes.Array) -> int:
    result = _libc().syscall(_SYS_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return int(result)


def _load(denied: list[tuple[str, int, int]]) -> int:
    """Load the program; its file descriptor.  Raises CreateError."""
    if _SYS_BPF is None:
        raise CreateError(f"no bpf syscall number known for {platform.machine()}")
    for kind, _, _ in denied:
        if kind not in _TYPE:
            raise CreateError(f"device type {kind!r} is not 'b' or 'c'")
    code = program(denied)
    insns = ctypes.create_string_buffer(code, len(code))
    license_ = ctypes.create_string_buffer(b"Apache-2.0")
    log_buf = ctypes.create_string_buffer(65536)
    attr = ctypes.create_string_buffer(128)
    # No verifier log at first (a log that overflows its buffer fails the load); the second try,
    # after a failure, asks for it to say why.
    error = OSError(0, "")
    for log_level in (0, 1):
        struct.pack_into("<IIQQIIQ", attr, 0, BPF_PROG_TYPE_CGROUP_DEVICE, len(code) // 8,
                         ctypes.addressof(insns), ctypes.addressof(license_), log_level,
                         len(log_buf) if log_level else 0, ctypes.addressof(log_buf) if log_level else 0)
        try:
            return _bpf(BPF_PROG_LOAD, attr)
        except OSError as exc:
            error = exc
    verifier = log_buf.value.decode(errors="replace").strip().splitlines()[-1:] or [""]
    raise CreateError(f"cannot load a BPF device program: {error.strerror} {verifier[0]}".rstrip())


def probe() -> str | None:
    """Why device programs cannot be used here (no bpf(), no CONFIG_CGROUP_BPF), or None."""
    try:
        os.close(_load([("c", 1, 5)]))
    except CreateError as exc:
        return str(exc)
    return None


def deny(cgroup_dir: str, denied: list[tuple[str, int, int]]) -> None:
    """Attach a program denying ``denied`` to ``cgroup_dir``.  Raises CreateError."""
    try:
        prog_fd = _load(denied)
    except CreateError as exc:
        raise CreateError(f"cgroup/v2 devices of {cgroup_dir}: {exc}") from None
    try:
        cg_fd = os.open(cgroup_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        os.close(prog_fd)
        raise CreateError(f"{cgroup_dir}: {exc.strerror}") from None
    try:
        attach = ctypes.create_string_buffer(20)
        struct.pack_into("<IIII", attach, 0, cg_fd, prog_fd, BPF_CGROUP_DEVICE, BPF_F_ALLOW_MULTI)
        _bpf(BPF_PROG_ATTACH, attach)
    except OSError as exc:
        raise CreateError(f"cgroup/v2 devices: cannot attach to {cgroup_dir}: {exc.strerror}") from None
    finally:
        os.close(cg_fd)
        os.close(prog_fd)
